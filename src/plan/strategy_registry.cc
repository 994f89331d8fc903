#include "tensormem/plan/strategy_registry.h"

#include <chrono>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plan/builtin_strategies.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/named_registry.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/task_profiles.h"

namespace tensormem {
namespace {

NamedRegistry<StrategyInfo>& Registry() {
  static auto* registry = new NamedRegistry<StrategyInfo>(
      BuiltinStrategies(),
      [](const StrategyInfo& info) -> std::string_view { return info.name; });
  return *registry;
}

// Sizes and padding must stay below 2^63 so that every strategy (and the
// signed costs of min_cost_flow) computes without overflow.
absl::Status ValidateSizes(const BufferSet& set, uint64_t alignment) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  uint64_t total = 0;
  for (const Buffer& b : set.buffers) {
    const std::optional<uint64_t> padded = CheckedAdd(b.size, alignment);
    const std::optional<uint64_t> sum =
        padded ? CheckedAdd(total, *padded) : std::nullopt;
    if (!sum || *sum > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("buffer %d: the sum of sizes (with alignment "
                          "padding) exceeds 2^63 bytes",
                          b.id));
    }
    total = *sum;
  }
  return absl::OkStatus();
}

// Checks on the buffer set itself so that errors name the buffers' own ids.
absl::Status CheckOffsetsOfSet(const BufferSet& set, const PlanResult& plan,
                               uint64_t alignment) {
  if (plan.offsets.size() != set.buffers.size()) {
    return absl::InternalError(absl::StrFormat(
        "%d offsets for %d buffers", plan.offsets.size(), set.buffers.size()));
  }
  BufferSet placed = set;
  for (size_t i = 0; i < placed.buffers.size(); ++i) {
    Buffer& b = placed.buffers[i];
    b.offset = plan.offsets[i];
    const uint64_t end =
        CheckedAdd(plan.offsets[i], b.size).value_or(UINT64_MAX);
    if (b.size > 0 && end > plan.total_size) {
      return absl::InternalError(
          absl::StrFormat("buffer %d ends at %d, beyond the total size %d",
                          b.id, end, plan.total_size));
    }
  }
  return CheckPlacement(placed, alignment);
}

// Runs `objects` on the records stably sorted by first task and gives the
// result in the original record order.
absl::StatusOr<ObjectsAssignment<>> RunOnSortedRecords(
    const std::function<absl::StatusOr<ObjectsAssignment<>>(
        const std::vector<UsageRecord<>>&)>& objects,
    const std::vector<UsageRecord<>>& records) {
  std::vector<size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return records[a].first_task < records[b].first_task;
  });
  std::vector<UsageRecord<>> sorted;
  sorted.reserve(records.size());
  for (size_t i : order) sorted.push_back(records[i]);
  absl::StatusOr<ObjectsAssignment<>> result = objects(sorted);
  if (!result.ok()) return result.status();
  std::vector<size_t> ids(records.size());
  for (size_t k = 0; k < order.size(); ++k)
    ids[order[k]] = result->object_ids[k];
  result->object_ids = std::move(ids);
  return result;
}

}  // namespace

std::string_view PlanModeName(PlanMode mode) {
  return mode == PlanMode::kOffsets ? "offsets" : "objects";
}

