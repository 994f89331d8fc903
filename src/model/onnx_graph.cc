// From an ONNX graph with inferred shapes to ModelGraph: folding, tensors,
// buffers and lifetimes (see onnx_model.h for the rules).
#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/onnx_internal.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"

namespace tensormem::onnx_internal {
namespace {

// How many unresolved tensors an error lists before "and N more".
constexpr size_t kListedUnknown = 8;

bool IsActivation(const onnx::NodeProto& node) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Relu",      "Clip",      "Sigmoid", "HardSigmoid",
      "HardSwish", "LeakyRelu", "Tanh"};
  return (node.domain().empty() || node.domain() == "ai.onnx") &&
         kOps.contains(node.op_type());
}

// Ops whose output is known once shapes are: folded even on data inputs.
bool IsShapeQuery(const onnx::NodeProto& node) {
  return (node.domain().empty() || node.domain() == "ai.onnx") &&
         (node.op_type() == "Shape" || node.op_type() == "Size");
}

struct Shape {
  std::string element_type;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
};

// Why a tensor has no usable shape, or its shape.
using ShapeOrWhy = std::variant<Shape, std::string>;

ShapeOrWhy ShapeOf(int32_t data_type, const std::vector<int64_t>& dims,
                   const std::vector<std::string>& symbols) {
  Shape shape{onnx::TensorProto_DataType_Name(data_type), dims, 0};
  const std::optional<uint64_t> element = ElementBytes(data_type);
  if (!element) return "element type " + shape.element_type + " has no size";
  for (const std::string& symbol : symbols) {
    if (!symbol.empty()) return "dimension '" + symbol + "' is not bound";
  }
  std::optional<uint64_t> bytes = *element;
  for (int64_t dim : dims) {
    if (dim < 0) return absl::StrFormat("dimension %d is negative", dim);
    if (bytes) bytes = CheckedMul(*bytes, static_cast<uint64_t>(dim));
  }
  if (!bytes) return std::string("its byte size overflows 64 bits");
  shape.bytes = *bytes;
  return shape;
}

ShapeOrWhy ShapeOf(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return std::string("not a tensor");
  const onnx::TypeProto_Tensor& tensor = type.tensor_type();
  if (!tensor.has_shape()) return std::string("its rank is unknown");
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
  for (const onnx::TensorShapeProto_Dimension& dim : tensor.shape().dim()) {
    dims.push_back(dim.has_dim_value() ? dim.dim_value() : 0);
    symbols.push_back(dim.has_dim_value()
                          ? ""
                          : (dim.dim_param().empty() ? "?" : dim.dim_param()));
  }
  return ShapeOf(tensor.elem_type(), dims, symbols);
}

ShapeOrWhy ShapeOf(const onnx::TensorProto& tensor) {
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  return ShapeOf(tensor.data_type(), dims, {});
}

class GraphBuilder {
 public:
  GraphBuilder(const onnx::GraphProto& graph, const OnnxLoadOptions& options,
               std::string_view source)
      : graph_(graph), options_(options), source_(source) {}

  absl::StatusOr<ModelGraph> Build(
      const absl::flat_hash_set<std::string>& data_inputs) {
    IndexDeclaredTypes();
    TM_RETURN_IF_ERROR(AddInputs(data_inputs));
    for (int i = 0; i < graph_.node_size(); ++i)
      TM_RETURN_IF_ERROR(AddNode(graph_.node(i), i));
    TM_RETURN_IF_ERROR(ReportUnknown());
    TM_RETURN_IF_ERROR(MarkOutputs());
    AssignBuffers();
    return std::move(model_);
  }

 private:
  absl::Status Invalid(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", source_, what));
  }

  void IndexDeclaredTypes() {
    for (const auto* list :
         {&graph_.input(), &graph_.value_info(), &graph_.output()}) {
      for (const onnx::ValueInfoProto& value : *list)
        types_.emplace(value.name(), &value.type());
    }
    for (const onnx::TensorProto& tensor : graph_.initializer())
      initializers_.emplace(tensor.name(), &tensor);
    for (const onnx::SparseTensorProto& sparse : graph_.sparse_initializer())
      initializers_.emplace(sparse.values().name(), &sparse.values());
  }

  ShapeOrWhy DeclaredShape(const std::string& name) const {
    if (auto it = types_.find(name); it != types_.end())
      return ShapeOf(*it->second);
    if (auto it = initializers_.find(name); it != initializers_.end())
      return ShapeOf(*it->second);
    return std::string("shape inference found no type");
  }

