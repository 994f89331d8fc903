// Shape inference that sees through shape arithmetic: exporters compute
// reshape targets, slice bounds and expand shapes from Shape nodes at run time
// (Shape -> Gather -> Div -> Mul -> Slice). ONNX 1.12's inference reads such
// inputs only when they are constants, and its data propagation covers few
// ops. So each round evaluates the small integer tensors of shape arithmetic
// here (from inferred shapes, constants and what ONNX propagated), turns their
// nodes into Constant nodes, and infers again, until nothing changes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "model/onnx_internal.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace tensormem::onnx_internal {
namespace {

// Each round folds what the last one's shapes made known; chains are short.
constexpr int kMaxRounds = 16;
// Shape arithmetic deals in a handful of numbers; larger values stay.
constexpr size_t kMaxElements = 64;

// An int64 or bool tensor of rank 0 or 1.
struct Small {
  bool scalar = false;
  bool boolean = false;
  std::vector<int64_t> values;
};

Small Vector(std::vector<int64_t> values, bool boolean = false) {
  Small small;
  small.boolean = boolean;
  small.values = std::move(values);
  return small;
}

Small Scalar(int64_t value) {
  Small small = Vector({value});
  small.scalar = true;
  return small;
}

// An int64 operation; nullopt when it overflows or divides by zero.
using IntOp = std::function<std::optional<int64_t>(int64_t, int64_t)>;

using Known = std::unordered_map<std::string, Small>;
using Types = std::unordered_map<std::string, const onnx::TypeProto*>;

// Integer data, from the typed field or (as exporters write it) raw
// little-endian bytes.
std::vector<int64_t> TensorValues(const onnx::TensorProto& tensor,
                                  bool boolean) {
  if (!tensor.has_raw_data()) {
    return boolean ? std::vector<int64_t>(tensor.int32_data().begin(),
                                          tensor.int32_data().end())
                   : std::vector<int64_t>(tensor.int64_data().begin(),
                                          tensor.int64_data().end());
  }
  const std::string& raw = tensor.raw_data();
  const size_t width = boolean ? 1 : sizeof(int64_t);
  std::vector<int64_t> values(raw.size() / width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (boolean) {
      values[i] = raw[i] != 0;
    } else {
      std::memcpy(&values[i], raw.data() + i * width, width);
    }
  }
  return values;
}

std::optional<Small> FromTensor(const onnx::TensorProto& tensor) {
  const bool boolean = tensor.data_type() == onnx::TensorProto::BOOL;
  if ((tensor.data_type() != onnx::TensorProto::INT64 && !boolean) ||
      tensor.dims_size() > 1)
    return std::nullopt;
  Small small = Vector(TensorValues(tensor, boolean), boolean);
  small.scalar = tensor.dims_size() == 0;
  const int64_t expected = small.scalar ? 1 : tensor.dims(0);
  if (expected != static_cast<int64_t>(small.values.size()))
    return std::nullopt;
  return small;
}

const onnx::AttributeProto* Attribute(const onnx::NodeProto& node,
                                      const std::string& name) {
  for (const onnx::AttributeProto& attribute : node.attribute())
    if (attribute.name() == name) return &attribute;
  return nullptr;
}

// The input's fully known static shape, if inference found one.
std::optional<std::vector<int64_t>> StaticShape(const Types& types,
                                                const std::string& name) {
  auto it = types.find(name);
  if (it == types.end() || !it->second->tensor_type().has_shape())
    return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& dim : it->second->tensor_type().shape().dim()) {
    if (!dim.has_dim_value()) return std::nullopt;
    dims.push_back(dim.dim_value());
  }
  return dims;
}

// Clamps a Python-style index into [0, size] (ends) or [0, size - 1].
int64_t Clamp(int64_t index, int64_t size) {
  if (index < 0) index += size;
  return std::clamp<int64_t>(index, 0, size);
}

// Broadcasts a scalar or a one-element vector against the other operand.
std::optional<Small> Elementwise(const Small& a, const Small& b, const IntOp& f,
                                 bool boolean_result) {
  const size_t n = std::max(a.values.size(), b.values.size());
  if ((a.values.size() != n && a.values.size() != 1) ||
      (b.values.size() != n && b.values.size() != 1))
    return std::nullopt;
  Small out = Vector({}, boolean_result);
  out.scalar = a.scalar && b.scalar;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<int64_t> value =
        f(a.values[a.values.size() == 1 ? 0 : i],
          b.values[b.values.size() == 1 ? 0 : i]);
    if (!value) return std::nullopt;
    out.values.push_back(*value);
  }
  return out;
}

