// Loading an ONNX model: parse, check what this front end supports, bind the
// data inputs' shapes, run ONNX shape inference (onnx_shape_folding.cc), then
// build the graph (onnx_graph.cc).
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/onnx_internal.h"
#include "onnx/defs/schema.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/model/onnx_model.h"

namespace tensormem {
namespace {

absl::Status Invalid(std::string_view source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", source, what));
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return absl::StrFormat("node '%s' (#%d, %s)", node.name(), index,
                         node.op_type());
}

// The default domain's opset, within what the linked ONNX library knows.
absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& model,
                                     std::string_view source) {
  if (model.ir_version() > onnx::IR_VERSION) {
    return Invalid(source,
                   absl::StrFormat("IR version %d is newer than this "
                                   "ONNX library supports (%d)",
                                   model.ir_version(), onnx::IR_VERSION));
  }
  const auto& ranges =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto [lowest, highest] = ranges.at(onnx::ONNX_DOMAIN);
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (!opset.domain().empty() && opset.domain() != "ai.onnx") continue;
    if (opset.version() < lowest || opset.version() > highest) {
      return Invalid(source,
                     absl::StrFormat("opset %d of domain ai.onnx is not "
                                     "supported (this ONNX library knows "
                                     "%d..%d)",
                                     opset.version(), lowest, highest));
    }
    return opset.version();
  }
  return Invalid(source,
                 "opset_import names no version of the default "
                 "domain (ai.onnx)");
}

// Control flow runs subgraphs whose buffers this front end does not plan.
absl::Status RefuseSubgraphs(const onnx::GraphProto& graph,
                             std::string_view source) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g() || attribute.graphs_size() > 0) {
        return Invalid(
            source,
            absl::StrFormat("%s has a subgraph (attribute '%s'); control flow "
                            "(If, Loop, Scan) is not supported",
                            NodeLabel(node, i), attribute.name()));
      }
    }
  }
  return absl::OkStatus();
}

// ONNX 1.12's shape inference divides by these attributes without checking
// them (a zero stride is a SIGFPE in its conv/pool inference): refuse
// non-positive values first.
absl::Status CheckDivisorAttributes(const onnx::GraphProto& graph,
                                    std::string_view source) {
  static const absl::flat_hash_set<std::string> kPositive = {
      "strides", "dilations", "kernel_shape", "group", "blocksize"};
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (!kPositive.contains(attribute.name())) continue;
      bool positive = attribute.i() > 0 || attribute.ints_size() > 0;
      for (int64_t value : attribute.ints()) positive &= value > 0;
      if (!positive) {
        return Invalid(source,
                       absl::StrFormat("%s: attribute '%s' must be positive",
                                       NodeLabel(node, i), attribute.name()));
      }
    }
  }
  return absl::OkStatus();
}

// Weights are never read, but a model whose data file is gone is broken: say
// so rather than plan it silently.
absl::Status CheckExternalData(const onnx::GraphProto& graph,
                               const std::string& directory,
                               std::string_view source) {
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) continue;
    std::string location;
    uint64_t offset = 0, length = 0;
    for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
      if (entry.key() == "location") location = entry.value();
      // Malformed numbers read as 0: the checks below still catch a short file.
      if (entry.key() == "offset")
        offset = std::strtoull(entry.value().c_str(), nullptr, 10);
      if (entry.key() == "length")
        length = std::strtoull(entry.value().c_str(), nullptr, 10);
    }
    const std::string what =
        absl::StrFormat("initializer '%s': external data", tensor.name());
    if (location.empty()) return Invalid(source, what + " names no location");
    if (directory.empty()) {
      return Invalid(source, what + " in '" + location +
                                 "' cannot be found without the model's "
                                 "directory");
    }
    const std::filesystem::path path =
        std::filesystem::path(directory) / location;
    std::error_code error;
    const uint64_t size = std::filesystem::file_size(path, error);
    if (error) {
      return Invalid(source,
                     absl::StrFormat("%s file '%s' is missing (%s)", what,
                                     path.string(), error.message()));
    }
    if (offset > size || length > size - offset) {
      return Invalid(
          source, absl::StrFormat("%s file '%s' has %d bytes, fewer than "
                                  "offset %d + length %d",
                                  what, path.string(), size, offset, length));
    }
  }
  return absl::OkStatus();
}

