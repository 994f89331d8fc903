// FUZZ_CHECK: the assertion of fuzz targets. A failed check prints what broke
// and aborts, which libFuzzer records as a crash with its input, and which
// fails the corpus replay tests.
#ifndef TENSORMEM_FUZZ_FUZZ_CHECK_H_
#define TENSORMEM_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                          \
  do {                                                                      \
    if (!(condition)) {                                                     \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                   #condition);                                             \
      std::fprintf(stderr, __VA_ARGS__);                                    \
      std::fprintf(stderr, "\n");                                           \
      std::abort();                                                         \
    }                                                                       \
  } while (false)

#endif  // TENSORMEM_FUZZ_FUZZ_CHECK_H_
