// BfcAllocator: best-fit with coalescing, making TensorFlow's BFC decisions.
//
// Memory comes from an upstream SubAllocator in regions that grow (2 MiB,
// doubling) up to a memory limit, or as one region of the whole limit without
// growth. Requests are rounded up to 256 bytes and served from the smallest
// free chunk that fits (lowest address on ties), split when the tail is large;
// frees merge with free neighbours. Every placement equals TensorFlow's, while
// the free index finds the fit in O(log n) instead of scanning a bin.
//
// Beyond TensorFlow: alignment is honoured, a bad free is reported instead of
// crashing (see MisusePolicy), out-of-memory failures explain themselves
// (LastFailureReport), and the state can be dumped (RecordMemoryDump).
//
//   BfcAllocator::Options options;
//   options.allow_growth = false;
//   BfcAllocator allocator(std::make_unique<HostSubAllocator>(), 1 * kGiB,
//                          options);
//   void* p = allocator.Allocate(4096, /*alignment=*/256);
//   if (p == nullptr) std::cerr << allocator.LastFailureReport();
//   allocator.Deallocate(p);
//   std::cout << allocator.RecordMemoryDump().ToText();
//
// Thread-safe: one mutex guards the state (contended, it serves one thread's
// batch of calls at a time: futex_mutex.h); waits for memory happen outside
// it. With thread pools (EnableThreadPools; the specification's thread_pools,
// for policies that allow them) threads other than the first allocate from
// pools of their own that share the limit, so throughput grows with threads.
#ifndef TENSORMEM_ALLOC_BFC_ALLOCATOR_H_
#define TENSORMEM_ALLOC_BFC_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tensormem/alloc/allocation_policy.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/alloc/bfc_shared_counter.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/alloc/retry.h"
#include "tensormem/alloc/sub_allocator.h"
#include "tensormem/core/futex_mutex.h"

namespace tensormem {

namespace internal {
class BfcCore;
struct BfcChunk;
}  // namespace internal

// Per-request options of BfcAllocator::AllocateRaw.
struct AllocationAttributes {
  // When false the request fails at once instead of waiting for frees (for
  // requests that have a fallback, such as optional scratch space).
  bool retry_on_failure = true;
  // With timestamped frees (SetTimingCounter): returns the counter value the
  // caller's work is ordered after; only chunks freed before it are reused.
  // Not owned; nullptr means any safe chunk.
  const std::function<uint64_t()>* freed_by_func = nullptr;
  // The stream the block is used on; policies that keep streams apart
  // (AllocationPolicy::SeparatesStreams) serve it from that stream's pools.
  int32_t stream = 0;
};

// Construction options of BfcAllocator (also reachable as
// BfcAllocator::Options).
struct BfcAllocatorOptions {
  // Grow the pool region by region; false takes the whole limit at once
  // (lazily, on the first allocation).
  bool allow_growth = true;
  // Let requests that fail wait (up to retry_deadline) for other threads'
  // frees before giving up.
  bool allow_retry_on_failure = true;
  absl::Duration retry_deadline = absl::Seconds(10);
  // On failure, return regions with nothing in use to the upstream and grow
  // again (helps with growth only).
  bool garbage_collection = false;
  // > 0: split a chunk whenever the unused tail would be at least this
  // fraction of the limit (default: 128 MiB).
  double fragmentation_fraction = 0;
  std::string name = "bfc";
  // What a plain Deallocate does with a bad pointer.
  MisusePolicy misuse_policy = MisusePolicy::kLogAndAbort;
  std::function<void(const absl::Status&)> misuse_callback;
  // Print a one-line warning for the first 10 out-of-memory failures.
  bool log_failures = true;
};

class BfcAllocator final : public Allocator {
 public:
  static constexpr size_t kCacheLineBytes = 64;
  using Options = BfcAllocatorOptions;

