// Shared between the ONNX loader's files; ONNX's own headers stay out of the
// public API.
#ifndef TENSORMEM_MODEL_ONNX_INTERNAL_H_
#define TENSORMEM_MODEL_ONNX_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "tensormem/model/onnx_model.h"

namespace onnx {
class ISchemaRegistry;
}  // namespace onnx

namespace tensormem::onnx_internal {

// Bytes per element of an ONNX data type; nullopt for strings and unknowns.
std::optional<uint64_t> ElementBytes(int32_t data_type);

// ONNX's operator schemas, with the spatial operators' inference guarded
// against inputs that crash ONNX 1.12 (kernel axes the input lacks): such a
// node fails inference with an error instead.
const onnx::ISchemaRegistry* GuardedSchemas();

// Runs ONNX shape inference with data propagation; nodes whose int64 outputs
// it computed (shape arithmetic) become Constant nodes and inference runs
// again, so that Reshape, Slice, Resize... see the values. Returns how many
// nodes were turned into constants. `strict` makes node-level inference
// errors fatal.
absl::StatusOr<int> InferShapesThroughShapeArithmetic(onnx::ModelProto& model,
                                                      bool strict,
                                                      std::string_view source);

// Builds the graph from a model whose shapes were inferred. `data_inputs`
// names the graph inputs that are data; every other input and initializer is
// a parameter.
absl::StatusOr<ModelGraph> BuildModelGraph(
    const onnx::ModelProto& model,
    const absl::flat_hash_set<std::string>& data_inputs,
    const OnnxLoadOptions& options, std::string_view source);

}  // namespace tensormem::onnx_internal

#endif  // TENSORMEM_MODEL_ONNX_INTERNAL_H_
