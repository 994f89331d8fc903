// ONNX front end: a model file in, the buffers an inference runtime would
// plan out (docs/onnx.md).
//
// The loader parses the protobuf, binds the data inputs' shapes, runs ONNX
// shape inference, folds nodes that compute only from parameters and
// constants (Constant, Shape arithmetic, Identity of a weight...), and keeps
// the rest in the file's (topological) order. Every output of a kept node is
// an intermediate, live from its producer to its last reader (closed); graph
// outputs live to the last node. With `fuse_activations` an elementwise
// activation whose input has no other reader writes in place: its output is
// its input's buffer.
//
//   OnnxLoadOptions options;
//   options.fuse_activations = true;
//   absl::StatusOr<ModelGraph> model =
//       LoadOnnxModel("data/onnx/mobilenet_v2.onnx", options);
//   BufferSet set = ModelBufferSet(*model);   // 65 buffers, about 26 MB
//   ArenaGraph graph = ModelArenaGraph(*model);
#ifndef TENSORMEM_MODEL_ONNX_MODEL_H_
#define TENSORMEM_MODEL_ONNX_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {

// A data input's shape, e.g. "input=1x3x224x224".
struct InputShape {
  std::string name;
  std::vector<int64_t> dims;
};

// Parses "name=1x3x224x224" (a rank-0 input: "name=").
absl::StatusOr<InputShape> ParseInputShape(std::string_view text);

struct OnnxLoadOptions {
  // The data inputs, with their shapes (binding dynamic dimensions). Empty:
  // every graph input that is not an initializer, with its declared shape.
  std::vector<InputShape> input_shapes;
  // Elementwise activations write in place (see the file comment).
  bool fuse_activations = false;
  // Leave out tensors whose shape cannot be resolved instead of failing.
  bool skip_unknown = false;
  // Directory that external-data locations are relative to; empty (as for
  // bytes with no file) makes any external-data initializer an error.
  std::string external_data_dir;
};

enum class ModelTensorRole { kDataInput, kParameter, kIntermediate };

struct ModelTensor {
  std::string name;
  ModelTensorRole role = ModelTensorRole::kIntermediate;
  std::string element_type;  // ONNX name: "FLOAT", "INT64", ...
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
  int buffer = -1;  // intermediates: index into ModelGraph::buffers
};

// One block of memory: an intermediate, plus the activations fused into it.
struct ModelBuffer {
  uint64_t bytes = 0;
  int first_node = 0;        // producer
  int last_node = 0;         // last reader (closed)
  std::vector<int> tensors;  // indices into ModelGraph::tensors
  bool graph_output = false;
};

struct ModelNode {
  std::string name;
  std::string op_type;
  std::vector<int> inputs;   // tensor indices; -1 = absent or skipped
  std::vector<int> outputs;  // tensor indices; -1 = absent or skipped
  bool in_place = false;     // a fused activation
};

struct ModelGraph {
  std::vector<ModelTensor> tensors;  // data inputs, parameters, intermediates
  std::vector<ModelNode> nodes;      // kept nodes, execution order
  std::vector<ModelBuffer> buffers;  // by producer, then output position
  std::vector<int> inputs;           // data inputs (tensor indices)
  std::vector<int> outputs;          // graph outputs that are intermediates
  int64_t opset = 0;                 // of the default (ai.onnx) domain
  int folded_nodes = 0;
  int fused_activations = 0;
  // Tensors left out under skip_unknown, by name.
  std::vector<std::string> skipped_unknown;
};

// Loads a serialized ModelProto; `source` names it in errors. Never crashes on
// malformed input: truncated or corrupt bytes, unsupported opsets, subgraphs
// (If, Loop, Scan), unresolvable shapes and missing external data are errors
// naming the node, tensor or field. The entry point of the fuzz target.
absl::StatusOr<ModelGraph> LoadOnnxModelFromBytes(
    std::string_view bytes, const OnnxLoadOptions& options,
    std::string_view source = "<onnx>");

// Reads the file; external data is looked up next to it unless
// options.external_data_dir says otherwise.
absl::StatusOr<ModelGraph> LoadOnnxModel(const std::string& path,
                                         OnnxLoadOptions options);

// True for a path ending in ".onnx" or bytes that start as a ModelProto does
// (field 1, ir_version, as a varint: no text format starts with 0x08).
// Inline: usable in builds without ONNX, to say why a model is refused.
inline bool LooksLikeOnnx(std::string_view path, std::string_view first_bytes) {
  return path.ends_with(".onnx") ||
         (!first_bytes.empty() && first_bytes[0] == '\x08');
}

// One buffer per ModelBuffer, ids 0..n-1, TFLite's closed convention.
BufferSet ModelBufferSet(const ModelGraph& model);

// The arena planner's graph: the buffers (arena_rw), then the data inputs
// (arena_rw, graph inputs), then the parameters (mmap_ro). A fused activation
// is a node that reads its buffer and writes nothing new.
ArenaGraph ModelArenaGraph(const ModelGraph& model);

}  // namespace tensormem

#endif  // TENSORMEM_MODEL_ONNX_MODEL_H_
