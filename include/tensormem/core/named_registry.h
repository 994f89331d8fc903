// NamedRegistry: the one pattern behind tensormem's registries (allocation
// policies, sub-allocator kinds, planner strategies). Built-in entries come
// from one table; layers above add theirs at start-up. Entries never move, so
// a pointer Find or List handed out stays valid while others are added; every
// call is synchronised.
//
//   struct Kind { std::string name; int cost; };
//   NamedRegistry<Kind> kinds({{"host", 1}, {"vmm", 2}},
//                             [](const Kind& k) { return k.name; });
//   kinds.Add({"cuda", 3});           // true; a second "cuda": false
//   const Kind* vmm = kinds.Find("vmm");
//   for (const Kind* kind : kinds.List()) ...
#ifndef TENSORMEM_CORE_NAMED_REGISTRY_H_
#define TENSORMEM_CORE_NAMED_REGISTRY_H_

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensormem {

template <typename Entry>
class NamedRegistry {
 public:
  using NameOf = std::function<std::string_view(const Entry&)>;

  NamedRegistry(std::vector<Entry> built_ins, NameOf name_of)
      : name_of_(std::move(name_of)) {
    for (Entry& entry : built_ins) entries_.push_back(std::move(entry));
  }

  // nullptr when no entry has that name.
  const Entry* Find(std::string_view name) const {
    std::lock_guard lock(mutex_);
    return FindLocked(name);
  }

  // Every entry, in registration order.
  std::vector<const Entry*> List() const {
    std::lock_guard lock(mutex_);
    std::vector<const Entry*> list;
    for (const Entry& entry : entries_) list.push_back(&entry);
    return list;
  }

  // The names, in registration order (for "known: ..." in errors and help).
  std::vector<std::string> Names() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const Entry& entry : entries_) names.emplace_back(name_of_(entry));
    return names;
  }

  // Appends `entry`; false (nothing changes) when its name is taken.
  bool Add(Entry entry) {
    std::lock_guard lock(mutex_);
    if (FindLocked(name_of_(entry)) != nullptr) return false;
    entries_.push_back(std::move(entry));
    return true;
  }

 private:
  const Entry* FindLocked(std::string_view name) const {
    for (const Entry& entry : entries_) {
      if (name_of_(entry) == name) return &entry;
    }
    return nullptr;
  }

  NameOf name_of_;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // a deque: appending moves no entry
};

}  // namespace tensormem

#endif  // TENSORMEM_CORE_NAMED_REGISTRY_H_
