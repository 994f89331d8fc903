#include "tensormem/alloc/bfc_allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

#include "absl/strings/str_format.h"
#include "alloc/bfc_core.h"
#include "alloc/bfc_core_inline.h"
#include "alloc/bfc_thread_pools.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

// Out-of-memory warnings printed per process, as a bound on log noise.
constexpr int kMaxFailureLogs = 10;
std::atomic<int> failure_logs{0};

void LogFailure(const std::string& name, const std::string& report) {
  if (failure_logs.fetch_add(1, std::memory_order_relaxed) >= kMaxFailureLogs)
    return;
  std::fprintf(stderr, "tensormem: allocator %s: %s\n", name.c_str(),
               report.c_str());
}

// The engine for `policy` (nullptr: TensorFlow's, from `options`), with
// `index` as its free index (nullptr: a fast one per pool).
std::unique_ptr<internal::BfcCore> MakeCore(
    SubAllocator* upstream, size_t memory_limit,
    const BfcAllocatorOptions& options,
    std::unique_ptr<AllocationPolicy> policy,
    std::unique_ptr<BfcFreeIndex> index) {
  if (policy == nullptr) {
    PolicyEnvironment environment;
    environment.memory_limit = memory_limit;
    environment.allow_growth = options.allow_growth;
    environment.upstream_coalesces = upstream->SupportsCoalescing();
    environment.fragmentation_fraction = options.fragmentation_fraction;
    // The tf policy takes no configuration, so creating it cannot fail.
    policy = *CreatePolicy("tf", environment);
  }
  std::vector<std::unique_ptr<BfcFreeIndex>> indexes;
  if (index != nullptr) indexes.push_back(std::move(index));
  while (static_cast<int>(indexes.size()) < policy->NumPools())
    indexes.push_back(MakeFastFreeIndex());
  return std::make_unique<internal::BfcCore>(
      upstream,
      internal::BfcCore::Config{memory_limit, options.garbage_collection},
      std::move(policy), std::move(indexes));
}

// The options a policy made by CreatePolicy contradicts: growth and the limit
// have one home each, the policy's environment, so the allocator may not say
// otherwise (it would be silently ignored).
absl::Status CheckAgreesWithPolicy(const AllocationPolicy& policy,
                                   size_t memory_limit,
                                   const BfcAllocatorOptions& options) {
  const std::optional<PolicyEnvironment>& environment = policy.created_for();
  if (!environment) return absl::OkStatus();
  if (environment->allow_growth != options.allow_growth) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "policy %s was created with allow_growth=%s but the allocator's "
        "options say %s; build both from one AllocatorSpec (CreateAllocator)",
        policy.Describe(), environment->allow_growth ? "true" : "false",
        options.allow_growth ? "true" : "false"));
  }
  if (environment->memory_limit != 0 &&
      environment->memory_limit != memory_limit) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "policy %s was created for a memory limit of %d B but the allocator's "
        "is %d B; build both from one AllocatorSpec (CreateAllocator)",
        policy.Describe(), environment->memory_limit, memory_limit));
  }
  return absl::OkStatus();
}

}  // namespace

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> upstream,
                           size_t memory_limit, Options options)
    : BfcAllocator(std::move(upstream), memory_limit, std::move(options),
                   nullptr, nullptr) {}

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> upstream,
                           size_t memory_limit, Options options,
                           std::unique_ptr<AllocationPolicy> policy)
    : BfcAllocator(std::move(upstream), memory_limit, std::move(options),
                   std::move(policy), nullptr) {}

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> upstream,
                           size_t memory_limit, Options options,
                           std::unique_ptr<BfcFreeIndex> free_index)
    : BfcAllocator(std::move(upstream), memory_limit, std::move(options),
                   nullptr, std::move(free_index)) {}

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> upstream,
                           size_t memory_limit, Options options,
                           std::unique_ptr<AllocationPolicy> policy,
                           std::unique_ptr<BfcFreeIndex> free_index)
    : options_(std::move(options)),
      memory_limit_(memory_limit),
      upstream_(std::move(upstream)),
      core_(MakeCore(upstream_.get(), memory_limit, options_, std::move(policy),
                     std::move(free_index))) {
  SetMisusePolicy(options_.misuse_policy, options_.misuse_callback);
  const absl::Status agrees =
      CheckAgreesWithPolicy(core_->policy(), memory_limit_, options_);
  if (!agrees.ok()) ReportMisuse(agrees);
}

BfcAllocator::~BfcAllocator() = default;

// Inlined into both callers: the request's whole path is one function.
[[gnu::always_inline]] inline void* BfcAllocator::AllocateFromIndex(
    size_t bytes, size_t alignment, int32_t stream) {
  if (bytes == 0 || !IsPowerOfTwo(alignment)) return nullptr;
  alignment = std::max<size_t>(alignment, bfc::kMinAllocationSize);
  std::lock_guard lock(mutex_);
  return core_->AllocateFromIndex(bytes, alignment, stream);
}

