// Hostile options through the PyTorch plug-in's environment and its
// enable(**options) JSON: each is refused with a message naming the variable
// or key, never accepted as something else (docs/reliability.md). Open
// findings are listed there: a fractional JSON memory_limit is accepted, an
// unknown TENSORMEM_SUB_ALLOCATOR passes OptionsFromEnvironment, and a
// refused JSON sub_allocator still changes the options.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "torch/plugin_options.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

auto GetenvFrom(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  };
}

TEST(PluginEnvMisuseTest, HostileVariablesAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"TENSORMEM_MEMORY_LIMIT", "-1"},
      {"TENSORMEM_MEMORY_LIMIT", "nan"},
      {"TENSORMEM_MEMORY_LIMIT", "inf"},
      {"TENSORMEM_MEMORY_LIMIT", "16E"},
      {"TENSORMEM_MEMORY_LIMIT", "99999999999999999999"},
      {"TENSORMEM_MEMORY_LIMIT", "1e400"},
      {"TENSORMEM_MEMORY_LIMIT", "18446744073709551616"},
      {"TENSORMEM_SUB_ALLOCATOR", "simulated"},
      {"TENSORMEM_GROWTH", "2"},
      {"TENSORMEM_GC", "maybe"},
  };
  for (const auto& [name, value] : cases) {
    absl::StatusOr<PluginOptions> options =
        OptionsFromEnvironment(GetenvFrom({{name, value}}));
    ASSERT_FALSE(options.ok()) << name << "=" << value << " accepted";
    // The variable, or the specification field it sets ("sub_allocator").
    const std::string field = absl::AsciiStrToLower(name.substr(10));
    const std::string message(options.status().message());
    EXPECT_TRUE(absl::StrContains(message, name) ||
                absl::StrContains(message, field))
        << message;
  }
  std::printf("[sweep] plug-in environment misuse cases: %zu\n", cases.size());
}

TEST(PluginEnvMisuseTest, HostileJsonOptionsAreRefused) {
  const std::vector<std::string> cases = {
      R"({"memory_limit": -1})",
      R"({"memory_limit": 1e400})",
      R"({"memory_limit": "nan"})",
      R"({"memory_limit": null})",
      R"({"allow_growth": "true"})",
      R"({"garbage_collection": 1})",
      R"({"sub_allocator": "simulated"})",
      R"({"trace_path": 7})",
      R"({"no_such_option": 1})",
      R"([1, 2])",
      std::string(100000, '['),
      "",
  };
  for (const std::string& json : cases) {
    PluginOptions options;
    EXPECT_FALSE(ApplyOptionsJson(json, &options).ok()) << json.substr(0, 60);
  }
  std::printf("[sweep] plug-in option misuse cases: %zu\n", cases.size());
}

}  // namespace
}  // namespace tensormem
