// //experiments:run writing through a fault-injecting filesystem
// (framework/io/testing/fault_injection_file_system.h), for the tests of full
// disks and failing writes. Test-only flags:
//   --fault_op open|append|sync|close|rename   the operation that fails
//   --fault_path TEXT                          only on paths containing TEXT
//   --fault_nth N                              the Nth matching one (default 1)
//   --fault_error ENOSPC|EIO|crash             fail with that errno, or exit
//                                              abruptly (code 137, no cleanup)
// Without --fault_op it behaves as //experiments:run. A grid run by it starts
// its runs with this binary but without these flags, so only the grid's own
// writes (the results files) see the fault.

#include <cerrno>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "experiments/run_main.h"
#include "framework/io/testing/fault_injection_file_system.h"

ABSL_FLAG(std::string, fault_op, "", "test only: open|append|sync|close|rename: the operation that fails");
ABSL_FLAG(std::string, fault_path, "", "test only: fail only on paths containing this text");
ABSL_FLAG(int, fault_nth, 1, "test only: the Nth matching operation fails");
ABSL_FLAG(std::string, fault_error, "ENOSPC", "test only: ENOSPC, EIO, or crash (exit 137)");

namespace tvlab {
namespace {

// Created on the first call, after the flags are parsed (RunMain parses them
// before anything is written).
class FlagConfiguredFileSystem : public FileSystemWrapper {
 public:
  FlagConfiguredFileSystem() : FileSystemWrapper(DefaultFileSystem()) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Get()->NewWritableFile(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Get()->NewAppendableFile(path);
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    return Get()->RenameFile(from, to);
  }

 private:
  FileSystem* Get() {
    if (faulty_ != nullptr) return faulty_.get();
    Fault fault;
    const std::string op = absl::GetFlag(FLAGS_fault_op);
    if (op.empty()) return target();
    if (!ParseFaultOp(op, &fault.op)) {
      std::cerr << "run_with_faults: unknown --fault_op '" << op << "'\n";
      std::exit(2);
    }
    fault.path_contains = absl::GetFlag(FLAGS_fault_path);
    fault.nth = absl::GetFlag(FLAGS_fault_nth);
    const std::string error = absl::GetFlag(FLAGS_fault_error);
    fault.error_number = error == "ENOSPC" ? ENOSPC : error == "EIO" ? EIO : 0;
    if (fault.error_number == 0 && error != "crash") {
      std::cerr << "run_with_faults: unknown --fault_error '" << error << "'\n";
      std::exit(2);
    }
    faulty_ = std::make_unique<FaultInjectionFileSystem>(target(), fault);
    return faulty_.get();
  }

  std::unique_ptr<FaultInjectionFileSystem> faulty_;
};

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  tvlab::FlagConfiguredFileSystem fs;
  return tvlab::RunMain(argc, argv, /*hooks=*/nullptr, &fs);
}
