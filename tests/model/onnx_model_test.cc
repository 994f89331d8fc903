// The ONNX loader on small models built in code: which tensors are
// intermediates, their lifetimes and sizes, folding, in-place activations,
// input binding, and the errors for what it does not accept.
#include "tensormem/model/onnx_model.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_test_models.h"

namespace tensormem {
namespace {

using namespace ::tensormem::testing_onnx;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ModelGraph> Load(const onnx::ModelProto& model,
                                OnnxLoadOptions options = {}) {
  return LoadOnnxModelFromBytes(Bytes(model), options, "test.onnx");
}

// x -> Conv -> c -> Relu -> a -> Add(a, x) -> b -> Relu -> r -> Mul(r, a)
// -> y (output).
onnx::ModelProto ConvModel() {
  // x[1,2,4,4], w[2,2,1,1] -> c[1,2,4,4].
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {1, 2, 4, 4});
  AddWeight(model, "w", {2, 2, 1, 1});
  AddNode(model, "Conv", {"x", "w"}, {"c"});
  AddNode(model, "Relu", {"c"}, {"a"});
  AddNode(model, "Add", {"a", "x"}, {"b"});
  AddNode(model, "Relu", {"b"}, {"r"});
  AddNode(model, "Mul", {"r", "a"}, {"y"});
  AddOutput(model, "y");
  return model;
}

TEST(OnnxModelTest, IntermediatesLiveFromProducerToLastReader) {
  absl::StatusOr<ModelGraph> model = Load(ConvModel());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->nodes.size(), 5);
  ASSERT_EQ(model->buffers.size(), 5);  // c, a, b, r, y
  const uint64_t bytes = 1 * 2 * 4 * 4 * 4;
  for (const ModelBuffer& buffer : model->buffers)
    EXPECT_EQ(buffer.bytes, bytes);
  EXPECT_EQ(model->buffers[0].last_node, 1);   // c: read by the Relu
  EXPECT_EQ(model->buffers[1].first_node, 1);  // a: Relu ... Mul
  EXPECT_EQ(model->buffers[1].last_node, 4);
  EXPECT_TRUE(model->buffers[4].graph_output);
  EXPECT_EQ(model->inputs.size(), 1);
  EXPECT_EQ(model->tensors[model->inputs[0]].name, "x");

  const BufferSet set = ModelBufferSet(*model);
  EXPECT_EQ(set.convention, IntervalConvention::kClosed);
  ASSERT_EQ(set.buffers.size(), 5);
  EXPECT_EQ(set.buffers[1].lower, 1);
  EXPECT_EQ(set.buffers[1].upper, 5);  // closed [1, 4] read half-open
}

TEST(OnnxModelTest, FusedActivationsShareTheirInputsBuffer) {
  OnnxLoadOptions options;
  options.fuse_activations = true;
  absl::StatusOr<ModelGraph> model = Load(ConvModel(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  // c's only reader is the first Relu: fused. b's only reader is the second
  // Relu: fused. a = c's buffer is read by Add and Mul.
  EXPECT_EQ(model->fused_activations, 2);
  ASSERT_EQ(model->buffers.size(), 3);  // {c, a}, {b, r}, {y}
  EXPECT_EQ(model->buffers[0].tensors.size(), 2);
  EXPECT_EQ(model->buffers[0].first_node, 0);
  EXPECT_EQ(model->buffers[0].last_node, 4);  // extended to a's last reader
  EXPECT_EQ(model->buffers[1].first_node, 2);
  EXPECT_EQ(model->buffers[1].last_node, 4);

  const ArenaGraph graph = ModelArenaGraph(*model);
  ASSERT_TRUE(ValidateArenaGraph(graph).ok());
  EXPECT_TRUE(graph.nodes[1].outputs.empty());  // writes in place
  EXPECT_THAT(graph.nodes[1].inputs, ElementsAre(0));
  EXPECT_THAT(graph.outputs, ElementsAre(2));
  EXPECT_THAT(graph.inputs, ElementsAre(3));
  EXPECT_EQ(graph.tensors[4].type, AllocationType::kMmapRo);  // the weight
}

TEST(OnnxModelTest, ActivationWithASharedInputIsNotFused) {
  onnx::ModelProto model = ConvModel();
  // A second reader of c: the first Relu can no longer overwrite it.
  AddNode(model, "Add", {"c", "y"}, {"z"});
  AddOutput(model, "z");
  OnnxLoadOptions options;
  options.fuse_activations = true;
  absl::StatusOr<ModelGraph> loaded = Load(model, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->fused_activations, 1);  // only b's Relu
  EXPECT_FALSE(loaded->nodes[1].in_place);
  // Both graph outputs live to the last node.
  EXPECT_EQ(loaded->buffers.back().last_node, 5);
  EXPECT_EQ(loaded->buffers[loaded->buffers.size() - 2].last_node, 5);
}

TEST(OnnxModelTest, ConstantsAndShapeArithmeticAreFolded) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {2, 3, 4});
  AddWeight(model, "w", {12});
  AddInt64Initializer(model, "zero", {0});
  AddNode(model, "Identity", {"w"}, {"w2"});           // of a weight: folded
  AddNode(model, "Shape", {"x"}, {"s"});               // of data: folded
  AddNode(model, "Gather", {"s", "zero"}, {"batch"});  // shape arithmetic
  AddNode(model, "Constant", {}, {"minus_one"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto value;
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    value.mutable_t()->set_data_type(onnx::TensorProto::INT64);
    value.mutable_t()->add_dims(1);
    value.mutable_t()->add_int64_data(-1);
    return value;
  }());
  AddNode(model, "Concat", {"batch", "minus_one"}, {"target"})
      ->add_attribute()
      ->CopyFrom([] {
        onnx::AttributeProto axis;
        axis.set_name("axis");
        axis.set_type(onnx::AttributeProto::INT);
        axis.set_i(0);
        return axis;
      }());
  AddNode(model, "Reshape", {"x", "target"}, {"flat"});  // kept: reads data
  AddNode(model, "Add", {"flat", "w2"}, {"y"});
  AddOutput(model, "y");
  absl::StatusOr<ModelGraph> loaded = Load(model);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->folded_nodes, 5);
  ASSERT_EQ(loaded->nodes.size(), 2);
  EXPECT_EQ(loaded->nodes[0].op_type, "Reshape");
  ASSERT_EQ(loaded->buffers.size(), 2);
  // Data propagation resolved the reshape target: [2, 12] floats.
  EXPECT_EQ(loaded->buffers[0].bytes, 2 * 12 * 4);
  EXPECT_EQ(loaded->buffers[1].bytes, 2 * 12 * 4);
}

