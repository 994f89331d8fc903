// MemoryDump: a snapshot of an allocator's memory, for people and for tools.
//
// Every region and every chunk in it (offset, size, requested size, in use or
// free, size class), a per-bin summary and the statistics, as plain data. The
// same snapshot prints as JSON (snake_case keys, byte counts as integers) and
// as a text report in the spirit of TensorFlow's memory log.
//
//   MemoryDump dump = bfc_allocator.RecordMemoryDump();
//   std::cout << dump.ToJson().dump(2) << "\n" << dump.ToText();
#ifndef TENSORMEM_ALLOC_MEMORY_DUMP_H_
#define TENSORMEM_ALLOC_MEMORY_DUMP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json_fwd.hpp"
#include "tensormem/alloc/allocator_stats.h"

namespace tensormem {

struct MemoryDump {
  struct Chunk {
    uint64_t address = 0;
    uint64_t offset = 0;  // address - base (see MemoryDump::base_address)
    uint64_t size = 0;
    uint64_t requested_size = 0;  // 0 for a free chunk
    bool in_use = false;
    // Address space whose memory was given back to the upstream (neither
    // free nor in use).
    bool decommitted = false;
    int bin = 0;                  // size class of `size`
    int64_t allocation_id = -1;   // -1 free, -2 decommitted
    uint64_t freed_at_count = 0;  // timing counter at free (timestamped chunks)
  };
  struct Region {
    uint64_t address = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    std::vector<Chunk> chunks;  // in address order, tiling the region
  };
  // All chunks whose size falls in the bin's size class, in use or free.
  struct BinSummary {
    int bin = 0;
    uint64_t bin_size = 0;  // smallest chunk size of the class
    uint64_t total_bytes_in_use = 0;
    uint64_t total_bytes_in_bin = 0;
    uint64_t total_requested_bytes_in_use = 0;
    uint64_t total_chunks_in_use = 0;
    uint64_t total_chunks_in_bin = 0;
  };

  std::string allocator_name;
  // Offsets are relative to this: the upstream's base address when it has one
  // (the simulated and vmm upstreams), else the lowest region's address.
  uint64_t base_address = 0;
  AllocatorStats stats;
  double fragmentation =
      0;  // (free - largest free) / free; 0 when nothing is free
  std::vector<Region> regions;
  std::vector<BinSummary> bins;

  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// The counters and pool sizes of `stats` as JSON: a dump's "stats", and the
// first keys of a replay's (AllocatorStatsToJson adds the rest).
nlohmann::json AllocatorStatsCountersToJson(const AllocatorStats& stats);

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_MEMORY_DUMP_H_