  int AddTensor(const std::string& name, ModelTensorRole role,
                const Shape& shape) {
    model_.tensors.push_back({.name = name,
                              .role = role,
                              .element_type = shape.element_type,
                              .dims = shape.dims,
                              .bytes = shape.bytes});
    const int index = static_cast<int>(model_.tensors.size()) - 1;
    index_[name] = index;
    return index;
  }

  absl::Status AddInputs(const absl::flat_hash_set<std::string>& data_inputs) {
    for (const onnx::ValueInfoProto& input : graph_.input()) {
      if (!data_inputs.contains(input.name())) {
        constants_.insert(input.name());
        continue;
      }
      const ShapeOrWhy shape = ShapeOf(input.type());
      if (const std::string* why = std::get_if<std::string>(&shape)) {
        if (!options_.skip_unknown) {
          return Invalid(absl::StrFormat(
              "data input '%s': %s; give it with --input-shape %s=1x3x224x224",
              input.name(), *why, input.name()));
        }
        model_.skipped_unknown.push_back(input.name());
        skipped_.insert(input.name());
        continue;
      }
      model_.inputs.push_back(AddTensor(
          input.name(), ModelTensorRole::kDataInput, std::get<Shape>(shape)));
    }
    for (const auto& [name, tensor] : initializers_) {
      if (!data_inputs.contains(name)) constants_.insert(name);
    }
    return absl::OkStatus();
  }

  // A parameter or folded constant read by a kept node; -1 if it has no size.
  int ParameterIndex(const std::string& name) {
    if (auto it = index_.find(name); it != index_.end()) return it->second;
    const ShapeOrWhy shape = DeclaredShape(name);
    Shape known;
    if (const Shape* s = std::get_if<Shape>(&shape)) known = *s;
    return AddTensor(name, ModelTensorRole::kParameter, known);
  }

