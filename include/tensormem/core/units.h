// Byte sizes as people write them, and as people read them.
//
// Flags and files accept plain bytes or a binary suffix (K, M, G, T = 1024^n),
// optionally followed by `iB` or `B`: "4096", "512M", "2GiB", "1.5G" (fractions
// of a unit are rounded down to a whole byte; a plain count such as "1.5" must
// be whole).
//
//   absl::StatusOr<uint64_t> limit = tensormem::ParseByteSize("80GiB");
//   std::cout << tensormem::HumanBytes(*limit);  // "80.00GiB"
#ifndef TENSORMEM_CORE_UNITS_H_
#define TENSORMEM_CORE_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tensormem {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kTiB = uint64_t{1} << 40;

// Parses "123", "64K", "512MiB", "2GB", "1.5G". Errors name the text and why.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

// "256B", "1.50KiB", "80.00GiB": two decimals above 1 KiB.
std::string HumanBytes(uint64_t bytes);

}  // namespace tensormem

#endif  // TENSORMEM_CORE_UNITS_H_