ProblemSize MeasureProblem(const std::vector<UsageRecord<>>& records,
                           PlanMode mode) {
  ProblemSize size;
  size.mode = mode;
  size.buffers = records.size();
  size.profile_entries = CountSegmentProfileEntries(records);
  // The number of positional maximums is the largest number of tensors live
  // at one task.
  std::vector<std::pair<TaskId, int>> events;
  for (const UsageRecord<>& r : records) {
    events.emplace_back(r.first_task, 1);
    events.emplace_back(r.last_task + 1, -1);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0;
  for (const auto& [task, delta] : events) {
    live += delta;
    size.positional_maximums = std::max<size_t>(size.positional_maximums, live);
  }
  // Walk the records by first task, as min_cost_flow does, counting the
  // released tensors each one could reuse.
  std::vector<TaskId> firsts, lasts;
  for (const UsageRecord<>& r : records) {
    firsts.push_back(r.first_task);
    lasts.push_back(r.last_task);
  }
  std::sort(firsts.begin(), firsts.end());
  std::sort(lasts.begin(), lasts.end());
  size_t released = 0;
  for (TaskId first : firsts) {
    while (released < lasts.size() && lasts[released] < first) ++released;
    size.reuse_pairs += released;
  }
  return size;
}

bool RegisterStrategy(StrategyInfo info) {
  return Registry().Add(std::move(info));
}

const StrategyInfo* FindStrategy(std::string_view name) {
  return Registry().Find(name);
}

std::vector<const StrategyInfo*> ListStrategies(PlanMode mode) {
  std::vector<const StrategyInfo*> result;
  for (const StrategyInfo* info : Registry().List()) {
    if (info->objects || (mode == PlanMode::kOffsets && info->offsets))
      result.push_back(info);
  }
  return result;
}

uint64_t LowerBound(const std::vector<UsageRecord<>>& records, PlanMode mode) {
  return mode == PlanMode::kOffsets ? MaxBreadth(records)
                                    : SharedObjectsLowerBound(records);
}

double EstimateSeconds(const StrategyInfo& strategy, const ProblemSize& size) {
  return strategy.estimate_seconds ? strategy.estimate_seconds(size) : 0;
}

std::string SlownessReason(const StrategyInfo& strategy,
                           const ProblemSize& size) {
  const double seconds = EstimateSeconds(strategy, size);
  if (seconds > kSlowStrategySeconds) {
    return absl::StrFormat("%s would take about %.0f s on %d buffers",
                           strategy.name, seconds, size.buffers);
  }
  const double bytes =
      strategy.estimate_bytes ? strategy.estimate_bytes(size) : 0;
  if (bytes > kLargeStrategyBytes) {
    return absl::StrFormat(
        "%s would need about %.1f GiB of memory on %d buffers", strategy.name,
        bytes / (uint64_t{1} << 30), size.buffers);
  }
  return "";
}

absl::StatusOr<PlanResult> RunStrategy(std::string_view name,
                                       const BufferSet& set, PlanMode mode,
                                       const PlanOptions& options) {
  const StrategyInfo* strategy = FindStrategy(name);
  if (strategy == nullptr) {
    return absl::NotFoundError(absl::StrFormat("unknown strategy '%s'", name));
  }
  if (mode == PlanMode::kObjects && !strategy->objects) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "strategy '%s' plans offsets only; it has no shared-objects mode",
        name));
  }
  if (absl::Status valid = ValidateSizes(set, options.alignment); !valid.ok())
    return valid;
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  if (!records.ok()) return records.status();
  if (!options.allow_slow) {
    const std::string reason =
        SlownessReason(*strategy, MeasureProblem(*records, mode));
    if (!reason.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          reason,
          "; pick a faster strategy or allow slow strategies (--force)"));
    }
  }

  PlanResult result;
  result.strategy = strategy->name;
  result.mode = mode;
  const auto start = std::chrono::steady_clock::now();
  if (mode == PlanMode::kOffsets && strategy->offsets) {
    absl::StatusOr<OffsetsPlan> plan =
        strategy->offsets(PlanInput{set, *records}, options);
    if (!plan.ok()) return plan.status();
    result.offsets = std::move(plan->offsets.offsets);
    result.total_size = plan->offsets.total_size;
    result.extra = std::move(plan->extra);
  } else {
    absl::StatusOr<ObjectsAssignment<>> objects =
        strategy->wants_sorted_input
            ? RunOnSortedRecords(strategy->objects, *records)
            : strategy->objects(*records);
    if (!objects.ok()) return objects.status();
    absl::StatusOr<OffsetsAssignment> laid_out =
        ObjectsToOffsets(*objects, options.alignment);
    if (!laid_out.ok()) return laid_out.status();
    result.offsets = std::move(laid_out->offsets);
    result.total_size =
        mode == PlanMode::kOffsets ? laid_out->total_size : TotalSize(*objects);
    result.objects = *std::move(objects);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  absl::Status valid = mode == PlanMode::kObjects
                           ? CheckObjects(*records, result.objects)
                           : CheckOffsetsOfSet(set, result, options.alignment);
  if (!valid.ok()) {
    return absl::InternalError(absl::StrFormat(
        "strategy '%s' produced an invalid plan: %s", name, valid.message()));
  }
  result.lower_bound = LowerBound(*records, mode);
  return result;
}

}  // namespace tensormem