std::optional<Small> Arithmetic(const std::string& op, const Small& a,
                                const Small& b) {
  const auto checked = [](bool (*f)(int64_t, int64_t, int64_t*)) -> IntOp {
    return [f](int64_t x, int64_t y) -> std::optional<int64_t> {
      int64_t result;
      if (f(x, y, &result)) return std::nullopt;
      return result;
    };
  };
  if (op == "Add")
    return Elementwise(a, b, checked([](int64_t x, int64_t y, int64_t* r) {
                         return __builtin_add_overflow(x, y, r);
                       }),
                       false);
  if (op == "Sub")
    return Elementwise(a, b, checked([](int64_t x, int64_t y, int64_t* r) {
                         return __builtin_sub_overflow(x, y, r);
                       }),
                       false);
  if (op == "Mul")
    return Elementwise(a, b, checked([](int64_t x, int64_t y, int64_t* r) {
                         return __builtin_mul_overflow(x, y, r);
                       }),
                       false);
  if (op == "Equal")
    return Elementwise(
        a, b,
        [](int64_t x, int64_t y) -> std::optional<int64_t> { return x == y; },
        true);
  if (op == "Div")
    return Elementwise(
        a, b,
        [](int64_t x, int64_t y) -> std::optional<int64_t> {
          if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
          return x / y;
        },
        false);
  return std::nullopt;
}

std::optional<Small> Slice(const std::vector<const Small*>& in) {
  if (in.size() < 3 || in[0]->scalar || in[1]->values.size() != 1 ||
      in[2]->values.size() != 1)
    return std::nullopt;
  if (in.size() > 3 && in[3] != nullptr &&
      (in[3]->values.size() != 1 ||
       (in[3]->values[0] != 0 && in[3]->values[0] != -1)))
    return std::nullopt;
  const int64_t step = in.size() > 4 && in[4] != nullptr ? in[4]->values[0] : 1;
  const int64_t size = in[0]->values.size();
  if (step != 1) return std::nullopt;
  Small out;
  for (int64_t i = Clamp(in[1]->values[0], size);
       i < Clamp(in[2]->values[0], size); ++i)
    out.values.push_back(in[0]->values[i]);
  return out;
}

// Evaluates `node` when every input is known; nullopt for anything else.
std::optional<Small> Evaluate(const onnx::NodeProto& node, const Known& known,
                              const Types& types) {
  const std::string& op = node.op_type();
  if ((op == "Shape" || op == "Size") && node.input_size() == 1) {
    std::optional<std::vector<int64_t>> dims =
        StaticShape(types, node.input(0));
    if (!dims) return std::nullopt;
    if (op == "Size") {
      int64_t product = 1;
      for (int64_t dim : *dims) {
        if (dim < 0 || __builtin_mul_overflow(product, dim, &product))
          return std::nullopt;
      }
      return Scalar(product);
    }
    const int64_t rank = dims->size();
    const onnx::AttributeProto* start = Attribute(node, "start");
    const onnx::AttributeProto* end = Attribute(node, "end");
    const int64_t from = start ? Clamp(start->i(), rank) : 0;
    const int64_t to = end ? Clamp(end->i(), rank) : rank;
    Small out;
    for (int64_t d = from; d < to; ++d) out.values.push_back((*dims)[d]);
    return out;
  }
  std::vector<const Small*> in;
  for (const std::string& name : node.input()) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    auto it = known.find(name);
    if (it == known.end()) return std::nullopt;
    in.push_back(&it->second);
  }
  if (in.empty() || in[0] == nullptr) return std::nullopt;
  if (op == "Identity") return *in[0];
  if (op == "Cast") {
    const onnx::AttributeProto* to = Attribute(node, "to");
    if (to == nullptr || to->i() != onnx::TensorProto::INT64)
      return std::nullopt;
    Small out = *in[0];
    out.boolean = false;
    return out;
  }
  if (op == "Unsqueeze" && in[0]->scalar)
    return Vector(in[0]->values, in[0]->boolean);
  if (op == "Squeeze" && !in[0]->scalar && in[0]->values.size() == 1) {
    Small out = *in[0];
    out.scalar = true;
    return out;
  }
  if (op == "Concat") {
    Small out;
    for (const Small* part : in) {
      if (part == nullptr || part->scalar || part->boolean) return std::nullopt;
      out.values.insert(out.values.end(), part->values.begin(),
                        part->values.end());
    }
    return out;
  }
  if (op == "Gather" && in.size() == 2 && !in[0]->scalar) {
    Small out = Vector({}, in[0]->boolean);
    out.scalar = in[1]->scalar;
    const int64_t size = in[0]->values.size();
    for (int64_t index : in[1]->values) {
      if (index < -size || index >= size) return std::nullopt;
      out.values.push_back(in[0]->values[index < 0 ? index + size : index]);
    }
    return out;
  }
  if (op == "Slice") return Slice(in);
  if (op == "ConstantOfShape" && !in[0]->scalar) {
    const onnx::AttributeProto* value = Attribute(node, "value");
    std::optional<Small> fill = value ? FromTensor(value->t()) : std::nullopt;
    if (!fill || fill->values.size() != 1 || in[0]->values.size() != 1 ||
        in[0]->values[0] < 0 ||
        in[0]->values[0] > static_cast<int64_t>(kMaxElements))
      return std::nullopt;
    return Vector(std::vector<int64_t>(in[0]->values[0], fill->values[0]),
                  fill->boolean);
  }
  if (op == "Where" && in.size() == 3 && in[0]->boolean) {
    std::optional<Small> pick_a = Elementwise(
        *in[0], *in[1], [](int64_t c, int64_t a) { return c ? a : 0; }, false);
    std::optional<Small> pick_b = Elementwise(
        *in[0], *in[2], [](int64_t c, int64_t b) { return c ? 0 : b; }, false);
    if (!pick_a || !pick_b) return std::nullopt;
    return Arithmetic("Add", *pick_a, *pick_b);
  }
  if (in.size() == 2 && in[1] != nullptr) return Arithmetic(op, *in[0], *in[1]);
  return std::nullopt;
}

