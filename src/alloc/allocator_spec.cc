// The allocator specification's options table, parsing and validation.
#include "tensormem/alloc/allocator_spec.h"

#include <memory>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "alloc/allocator_spec_internal.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

using Setter = absl::Status (*)(AllocatorSpec& spec, const std::string& value);

struct Option {
  AllocatorOptionInfo info;
  Setter set;
};

absl::Status Bad(std::string_view key, const std::string& value,
                 std::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrFormat("option %s: '%s' is not valid (accepted: %s)",
                      std::string(key), value, std::string(accepted)));
}

std::optional<bool> ParseBool(const std::string& text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on")
    return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off")
    return false;
  return std::nullopt;
}

constexpr std::string_view kBool = "true/false, 1/0, yes/no, on/off";
constexpr std::string_view kSize = "bytes, or with K/M/G/T (binary), e.g. 16G";

absl::Status SetBool(std::string_view key, const std::string& value,
                     bool& field) {
  const std::optional<bool> parsed = ParseBool(value);
  if (!parsed) return Bad(key, value, kBool);
  field = *parsed;
  return absl::OkStatus();
}

// A count of allocators or pools: 1 to 16.
absl::Status SetCount(std::string_view key, const std::string& value,
                      int& out) {
  int count = 0;
  if (!absl::SimpleAtoi(value, &count) || count < 1 || count > 16)
    return Bad(key, value, "1 to 16");
  out = count;
  return absl::OkStatus();
}

absl::Status SetSize(std::string_view key, const std::string& value,
                     uint64_t& field) {
  absl::StatusOr<uint64_t> parsed = ParseByteSize(value);
  if (!parsed.ok() || *parsed == 0) return Bad(key, value, kSize);
  field = *parsed;
  return absl::OkStatus();
}

// The options, one line each; keys are what flags, variables and errors say.
const std::vector<Option>& Table() {
  static const auto* table = new std::vector<Option>{
      {{"allocator", "bfc, system", "the allocator kind"},
       [](AllocatorSpec& s, const std::string& v) {
         s.kind = v;
         return absl::OkStatus();
       }},
      {{"policy", "see --help's policy list", "bfc: the allocation policy"},
       [](AllocatorSpec& s, const std::string& v) {
         s.policy = v;
         return absl::OkStatus();
       }},
      {{"config", "key:value,... (PYTORCH_CUDA_ALLOC_CONF syntax)",
        "bfc: the policy's configuration"},
       [](AllocatorSpec& s, const std::string& v) {
         s.config = v;
         return absl::OkStatus();
       }},
      {{"sub_allocator", "see --help's sub-allocator list",
        "bfc: where regions come from"},
       [](AllocatorSpec& s, const std::string& v) {
         s.sub_allocator = v;
         return absl::OkStatus();
       }},
      {{"memory_limit", kSize, "the most memory the allocator may hold"},
       [](AllocatorSpec& s, const std::string& v) {
         uint64_t limit = 0;
         TM_RETURN_IF_ERROR(SetSize("memory_limit", v, limit));
         s.memory_limit = limit;
         return absl::OkStatus();
       }},
      {{"capacity", kSize, "address space of simulated and vmm upstreams"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetSize("capacity", v, s.capacity);
       }},
      {{"growth", kBool,
        "bfc: grow the pool on demand, or take the whole limit at once",
        "allow_growth"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetBool("growth", v, s.growth);
       }},
      {{"gc", kBool, "bfc: return free regions to the upstream before failing",
        "garbage_collection"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetBool("gc", v, s.garbage_collection);
       }},
      {{"fragmentation_fraction", "a number in [0, 1]",
        "tf policy: split whenever the tail is at least this fraction of the "
        "limit"},
       [](AllocatorSpec& s, const std::string& v) {
         double fraction = 0;
         if (!absl::SimpleAtod(v, &fraction) || !(fraction >= 0) ||
             !(fraction <= 1)) {
           return Bad("fragmentation_fraction", v, "a number in [0, 1]");
         }
         s.fragmentation_fraction = fraction;
         return absl::OkStatus();
       }},
      {{"coalescing", kBool,
        "simulated upstream: extend regions contiguously (default: yes, but "
        "no under the tf policy)"},
       [](AllocatorSpec& s, const std::string& v) {
         bool coalescing = false;
         TM_RETURN_IF_ERROR(SetBool("coalescing", v, coalescing));
         s.coalescing = coalescing;
         return absl::OkStatus();
       }},
      {{"granule", kSize, "tight policy: growth unit (a multiple of 256)"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetSize("granule", v, s.granule);
       }},
      {{"device", "a device ordinal >= 0", "device sub-allocators: which one"},
       [](AllocatorSpec& s, const std::string& v) {
         int device = 0;
         if (!absl::SimpleAtoi(v, &device) || device < 0)
           return Bad("device", v, "a device ordinal >= 0");
         s.device = device;
         return absl::OkStatus();
       }},
      {{"shards", "1 to 16",
        "bfc: independent allocators that threads are spread over (throughput "
        "grows with threads; they share the limit)"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetCount("shards", v, s.shards);
       }},
      {{"thread_pools", "1 to 16",
        "bfc: pools for threads past the first, sharing the limit (tight "
        "over simulated or vmm; 1: one pool for all threads)"},
       [](AllocatorSpec& s, const std::string& v) {
         return SetCount("thread_pools", v, s.thread_pools);
       }},
  };
  return *table;
}

}  // namespace

const std::vector<AllocatorOptionInfo>& AllocatorOptions() {
  static const auto* infos = [] {
    auto* list = new std::vector<AllocatorOptionInfo>;
    for (const Option& option : Table()) list->push_back(option.info);
    return list;
  }();
  return *infos;
}

