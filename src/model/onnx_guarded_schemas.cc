// ONNX's own shape inference, guarded against the models that crash it.
//
// ONNX 1.12 (Debian's libonnx) reads past the end of its padding list when a
// convolution's or pooling's kernel has more spatial axes than its input
// (a Conv over a rank-2 input with a 4-D weight dereferences a null pointer),
// and a file from anywhere must get an error, not a crash. The registry below
// hands ONNX's inference the same schemas, except that the spatial operators
// first check that their input, weight and attributes agree on the number of
// spatial axes, and fail inference (an exception ONNX reports as an error)
// when they do not. A valid model passes every check unchanged.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/onnx_internal.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"

namespace tensormem::onnx_internal {
namespace {

// Where a spatial operator's data and weight inputs are (-1: no weight).
struct SpatialInputs {
  int data;
  int weight;
};

std::optional<SpatialInputs> SpatialOperator(const std::string& op_type) {
  static const auto* const kOperators =
      new std::map<std::string, SpatialInputs>{
          {"Conv", {0, 1}},          {"ConvInteger", {0, 1}},
          {"ConvTranspose", {0, 1}}, {"QLinearConv", {0, 3}},
          {"AveragePool", {0, -1}},  {"MaxPool", {0, -1}},
          {"LpPool", {0, -1}},       {"MaxUnpool", {0, -1}}};
  auto found = kOperators->find(op_type);
  if (found == kOperators->end()) return std::nullopt;
  return found->second;
}

// The rank of input `index` when ONNX knows its shape.
std::optional<int> KnownRank(onnx::InferenceContext& context, int index) {
  if (index < 0 || static_cast<size_t>(index) >= context.getNumInputs()) {
    return std::nullopt;
  }
  const onnx::TypeProto* type = context.getInputType(index);
  if (type == nullptr || !type->has_tensor_type() ||
      !type->tensor_type().has_shape()) {
    return std::nullopt;
  }
  return type->tensor_type().shape().dim_size();
}

void CheckAttributeLength(onnx::InferenceContext& context,
                          const std::string& op_type, const char* name,
                          int expected) {
  const onnx::AttributeProto* attribute = context.getAttribute(name);
  if (attribute != nullptr && attribute->ints_size() != expected) {
    fail_shape_inference(op_type, ": attribute ", name, " has ",
                         attribute->ints_size(), " values where the input's ",
                         "spatial axes make ", expected);
  }
}

// Throws (as ONNX's own checks do) when the spatial axes disagree.
void CheckSpatialAxes(onnx::InferenceContext& context,
                      const std::string& op_type, SpatialInputs inputs) {
  const std::optional<int> rank = KnownRank(context, inputs.data);
  if (!rank) return;  // ONNX infers nothing without the input's shape
  if (*rank < 3) {
    fail_shape_inference(op_type, ": input of rank ", *rank,
                         " (it needs a batch, a channel and at least one ",
                         "spatial axis)");
  }
  const int spatial = *rank - 2;
  const std::optional<int> weight_rank = KnownRank(context, inputs.weight);
  if (weight_rank && *weight_rank != *rank) {
    fail_shape_inference(op_type, ": weight of rank ", *weight_rank,
                         " for an input of rank ", *rank);
  }
  for (const char* name : {"kernel_shape", "strides", "dilations",
                           "output_padding", "output_shape"}) {
    CheckAttributeLength(context, op_type, name, spatial);
  }
  CheckAttributeLength(context, op_type, "pads", 2 * spatial);
}

class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, int max_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    if (schema == nullptr || !schema->has_type_and_shape_inference_function())
      return schema;
    const std::optional<SpatialInputs> inputs = SpatialOperator(key);
    if (!inputs || !(domain.empty() || domain == "ai.onnx")) return schema;
    std::lock_guard<std::mutex> lock(mutex_);
    auto [slot, added] = guarded_.try_emplace(schema);
    if (added) {
      slot->second = std::make_unique<onnx::OpSchema>(*schema);
      onnx::InferenceFunction infer =
          schema->GetTypeAndShapeInferenceFunction();
      slot->second->TypeAndShapeInferenceFunction(
          [key, inputs = *inputs, infer](onnx::InferenceContext& context) {
            CheckSpatialAxes(context, key, inputs);
            infer(context);
          });
    }
    return slot->second.get();
  }

 private:
  mutable std::mutex mutex_;
  // One guarded copy per schema (operator and version) asked for.
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>>
      guarded_;
};

}  // namespace

const onnx::ISchemaRegistry* GuardedSchemas() {
  static const auto* const registry = new GuardedSchemaRegistry;
  return registry;
}

}  // namespace tensormem::onnx_internal