TEST(OnnxModelTest, InputShapeBindsDynamicDimensions) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {-1, 8});
  AddNode(model, "Relu", {"x"}, {"y"});
  AddOutput(model, "y");
  absl::StatusOr<ModelGraph> unbound = Load(model);
  ASSERT_FALSE(unbound.ok());
  EXPECT_THAT(unbound.status().message(),
              HasSubstr("data input 'x': dimension 'N' is not bound"));

  OnnxLoadOptions options;
  options.input_shapes = {{"x", {3, 8}}};
  absl::StatusOr<ModelGraph> bound = Load(model, options);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(bound->buffers[0].bytes, 3 * 8 * 4);

  options.input_shapes = {{"x", {3, 9}}};
  EXPECT_THAT(Load(model, options).status().message(),
              HasSubstr("input 'x': dimension 1 is fixed at 8"));
  options.input_shapes = {{"x", {3}}};
  EXPECT_THAT(Load(model, options).status().message(),
              HasSubstr("input 'x' has rank 2"));
  options.input_shapes = {{"nope", {3, 8}}};
  EXPECT_THAT(Load(model, options).status().message(),
              HasSubstr("no graph input is named 'nope'; inputs: x"));
}

// y = x[:, :, :width / 2] with the bound computed from Shape(x): ONNX's own
// inference leaves Slice's output unknown; the loader evaluates the chain.
TEST(OnnxModelTest, ShapeArithmeticFollowsTheBoundInput) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {-1, 6, 4});
  AddInt64Initializer(model, "axis2", {2});
  AddInt64Initializer(model, "zero", {0});
  onnx::TensorProto* two = model.mutable_graph()->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);  // a scalar
  AddNode(model, "Shape", {"x"}, {"shape"});
  AddNode(model, "Gather", {"shape", "two"}, {"width"});   // scalar 4
  AddNode(model, "Div", {"width", "two"}, {"half"});       // scalar 2
  AddNode(model, "Unsqueeze", {"half", "zero"}, {"end"});  // [2]
  AddNode(model, "Slice", {"x", "zero", "end", "axis2"}, {"y"});
  AddNode(model, "Relu", {"y"}, {"z"});
  AddOutput(model, "z");
  OnnxLoadOptions options;
  options.input_shapes = {{"x", {3, 6, 4}}};
  absl::StatusOr<ModelGraph> loaded = Load(model, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->buffers.size(), 2);
  EXPECT_EQ(loaded->buffers[0].bytes, 3 * 6 * 2 * 4);
  EXPECT_EQ(loaded->folded_nodes, 4);
}

TEST(OnnxModelTest, NamedInputsMakeTheOtherInputsParameters) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {2, 8});
  AddInput(model, "scale", {2, 8});  // an input that is a weight
  AddNode(model, "Mul", {"scale", "scale"}, {"s2"});  // parameters only
  AddNode(model, "Mul", {"x", "s2"}, {"y"});
  AddOutput(model, "y");
  OnnxLoadOptions options;
  options.input_shapes = {{"x", {2, 8}}};
  absl::StatusOr<ModelGraph> loaded = Load(model, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->folded_nodes, 1);
  EXPECT_EQ(loaded->buffers.size(), 1);

  absl::StatusOr<ModelGraph> both = Load(model);  // no names: both are data
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->buffers.size(), 2);
}

TEST(OnnxModelTest, UnresolvedShapesAreNamedOrSkipped) {
  onnx::ModelProto model = EmptyModel();
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  AddInput(model, "x", {2, 8});
  AddNode(model, "Relu", {"x"}, {"a"});
  AddNode(model, "Mystery", {"a"}, {"m"})->set_domain("com.example");
  AddNode(model, "Relu", {"m"}, {"b"});
  AddNode(model, "Add", {"a", "a"}, {"y"});
  AddOutput(model, "y");
  absl::StatusOr<ModelGraph> strict = Load(model);
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(strict.status().message(), HasSubstr("'m'"));
  EXPECT_THAT(strict.status().message(), HasSubstr("--skip-unknown"));

  OnnxLoadOptions options;
  options.skip_unknown = true;
  absl::StatusOr<ModelGraph> skipped = Load(model, options);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(skipped->skipped_unknown, ElementsAre("m", "b"));
  EXPECT_EQ(skipped->buffers.size(), 2);  // a and y
  EXPECT_TRUE(ValidateArenaGraph(ModelArenaGraph(*skipped)).ok());
}

}  // namespace
}  // namespace tensormem
