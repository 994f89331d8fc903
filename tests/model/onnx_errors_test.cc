// What the ONNX loader refuses, and how: every bad input is an error that
// names the file and the node, tensor or field; none crashes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_test_models.h"
#include "tensormem/model/onnx_model.h"

namespace tensormem {
namespace {

using namespace ::tensormem::testing_onnx;  // NOLINT: test helpers
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ErrorOf(const std::string& bytes, OnnxLoadOptions options = {}) {
  absl::StatusOr<ModelGraph> model =
      LoadOnnxModelFromBytes(bytes, options, "bad.onnx");
  return model.ok() ? "" : std::string(model.status().message());
}

onnx::ModelProto ReluModel() {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {2, 8});
  AddNode(model, "Relu", {"x"}, {"y"});
  AddOutput(model, "y");
  return model;
}

std::string BundledBytes(const std::string& name) {
  std::ifstream file(std::string(TENSORMEM_SOURCE_DIR) + "/data/onnx/" + name,
                     std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

TEST(OnnxErrorsTest, NotAModel) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("bad.onnx: not an ONNX model"));
  EXPECT_THAT(ErrorOf("id,lower,upper,size\n0,0,1,8\n"),
              HasSubstr("not an ONNX model"));
  EXPECT_THAT(ErrorOf(std::string("\x08\x08\x3a\xff\xff", 5)),
              HasSubstr("does not parse"));
}

TEST(OnnxErrorsTest, EveryTruncationOfARealModelIsAnError) {
  const std::string bytes = BundledBytes("mobilenet_v2.onnx");
  ASSERT_GT(bytes.size(), 10000);
  // The metadata at the end is optional; cut anywhere before it.
  for (int k = 0; k < 64; ++k) {
    const size_t length = bytes.size() * k / 64;
    SCOPED_TRACE(length);
    EXPECT_THAT(ErrorOf(bytes.substr(0, length)), StartsWith("bad.onnx: "));
  }
}

TEST(OnnxErrorsTest, CorruptBytesNeverCrash) {
  const std::string bytes = BundledBytes("resnet50.onnx");
  std::mt19937 random(7);
  int refused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::string corrupt = bytes;
    for (int flip = 0; flip < 4; ++flip) {
      corrupt[random() % corrupt.size()] ^=
          static_cast<char>(1 + random() % 255);
    }
    absl::StatusOr<ModelGraph> model =
        LoadOnnxModelFromBytes(corrupt, {}, "corrupt.onnx");
    if (!model.ok()) {
      ++refused;
      EXPECT_THAT(std::string(model.status().message()),
                  StartsWith("corrupt.onnx: "));
    } else {
      EXPECT_TRUE(ValidateArenaGraph(ModelArenaGraph(*model)).ok());
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(OnnxErrorsTest, UnsupportedOpsetAndIrVersion) {
  EXPECT_THAT(ErrorOf(Bytes([] {
                onnx::ModelProto model = ReluModel();
                model.mutable_opset_import(0)->set_version(99);
                return model;
              }())),
              HasSubstr("opset 99 of domain ai.onnx is not supported"));
  EXPECT_THAT(ErrorOf(Bytes([] {
                onnx::ModelProto model = ReluModel();
                model.clear_opset_import();
                return model;
              }())),
              HasSubstr("names no version of the default domain"));
  EXPECT_THAT(ErrorOf(Bytes([] {
                onnx::ModelProto model = ReluModel();
                model.set_ir_version(1000);
                return model;
              }())),
              HasSubstr("IR version 1000 is newer"));
}

TEST(OnnxErrorsTest, SubgraphsAreRefusedByNode) {
  onnx::ModelProto model = ReluModel();
  onnx::NodeProto* node = AddNode(model, "If", {"y"}, {"z"});
  node->set_name("branch");
  onnx::AttributeProto* then_branch = node->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  then_branch->mutable_g()->set_name("then");
  EXPECT_THAT(ErrorOf(Bytes(model)),
              HasSubstr("node 'branch' (#1, If) has a subgraph (attribute "
                        "'then_branch')"));
}

// ONNX 1.12's conv inference divides by the strides: a zero must be refused
// before it runs (it was a SIGFPE).
TEST(OnnxErrorsTest, ZeroStridesAreRefusedBeforeShapeInference) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {1, 2, 4, 4});
  AddWeight(model, "w", {2, 2, 1, 1});
  onnx::NodeProto* conv = AddNode(model, "Conv", {"x", "w"}, {"y"});
  conv->set_name("conv");
  onnx::AttributeProto* strides = conv->add_attribute();
  strides->set_name("strides");
  strides->set_type(onnx::AttributeProto::INTS);
  strides->add_ints(1);
  strides->add_ints(0);
  AddOutput(model, "y");
  EXPECT_THAT(ErrorOf(Bytes(model)),
              HasSubstr("node 'conv' (#0, Conv): attribute 'strides' must be "
                        "positive"));
}

// fuzz/regressions/onnx_model/conv_over_rank2_input, found by the fuzzer:
// ONNX 1.12's convolution inference reads a null pointer when the kernel has
// more spatial axes than the input (a Conv over a rank-2 input with a 4-D
// weight crashed the loader).
TEST(OnnxErrorsTest, ConvolutionOverARank2InputIsAnErrorNotACrash) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {1, 8});
  AddWeight(model, "w", {4, 3, 3, 3});
  onnx::NodeProto* conv = AddNode(model, "Conv", {"x", "w"}, {"y"});
  conv->set_name("conv");
  AddOutput(model, "y");
  EXPECT_THAT(ErrorOf(Bytes(model)), StartsWith("bad.onnx: "));
  // The same for a pooling whose kernel_shape has more axes than the input,
  // and for a weight whose rank differs from the input's.
  onnx::ModelProto pool = EmptyModel();
  AddInput(pool, "x", {1, 2, 8});
  onnx::NodeProto* max_pool = AddNode(pool, "MaxPool", {"x"}, {"y"});
  onnx::AttributeProto* kernel = max_pool->add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(2);
  kernel->add_ints(2);
  AddOutput(pool, "y");
  EXPECT_THAT(ErrorOf(Bytes(pool)), StartsWith("bad.onnx: "));
  onnx::ModelProto weight = EmptyModel();
  AddInput(weight, "x", {1, 3, 8});
  AddWeight(weight, "w", {4, 3, 3, 3});
  AddNode(weight, "Conv", {"x", "w"}, {"y"});
  AddOutput(weight, "y");
  EXPECT_THAT(ErrorOf(Bytes(weight)), StartsWith("bad.onnx: "));
}

