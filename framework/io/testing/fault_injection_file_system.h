#ifndef TVLAB_FRAMEWORK_IO_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
#define TVLAB_FRAMEWORK_IO_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_

// Tests only: a FileSystem that forwards to another one and, at the Nth
// operation of one kind on a path containing a given text, fails it with an
// errno (ENOSPC, EIO, ...) or "crashes" the process (_exit(137), no
// destructors, as a kill -9 or a power cut would). Operations are counted
// from 1 over the whole process, matching ones only.
//
// Example: the first write into any metrics.json fails with ENOSPC:
//   FaultInjectionFileSystem fs(DefaultFileSystem(),
//                               {FaultOp::kAppend, "metrics.json", 1, ENOSPC});

#include <string>

#include "framework/io/file_system.h"

namespace tvlab {

enum class FaultOp { kOpen, kAppend, kSync, kClose, kRename };

struct Fault {
  FaultOp op = FaultOp::kAppend;
  std::string path_contains;  // "" matches every path
  int nth = 1;                // the Nth matching operation fails
  int error_number = 0;       // errno to fail with; 0: crash instead (_exit(137))
};

// "append", "sync", ... ; false if `name` is none of them.
bool ParseFaultOp(const std::string& name, FaultOp* op);

class FaultInjectionFileSystem : public FileSystemWrapper {
 public:
  FaultInjectionFileSystem(FileSystem* target, Fault fault) : FileSystemWrapper(target), fault_(fault) {}

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;

  // Called by the files this filesystem opened: OK, or the injected error.
  absl::Status Check(FaultOp op, const std::string& path);
  // Whether the fault has fired.
  bool fired() const { return fired_; }

 private:
  Fault fault_;
  int seen_ = 0;
  bool fired_ = false;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_IO_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
