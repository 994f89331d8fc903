// ThreadNumber: a small number for the calling thread, for spreading threads
// over pools (the shards of a ShardedAllocator, a BfcAllocator's thread pools).
//
// A thread takes the lowest number no live thread holds when it first asks,
// and gives it back when it exits, so N threads alive at once get N different
// numbers however many threads came and went before.
//
//   const size_t pool = internal::ThreadNumber() % pools;
#ifndef TENSORMEM_SRC_ALLOC_THREAD_NUMBERS_H_
#define TENSORMEM_SRC_ALLOC_THREAD_NUMBERS_H_

#include <cstdint>

namespace tensormem::internal {

uint32_t ThreadNumber();

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_THREAD_NUMBERS_H_
