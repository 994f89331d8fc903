// Fuzz target: the ONNX model loader (protobuf parsing, shape inference,
// folding) on arbitrary bytes, then the buffer set and arena graph it derives.
//
// Checks beyond "no crash": errors name the input; a loaded model gives a
// buffer set that writes and reads back, and an arena graph that validates.
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/model/onnx_model.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  fuzz::ByteReader reader(data, size);
  const uint8_t flags = reader.Byte();
  OnnxLoadOptions options;
  options.fuse_activations = (flags & 1) != 0;
  options.skip_unknown = (flags & 2) != 0;
  absl::StatusOr<ModelGraph> model =
      LoadOnnxModelFromBytes(reader.Rest(), options, "fuzz.onnx");
  if (!model.ok()) {
    FUZZ_CHECK(absl::StrContains(model.status().message(), "fuzz.onnx"),
               "error does not name the input: %s",
               model.status().ToString().c_str());
    return 0;
  }
  const BufferSet set = ModelBufferSet(*model);
  absl::StatusOr<BufferSet> again =
      ParseBufferSetCsv(FormatBufferSetCsv(set), "written");
  FUZZ_CHECK(again.ok() || set.buffers.empty(),
             "buffer set does not read back: %s",
             again.status().ToString().c_str());
  const absl::Status valid = ValidateArenaGraph(ModelArenaGraph(*model));
  FUZZ_CHECK(valid.ok(), "arena graph invalid: %s", valid.ToString().c_str());
  return 0;
}
