// The bundled torchvision models (data/onnx): TFLite's published MobileNet v2
// figures, agreement with the torch.fx buffer sets of data/models, and plans
// that the planners accept for every model.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "repo_path.h"
#include "tensormem/model/onnx_model.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {
namespace {

constexpr const char* kModels[] = {
    "mobilenet_v2",    "mobilenet_v3_large",     "resnet50", "inception_v3",
    "efficientnet_b0", "deeplabv3_mobilenet_v3", "vit_b_16"};

ModelGraph LoadBundled(const std::string& name, bool fuse) {
  OnnxLoadOptions options;
  options.fuse_activations = fuse;
  absl::StatusOr<ModelGraph> model =
      LoadOnnxModel(RepoPath("data/onnx/" + name + ".onnx"), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : ModelGraph();
}

uint64_t TotalBytes(const BufferSet& set) {
  uint64_t total = 0;
  for (const Buffer& buffer : set.buffers) total += buffer.size;
  return total;
}

// TensorFlow's 2020 post on TFLite's memory planners: MobileNet v2 at
// 224x224, float32, has 65 intermediate tensors, about 26 MB with one buffer
// each (26.3 MiB: the post's "MB" are MiB).
TEST(BundledModelsTest, MobileNetV2MatchesTfliteFigures) {
  const ModelGraph model = LoadBundled("mobilenet_v2", /*fuse=*/true);
  const BufferSet set = ModelBufferSet(model);
  EXPECT_EQ(set.buffers.size(), 65);
  EXPECT_NEAR(TotalBytes(set) / 1048576.0, 26.3, 0.1);
  EXPECT_EQ(model.fused_activations, 35);  // every ReLU6
  // The input is 1x3x224x224 floats; the classifier's output 1x1000.
  ASSERT_EQ(model.inputs.size(), 1);
  EXPECT_EQ(model.tensors[model.inputs[0]].bytes, 3 * 224 * 224 * 4);
  EXPECT_EQ(set.buffers.back().size, 1000 * 4);
}

// torch.fx (tools/torch/export_buffers.py) shares a view's buffer with its
// input; the ONNX graph has Flatten as an op of its own. Otherwise the same
// tensors, the same sizes.
TEST(BundledModelsTest, AgreesWithTheTorchFxBufferSets) {
  struct Case {
    const char* model;
    uint64_t flatten_bytes;
  };
  for (const Case& c :
       {Case{"mobilenet_v2", 1280 * 4}, Case{"mobilenet_v3_large", 960 * 4},
        Case{"resnet50", 2048 * 4}}) {
    SCOPED_TRACE(c.model);
    absl::StatusOr<BufferSet> fx = ReadBufferSetCsv(
        RepoPath(std::string("data/models/") + c.model + ".buffers.csv"));
    ASSERT_TRUE(fx.ok()) << fx.status();
    const BufferSet onnx = ModelBufferSet(LoadBundled(c.model, true));
    EXPECT_EQ(onnx.buffers.size(), fx->buffers.size() + 1);
    EXPECT_EQ(TotalBytes(onnx), TotalBytes(*fx) + c.flatten_bytes);
    EXPECT_EQ(PeakLiveBytes(onnx), PeakLiveBytes(*fx));
  }
}

// The exporter computes ViT's attention slices and DeepLab's resize sizes
// from Shape nodes; the bundled files had them folded at export, the
// unfolded exports (tests/data/onnx) leave them to the loader. Same buffers.
TEST(BundledModelsTest, UnfoldedExportsGiveTheSameBuffers) {
  for (const char* name : {"vit_b_16", "deeplabv3_mobilenet_v3"}) {
    SCOPED_TRACE(name);
    OnnxLoadOptions options;
    options.fuse_activations = true;
    absl::StatusOr<ModelGraph> unfolded = LoadOnnxModel(
        std::string(TENSORMEM_TEST_DATA) + "/onnx/" + name + ".unfolded.onnx",
        options);
    ASSERT_TRUE(unfolded.ok()) << unfolded.status();
    const BufferSet expected = ModelBufferSet(LoadBundled(name, true));
    const BufferSet actual = ModelBufferSet(*unfolded);
    ASSERT_EQ(actual.buffers.size(), expected.buffers.size());
    for (size_t i = 0; i < actual.buffers.size(); ++i) {
      EXPECT_EQ(actual.buffers[i].size, expected.buffers[i].size) << i;
      EXPECT_EQ(actual.buffers[i].lower, expected.buffers[i].lower) << i;
      EXPECT_EQ(actual.buffers[i].upper, expected.buffers[i].upper) << i;
    }
  }
}

TEST(BundledModelsTest, EveryModelGivesValidSetsAndGraphs) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const ModelGraph plain = LoadBundled(name, false);
    const ModelGraph fused = LoadBundled(name, true);
    ASSERT_FALSE(plain.buffers.empty());
    EXPECT_TRUE(plain.skipped_unknown.empty());
    // Each fused activation removes exactly one buffer.
    EXPECT_EQ(fused.buffers.size() + fused.fused_activations,
              plain.buffers.size());
    const int last = static_cast<int>(plain.nodes.size()) - 1;
    for (const ModelGraph* model : {&plain, &fused}) {
      for (const ModelBuffer& buffer : model->buffers) {
        EXPECT_LE(buffer.first_node, buffer.last_node);
        EXPECT_GT(buffer.bytes, 0);
        if (buffer.graph_output) {
          EXPECT_EQ(buffer.last_node, last);
        }
      }
      EXPECT_TRUE(ValidateArenaGraph(ModelArenaGraph(*model)).ok());
      const BufferSet set = ModelBufferSet(*model);
      EXPECT_LE(PeakLiveBytes(set), TotalBytes(set));
    }
    EXPECT_LE(PeakLiveBytes(ModelBufferSet(fused)),
              PeakLiveBytes(ModelBufferSet(plain)));
  }
}

}  // namespace
}  // namespace tensormem
