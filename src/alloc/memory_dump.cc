#include "tensormem/alloc/memory_dump.h"

#include <string>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"

namespace tensormem {

nlohmann::json AllocatorStatsCountersToJson(const AllocatorStats& stats) {
  nlohmann::json json = {
      {"num_allocs", stats.num_allocs},
      {"bytes_in_use", stats.bytes_in_use},
      {"peak_bytes_in_use", stats.peak_bytes_in_use},
      {"largest_alloc_size", stats.largest_alloc_size},
      {"pool_bytes", stats.pool_bytes},
      {"peak_pool_bytes", stats.peak_pool_bytes},
      {"largest_free_block_bytes", stats.largest_free_block_bytes},
  };
  json["bytes_limit"] =
      stats.bytes_limit ? nlohmann::json(*stats.bytes_limit) : nlohmann::json();
  return json;
}

nlohmann::json MemoryDump::ToJson() const {
  nlohmann::json json;
  json["allocator_name"] = allocator_name;
  json["base_address"] = base_address;
  json["stats"] = AllocatorStatsCountersToJson(stats);
  json["fragmentation"] = fragmentation;
  json["regions"] = nlohmann::json::array();
  for (const Region& region : regions) {
    nlohmann::json chunks = nlohmann::json::array();
    for (const Chunk& c : region.chunks) {
      chunks.push_back({{"address", c.address},
                        {"offset", c.offset},
                        {"size", c.size},
                        {"requested_size", c.requested_size},
                        {"in_use", c.in_use},
                        {"decommitted", c.decommitted},
                        {"bin", c.bin},
                        {"allocation_id", c.allocation_id},
                        {"freed_at_count", c.freed_at_count}});
    }
    json["regions"].push_back({{"address", region.address},
                               {"offset", region.offset},
                               {"size", region.size},
                               {"chunks", std::move(chunks)}});
  }
  json["bins"] = nlohmann::json::array();
  for (const BinSummary& bin : bins) {
    json["bins"].push_back(
        {{"bin", bin.bin},
         {"bin_size", bin.bin_size},
         {"total_bytes_in_use", bin.total_bytes_in_use},
         {"total_bytes_in_bin", bin.total_bytes_in_bin},
         {"total_requested_bytes_in_use", bin.total_requested_bytes_in_use},
         {"total_chunks_in_use", bin.total_chunks_in_use},
         {"total_chunks_in_bin", bin.total_chunks_in_bin}});
  }
  return json;
}

std::string MemoryDump::ToText() const {
  std::string text =
      absl::StrFormat("Memory dump of allocator %s\n", allocator_name);
  for (const BinSummary& bin : bins) {
    if (bin.total_chunks_in_bin == 0) continue;
    absl::StrAppendFormat(
        &text,
        "Bin (%s): Total Chunks: %d, Chunks in use: %d. %s allocated for "
        "chunks. %s in use in bin. %s client-requested in use in bin.\n",
        HumanBytes(bin.bin_size), bin.total_chunks_in_bin,
        bin.total_chunks_in_use, HumanBytes(bin.total_bytes_in_bin),
        HumanBytes(bin.total_bytes_in_use),
        HumanBytes(bin.total_requested_bytes_in_use));
  }
  for (const Region& region : regions) {
    absl::StrAppendFormat(&text, "Region at offset 0x%x of size %d (%s)\n",
                          region.offset, region.size, HumanBytes(region.size));
    for (const Chunk& c : region.chunks) {
      if (c.in_use) {
        absl::StrAppendFormat(
            &text, "  InUse at 0x%x of size %d (requested %d, id %d)\n",
            c.offset, c.size, c.requested_size, c.allocation_id);
      } else if (c.decommitted) {
        absl::StrAppendFormat(&text, "  Decommitted at 0x%x of size %d\n",
                              c.offset, c.size);
      } else {
        absl::StrAppendFormat(
            &text, "  Free  at 0x%x of size %d%s\n", c.offset, c.size,
            c.freed_at_count > 0
                ? absl::StrFormat(" (freed at %d)", c.freed_at_count)
                : std::string());
      }
    }
  }
  absl::StrAppendFormat(&text, "Fragmentation: %.4f\n%s", fragmentation,
                        stats.DebugString());
  return text;
}

}  // namespace tensormem
