// Building the allocator a replay runs into, from flags or a config file.
//
// One place knows every allocator kind and its options, so `tensormem replay`,
// `report` and `bench` accept the same choices. The BFC allocator replays with
// retry-on-failure off: a replay is single-threaded, so no other thread's free
// could ever satisfy a waiting request.
//
//   ReplayAllocatorConfig config;
//   config.allocator = "bfc";
//   config.growth = false;
//   config.memory_limit = 1 * kGiB;
//   TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(config));
#ifndef TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_
#define TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

// The address space a replay reserves unless told otherwise. ThreadSanitizer
// keeps most of the address space for its shadow memory, so a TSan build
// reserves less.
#if defined(__SANITIZE_THREAD__)
inline constexpr uint64_t kDefaultReplayCapacity = 64 * kGiB;
#else
inline constexpr uint64_t kDefaultReplayCapacity = kTiB;
#endif

struct ReplayAllocatorConfig {
  std::string allocator = "bfc";            // see ReplayAllocatorKinds()
  std::string sub_allocator = "simulated";  // bfc only: simulated | host | vmm
  bool coalescing = false;                  // of the simulated sub-allocator
  // Address space of the simulated and vmm sub-allocators; raised to the
  // memory limit when that is larger.
  uint64_t capacity = kDefaultReplayCapacity;
  // Default: `capacity`. For `system`, a limit wraps it in a LimitingAllocator.
  std::optional<uint64_t> memory_limit;
  bool growth = true;
  bool garbage_collection = false;
  double fragmentation_fraction = 0;  // in [0, 1]
};

// "bfc", "system".
std::vector<std::string_view> ReplayAllocatorKinds();

// Errors: an unknown allocator or sub-allocator kind (the message lists the
// known ones), a fragmentation fraction outside [0, 1], a zero memory limit,
// or an address space that cannot be reserved.
absl::StatusOr<ReplayTarget> CreateReplayTarget(
    const ReplayAllocatorConfig& config);

// One line for tables and page titles: "bfc(simulated, limit 1.00TiB, growth)".
std::string DescribeReplayAllocator(const ReplayAllocatorConfig& config);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_