  // TensorFlow's policy (`tf`), configured by `options`.
  BfcAllocator(std::unique_ptr<SubAllocator> upstream, size_t memory_limit,
               Options options = {});
  // Another policy (see policy_registry.h; create it for this upstream and
  // limit). options.fragmentation_fraction is the policy's business. Growth
  // and the limit are the policy's environment's: options.allow_growth or a
  // memory_limit that contradicts what CreatePolicy was given is misuse
  // (options.misuse_policy; by default it aborts, naming both values).
  BfcAllocator(std::unique_ptr<SubAllocator> upstream, size_t memory_limit,
               Options options, std::unique_ptr<AllocationPolicy> policy);
  // TensorFlow's policy with a free index other than the fast one (tests,
  // benchmarks).
  BfcAllocator(std::unique_ptr<SubAllocator> upstream, size_t memory_limit,
               Options options, std::unique_ptr<BfcFreeIndex> free_index);
  ~BfcAllocator() override;  // returns all memory to the upstream

  std::string Name() const override { return options_.name; }

  // TensorFlow's entry point, in TensorFlow's (alignment, bytes) order for
  // code ported from it; everything else takes the size first (Allocate).
  // A block of at least `bytes` bytes aligned to max(alignment, 256), or
  // nullptr when `bytes` is 0, the alignment is not a power of two, the size
  // overflows, or memory runs out (see LastFailureReport).
  void* AllocateRaw(size_t alignment, size_t bytes,
                    const AllocationAttributes& attributes = {});

  std::optional<AllocatorStats> GetStats() const override;
  bool ClearStats() override;
  // (free - largest free block) / free, over the pool; 0 when nothing is free.
  double Fragmentation() const;

  // Sizes and id of the live block starting at `ptr`; nullopt otherwise.
  std::optional<size_t> RequestedSize(const void* ptr) const override;
  std::optional<size_t> AllocatedSize(const void* ptr) const override;
  std::optional<int64_t> AllocationId(const void* ptr) const;

  MemoryDump RecordMemoryDump() const;
  // 100 characters over all regions: '_' free, '*' requested, 'x' slack.
  std::string RenderOccupancy() const;
  // Why the last failed request failed; empty before any failure.
  std::string LastFailureReport() const;
  // Checks every structural invariant (chunks tile regions, links, bins,
  // stats); for tests and debugging, O(chunks).
  absl::Status CheckInvariants() const;

  // Returns every region holding no in-use block to the upstream now, and,
  // over a coalescing upstream, the trailing pieces of a region that hold no
  // in-use block (the pool shrinks from its end). Returns false when there
  // was nothing to return. Garbage collection does the same.
  bool ReleaseFreeRegions();
  // ReleaseFreeRegions, and, under a policy with a decommit granule over an
  // upstream that can decommit, the whole granules inside free chunks that
  // span two or more, and those of a region's free tail: the pool then holds
  // live bytes plus partial granules (what an empty_cache-like trim can give
  // back without moving blocks). Returns false when nothing went back.
  bool TrimFreeMemory();
  // The unit TrimFreeMemory gives back and recommits; 0 when the policy or
  // the upstream cannot decommit.
  uint64_t decommit_granule() const;

  // Rebuilding a recorded state (a replay that starts where a recording
  // began). AddRegion grows the pool that serves requests of `request_bytes`
  // on `stream` by a region of exactly `bytes` and serves nothing; false when
  // the limit or the upstream refuses. AllocateAt serves `bytes` at
  // `address`, which must lie in a free or decommitted chunk (whose granules
  // under the block are committed again) of the pool that serves it, with
  // room for the rounded request; what follows the block is cut off as the
  // policy's split rule says. nullptr when it cannot.
  bool AddRegion(size_t bytes, size_t request_bytes, int32_t stream = 0);
  void* AllocateAt(const void* address, size_t bytes, int32_t stream = 0);
  // Frees the block at `address` but for `parts` (sorted by offset, apart,
  // inside it, offsets and sizes multiples of 256 bytes), each a block of
  // its own afterwards (requested: `requested` bytes); false, changing
  // nothing, when the parts are not so or there is no such block. For an
  // allocator that served large blocks and hands on what lies in them.
  bool KeepOnly(const void* address, std::span<const bfc::KeptPart> parts);

  // Timestamped frees (see SharedCounter). `counter` must outlive the
  // allocator.
  void SetTimingCounter(SharedCounter* counter);
  // Chunks freed at counts below `frontier` are safe; never moves backwards.
  void SetSafeFrontier(uint64_t frontier);