void* BfcAllocator::DoAllocate(size_t bytes, size_t alignment, int32_t stream) {
  if (pools_ != nullptr) [[unlikely]] {
    if (BfcAllocator* pool = PoolForThisThread())
      return AllocateInPool(*pool, bytes, alignment, stream);
  }
  if (void* ptr = AllocateFromIndex(bytes, alignment, stream)) return ptr;
  AllocationAttributes attributes;
  attributes.stream = stream;
  return AllocateSlowly(bytes, alignment, attributes);
}

void* BfcAllocator::AllocateRaw(size_t alignment, size_t bytes,
                                const AllocationAttributes& attributes) {
  if (pools_ != nullptr && attributes.freed_by_func == nullptr) [[unlikely]] {
    if (BfcAllocator* pool = PoolForThisThread())
      return AllocateInPool(*pool, bytes, alignment, attributes.stream);
  }
  if (attributes.freed_by_func == nullptr) {
    if (void* ptr = AllocateFromIndex(bytes, alignment, attributes.stream))
      return ptr;
  }
  return AllocateSlowly(bytes, alignment, attributes);
}

void* BfcAllocator::AllocateSlowly(size_t bytes, size_t alignment,
                                   const AllocationAttributes& attributes) {
  if (bytes == 0) return nullptr;
  if (!IsPowerOfTwo(alignment)) {
    std::lock_guard lock(mutex_);
    core_->RecordRejectedRequest(bytes, alignment,
                                 "alignment is not a power of two");
    return nullptr;
  }
  alignment = std::max<size_t>(alignment, bfc::kMinAllocationSize);
  // The policy's rounding is fixed at creation: no lock needed.
  const std::optional<uint64_t> rounded = core_->RoundedSize(bytes);
  if (!rounded || *rounded > memory_limit_) {
    // No amount of waiting can make this fit: fail without retrying.
    return AttemptAllocation(bytes, alignment, attributes,
                             options_.log_failures);
  }
  if (!options_.allow_retry_on_failure || !attributes.retry_on_failure) {
    // One attempt. A caller that opted out of retrying has a fallback, so its
    // failure is not worth a warning.
    return AttemptAllocation(
        bytes, alignment, attributes,
        options_.log_failures && attributes.retry_on_failure);
  }
  return retrier_.AllocateWithRetry(
      [&](bool verbose) {
        return AttemptAllocation(bytes, alignment, attributes,
                                 verbose && options_.log_failures);
      },
      options_.retry_deadline);
}

void* BfcAllocator::AttemptAllocation(size_t bytes, size_t alignment,
                                      const AllocationAttributes& attributes,
                                      bool log_failure) {
  // Evaluated before each attempt, outside the lock: it may call into the
  // runtime.
  const uint64_t freed_before =
      attributes.freed_by_func != nullptr ? (*attributes.freed_by_func)() : 0;
  std::lock_guard lock(mutex_);
  void* ptr =
      core_->Allocate(bytes, alignment, freed_before, attributes.stream);
  if (ptr == nullptr && pools_ != nullptr && ReleasePoolsFreeRegions()) {
    // Other threads' pools held the limit in free regions.
    ptr = core_->Allocate(bytes, alignment, freed_before, attributes.stream);
  }
  if (ptr == nullptr && log_failure)
    LogFailure(options_.name, core_->last_failure_report());
  return ptr;
}

bool BfcAllocator::DoFreeIfLive(void* ptr) {
  if (pools_ != nullptr) [[unlikely]] {
    if (BfcAllocator* pool = PoolOwning(ptr)) return pool->DoFreeIfLive(ptr);
  }
  {
    std::lock_guard lock(mutex_);
    if (!core_->FreeIfLive(ptr)) return false;
  }
  // Without retries nobody waits for memory: skip the shared counter the
  // notification bumps.
  if (options_.allow_retry_on_failure) retrier_.NotifyDealloc();
  return true;
}

absl::Status BfcAllocator::DoDeallocate(void* ptr) {
  if (pools_ != nullptr) [[unlikely]] {
    if (BfcAllocator* pool = PoolOwning(ptr)) return pool->DoDeallocate(ptr);
  }
  {
    std::lock_guard lock(mutex_);
    // Misuse changes nothing; only then is a Status built (under the same
    // lock, so that it describes the state the free found).
    if (!core_->FreeIfLive(ptr)) return core_->DiagnoseBadFree(ptr);
  }
  if (options_.allow_retry_on_failure) retrier_.NotifyDealloc();
  return absl::OkStatus();
}