// Found by mutating the bundled graphs: a Shape node with no input, and one
// whose input has no type (ONNX 1.12's data propagation crashed on it).
TEST(OnnxErrorsTest, ShapeNodesWithoutUsableInputs) {
  onnx::ModelProto no_input = ReluModel();
  AddNode(no_input, "Shape", {}, {"s"});
  AddNode(no_input, "Reshape", {"y", "s"}, {"z"});
  AddOutput(no_input, "z");
  EXPECT_THAT(ErrorOf(Bytes(no_input)), StartsWith("bad.onnx: "));

  onnx::ModelProto untyped = ReluModel();
  onnx::OperatorSetIdProto* custom = untyped.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  AddNode(untyped, "Mystery", {"y"}, {"m"})->set_domain("com.example");
  AddNode(untyped, "Shape", {"m"}, {"s"});
  AddNode(untyped, "Reshape", {"y", "s"}, {"z"});
  AddOutput(untyped, "z");
  EXPECT_THAT(ErrorOf(Bytes(untyped)), HasSubstr("no known size"));
  OnnxLoadOptions skip;
  skip.skip_unknown = true;
  EXPECT_EQ(ErrorOf(Bytes(untyped), skip), "");
}

TEST(OnnxErrorsTest, DanglingAndDuplicateTensors) {
  onnx::ModelProto dangling = ReluModel();
  AddNode(dangling, "Add", {"y", "ghost"}, {"z"})->set_name("adder");
  EXPECT_THAT(ErrorOf(Bytes(dangling)),
              HasSubstr("node 'adder' (#1, Add): input 'ghost' is not a graph "
                        "input"));
  onnx::ModelProto twice = ReluModel();
  AddNode(twice, "Relu", {"x"}, {"y"})->set_name("again");
  EXPECT_THAT(
      ErrorOf(Bytes(twice)),
      HasSubstr("node 'again' (#1, Relu): tensor 'y' is defined twice"));
  onnx::ModelProto missing_output = ReluModel();
  AddOutput(missing_output, "nowhere");
  EXPECT_THAT(ErrorOf(Bytes(missing_output)),
              HasSubstr("graph output 'nowhere' is never produced"));
}

TEST(OnnxErrorsTest, SizesThatOverflowAreNamed) {
  onnx::ModelProto model = EmptyModel();
  AddInput(model, "x", {int64_t{1} << 40, int64_t{1} << 40});
  AddNode(model, "Relu", {"x"}, {"y"});
  AddOutput(model, "y");
  EXPECT_THAT(ErrorOf(Bytes(model)),
              HasSubstr("data input 'x': its byte size overflows 64 bits"));
}

TEST(OnnxErrorsTest, ExternalDataMustExist) {
  onnx::ModelProto model = ReluModel();
  AddWeight(model, "w", {4});
  onnx::TensorProto* weight = model.mutable_graph()->mutable_initializer(0);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* location = weight->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  onnx::StringStringEntryProto* length = weight->add_external_data();
  length->set_key("length");
  length->set_value("16");
  const std::string bytes = Bytes(model);
  EXPECT_THAT(ErrorOf(bytes), HasSubstr("initializer 'w': external data in "
                                        "'weights.bin' cannot be found"));

  const std::filesystem::path directory =
      std::filesystem::path(::testing::TempDir()) / "onnx_external";
  std::filesystem::create_directories(directory);
  OnnxLoadOptions options;
  options.external_data_dir = directory.string();
  std::filesystem::remove(directory / "weights.bin");
  EXPECT_THAT(ErrorOf(bytes, options), HasSubstr("weights.bin' is missing"));
  std::ofstream(directory / "weights.bin") << "short";
  EXPECT_THAT(ErrorOf(bytes, options), HasSubstr("has 5 bytes, fewer than"));
  std::ofstream(directory / "weights.bin") << std::string(16, 'w');
  EXPECT_EQ(ErrorOf(bytes, options), "");
}

TEST(OnnxErrorsTest, ParseInputShape) {
  absl::StatusOr<InputShape> shape = ParseInputShape("input=1x3x224x224");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->name, "input");
  EXPECT_EQ(shape->dims, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_TRUE(ParseInputShape("scalar=").ok());
  EXPECT_THAT(ParseInputShape("1x3x224x224").status().message(),
              HasSubstr("no name= before the dimensions"));
  EXPECT_THAT(ParseInputShape("x=1x-3").status().message(),
              HasSubstr("'-3' is not a dimension"));
  EXPECT_THAT(ParseInputShape("x=1xx3").status().message(),
              HasSubstr("'' is not a dimension"));
}

TEST(OnnxErrorsTest, MissingFileIsNotFound) {
  absl::StatusOr<ModelGraph> model = LoadOnnxModel("/nonexistent.onnx", {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("/nonexistent.onnx"));
}

}  // namespace
}  // namespace tensormem
