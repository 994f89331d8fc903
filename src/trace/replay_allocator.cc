#include "tensormem/trace/replay_allocator.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/alloc/system_allocator.h"

namespace tensormem {
namespace {

absl::StatusOr<ReplayTarget> CreateBfcTarget(
    const ReplayAllocatorConfig& config, uint64_t limit) {
  absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
      CreateSubAllocator(config.sub_allocator, std::max(config.capacity, limit),
                         config.coalescing);
  if (!upstream.ok()) return upstream.status();
  BfcAllocator::Options options;
  options.allow_growth = config.growth;
  options.allow_retry_on_failure = false;
  options.garbage_collection = config.garbage_collection;
  options.fragmentation_fraction = config.fragmentation_fraction;
  options.log_failures =
      false;  // failures are counted and reported by the replay
  auto bfc =
      std::make_unique<BfcAllocator>(*std::move(upstream), limit, options);
  ReplayTarget target;
  BfcAllocator* raw = bfc.get();
  target.base = raw->upstream().BaseAddress();
  target.explain_failure = [raw] { return raw->LastFailureReport(); };
  target.dump = [raw] { return raw->RecordMemoryDump(); };
  target.allocator = std::move(bfc);
  return target;
}

}  // namespace

std::vector<std::string_view> ReplayAllocatorKinds() {
  return {"bfc", "system"};
}

absl::StatusOr<ReplayTarget> CreateReplayTarget(
    const ReplayAllocatorConfig& config) {
  if (!(config.fragmentation_fraction >= 0 &&
        config.fragmentation_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("fragmentation fraction %g is not in [0, 1]",
                        config.fragmentation_fraction));
  }
  const uint64_t limit = config.memory_limit.value_or(config.capacity);
  if (limit == 0)
    return absl::InvalidArgumentError(
        "memory limit 0: nothing could be allocated");
  if (config.allocator == "bfc") return CreateBfcTarget(config, limit);
  if (config.allocator == "system") {
    ReplayTarget target;
    auto system = std::make_unique<SystemAllocator>();
    if (!config.memory_limit) {
      target.allocator = std::move(system);
      return target;
    }
    target.allocator = std::make_unique<LimitingAllocator>(*system, limit);
    target.wrapped.push_back(std::move(system));
    return target;
  }
  std::string known;
  for (std::string_view kind : ReplayAllocatorKinds()) {
    absl::StrAppend(&known, known.empty() ? "" : ", ",
                    absl::string_view(kind.data(), kind.size()));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown allocator '%s' (known: %s)", config.allocator, known));
}

std::string DescribeReplayAllocator(const ReplayAllocatorConfig& config) {
  const std::string limit = absl::StrCat(
      "limit ", HumanBytes(config.memory_limit.value_or(config.capacity)));
  if (config.allocator != "bfc") {
    return config.memory_limit ? absl::StrCat(config.allocator, "(", limit, ")")
                               : config.allocator;
  }
  std::string text = absl::StrCat("bfc(", config.sub_allocator, ", ", limit,
                                  ", ", config.growth ? "growth" : "no growth");
  if (config.garbage_collection) text += ", gc";
  if (config.fragmentation_fraction > 0) {
    absl::StrAppend(&text, ", fragmentation fraction ",
                    config.fragmentation_fraction);
  }
  return text + ")";
}

}  // namespace tensormem
