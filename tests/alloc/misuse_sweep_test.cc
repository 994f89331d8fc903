// Misuse sweeps: every kind of bad free under every misuse policy, on every
// allocator, and hostile options and sizes. A misuse is reported (never
// silently accepted), changes nothing, and the allocator keeps serving.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "alloc/policy_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/alloc/tracking_allocator.h"

namespace tensormem {
namespace {

enum class BadFree { kDouble, kUnknown, kInterior };
constexpr BadFree kBadFrees[] = {BadFree::kDouble, BadFree::kUnknown,
                                 BadFree::kInterior};

// The allocators under test, each behind the plain Allocator interface.
struct Subject {
  std::string name;
  std::function<std::unique_ptr<Allocator>()> make;
};

// Keeps a wrapped allocator alive with the adaptor over it.
template <typename Adaptor>
class Owning final : public Allocator {
 public:
  template <typename... Args>
  explicit Owning(std::unique_ptr<Allocator> inner, Args... args)
      : inner_(std::move(inner)), adaptor_(*inner_, args...) {}
  std::string Name() const override { return adaptor_.Name(); }
  std::optional<AllocatorStats> GetStats() const override {
    return adaptor_.GetStats();
  }

 private:
  void* DoAllocate(size_t bytes, size_t alignment,
                   int32_t /*stream*/) override {
    return adaptor_.Allocate(bytes, alignment);
  }
  absl::Status DoDeallocate(void* ptr) override {
    return adaptor_.CheckedDeallocate(ptr);
  }
  std::unique_ptr<Allocator> inner_;
  Adaptor adaptor_;
};

std::unique_ptr<Allocator> MakeBfc() {
  return testing::MakeSimulatedBfc(64 * kMiB, testing::QuietOptions(true));
}

// A BFC allocator of 64 MiB following `choice` (nullptr, failing the test,
// when the registry refuses it).
std::unique_ptr<BfcAllocator> MakePolicyBfc(const testing::PolicyChoice& choice,
                                            uint64_t limit,
                                            BfcAllocator::Options options) {
  absl::StatusOr<std::unique_ptr<BfcAllocator>> bfc =
      testing::MakeChoiceBfc(choice,
                             std::make_unique<SimulatedSubAllocator>(
                                 256 * kMiB, choice.NeedsCoalescing()),
                             limit, std::move(options));
  EXPECT_TRUE(bfc.ok()) << choice.Label() << ": " << bfc.status();
  return bfc.ok() ? *std::move(bfc) : nullptr;
}

// Every policy in every example configuration, then the other allocators.
std::vector<Subject> Subjects() {
  std::vector<Subject> subjects;
  for (const testing::PolicyChoice& choice : testing::AllPolicyChoices()) {
    subjects.push_back({"bfc " + choice.Label(), [choice] {
                          return std::unique_ptr<Allocator>(MakePolicyBfc(
                              choice, 64 * kMiB, testing::QuietOptions(true)));
                        }});
  }
  std::vector<Subject> others = {
      {"system", [] { return std::make_unique<SystemAllocator>(); }},
      {"limiting(bfc)",
       [] {
         return std::make_unique<Owning<LimitingAllocator>>(
             MakeBfc(), uint64_t{32} * kMiB);
       }},
      {"limiting(system)",
       [] {
         return std::make_unique<Owning<LimitingAllocator>>(
             std::make_unique<SystemAllocator>(), uint64_t{32} * kMiB);
       }},
  };
  subjects.insert(subjects.end(), others.begin(), others.end());
  return subjects;
}

void* BadPointer(BadFree kind, Allocator& allocator, void* live) {
  switch (kind) {
    case BadFree::kDouble: {
      void* freed = allocator.Allocate(512);
      EXPECT_TRUE(allocator.CheckedDeallocate(freed).ok());
      return freed;
    }
    case BadFree::kUnknown:
      return reinterpret_cast<void*>(uintptr_t{0x5a5a5a5a5a00});
    case BadFree::kInterior:
      return static_cast<char*>(live) + 64;
  }
  return nullptr;
}

TEST(MisuseSweepTest, EveryBadFreeUnderEveryPolicyOnEveryAllocator) {
  int cases = 0;
  for (const Subject& subject : Subjects()) {
    for (BadFree kind : kBadFrees) {
      for (MisusePolicy policy :
           {MisusePolicy::kCallback, MisusePolicy::kLogAndIgnore,
            MisusePolicy::kLogAndAbort}) {
        SCOPED_TRACE(::testing::Message()
                     << subject.name << " kind " << static_cast<int>(kind)
                     << " policy " << static_cast<int>(policy));
        std::unique_ptr<Allocator> allocator = subject.make();
        ASSERT_NE(allocator, nullptr);
        void* live = allocator->Allocate(4096);
        ASSERT_NE(live, nullptr);
        void* bad = BadPointer(kind, *allocator, live);
        const std::optional<AllocatorStats> before = allocator->GetStats();
        if (policy == MisusePolicy::kLogAndAbort) {
          GTEST_FLAG_SET(death_test_style, "threadsafe");
          EXPECT_DEATH(allocator->Deallocate(bad), "");
        } else {
          std::vector<std::string> reports;
          allocator->SetMisusePolicy(policy, [&](const absl::Status& status) {
            reports.push_back(std::string(status.message()));
          });
          EXPECT_FALSE(allocator->CheckedDeallocate(bad).ok());
          allocator->Deallocate(bad);
          if (policy == MisusePolicy::kCallback) {
            EXPECT_EQ(reports.size(), 1u);
          }
        }
        const std::optional<AllocatorStats> after = allocator->GetStats();
        ASSERT_EQ(before.has_value(), after.has_value());
        if (before) {
          EXPECT_EQ(before->bytes_in_use, after->bytes_in_use);
          EXPECT_EQ(before->num_allocs, after->num_allocs);
        }
        // Still serving, and the live block is still freeable exactly once.
        void* next = allocator->Allocate(1024);
        EXPECT_NE(next, nullptr);
        EXPECT_TRUE(allocator->CheckedDeallocate(next).ok());
        EXPECT_TRUE(allocator->CheckedDeallocate(live).ok());
        EXPECT_FALSE(allocator->CheckedDeallocate(live).ok());
        ++cases;
      }
    }
  }
  std::printf("[sweep] misuse cases: %d\n", cases);
}

TEST(MisuseSweepTest, HostileSizesAndAlignmentsFailCleanly) {
  const size_t sizes[] = {0,
                          SIZE_MAX,
                          SIZE_MAX - 255,
                          size_t{1} << 63,
                          (size_t{1} << 63) + 1,
                          size_t{1} << 40};
  const size_t alignments[] = {0, 3, 6, size_t{1} << 63, SIZE_MAX};
  int cases = 0;
  for (const Subject& subject : Subjects()) {
    std::unique_ptr<Allocator> allocator = subject.make();
    ASSERT_NE(allocator, nullptr) << subject.name;
    for (size_t bytes : sizes) {
      for (size_t alignment : {size_t{64}, size_t{0}, size_t{3}}) {
        EXPECT_EQ(allocator->Allocate(bytes, alignment), nullptr)
            << subject.name << " bytes " << bytes << " alignment " << alignment;
        ++cases;
      }
    }
    for (size_t alignment : alignments) {
      void* block = allocator->Allocate(1024, alignment);
      // An invalid alignment is refused; none of these is valid.
      EXPECT_EQ(block, nullptr) << subject.name << " alignment " << alignment;
      ++cases;
    }
    void* fine = allocator->Allocate(1024, 4096);
    ASSERT_NE(fine, nullptr) << subject.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(fine) % 4096, 0u);
    EXPECT_TRUE(allocator->CheckedDeallocate(fine).ok());
  }
  std::printf("[sweep] hostile size cases: %d\n", cases);
}

TEST(MisuseSweepTest, HostileBfcOptionsKeepInvariants) {
  const double fractions[] = {std::numeric_limits<double>::quiet_NaN(),
                              -1.0,
                              2.0,
                              1e300,
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(),
                              1e-300};
  const uint64_t limits[] = {0, 1, 255, 256, uint64_t{1} << 62, UINT64_MAX};
  int cases = 0;
  for (const testing::PolicyChoice& choice : testing::AllPolicyChoices()) {
    for (double fraction : fractions) {
      for (uint64_t limit : limits) {
        for (bool growth : {true, false}) {
          SCOPED_TRACE(::testing::Message()
                       << choice.Label() << " fraction " << fraction
                       << " limit " << limit << " growth " << growth);
          BfcAllocator::Options options = testing::QuietOptions(growth);
          options.fragmentation_fraction = fraction;
          std::unique_ptr<BfcAllocator> allocator =
              MakePolicyBfc(choice, limit, options);
          ASSERT_NE(allocator, nullptr);
          std::vector<void*> live;
          for (size_t bytes :
               {size_t{1}, size_t{1000}, size_t{3} << 20, size_t{100} << 20}) {
            if (void* p = allocator->AllocateRaw(256, bytes)) live.push_back(p);
            ASSERT_TRUE(testing::InvariantsHold(*allocator));
          }
          if (limit >= 4 * kMiB) {
            EXPECT_FALSE(live.empty());
          }
          for (void* p : live) allocator->Deallocate(p);
          EXPECT_EQ(allocator->GetStats()->bytes_in_use, 0u);
          ASSERT_TRUE(testing::InvariantsHold(*allocator));
          ++cases;
        }
      }
    }
  }
  std::printf("[sweep] hostile option cases: %d\n", cases);
}

}  // namespace
}  // namespace tensormem
