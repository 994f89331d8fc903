// Reads and writes the arena graph JSON format (docs/design.md §3.3).
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/plan/arena/arena_graph.h"

namespace tensormem {
namespace {

using Json = nlohmann::json;

// Builds errors of the form "source: /json/pointer: what".
class JsonErrors {
 public:
  explicit JsonErrors(std::string_view source) : source_(source) {}
  absl::Status At(const std::string& pointer, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s: %s", source_, pointer, what));
  }

 private:
  std::string source_;
};

absl::StatusOr<std::vector<int>> ReadIndexList(const Json& parent,
                                               const char* key,
                                               const std::string& pointer,
                                               const JsonErrors& errors) {
  std::vector<int> list;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return list;
  const std::string here = pointer + "/" + key;
  if (!it->is_array()) return errors.At(here, "expected an array of indices");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& value = (*it)[i];
    if (!value.is_number_integer() || value.get<int64_t>() < -1 ||
        value.get<int64_t>() > INT32_MAX) {
      return errors.At(
          absl::StrFormat("%s/%d", here, i),
          "expected a tensor index (an integer >= -1), got " + value.dump());
    }
    list.push_back(static_cast<int>(value.get<int64_t>()));
  }
  return list;
}

absl::StatusOr<ArenaTensor> ReadTensor(const Json& value,
                                       const std::string& pointer,
                                       const JsonErrors& errors) {
  if (!value.is_object()) {
    return errors.At(pointer, "expected an object like {\"size\": 4096}");
  }
  ArenaTensor tensor;
  auto size = value.find("size");
  if (size == value.end()) return errors.At(pointer, "missing \"size\"");
  if (size->is_number_unsigned()) {
    tensor.bytes = size->get<uint64_t>();
  } else if (size->is_string()) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(size->get<std::string>());
    if (!bytes.ok()) {
      return errors.At(pointer + "/size",
                       std::string(bytes.status().message()));
    }
    tensor.bytes = *bytes;
  } else {
    return errors.At(
        pointer + "/size",
        "expected a byte count (integer >= 0 or \"4K\"), got " + size->dump());
  }
  auto type = value.find("type");
  if (type != value.end()) {
    std::optional<AllocationType> parsed;
    if (type->is_string())
      parsed = ParseAllocationType(type->get<std::string>());
    if (!parsed) {
      return errors.At(pointer + "/type",
                       "expected one of arena_rw, arena_rw_persistent, "
                       "mmap_ro, dynamic; got " +
                           type->dump());
    }
    tensor.type = *parsed;
  }
  return tensor;
}

absl::StatusOr<ArenaNode> ReadNode(const Json& value,
                                   const std::string& pointer,
                                   const JsonErrors& errors) {
  if (!value.is_object()) {
    return errors.At(pointer, "expected an object with inputs and outputs");
  }
  ArenaNode node;
  absl::StatusOr<std::vector<int>> list =
      ReadIndexList(value, "inputs", pointer, errors);
  if (!list.ok()) return list.status();
  node.inputs = *std::move(list);
  list = ReadIndexList(value, "outputs", pointer, errors);
  if (!list.ok()) return list.status();
  node.outputs = *std::move(list);
  list = ReadIndexList(value, "temporaries", pointer, errors);
  if (!list.ok()) return list.status();
  node.temporaries = *std::move(list);
  auto inplace = value.find("inplace");
  if (inplace != value.end() && !inplace->is_null()) {
    const std::string here = pointer + "/inplace";
    if (!inplace->is_object()) {
      return errors.At(here,
                       "expected {\"inputs\": [0], \"data_unmodified\": "
                       "false}");
    }
    list = ReadIndexList(*inplace, "inputs", here, errors);
    if (!list.ok()) return list.status();
    node.inplace.inputs = *std::move(list);
    auto unmodified = inplace->find("data_unmodified");
    if (unmodified != inplace->end()) {
      if (!unmodified->is_boolean()) {
        return errors.At(here + "/data_unmodified", "expected true or false");
      }
      node.inplace.data_unmodified = unmodified->get<bool>();
    }
  }
  return node;
}

}  // namespace