std::string_view CanonicalAllocatorOption(std::string_view name) {
  for (const Option& option : Table()) {
    if (!option.info.alias.empty() && option.info.alias == name)
      return option.info.key;
  }
  return name;
}

absl::Status SetAllocatorOption(AllocatorSpec& spec, std::string_view key,
                                std::string_view value) {
  const std::string_view canonical = CanonicalAllocatorOption(key);
  std::vector<std::string> known;
  for (const Option& option : Table()) {
    if (option.info.key == canonical)
      return option.set(spec, std::string(value));
    known.emplace_back(option.info.key);
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown allocator option '%s' (known: %s)",
                      std::string(key), absl::StrJoin(known, ", ")));
}

absl::Status ApplyAllocatorEnvironment(
    AllocatorSpec& spec,
    const std::function<const char*(const char*)>& getenv) {
  for (const Option& option : Table()) {
    const std::string variable = absl::StrCat(
        "TENSORMEM_", absl::AsciiStrToUpper(std::string(option.info.key)));
    const char* value = getenv(variable.c_str());
    if (value == nullptr || *value == '\0') continue;
    if (absl::Status status = option.set(spec, value); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(variable, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

namespace {

// The policy with its configuration over what the sub-allocator will be: a
// configuration the upstream cannot honour (expandable segments over host
// memory) is refused here, before anything is built, rather than at the first
// allocation. Kinds that tell only once built are checked then.
absl::Status CheckPolicyFitsSubAllocator(const AllocatorSpec& spec) {
  const uint64_t limit = alloc_internal::BfcLimit(spec);
  const std::optional<bool> coalesces = KindCoalesces(
      spec.sub_allocator, alloc_internal::SubAllocatorParamsFor(spec, limit));
  if (!coalesces) return absl::OkStatus();
  const absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
      spec.policy,
      alloc_internal::PolicyEnvironmentFor(spec, limit, *coalesces),
      spec.config);
  if (policy.ok()) return absl::OkStatus();
  const absl::Status named =
      alloc_internal::NamePolicyError(spec, policy.status());
  return absl::Status(named.code(),
                      absl::StrCat(named.message(), " (sub_allocator is '",
                                   spec.sub_allocator, "')"));
}

}  // namespace

absl::Status ValidateAllocatorSpec(const AllocatorSpec& spec) {
  if (spec.kind != "bfc" && spec.kind != "system") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unknown allocator '%s' (known: bfc, system)", spec.kind));
  }
  if (spec.memory_limit == 0u) {
    return absl::InvalidArgumentError(
        "memory limit 0: nothing could be allocated");
  }
  const AllocatorSpec defaults;
  if (spec.kind == "system" &&
      (spec.policy != defaults.policy || !spec.config.empty() ||
       spec.sub_allocator != defaults.sub_allocator ||
       spec.garbage_collection || !spec.growth ||
       spec.fragmentation_fraction != 0 || spec.coalescing.has_value())) {
    return absl::InvalidArgumentError(
        "policy, config, sub_allocator, gc, growth, fragmentation_fraction and "
        "coalescing apply to allocator bfc only");
  }
  // Host regions are never contiguous and vmm regions always are: only the
  // simulated kind can honour either choice.
  if (spec.coalescing.has_value() && spec.sub_allocator != "simulated") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "coalescing applies to the simulated sub-allocator only (sub-allocator "
        "'%s' decides it by nature)",
        spec.sub_allocator));
  }
  if (spec.thread_pools < 1 || spec.thread_pools > 16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "thread_pools %d: accepted 1 to 16", spec.thread_pools));
  }
  if (spec.shards < 1 || spec.shards > 16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shards %d: accepted 1 to 16", spec.shards));
  }
  if (spec.shards > 1 &&
      (spec.kind != "bfc" ||
       (spec.sub_allocator != "simulated" && spec.sub_allocator != "vmm"))) {
    return absl::InvalidArgumentError(
        "shards apply to allocator bfc over the simulated or vmm "
        "sub-allocator (a shard is found by its fixed address range)");
  }
  if (spec.fragmentation_fraction != 0 && spec.policy != "tf") {
    return absl::InvalidArgumentError(
        "fragmentation_fraction applies to the tf policy only");
  }
  if (spec.kind == "bfc") return CheckPolicyFitsSubAllocator(spec);
  return absl::OkStatus();
}

std::string DescribeAllocator(const AllocatorSpec& spec) {
  const std::string limit = absl::StrCat(
      "limit ", HumanBytes(spec.memory_limit.value_or(spec.capacity)));
  if (spec.kind != "bfc")
    return spec.memory_limit ? absl::StrCat(spec.kind, "(", limit, ")")
                             : spec.kind;
  const AllocatorSpec defaults;
  std::string policy = spec.policy;
  if (!spec.config.empty()) absl::StrAppend(&policy, "[", spec.config, "]");
  std::string text =
      absl::StrCat("bfc(", policy, ", ", spec.sub_allocator, ", ", limit, ", ",
                   spec.growth ? "growth" : "no growth");
  if (spec.garbage_collection) text += ", gc";
  if (spec.fragmentation_fraction > 0) {
    absl::StrAppend(&text, ", fragmentation fraction ",
                    spec.fragmentation_fraction);
  }
  if (spec.coalescing)
    text += *spec.coalescing ? ", coalescing" : ", no coalescing";
  if (spec.granule != defaults.granule)
    absl::StrAppend(&text, ", granule ", HumanBytes(spec.granule));
  if (spec.shards > 1) absl::StrAppend(&text, ", ", spec.shards, " shards");
  return text + ")";
}

}  // namespace tensormem