void MakeConstant(const Small& value, onnx::NodeProto& node) {
  onnx::TensorProto tensor;
  tensor.set_data_type(value.boolean ? onnx::TensorProto::BOOL
                                     : onnx::TensorProto::INT64);
  if (!value.scalar) tensor.add_dims(static_cast<int64_t>(value.values.size()));
  for (int64_t v : value.values) {
    if (value.boolean) {
      tensor.add_int32_data(v != 0);
    } else {
      tensor.add_int64_data(v);
    }
  }
  const std::string name = node.name(), output = node.output(0);
  node.Clear();
  node.set_name(name);
  node.set_op_type("Constant");
  node.add_output(output);
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name("value");
  attribute->set_type(onnx::AttributeProto::TENSOR);
  *attribute->mutable_t() = std::move(tensor);
}

// One pass over the nodes in order; returns how many became constants.
int FoldRound(onnx::ModelProto& model) {
  onnx::GraphProto& graph = *model.mutable_graph();
  Types types;
  for (const auto* list :
       {&graph.input(), &graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto& value : *list)
      types[value.name()] = &value.type();
  Known known;
  for (const onnx::TensorProto& tensor : graph.initializer())
    if (std::optional<Small> small = FromTensor(tensor))
      known[tensor.name()] = *small;
  int changed = 0;
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    if (node.output_size() != 1 || !node.domain().empty()) continue;
    if (node.op_type() == "Constant") {
      const onnx::AttributeProto* value = Attribute(node, "value");
      if (value == nullptr) continue;
      if (std::optional<Small> small = FromTensor(value->t()))
        known[node.output(0)] = *small;
      continue;
    }
    std::optional<Small> value = Evaluate(node, known, types);
    if (!value || value->values.size() > kMaxElements) continue;
    known[node.output(0)] = *value;
    MakeConstant(*value, node);
    ++changed;
  }
  return changed;
}

}  // namespace

absl::StatusOr<int> InferShapesThroughShapeArithmetic(onnx::ModelProto& model,
                                                      bool strict,
                                                      std::string_view source) {
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                            /*strict_mode_val=*/strict ? 1 : 0,
                                            /*data_prop_val=*/false);
  int folded = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    try {
      onnx::shape_inference::InferShapes(model, GuardedSchemas(), options);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: shape inference failed: %s", source, e.what()));
    }
    const int changed = FoldRound(model);
    if (changed == 0) return folded;
    folded += changed;
  }
  return folded;
}

}  // namespace tensormem::onnx_internal
