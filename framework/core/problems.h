#ifndef TVLAB_FRAMEWORK_CORE_PROBLEMS_H_
#define TVLAB_FRAMEWORK_CORE_PROBLEMS_H_

// Collects every problem a validation pass finds, so a user sees all of
// them at once (one per line), not one per attempt.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tvlab {

class Problems {
 public:
  void Add(std::string message) { list_.push_back(std::move(message)); }
  // Adds a non-OK status's message (OK adds nothing).
  void Add(const absl::Status& status) {
    if (!status.ok()) list_.emplace_back(status.message());
  }
  // "<path> must be > 0 (got <value>); <fix>" when value <= 0.
  void RequirePositive(const std::string& path, int64_t value, const std::string& fix) {
    if (value <= 0) Add(absl::StrCat(path, " must be > 0 (got ", value, "); ", fix));
  }
  bool empty() const { return list_.empty(); }
  const std::vector<std::string>& list() const { return list_; }
  // InvalidArgument with one problem per line, or OK.
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(list_, "\n"));
  }

 private:
  std::vector<std::string> list_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_PROBLEMS_H_