std::optional<AllocatorStats> BfcAllocator::GetStats() const {
  AllocatorStats stats;
  {
    std::lock_guard lock(mutex_);
    stats = core_->Stats();
  }
  if (pools_ != nullptr) {
    pools_->ForEachMade(
        [&](const BfcAllocator& pool) { stats.AddPool(*pool.GetStats()); });
  }
  return stats;
}

bool BfcAllocator::ClearStats() {
  {
    std::lock_guard lock(mutex_);
    core_->ClearStats();
  }
  if (pools_ != nullptr)
    pools_->ForEachMade([](BfcAllocator& pool) { pool.ClearStats(); });
  return true;
}

double BfcAllocator::Fragmentation() const {
  std::lock_guard lock(mutex_);
  return core_->Fragmentation();
}

template <typename Field>
std::optional<Field> BfcAllocator::LiveChunkField(
    const void* ptr, Field internal::BfcChunk::*field) const {
  if (pools_ != nullptr) {
    if (const BfcAllocator* pool = PoolOwning(ptr))
      return pool->LiveChunkField(ptr, field);
  }
  std::lock_guard lock(mutex_);
  const internal::BfcChunk* chunk = core_->FindLiveChunk(ptr);
  if (chunk == nullptr) return std::nullopt;
  return chunk->*field;
}

std::optional<size_t> BfcAllocator::RequestedSize(const void* ptr) const {
  return LiveChunkField(ptr, &internal::BfcChunk::requested_size);
}

std::optional<size_t> BfcAllocator::AllocatedSize(const void* ptr) const {
  return LiveChunkField(ptr, &internal::BfcChunk::size);
}

std::optional<int64_t> BfcAllocator::AllocationId(const void* ptr) const {
  return LiveChunkField(ptr, &internal::BfcChunk::allocation_id);
}

MemoryDump BfcAllocator::RecordMemoryDump() const {
  std::lock_guard lock(mutex_);
  return core_->Dump(options_.name);
}

std::string BfcAllocator::RenderOccupancy() const {
  std::lock_guard lock(mutex_);
  return core_->RenderOccupancy();
}

std::string BfcAllocator::LastFailureReport() const {
  std::lock_guard lock(mutex_);
  return core_->last_failure_report();
}

absl::Status BfcAllocator::CheckInvariants() const {
  absl::Status pools_status;
  if (pools_ != nullptr) {
    pools_->ForEachMade([&](const BfcAllocator& pool) {
      if (pools_status.ok()) pools_status = pool.CheckInvariants();
    });
  }
  if (!pools_status.ok()) return pools_status;
  std::lock_guard lock(mutex_);
  return core_->CheckInvariants();
}

bool BfcAllocator::ReleaseFreeRegions() {
  bool released = pools_ != nullptr && ReleasePoolsFreeRegions();
  std::lock_guard lock(mutex_);
  return core_->ReleaseFreeRegions() || released;
}

bool BfcAllocator::TrimFreeMemory() {
  bool trimmed = false;
  if (pools_ != nullptr) {
    pools_->ForEachMade(
        [&](BfcAllocator& pool) { trimmed |= pool.TrimFreeMemory(); });
  }
  std::lock_guard lock(mutex_);
  trimmed |= core_->ReleaseFreeRegions();
  return core_->DecommitAllFreeGranules() || trimmed;
}

uint64_t BfcAllocator::decommit_granule() const {
  return core_->decommit_granule();  // fixed at construction
}

bool BfcAllocator::AddRegion(size_t bytes, size_t request_bytes,
                             int32_t stream) {
  std::lock_guard lock(mutex_);
  return core_->AddRegion(bytes, request_bytes, stream);
}

void* BfcAllocator::AllocateAt(const void* address, size_t bytes,
                               int32_t stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  return core_->AllocateAt(reinterpret_cast<uint64_t>(address), bytes, stream);
}

bool BfcAllocator::KeepOnly(const void* address,
                            std::span<const bfc::KeptPart> parts) {
  std::lock_guard lock(mutex_);
  return core_->KeepOnly(reinterpret_cast<uint64_t>(address), parts);
}

void BfcAllocator::SetTimingCounter(SharedCounter* counter) {
  // Timestamped frees are this pool's: threads without a pool get none.
  if (pools_ != nullptr) pools_->closed = true;
  std::lock_guard lock(mutex_);
  core_->SetTimingCounter(counter);
}

void BfcAllocator::SetSafeFrontier(uint64_t frontier) {
  bool raised;
  {
    std::lock_guard lock(mutex_);
    raised = core_->SetSafeFrontier(frontier);
  }
  // Chunks that just became safe may satisfy a waiting request.
  if (raised) retrier_.NotifyDealloc();
}

std::string BfcAllocator::FreeIndexName() const {
  std::lock_guard lock(mutex_);
  return core_->index().Name();
}

std::string BfcAllocator::PolicyDescription() const {
  return core_->policy().Describe();
}

}  // namespace tensormem
