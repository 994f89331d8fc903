// Every `tensormem <command> --help` example names input files that exist in
// the repository (or none, for a command that reads no file), and runs: users
// can paste it from the source tree.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/cli_runner.h"
#include "gtest/gtest.h"

namespace tensormem::testing {
namespace {

// Subcommand names as `tensormem --help` lists them (two-space indented rows
// after the SUBCOMMANDS heading).
std::vector<std::string> Subcommands() {
  const CommandOutput help = RunTensormem("--help");
  std::vector<std::string> names;
  bool in_list = false;
  for (absl::string_view line : absl::StrSplit(help.out, '\n')) {
    if (absl::StartsWithIgnoreCase(line, "subcommands")) {
      in_list = true;
    } else if (in_list && absl::StartsWith(line, "  ") && line.size() > 2 &&
               line[2] != ' ') {
      names.emplace_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

// The example command lines of `help` for `command` ("tensormem <command>
// ...").
std::vector<std::vector<std::string>> Examples(const std::string& help,
                                               const std::string& command) {
  std::vector<std::vector<std::string>> examples;
  const std::string start = "tensormem " + command + " ";
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    const size_t at = line.find(start);
    // The usage line ("Usage: tensormem plan [OPTIONS] input") is no example.
    if (at == absl::string_view::npos || absl::StartsWith(line, "Usage")) {
      continue;
    }
    examples.push_back(absl::StrSplit(line.substr(at + start.size()), ' ',
                                      absl::SkipWhitespace()));
  }
  return examples;
}

// The input an example reads: its first positional argument, or the value of
// --corpus.
std::string InputOf(const std::vector<std::string>& arguments) {
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--corpus" && i + 1 < arguments.size()) {
      return arguments[i + 1];
    }
  }
  for (const std::string& argument : arguments) {
    if (!absl::StartsWith(argument, "-")) return argument;
  }
  return "";
}

// Whether the usage line names a positional argument ("... [OPTIONS] input");
// a command without one may read no file at all (`devices`).
bool TakesAnInput(const std::string& help) {
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (absl::StartsWith(line, "Usage")) {
      return !absl::EndsWith(absl::StripTrailingAsciiWhitespace(line),
                             "[OPTIONS]");
    }
  }
  return true;
}

TEST(HelpExamplesTest, EveryExampleReadsAFileOfTheRepository) {
  const std::vector<std::string> commands = Subcommands();
  ASSERT_GE(commands.size(), 5u);
  int checked = 0;
  for (const std::string& command : commands) {
    const CommandOutput help = RunTensormem(command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    const auto examples = Examples(help.out, command);
    EXPECT_FALSE(examples.empty())
        << "tensormem " << command << " --help has no example";
    const bool takes_input = TakesAnInput(help.out);
    for (const std::vector<std::string>& example : examples) {
      const std::string input = InputOf(example);
      ++checked;
      if (input.empty() && !takes_input) continue;
      const std::filesystem::path path =
          std::filesystem::path(TENSORMEM_SOURCE_DIR) / input;
      EXPECT_TRUE(!input.empty() && std::filesystem::exists(path))
          << "tensormem " << command << ": the example's input '" << input
          << "' is not in the repository";
    }
  }
  EXPECT_GE(checked, static_cast<int>(commands.size()));
}

// The example as printed, after "tensormem <command> ", with its input made
// absolute so that it runs from a scratch folder (its outputs land there).
std::string WithAbsoluteInput(absl::string_view line, const std::string& start,
                              const std::string& input) {
  std::string example(line.substr(line.find(start) + start.size()));
  if (input.empty()) return example;
  const size_t at = example.find(input);
  return example.replace(at, input.size(),
                         std::string(TENSORMEM_SOURCE_DIR) + "/" + input);
}

TEST(HelpExamplesTest, EveryExampleRuns) {
  int ran = 0;
  for (const std::string& command : Subcommands()) {
    const CommandOutput help = RunTensormem(command + " --help");
    const std::string start = "tensormem " + command + " ";
    for (absl::string_view line : absl::StrSplit(help.out, '\n')) {
      if (line.find(start) == absl::string_view::npos ||
          absl::StartsWith(line, "Usage")) {
        continue;
      }
      const std::vector<std::string> arguments =
          absl::StrSplit(line.substr(line.find(start) + start.size()), ' ',
                         absl::SkipWhitespace());
      const std::string example =
          WithAbsoluteInput(line, start, InputOf(arguments));
      const std::string folder = FreshDirectory("example");
      const CommandOutput output =
          RunTensormemIn(folder, command + " " + example);
      ++ran;
      // Optional parts of the build, or a machine without a GPU driver, say
      // so: not the example's fault.
      if (absl::StrContains(output.err, "built without") ||
          absl::StrContains(output.err, "no CUDA driver found")) {
        continue;
      }
      EXPECT_EQ(output.exit_code, 0)
          << "tensormem " << command << " " << example << "\n"
          << output.err;
    }
  }
  EXPECT_GE(ran, 10);
}

}  // namespace
}  // namespace tensormem::testing
