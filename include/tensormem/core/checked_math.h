// Overflow-checked arithmetic and rounding on byte counts.
//
// Every computation on a user-supplied size goes through these helpers, so a
// request such as `SIZE_MAX - 10` is refused cleanly instead of wrapping.
//
//   std::optional<size_t> total = tensormem::CheckedAdd(a, b);
//   if (!total) return absl::InvalidArgumentError("size overflows");
#ifndef TENSORMEM_CORE_CHECKED_MATH_H_
#define TENSORMEM_CORE_CHECKED_MATH_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace tensormem {

constexpr bool IsPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// floor(log2(n)) for n > 0.
constexpr int Log2Floor(uint64_t n) { return 63 - std::countl_zero(n); }

constexpr std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

constexpr std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t product;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// Smallest multiple of `multiple` (> 0) that is >= n, or nullopt on overflow.
constexpr std::optional<uint64_t> CheckedRoundUp(uint64_t n,
                                                 uint64_t multiple) {
  const uint64_t remainder = n % multiple;
  if (remainder == 0) return n;
  return CheckedAdd(n, multiple - remainder);
}

// Largest multiple of `multiple` (> 0) that is <= n.
constexpr uint64_t RoundDown(uint64_t n, uint64_t multiple) {
  return n - n % multiple;
}

// Rounds up where the caller has already bounded n (e.g. below the memory
// limit).
constexpr uint64_t RoundUp(uint64_t n, uint64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

}  // namespace tensormem

#endif  // TENSORMEM_CORE_CHECKED_MATH_H_
