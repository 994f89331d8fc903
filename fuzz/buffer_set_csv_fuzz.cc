// Fuzz target: the buffer-set CSV reader.
//
// Beyond "no crash": errors name the input, and a set that parses is written
// and read back unchanged (ids or names, lifetimes, sizes, offsets).
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "fuzz_check.h"
#include "tensormem/plan/buffer_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(text, "fuzz.csv");
  if (!set.ok()) {
    FUZZ_CHECK(absl::StartsWith(set.status().message(), "fuzz.csv"),
               "error does not name the input: %s",
               set.status().ToString().c_str());
    return 0;
  }
  PeakLiveBytes(*set);
  const std::string written = FormatBufferSetCsv(*set);
  absl::StatusOr<BufferSet> again = ParseBufferSetCsv(written, "written.csv");
  FUZZ_CHECK(again.ok(), "written set does not parse: %s\n%s",
             again.status().ToString().c_str(), written.c_str());
  FUZZ_CHECK(again->buffers.size() == set->buffers.size() &&
                 again->names == set->names &&
                 again->convention == set->convention,
             "round trip changed the set");
  for (size_t i = 0; i < set->buffers.size(); ++i) {
    const Buffer& a = set->buffers[i];
    const Buffer& b = again->buffers[i];
    FUZZ_CHECK(a.id == b.id && a.lower == b.lower && a.upper == b.upper &&
                   a.size == b.size && a.offset == b.offset,
               "round trip changed buffer %zu", i);
  }
  return 0;
}
