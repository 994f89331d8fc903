// ByteReader: turns a fuzzer's input into the decisions of a driver.
//
// Drivers decode their choices (which call, which size, which option) from the
// front of the input; once it is exhausted every value reads as 0, so any
// prefix of an input is itself a valid, shorter run. Works with any compiler
// (the replay tests build the targets with gcc).
//
//   tensormem::fuzz::ByteReader reader(data, size);
//   const uint8_t op = reader.Byte() % 4;
//   const uint64_t bytes = reader.Below(uint64_t{1} << 30);
//   std::string_view rest = reader.Rest();
#ifndef TENSORMEM_FUZZ_BYTE_READER_H_
#define TENSORMEM_FUZZ_BYTE_READER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tensormem::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return position_ >= size_; }

  uint8_t Byte() { return empty() ? 0 : data_[position_++]; }
  bool Bool() { return (Byte() & 1) != 0; }

  // `count` bytes (at most 8), little endian.
  uint64_t Bytes(int count) {
    uint64_t value = 0;
    for (int i = 0; i < count; ++i) value |= uint64_t{Byte()} << (8 * i);
    return value;
  }
  uint64_t U64() { return Bytes(8); }

  // A value in [0, bound) (0 when bound is 0), using only as many bytes as
  // the bound needs so small choices cost one byte.
  uint64_t Below(uint64_t bound) {
    if (bound <= 1) return 0;
    int count = 0;
    for (uint64_t rest = bound - 1; rest != 0; rest >>= 8) ++count;
    return Bytes(count) % bound;
  }

  // A size spread over magnitudes: 2^k plus or minus a little, or an extreme
  // (0, SIZE_MAX, 2^63) now and then, as hostile callers pass.
  uint64_t Size(int max_log2) {
    const uint8_t shape = Byte();
    if (shape == 0xff) return UINT64_MAX - Byte();
    if (shape == 0xfe) return uint64_t{1} << 63;
    const int log2 = shape % (max_log2 + 1);
    const uint64_t base = uint64_t{1} << log2;
    const uint64_t jitter = Below(base);
    return (shape & 0x80) != 0 ? base + jitter : base - jitter / 2;
  }

  // Everything not read yet.
  std::string_view Rest() {
    if (empty()) return {};
    std::string_view rest(reinterpret_cast<const char*>(data_) + position_,
                          size_ - position_);
    position_ = size_;
    return rest;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

}  // namespace tensormem::fuzz

#endif  // TENSORMEM_FUZZ_BYTE_READER_H_
