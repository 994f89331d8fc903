// Loads .onnx inputs for the commands (docs/onnx.md); without ONNX support in
// the build, says so.
#include "cli/model_input.h"

#include <fstream>

#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/model/onnx_model.h"

namespace tensormem::cli {

void AddModelFlags(CLI::App& command, ModelFlags& flags) {
  command.add_option("--input-shape", flags.input_shapes,
                     ".onnx: a data input and its shape, e.g. "
                     "input=1x3x224x224 (repeatable; binds dynamic "
                     "dimensions)");
  command.add_flag("--fuse-activations", flags.fuse_activations,
                   ".onnx: activations whose input has one reader write in "
                   "place");
  command.add_flag("--skip-unknown", flags.skip_unknown,
                   ".onnx: leave out tensors of unknown shape instead of "
                   "failing");
}

bool IsModelInput(const std::string& path) {
  char first = 0;
  std::ifstream file(path, std::ios::binary);
  const bool read = file && file.read(&first, 1);
  return LooksLikeOnnx(path, read ? std::string_view(&first, 1) : "");
}

#ifdef TENSORMEM_WITH_ONNX

namespace {

LoadedModel Summarize(const ModelGraph& model) {
  LoadedModel loaded;
  loaded.buffers = ModelBufferSet(model);
  loaded.graph = ModelArenaGraph(model);
  uint64_t total = 0;
  for (const ModelBuffer& buffer : model.buffers) total += buffer.bytes;
  loaded.summary = {{"opset", model.opset},
                    {"nodes", model.nodes.size()},
                    {"folded_nodes", model.folded_nodes},
                    {"fused_activations", model.fused_activations},
                    {"intermediates", model.buffers.size()},
                    {"intermediate_bytes", total},
                    {"skipped_unknown", model.skipped_unknown.size()}};
  loaded.summary_line = absl::StrFormat(
      "model: %d nodes (%d folded, %d activations fused), %d intermediates, "
      "%s in total",
      model.nodes.size(), model.folded_nodes, model.fused_activations,
      model.buffers.size(), HumanBytes(total));
  if (!model.skipped_unknown.empty()) {
    loaded.summary_line += absl::StrFormat(
        "; %d tensors of unknown shape left out", model.skipped_unknown.size());
  }
  return loaded;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModelInput(const std::string& path,
                                           const ModelFlags& flags,
                                           int& exit_code) {
  OnnxLoadOptions options;
  options.fuse_activations = flags.fuse_activations;
  options.skip_unknown = flags.skip_unknown;
  for (const std::string& text : flags.input_shapes) {
    absl::StatusOr<InputShape> shape = ParseInputShape(text);
    if (!shape.ok()) {
      exit_code = 2;
      return absl::InvalidArgumentError(
          absl::StrFormat("--input-shape: %s", shape.status().message()));
    }
    options.input_shapes.push_back(*std::move(shape));
  }
  exit_code = 1;
  absl::StatusOr<ModelGraph> model = LoadOnnxModel(path, options);
  if (!model.ok()) return model.status();
  return Summarize(*model);
}

#else

absl::StatusOr<LoadedModel> LoadModelInput(const std::string& path,
                                           const ModelFlags& /*flags*/,
                                           int& exit_code) {
  exit_code = 1;
  return absl::UnimplementedError(absl::StrFormat(
      "%s: this tensormem was built without ONNX support (install "
      "libonnx-dev and libprotobuf-dev, then reconfigure)",
      path));
}

#endif

}  // namespace tensormem::cli
