#include "tensormem/plan/checker.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

// One live address range during the sweep, ordered by start address.
struct LiveRange {
  uint64_t begin;
  uint64_t end;
  size_t index;
  friend bool operator<(const LiveRange& a, const LiveRange& b) {
    return std::tie(a.begin, a.end, a.index) <
           std::tie(b.begin, b.end, b.index);
  }
};

std::string Describe(const Buffer& b) {
  return absl::StrFormat("buffer %d (live [%d, %d), bytes [%d, %d))", b.id,
                         b.lower, b.upper, *b.offset, *b.offset + b.size);
}

}  // namespace

absl::Status CheckPlacement(const BufferSet& placed, uint64_t alignment) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  const std::vector<Buffer>& buffers = placed.buffers;
  for (const Buffer& b : buffers) {
    if (!b.offset)
      return absl::InvalidArgumentError(
          absl::StrFormat("buffer %d has no offset", b.id));
    if (*b.offset % alignment != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "buffer %d: offset %d is not a multiple of the alignment %d", b.id,
          *b.offset, alignment));
    }
    if (!CheckedAdd(*b.offset, b.size)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("buffer %d: offset %d + size %d overflows 64 bits",
                          b.id, *b.offset, b.size));
    }
    if (b.upper <= b.lower) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "buffer %d: empty lifetime [%d, %d)", b.id, b.lower, b.upper));
    }
  }
  // Sweep over time. At equal times releases go first: lifetimes are half-open.
  // Zero-size buffers hold no bytes and never conflict.
  struct Event {
    int64_t time;
    bool starts;
    size_t index;
  };
  std::vector<Event> events;
  events.reserve(buffers.size() * 2);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].size == 0) continue;
    events.push_back({buffers[i].lower, true, i});
    events.push_back({buffers[i].upper, false, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.starts, a.index) <
           std::tie(b.time, b.starts, b.index);
  });
  // The live ranges are pairwise disjoint, so sorted by start they are also
  // sorted by end: a new range can only overlap its two neighbours.
  std::set<LiveRange> live;
  for (const Event& event : events) {
    const Buffer& b = buffers[event.index];
    const LiveRange range{*b.offset, *b.offset + b.size, event.index};
    if (!event.starts) {
      live.erase(range);
      continue;
    }
    auto [it, inserted] = live.insert(range);
    const size_t* conflict = nullptr;
    if (auto next = std::next(it);
        next != live.end() && next->begin < range.end) {
      conflict = &next->index;
    } else if (it != live.begin() && std::prev(it)->end > range.begin) {
      conflict = &std::prev(it)->index;
    }
    if (conflict != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s overlaps %s", Describe(buffers[*conflict]), Describe(b)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckObjects(const std::vector<UsageRecord<>>& records,
                          const ObjectsAssignment<>& objects) {
  if (objects.object_ids.size() != records.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d object ids for %d tensors",
                        objects.object_ids.size(), records.size()));
  }
  const size_t num_objects = objects.object_sizes.size();
  std::vector<std::vector<size_t>> tensors_of_object(num_objects);
  for (size_t i = 0; i < records.size(); ++i) {
    const size_t object = objects.object_ids[i];
    if (object >= num_objects) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor %d: object %d does not exist (%d objects)", i,
                          object, num_objects));
    }
    if (objects.object_sizes[object] < records[i].tensor_size) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor %d of %d bytes does not fit object %d of %d bytes", i,
          records[i].tensor_size, object, objects.object_sizes[object]));
    }
    if (records[i].first_task > records[i].last_task) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor %d: first_task %d is after last_task %d", i,
                          records[i].first_task, records[i].last_task));
    }
    tensors_of_object[object].push_back(i);
  }
  for (size_t object = 0; object < num_objects; ++object) {
    std::vector<size_t>& tensors = tensors_of_object[object];
    std::sort(tensors.begin(), tensors.end(), [&](size_t a, size_t b) {
      return std::tie(records[a].first_task, a) <
             std::tie(records[b].first_task, b);
    });
    // Sorted by first task, a conflict shows up between a tensor and the
    // previous tensor that ends last.
    size_t latest = kNotAssigned;
    for (size_t tensor : tensors) {
      if (latest != kNotAssigned &&
          records[latest].last_task >= records[tensor].first_task) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "object %d: tensors %d (tasks [%d, %d]) and %d (tasks [%d, %d]) "
            "are live at the "
            "same time",
            object, latest, records[latest].first_task,
            records[latest].last_task, tensor, records[tensor].first_task,
            records[tensor].last_task));
      }
      if (latest == kNotAssigned ||
          records[tensor].last_task > records[latest].last_task) {
        latest = tensor;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOffsets(const std::vector<UsageRecord<>>& records,
                          const OffsetsAssignment& offsets,
                          uint64_t alignment) {
  if (offsets.offsets.size() != records.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d offsets for %d tensors", offsets.offsets.size(), records.size()));
  }
  absl::StatusOr<BufferSet> set = FromUsageRecords(records);
  if (!set.ok()) return set.status();
  for (size_t i = 0; i < records.size(); ++i) {
    set->buffers[i].offset = offsets.offsets[i];
    const std::optional<uint64_t> end =
        CheckedAdd(offsets.offsets[i], records[i].tensor_size);
    if (end && *end > offsets.total_size) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor %d ends at byte %d, beyond the total size %d",
                          i, *end, offsets.total_size));
    }
  }
  return CheckPlacement(*set, alignment);
}

}  // namespace tensormem
