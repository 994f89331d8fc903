// Early-return helpers for absl::Status / absl::StatusOr<T>.
//
//   TM_RETURN_IF_ERROR(file.Open());
//   TM_ASSIGN_OR_RETURN(BufferSet set, ReadBufferSetCsv(path));
#ifndef TENSORMEM_CORE_STATUS_MACROS_H_
#define TENSORMEM_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TM_RETURN_IF_ERROR(expr)                                \
  do {                                                          \
    if (::absl::Status tm_status_ = (expr); !tm_status_.ok()) { \
      return tm_status_;                                        \
    }                                                           \
  } while (0)

#define TM_STATUS_CONCAT_INNER_(a, b) a##b
#define TM_STATUS_CONCAT_(a, b) TM_STATUS_CONCAT_INNER_(a, b)

#define TM_ASSIGN_OR_RETURN(lhs, expr)                                      \
  TM_ASSIGN_OR_RETURN_IMPL_(TM_STATUS_CONCAT_(tm_statusor_, __LINE__), lhs, \
                            expr)

#define TM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = *std::move(statusor)

#endif  // TENSORMEM_CORE_STATUS_MACROS_H_