absl::StatusOr<ArenaGraph> ParseArenaGraphJson(std::string_view text,
                                               std::string_view source) {
  const JsonErrors errors(source);
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // also out_of_range: 1e999 numbers
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: not valid JSON: %s", source, e.what()));
  }
  if (!root.is_object()) {
    return errors.At("/", "expected an object with \"tensors\" and \"nodes\"");
  }
  ArenaGraph graph;
  auto tensors = root.find("tensors");
  if (tensors == root.end() || !tensors->is_array()) {
    return errors.At("/tensors", "expected an array of tensors");
  }
  for (size_t i = 0; i < tensors->size(); ++i) {
    absl::StatusOr<ArenaTensor> tensor =
        ReadTensor((*tensors)[i], absl::StrFormat("/tensors/%d", i), errors);
    if (!tensor.ok()) return tensor.status();
    graph.tensors.push_back(*tensor);
  }
  for (auto [key, list] : {std::pair{"inputs", &graph.inputs},
                           std::pair{"outputs", &graph.outputs},
                           std::pair{"variables", &graph.variables}}) {
    absl::StatusOr<std::vector<int>> read =
        ReadIndexList(root, key, "", errors);
    if (!read.ok()) return read.status();
    *list = *std::move(read);
  }
  auto nodes = root.find("nodes");
  if (nodes != root.end() && !nodes->is_null()) {
    if (!nodes->is_array()) return errors.At("/nodes", "expected an array");
    for (size_t i = 0; i < nodes->size(); ++i) {
      absl::StatusOr<ArenaNode> node =
          ReadNode((*nodes)[i], absl::StrFormat("/nodes/%d", i), errors);
      if (!node.ok()) return node.status();
      graph.nodes.push_back(*std::move(node));
    }
  }
  if (absl::Status valid = ValidateArenaGraph(graph); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", source, valid.message()));
  }
  return graph;
}

absl::StatusOr<ArenaGraph> ReadArenaGraphJson(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrFormat("%s: cannot open the graph file", path));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return ParseArenaGraphJson(text.str(), path);
}

namespace {

Json TensorJson(const ArenaTensor& tensor) {
  Json json = {{"size", tensor.bytes}};
  if (tensor.type != AllocationType::kArenaRw)
    json["type"] = std::string(AllocationTypeName(tensor.type));
  return json;
}

Json NodeJson(const ArenaNode& node) {
  Json json = {{"inputs", node.inputs}, {"outputs", node.outputs}};
  if (!node.temporaries.empty()) json["temporaries"] = node.temporaries;
  if (!node.inplace.inputs.empty()) {
    json["inplace"] = {{"inputs", node.inplace.inputs},
                       {"data_unmodified", node.inplace.data_unmodified}};
  }
  return json;
}

// "[\n  a,\n  b\n]": one element per line, each compact.
std::string ListLines(const std::vector<Json>& elements) {
  std::string text = "[";
  for (size_t i = 0; i < elements.size(); ++i)
    text += (i == 0 ? "\n  " : ",\n  ") + elements[i].dump();
  return text + (elements.empty() ? "]" : "\n]");
}

}  // namespace

std::string FormatArenaGraphJson(const ArenaGraph& graph) {
  std::vector<Json> tensors, nodes;
  for (const ArenaTensor& tensor : graph.tensors)
    tensors.push_back(TensorJson(tensor));
  for (const ArenaNode& node : graph.nodes) nodes.push_back(NodeJson(node));
  return absl::StrFormat(
      "{\"tensors\": %s,\n\"inputs\": %s, \"outputs\": %s, \"variables\": "
      "%s,\n\"nodes\": %s}\n",
      ListLines(tensors), Json(graph.inputs).dump(), Json(graph.outputs).dump(),
      Json(graph.variables).dump(), ListLines(nodes));
}

}  // namespace tensormem
