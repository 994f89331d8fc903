// Fuzz target: the pickle decoder and the PyTorch snapshot importer on top.
//
// Every accessor of every reachable value is exercised (within a visit
// budget: shared and self-referencing containers make the value graph
// unbounded as a tree), then the same bytes go through ParsePytorchSnapshot.
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/pickle.h"

namespace {

using tensormem::PickleValue;

void Visit(const PickleValue& value, int depth, int& budget) {
  if (--budget < 0 || depth > 8) return;
  (void)value.AsInt();
  (void)value.AsFloat();
  (void)value.AsBool();
  if (std::optional<std::string_view> text = value.AsString()) {
    FUZZ_CHECK(text->size() < (size_t{1} << 32), "string too long");
  }
  const PickleValue::Kind kind = value.kind();
  if (kind == PickleValue::Kind::kList || kind == PickleValue::Kind::kTuple) {
    for (size_t i = 0; i < value.size(); ++i)
      Visit(value[i], depth + 1, budget);
  }
  (void)value.Find("device_traces");
  (void)value.Find("");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  fuzz::ByteReader reader(data, size);
  const int device = reader.Byte() % 3;
  const std::string bytes(reader.Rest());
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(bytes, "fuzz.pickle");
  if (document.ok()) {
    int budget = 10000;
    Visit(document->root(), 0, budget);
  } else {
    FUZZ_CHECK(absl::StartsWith(document.status().message(), "fuzz.pickle: "),
               "error does not name the input: %s",
               document.status().ToString().c_str());
  }
  absl::StatusOr<PytorchImport> snapshot =
      ParsePytorchSnapshot(bytes, "fuzz.pickle", {.device = device});
  if (!snapshot.ok()) {
    FUZZ_CHECK(absl::StartsWith(snapshot.status().message(), "fuzz.pickle"),
               "error does not name the input: %s",
               snapshot.status().ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(document.ok(), "snapshot read from a pickle that does not parse");
  return 0;
}
