// Model files (.onnx) as input of `plan`, `arena` and `convert`: the shared
// flags and the loading, so each command only asks "is it a model?".
#ifndef TENSORMEM_CLI_MODEL_INPUT_H_
#define TENSORMEM_CLI_MODEL_INPUT_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem::cli {

struct ModelFlags {
  std::vector<std::string> input_shapes;  // "name=1x3x224x224"
  bool fuse_activations = false;
  bool skip_unknown = false;
};

// --input-shape, --fuse-activations, --skip-unknown.
void AddModelFlags(CLI::App& command, ModelFlags& flags);

// A path ending in .onnx, or a file that starts as an ONNX model does.
bool IsModelInput(const std::string& path);

struct LoadedModel {
  BufferSet buffers;
  ArenaGraph graph;
  nlohmann::ordered_json summary;  // counts, for --json
  std::string summary_line;        // the same, for people
};

// On failure sets `exit_code`: 2 for a bad flag, 1 for a bad model.
absl::StatusOr<LoadedModel> LoadModelInput(const std::string& path,
                                           const ModelFlags& flags,
                                           int& exit_code);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_MODEL_INPUT_H_
