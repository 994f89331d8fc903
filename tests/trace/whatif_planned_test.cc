// whatif's "steady reserved" column for allocators that learn loops: the
// steady state when a plan served, else why none did.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/report/whatif_text.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"
#include "tensormem/trace/whatif.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string SteadyColumnOf(const Trace& trace) {
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  WhatIfOptions options;
  options.min_limit = false;
  options.measure_speed = false;
  absl::StatusOr<WhatIfResult> result = RunWhatIf(
      *prepared, *ParseWhatIfCandidates("planned config=planning:inline"),
      options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? RenderWhatIfText(*result) : "";
}

// The steady column for a trace of the loop corpus (data/models/loops).
std::string SteadyColumnOfLoop(const std::string& name) {
  absl::StatusOr<Trace> trace = ReadTrace(std::string(TENSORMEM_SOURCE_DIR) +
                                          "/data/models/loops/" + name);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? SteadyColumnOf(*trace) : "";
}

TEST(WhatIfPlannedTest, AServedLoopShowsItsSteadyState) {
  EXPECT_THAT(SteadyColumnOfLoop("transformer.train_b8_s10.trace.gz"),
              HasSubstr("(1.0100)"));
}

TEST(WhatIfPlannedTest, APlanWithoutRoomIsNamed) {
  // GPT-2 training on an H200: the plan found has no room to take over.
  absl::StatusOr<PytorchImport> read =
      ReadPytorchSnapshot(std::string(TENSORMEM_SOURCE_DIR) +
                          "/bench/results/gpu/2026-11-28-h200-5/snapshots/"
                          "train-gpt2-small.pickle.gz");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(SteadyColumnOf(read->trace), HasSubstr("no plan: no room"));
}

TEST(WhatIfPlannedTest, AWorkloadWithoutALoopSaysSo) {
  EXPECT_THAT(SteadyColumnOfLoop("transformer_varlen.train_b8_s10.trace.gz"),
              HasSubstr("no loop found"));
}

}  // namespace
}  // namespace tensormem
