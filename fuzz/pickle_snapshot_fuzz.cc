// Fuzz target: the pickle decoder and the PyTorch snapshot importer on top.
//
// Every accessor of every reachable value is exercised (within a visit
// budget: shared and self-referencing containers make the value graph
// unbounded as a tree), then the same bytes go through ParsePytorchSnapshot
// and, when they hold segment events, the replay that follows the recording
// and the what-if against it.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/pickle.h"
#include "tensormem/trace/snapshot_replay.h"
#include "tensormem/trace/whatif.h"

namespace {

using tensormem::PickleValue;

void Visit(const PickleValue& value, int depth, int& budget) {
  if (--budget < 0 || depth > 8) return;
  (void)value.AsInt();
  (void)value.AsFloat();
  (void)value.AsBool();
  if (std::optional<std::string_view> text = value.AsString()) {
    FUZZ_CHECK(text->size() < (size_t{1} << 32), "string too long");
  }
  const PickleValue::Kind kind = value.kind();
  if (kind == PickleValue::Kind::kList || kind == PickleValue::Kind::kTuple) {
    for (size_t i = 0; i < value.size(); ++i)
      Visit(value[i], depth + 1, budget);
  }
  (void)value.Find("device_traces");
  (void)value.Find("");
}

// What-if with the recording: the candidate with its settings joins when
// missing and is checked; with a pytorch row there is always advice.
void WhatIfAgainstTheRecording(const tensormem::PytorchImport& snapshot,
                               const tensormem::PreparedTrace& trace) {
  using namespace tensormem;
  static const std::vector<WhatIfCandidate>* const candidates =
      new std::vector<WhatIfCandidate>(*ParseWhatIfCandidates(
          "pytorch memory_limit=64G; tight memory_limit=64G"));
  WhatIfOptions options;
  options.min_limit = false;
  options.measure_speed = false;
  options.recording = &snapshot.recording;
  absl::StatusOr<WhatIfResult> result = RunWhatIf(trace, *candidates, options);
  if (!result.ok()) return;
  FUZZ_CHECK(result->recorded.has_value(), "no recorded row");
  const WhatIfRecorded& recorded = *result->recorded;
  FUZZ_CHECK(recorded.row < result->rows.size(), "recorded row %zu of %zu",
             recorded.row, result->rows.size());
  FUZZ_CHECK(!recorded.matches || recorded.as_run_peak_reserved_bytes ==
                                      recorded.peak_reserved_bytes,
             "matches with a different peak");
  FUZZ_CHECK(result->recommendation.has_value(), "no advice");
}

// The snapshot replayed as recorded (segments at their recorded addresses,
// the state when recording began rebuilt, every event compared): any
// recording gets a result or an error, never a crash.
void ReplayAsRecorded(const tensormem::PytorchImport& snapshot) {
  using namespace tensormem;
  constexpr size_t kMaxEvents = 4096;  // keeps each input fast
  if (!snapshot.recording.has_segment_events() ||
      snapshot.trace.events.size() > kMaxEvents) {
    return;
  }
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(snapshot.trace);
  if (!trace.ok()) return;
  AllocatorSpec spec;
  spec.policy = "pytorch";
  spec.memory_limit = 64 * kGiB;  // no limit inference: one replay per input
  absl::StatusOr<SnapshotReplayResult> result =
      ReplaySnapshot(*trace, snapshot.recording, spec, {}, /*verify=*/true);
  if (!result.ok()) return;
  FUZZ_CHECK(result->comparison.events_compared ==
                 static_cast<int64_t>(trace->steps().size()),
             "verified %lld of %zu events",
             static_cast<long long>(result->comparison.events_compared),
             trace->steps().size());
  WhatIfAgainstTheRecording(snapshot, *trace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  fuzz::ByteReader reader(data, size);
  const int device = reader.Byte() % 3;
  const std::string bytes(reader.Rest());
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(bytes, "fuzz.pickle");
  if (document.ok()) {
    int budget = 10000;
    Visit(document->root(), 0, budget);
  } else {
    FUZZ_CHECK(absl::StartsWith(document.status().message(), "fuzz.pickle: "),
               "error does not name the input: %s",
               document.status().ToString().c_str());
  }
  absl::StatusOr<PytorchImport> snapshot =
      ParsePytorchSnapshot(bytes, "fuzz.pickle", {.device = device});
  if (!snapshot.ok()) {
    FUZZ_CHECK(absl::StartsWith(snapshot.status().message(), "fuzz.pickle"),
               "error does not name the input: %s",
               snapshot.status().ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(document.ok(), "snapshot read from a pickle that does not parse");
  ReplayAsRecorded(*snapshot);
  return 0;
}