  // Thread pools: from the second thread on, threads other than the first
  // allocate from pools of their own (thread number % (max_pools - 1)), up to
  // `max_pools` in all with this one (which serves the first thread), each
  // made by `make_pool` when first needed. A free goes to the pool whose
  // address range holds the pointer, from any thread. A request its pool
  // cannot serve tries this pool and the others, then again after every pool
  // has returned its free regions, then fails as this allocator fails.
  // `make_pool` builds an allocator (no retries) over an upstream with a
  // fixed address range of its own; the pools share this allocator's limit
  // when their upstreams draw on one MemoryBudget with this one's
  // (budgeted_sub_allocator.h). Statistics, invariants and ReleaseFreeRegions
  // cover every pool; dumps, RenderOccupancy and Fragmentation this pool.
  // Nothing happens under a policy that does not allow thread pools
  // (AllocationPolicy::AllowsThreadPools) or over an upstream without a fixed
  // range. Call before a second thread uses the allocator; after
  // SetTimingCounter, threads without a pool get none.
  void EnableThreadPools(
      int max_pools, std::function<std::unique_ptr<BfcAllocator>()> make_pool);
  int num_thread_pools() const;  // made so far, this one excluded

  // How often the allocator's lock was found held, slept on and handed
  // over, since creation (docs/bfc.md, Threads).
  FutexMutex::Contention LockContention() const { return mutex_.contention(); }

  SubAllocator& upstream() { return *upstream_; }
  size_t memory_limit() const { return memory_limit_; }
  std::string FreeIndexName() const;
  // The policy's name and the options that differ from its defaults.
  std::string PolicyDescription() const;

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override;
  absl::Status DoDeallocate(void* ptr) override;
  // Misuse returns false with nothing changed; DoDeallocate, called next,
  // tries again and diagnoses under one lock (the free counts as made then).
  bool DoFreeIfLive(void* ptr) override;
  // The common case: a fit from the free index, with one lock and no
  // failure handling; nullptr (nothing changed) sends the request on to
  // AllocateSlowly.
  void* AllocateFromIndex(size_t bytes, size_t alignment, int32_t stream);
  void* AllocateSlowly(size_t bytes, size_t alignment,
                       const AllocationAttributes& attributes);
  void* AttemptAllocation(size_t bytes, size_t alignment,
                          const AllocationAttributes& attributes,
                          bool log_failure);
  BfcAllocator(std::unique_ptr<SubAllocator> upstream, size_t memory_limit,
               Options options, std::unique_ptr<AllocationPolicy> policy,
               std::unique_ptr<BfcFreeIndex> free_index);

  // Thread pools (bfc_thread_pools.cc). The calling thread's pool, or
  // nullptr when this allocator serves it.
  struct ThreadPools;
  BfcAllocator* PoolForThisThread();
  // The pool whose range holds `ptr`; nullptr when it is this one's.
  BfcAllocator* PoolOwning(const void* ptr) const;
  // `field` of the live block at `ptr`, read under its pool's lock; nullopt
  // when no block lives there.
  template <typename Field>
  std::optional<Field> LiveChunkField(const void* ptr,
                                      Field internal::BfcChunk::*field) const;
  void* AllocateInPool(BfcAllocator& pool, size_t bytes, size_t alignment,
                       int32_t stream);
  // Every other pool's free regions back to the upstream; whether any went.
  bool ReleasePoolsFreeRegions();

  const Options options_;
  const size_t memory_limit_;
  const std::unique_ptr<SubAllocator> upstream_;
  // Not absl::Mutex: the system Abseil is not instrumented for
  // ThreadSanitizer and keeps its deadlock detector on; not std::mutex: its
  // out-of-line pthread calls cost as much as a quarter of an allocation.
  // On a cache line of its own (with the engine pointer), so that threads
  // locking another allocator next to this one in memory (the shards of a
  // ShardedAllocator) never write the same line.
  alignas(kCacheLineBytes) mutable FutexMutex mutex_;
  const std::unique_ptr<internal::BfcCore> core_;  // guarded by mutex_
  alignas(kCacheLineBytes) AllocationRetrier retrier_;
  std::unique_ptr<ThreadPools>
      pools_;  // set before threads share the allocator
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_BFC_ALLOCATOR_H_
