// The search strategies' flags of `plan` (the optimal planner's budget,
// capacity, threads and clock), kept apart from the command's own.
//
//   SearchFlags search;
//   AddSearchFlags(*command, search);
//   ...
//   ApplySearchFlags("plan", search, options);  // exits 2 on a bad value
#ifndef TENSORMEM_CLI_SEARCH_FLAGS_H_
#define TENSORMEM_CLI_SEARCH_FLAGS_H_

#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem::cli {

struct SearchFlags {
  std::string time_limit;  // "10s", "500ms"; empty: the strategy's default
  std::string capacity;    // bytes, "1M"; empty: none
  int threads = 1;
  bool counted_time = false;
};

// --time-limit, --capacity, --threads, --counted-time.
void AddSearchFlags(CLI::App& command, SearchFlags& flags);

// Sets `options`' search fields; a bad time limit or capacity fails
// `command` with exit code 2, naming the value.
void ApplySearchFlags(std::string_view command, const SearchFlags& flags,
                      PlanOptions& options);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_SEARCH_FLAGS_H_