// Writes a --input-shape into the graph input's declared type.
absl::Status BindShape(const InputShape& shape, onnx::ValueInfoProto& input,
                       std::string_view source) {
  if (!input.type().has_tensor_type()) {
    return Invalid(source,
                   absl::StrFormat("input '%s' is not a tensor", shape.name));
  }
  onnx::TypeProto_Tensor& tensor = *input.mutable_type()->mutable_tensor_type();
  onnx::TensorShapeProto& declared = *tensor.mutable_shape();
  if (tensor.has_shape() && declared.dim_size() != 0 &&
      declared.dim_size() != static_cast<int>(shape.dims.size())) {
    return Invalid(source, absl::StrFormat("input '%s' has rank %d; the given "
                                           "shape has %d dimensions",
                                           shape.name, declared.dim_size(),
                                           shape.dims.size()));
  }
  for (size_t d = 0; d < shape.dims.size(); ++d) {
    if (static_cast<int>(d) < declared.dim_size() &&
        declared.dim(d).has_dim_value() &&
        declared.dim(d).dim_value() != shape.dims[d]) {
      return Invalid(source,
                     absl::StrFormat("input '%s': dimension %d is fixed at %d, "
                                     "the given shape says %d",
                                     shape.name, d, declared.dim(d).dim_value(),
                                     shape.dims[d]));
    }
  }
  declared.clear_dim();
  for (int64_t dim : shape.dims) declared.add_dim()->set_dim_value(dim);
  return absl::OkStatus();
}

// The data inputs' names, their shapes bound in `graph`.
absl::StatusOr<absl::flat_hash_set<std::string>> BindDataInputs(
    onnx::GraphProto& graph, const OnnxLoadOptions& options,
    std::string_view source) {
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& tensor : graph.initializer())
    initializers.insert(tensor.name());
  absl::flat_hash_map<std::string, onnx::ValueInfoProto*> inputs;
  std::vector<std::string> candidates;
  for (onnx::ValueInfoProto& input : *graph.mutable_input()) {
    inputs[input.name()] = &input;
    if (!initializers.contains(input.name()))
      candidates.push_back(input.name());
  }
  absl::flat_hash_set<std::string> data;
  if (options.input_shapes.empty()) {
    data.insert(candidates.begin(), candidates.end());
    return data;
  }
  for (const InputShape& shape : options.input_shapes) {
    auto it = inputs.find(shape.name);
    if (it == inputs.end()) {
      return Invalid(
          source, absl::StrFormat("no graph input is named '%s'; "
                                  "inputs: %s",
                                  shape.name, absl::StrJoin(candidates, ", ")));
    }
    if (!data.insert(shape.name).second) {
      return Invalid(source,
                     absl::StrFormat("input '%s' is given twice", shape.name));
    }
    TM_RETURN_IF_ERROR(BindShape(shape, *it->second, source));
  }
  // Shapes recorded for the export's own input sizes would contradict the
  // bound ones: inference recomputes them from the inputs.
  graph.clear_value_info();
  for (onnx::ValueInfoProto& output : *graph.mutable_output()) {
    if (output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return data;
}

}  // namespace

absl::StatusOr<ModelGraph> LoadOnnxModelFromBytes(
    std::string_view bytes, const OnnxLoadOptions& options,
    std::string_view source) {
  if (bytes.size() > INT_MAX) {
    return Invalid(source,
                   "larger than 2 GiB, the protobuf limit; keep "
                   "weights in external data");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid(source,
                   "not an ONNX model: the protobuf does not parse "
                   "(truncated or corrupt file?)");
  }
  if (model.ir_version() <= 0 || !model.has_graph()) {
    return Invalid(source, "not an ONNX model: no ir_version or no graph");
  }
  TM_ASSIGN_OR_RETURN(const int64_t opset, DefaultOpset(model, source));
  TM_RETURN_IF_ERROR(RefuseSubgraphs(model.graph(), source));
  TM_RETURN_IF_ERROR(CheckDivisorAttributes(model.graph(), source));
  TM_RETURN_IF_ERROR(
      CheckExternalData(model.graph(), options.external_data_dir, source));
  TM_ASSIGN_OR_RETURN(const absl::flat_hash_set<std::string> data_inputs,
                      BindDataInputs(*model.mutable_graph(), options, source));
  TM_RETURN_IF_ERROR(onnx_internal::InferShapesThroughShapeArithmetic(
                         model, !options.skip_unknown, source)
                         .status());
  TM_ASSIGN_OR_RETURN(
      ModelGraph graph,
      onnx_internal::BuildModelGraph(model, data_inputs, options, source));
  graph.opset = opset;
  return graph;
}

absl::StatusOr<ModelGraph> LoadOnnxModel(const std::string& path,
                                         OnnxLoadOptions options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrFormat("%s: cannot open the model file", path));
  }
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (options.external_data_dir.empty()) {
    const std::filesystem::path parent =
        std::filesystem::path(path).parent_path();
    options.external_data_dir = parent.empty() ? "." : parent.string();
  }
  return LoadOnnxModelFromBytes(bytes.str(), options, path);
}

}  // namespace tensormem
