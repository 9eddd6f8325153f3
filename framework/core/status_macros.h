#ifndef TVLAB_FRAMEWORK_CORE_STATUS_MACROS_H_
#define TVLAB_FRAMEWORK_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TVLAB_STATUS_CONCAT_INNER(a, b) a##b
#define TVLAB_STATUS_CONCAT(a, b) TVLAB_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define TVLAB_RETURN_IF_ERROR(expr)                     \
  do {                                                  \
    ::absl::Status tvlab_status_ = (expr);              \
    if (!tvlab_status_.ok()) return tvlab_status_;      \
  } while (0)

// `TVLAB_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps an absl::StatusOr.
#define TVLAB_ASSIGN_OR_RETURN(lhs, expr) \
  TVLAB_ASSIGN_OR_RETURN_IMPL(TVLAB_STATUS_CONCAT(tvlab_statusor_, __LINE__), lhs, expr)

#define TVLAB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // TVLAB_FRAMEWORK_CORE_STATUS_MACROS_H_
