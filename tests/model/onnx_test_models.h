// Small ONNX models built in code for the loader's tests.
#ifndef TENSORMEM_TESTS_MODEL_ONNX_TEST_MODELS_H_
#define TENSORMEM_TESTS_MODEL_ONNX_TEST_MODELS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace tensormem::testing_onnx {

// A model of opset 17 with no nodes yet.
inline onnx::ModelProto EmptyModel(int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* id = model.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

// A float tensor type; a dimension given as -1 is the symbol "N".
inline void SetFloatType(onnx::ValueInfoProto* value,
                         std::initializer_list<int64_t> dims) {
  onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (int64_t dim : dims) {
    if (dim < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(dim);
    }
  }
}

inline void AddInput(onnx::ModelProto& model, const std::string& name,
                     std::initializer_list<int64_t> dims) {
  onnx::ValueInfoProto* input = model.mutable_graph()->add_input();
  input->set_name(name);
  SetFloatType(input, dims);
}

inline void AddOutput(onnx::ModelProto& model, const std::string& name) {
  onnx::ValueInfoProto* output = model.mutable_graph()->add_output();
  output->set_name(name);
  output->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
}

// A float weight with dims and no data (as the bundled models' weights).
inline void AddWeight(onnx::ModelProto& model, const std::string& name,
                      std::initializer_list<int64_t> dims) {
  onnx::TensorProto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims) tensor->add_dims(dim);
}

inline void AddInt64Initializer(onnx::ModelProto& model,
                                const std::string& name,
                                std::vector<int64_t> values) {
  onnx::TensorProto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) tensor->add_int64_data(v);
}

inline onnx::NodeProto* AddNode(onnx::ModelProto& model,
                                const std::string& op_type,
                                std::vector<std::string> inputs,
                                std::vector<std::string> outputs) {
  onnx::NodeProto* node = model.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(op_type + "_" + std::to_string(model.graph().node_size()));
  for (const std::string& name : inputs) node->add_input(name);
  for (const std::string& name : outputs) node->add_output(name);
  return node;
}

inline std::string Bytes(const onnx::ModelProto& model) {
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

}  // namespace tensormem::testing_onnx

#endif  // TENSORMEM_TESTS_MODEL_ONNX_TEST_MODELS_H_