  absl::Status CheckDefined(const onnx::NodeProto& node, int position) {
    for (const std::string& name : node.input()) {
      if (name.empty() || defined_.contains(name) ||
          constants_.contains(name) || index_.contains(name) ||
          skipped_.contains(name))
        continue;
      return Invalid(absl::StrFormat(
          "node '%s' (#%d, %s): input '%s' is not a graph input, an "
          "initializer or an output of an earlier node",
          node.name(), position, node.op_type(), name));
    }
    for (const std::string& name : node.output()) {
      if (name.empty()) continue;
      if (!defined_.insert(name).second || constants_.contains(name) ||
          index_.contains(name)) {
        return Invalid(
            absl::StrFormat("node '%s' (#%d, %s): tensor '%s' is defined twice",
                            node.name(), position, node.op_type(), name));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddNode(const onnx::NodeProto& node, int position) {
    TM_RETURN_IF_ERROR(CheckDefined(node, position));
    const bool folded =
        IsShapeQuery(node) ||
        std::all_of(node.input().begin(), node.input().end(),
                    [&](const std::string& name) {
                      return name.empty() || constants_.contains(name);
                    });
    if (folded) {
      ++model_.folded_nodes;
      for (const std::string& name : node.output()) constants_.insert(name);
      return absl::OkStatus();
    }
    original_.push_back(position);
    ModelNode kept;
    kept.name = node.name();
    kept.op_type = node.op_type();
    for (const std::string& name : node.input()) {
      if (name.empty() || skipped_.contains(name)) {
        kept.inputs.push_back(-1);
      } else {
        kept.inputs.push_back(constants_.contains(name) ? ParameterIndex(name)
                                                        : index_.at(name));
      }
    }
    for (const std::string& name : node.output()) {
      if (name.empty()) {
        kept.outputs.push_back(-1);
        continue;
      }
      const ShapeOrWhy shape = DeclaredShape(name);
      if (const std::string* why = std::get_if<std::string>(&shape)) {
        unknown_.push_back(absl::StrFormat("'%s' (output of node '%s', %s: %s)",
                                           name, node.name(), node.op_type(),
                                           *why));
        model_.skipped_unknown.push_back(name);
        skipped_.insert(name);
        kept.outputs.push_back(-1);
        continue;
      }
      kept.outputs.push_back(AddTensor(name, ModelTensorRole::kIntermediate,
                                       std::get<Shape>(shape)));
    }
    model_.nodes.push_back(std::move(kept));
    return absl::OkStatus();
  }

  absl::Status ReportUnknown() const {
    if (unknown_.empty() || options_.skip_unknown) return absl::OkStatus();
    std::vector<std::string> listed(
        unknown_.begin(),
        unknown_.begin() + std::min(unknown_.size(), kListedUnknown));
    if (unknown_.size() > kListedUnknown)
      listed.push_back(
          absl::StrFormat("and %d more", unknown_.size() - kListedUnknown));
    return Invalid(absl::StrFormat(
        "%d tensors have no known size: %s; bind the inputs' dimensions with "
        "--input-shape, or plan the rest with --skip-unknown",
        unknown_.size(), absl::StrJoin(listed, ", ")));
  }

  absl::Status MarkOutputs() {
    for (const onnx::ValueInfoProto& output : graph_.output()) {
      const std::string& name = output.name();
      if (!defined_.contains(name) && !constants_.contains(name) &&
          !index_.contains(name) && !skipped_.contains(name)) {
        return Invalid("graph output '" + name + "' is never produced");
      }
      auto it = index_.find(name);
      if (it != index_.end() &&
          model_.tensors[it->second].role == ModelTensorRole::kIntermediate)
        model_.outputs.push_back(it->second);
    }
    return absl::OkStatus();
  }

  // Fusable: an activation whose input 0 is an intermediate of the same size
  // that nothing else reads and that is not a graph output.
  bool FusesInPlace(const ModelNode& node, int position,
                    const std::vector<int>& readers,
                    const std::vector<bool>& is_output) const {
    if (!options_.fuse_activations) return false;
    if (!IsActivation(graph_.node(original_[position]))) return false;
    if (node.inputs.empty() || node.outputs.size() != 1) return false;
    const int in = node.inputs[0], out = node.outputs[0];
    if (in < 0 || out < 0) return false;
    const ModelTensor& input = model_.tensors[in];
    return input.role == ModelTensorRole::kIntermediate && readers[in] == 1 &&
           !is_output[in] && input.bytes == model_.tensors[out].bytes;
  }

  // Output `t` of node `k` shares its input's buffer when the node runs in
  // place, else gets a new buffer.
  void AssignOutputBuffer(const ModelNode& node, int k, int t) {
    int& buffer = model_.tensors[t].buffer;
    buffer = node.in_place ? model_.tensors[node.inputs[0]].buffer
                           : static_cast<int>(model_.buffers.size());
    if (!node.in_place) {
      ModelBuffer& added = model_.buffers.emplace_back();
      added.bytes = model_.tensors[t].bytes;
      added.first_node = added.last_node = k;
    }
    model_.buffers[buffer].tensors.push_back(t);
  }

  void AssignBuffers() {
    const int n = static_cast<int>(model_.nodes.size());
    std::vector<int> readers(model_.tensors.size(), 0);
    std::vector<bool> is_output(model_.tensors.size(), false);
    for (int t : model_.outputs) is_output[t] = true;
    for (const ModelNode& node : model_.nodes) {
      for (int t : node.inputs)
        if (t >= 0) ++readers[t];
    }
    for (int k = 0; k < n; ++k) {
      ModelNode& node = model_.nodes[k];
      node.in_place = FusesInPlace(node, k, readers, is_output);
      model_.fused_activations += node.in_place;
      for (int t : node.outputs) {
        if (t >= 0) AssignOutputBuffer(node, k, t);
      }
      for (int t : node.inputs) {
        if (t >= 0 && model_.tensors[t].buffer >= 0)
          model_.buffers[model_.tensors[t].buffer].last_node = k;
      }
    }
    for (int t : model_.outputs) {
      ModelBuffer& buffer = model_.buffers[model_.tensors[t].buffer];
      buffer.graph_output = true;
      buffer.last_node = std::max(n - 1, 0);
    }
  }

  const onnx::GraphProto& graph_;
  const OnnxLoadOptions& options_;
  const std::string source_;
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types_;
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers_;
  // Parameters, initializers and outputs of folded nodes.
  absl::flat_hash_set<std::string> constants_;
  // Outputs of every node seen so far (folded or kept).
  absl::flat_hash_set<std::string> defined_;
  absl::flat_hash_set<std::string> skipped_;
  absl::flat_hash_map<std::string, int> index_;  // name -> tensor index
  std::vector<int> original_;  // kept node -> position in the file
  std::vector<std::string> unknown_;
  ModelGraph model_;
};

}  // namespace

std::optional<uint64_t> ElementBytes(int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
      return 1;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::FLOAT:
      return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<ModelGraph> BuildModelGraph(
    const onnx::ModelProto& model,
    const absl::flat_hash_set<std::string>& data_inputs,
    const OnnxLoadOptions& options, std::string_view source) {
  return GraphBuilder(model.graph(), options, source).Build(data_inputs);
}

}  // namespace tensormem::onnx_internal
