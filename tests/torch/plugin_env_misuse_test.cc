// Hostile options through the PyTorch plug-in's environment and its
// enable(**options) JSON: each is refused with a message naming the variable
// or key, never accepted as something else, and a refused JSON object
// changes nothing (docs/reliability.md).
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/core/units.h"
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
      {"TENSORMEM_MEMORY_LIMIT", "1.5"},
      {"TENSORMEM_SUB_ALLOCATOR", "simulated"},
      {"TENSORMEM_SUB_ALLOCATOR", "nope"},
      {"TENSORMEM_POLICY", "nope"},
      {"TENSORMEM_ALLOCATOR", "system"},
      {"TENSORMEM_GROWTH", "2"},
      {"TENSORMEM_GC", "maybe"},
  };
  for (const auto& [name, value] : cases) {
    absl::StatusOr<PluginOptions> options =
        OptionsFromEnvironment(GetenvFrom({{name, value}}));
    ASSERT_FALSE(options.ok()) << name << "=" << value << " accepted";
    // The variable, or the specification field it sets ("sub_allocator"),
    // and the value refused.
    const std::string field = absl::AsciiStrToLower(name.substr(10));
    const std::string message(options.status().message());
    EXPECT_TRUE(absl::StrContains(message, name) ||
                absl::StrContains(message, field))
        << message;
    EXPECT_THAT(message, HasSubstr(value));
  }
  std::printf("[sweep] plug-in environment misuse cases: %zu\n", cases.size());
}

TEST(PluginEnvMisuseTest, HostileJsonOptionsAreRefusedAndChangeNothing) {
  const std::vector<std::string> cases = {
      R"({"memory_limit": -1})",
      R"({"memory_limit": 1e400})",
      R"({"memory_limit": 1.5})",
      R"({"memory_limit": "nan"})",
      R"({"memory_limit": null})",
      R"({"allow_growth": "true"})",
      R"({"garbage_collection": 1})",
      R"({"sub_allocator": "simulated"})",
      R"({"sub_allocator": "nope"})",
      R"({"policy": "nope"})",
      R"({"policy": "pytorch", "sub_allocator": "simulated"})",
      R"({"policy": "pytorch", "config": "expandable_segments:True",
          "sub_allocator": "host"})",
      R"({"memory_limit": "1G", "coalescing": true})",
      R"({"trace_path": 7})",
      R"({"no_such_option": 1})",
      R"([1, 2])",
      std::string(100000, '['),
      "",
  };
  // Options that differ from the defaults in every field a case touches.
  PluginOptions before;
  before.allocator.policy = "tf";
  before.allocator.sub_allocator = "vmm";
  before.allocator.memory_limit = 3 * kGiB;
  before.trace_path = "before.trace";
  for (const std::string& json : cases) {
    PluginOptions options = before;
    EXPECT_FALSE(ApplyOptionsJson(json, &options).ok()) << json.substr(0, 60);
    EXPECT_EQ(options, before) << json.substr(0, 60) << " changed the options";
  }
  std::printf("[sweep] plug-in option misuse cases: %zu\n", cases.size());
}

TEST(PluginEnvMisuseTest, JsonErrorsNameTheKey) {
  for (const auto& [json, key] :
       std::vector<std::pair<std::string, std::string>>{
           {R"({"memory_limit": 1.5})", "memory_limit"},
           {R"({"sub_allocator": "nope"})", "sub_allocator"},
           {R"({"policy": "nope"})", "policy"},
           {R"({"growth": "yes"})", "growth"},
       }) {
    PluginOptions options;
    const absl::Status status = ApplyOptionsJson(json, &options);
    EXPECT_THAT(std::string(status.message()), HasSubstr(key)) << json;
  }
}

// Host memory cannot grow a segment in place: expandable segments over it are
// refused when the options are read (enable()), not at the first allocation.
TEST(PluginEnvMisuseTest, ExpandableSegmentsOverHostAreRefusedWhenRead) {
  absl::StatusOr<PluginOptions> options = OptionsFromEnvironment(
      GetenvFrom({{"TENSORMEM_POLICY", "pytorch"},
                  {"TENSORMEM_CONFIG", "expandable_segments:True"},
                  {"TENSORMEM_SUB_ALLOCATOR", "host"}}));
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(std::string(options.status().message()),
              HasSubstr("TENSORMEM_CONFIG"));
  EXPECT_THAT(std::string(options.status().message()),
              HasSubstr("expandable_segments"));
  EXPECT_TRUE(OptionsFromEnvironment(
                  GetenvFrom({{"TENSORMEM_POLICY", "pytorch"},
                              {"TENSORMEM_CONFIG", "expandable_segments:True"},
                              {"TENSORMEM_SUB_ALLOCATOR", "vmm"}}))
                  .ok());

  PluginOptions json_options;
  const absl::Status status = ApplyOptionsJson(
      R"({"policy": "pytorch", "config": "expandable_segments:True",
          "sub_allocator": "host"})",
      &json_options);
  EXPECT_THAT(std::string(status.message()), HasSubstr("config"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("expandable_segments"));
  EXPECT_TRUE(ApplyOptionsJson(R"({"policy": "pytorch", "sub_allocator": "vmm",
                                   "config": "expandable_segments:True"})",
                               &json_options)
                  .ok());
}

// Malformed JSON is located, not echoed (the text may be 100,000 brackets).
TEST(PluginEnvMisuseTest, MalformedJsonErrorsSayWhere) {
  for (const std::string& json :
       {std::string(R"({"memory_limit": 1)"), std::string(100000, '[')}) {
    PluginOptions options;
    const absl::Status status = ApplyOptionsJson(json, &options);
    EXPECT_THAT(std::string(status.message()), HasSubstr("line 1, column"));
    EXPECT_LT(status.message().size(), 300u);
  }
}

// Whole floats are byte counts as JSON writes them; fractions of a unit in a
// size text stay accepted.
TEST(PluginEnvMisuseTest, WholeSizesAreAccepted) {
  PluginOptions options;
  ASSERT_TRUE(ApplyOptionsJson(R"({"memory_limit": 4096.0})", &options).ok());
  EXPECT_EQ(options.allocator.memory_limit, 4096u);
  ASSERT_TRUE(ApplyOptionsJson(R"({"memory_limit": "1.5G"})", &options).ok());
  EXPECT_EQ(options.allocator.memory_limit, 3 * kGiB / 2);
}

}  // namespace
}  // namespace tensormem
