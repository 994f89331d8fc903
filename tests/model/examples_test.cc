// The usage example of the ONNX front end's public header, compiled and run:
// the test opens with the header's example as the header writes it (keep the
// two in sync; the path is taken from the source tree).
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tensormem/model/onnx_model.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {
namespace {

TEST(ModelExamples, OnnxModel) {
  const std::string mobilenet =
      std::string(TENSORMEM_SOURCE_DIR) + "/data/onnx/mobilenet_v2.onnx";
  OnnxLoadOptions options;
  options.fuse_activations = true;
  absl::StatusOr<ModelGraph> model = LoadOnnxModel(mobilenet, options);
  ASSERT_TRUE(model.ok()) << model.status();
  BufferSet set = ModelBufferSet(*model);  // 65 buffers, about 26 MB
  ArenaGraph graph = ModelArenaGraph(*model);

  EXPECT_EQ(set.buffers.size(), 65u);
  EXPECT_EQ(ValidateArenaGraph(graph), absl::OkStatus());
  EXPECT_GE(graph.tensors.size(), set.buffers.size());
}

}  // namespace
}  // namespace tensormem
