#include "framework/io/testing/fault_injection_file_system.h"

#include <unistd.h>

#include <utility>

#include "framework/core/status_macros.h"

namespace tvlab {
namespace {

class FaultInjectionFile : public WritableFile {
 public:
  FaultInjectionFile(FaultInjectionFileSystem* fs, std::unique_ptr<WritableFile> target)
      : fs_(fs), target_(std::move(target)) {}
  absl::Status Append(absl::string_view data) override {
    TVLAB_RETURN_IF_ERROR(fs_->Check(FaultOp::kAppend, path()));
    return target_->Append(data);
  }
  absl::Status Sync() override {
    TVLAB_RETURN_IF_ERROR(fs_->Check(FaultOp::kSync, path()));
    return target_->Sync();
  }
  absl::Status Close() override {
    absl::Status injected = fs_->Check(FaultOp::kClose, path());
    absl::Status closed = target_->Close();
    return injected.ok() ? closed : injected;
  }
  const std::string& path() const override { return target_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<WritableFile> target_;
};

}  // namespace

bool ParseFaultOp(const std::string& name, FaultOp* op) {
  static const std::pair<const char*, FaultOp> kNames[] = {{"open", FaultOp::kOpen},
                                                           {"append", FaultOp::kAppend},
                                                           {"sync", FaultOp::kSync},
                                                           {"close", FaultOp::kClose},
                                                           {"rename", FaultOp::kRename}};
  for (const auto& [n, o] : kNames) {
    if (name == n) {
      *op = o;
      return true;
    }
  }
  return false;
}

absl::Status FaultInjectionFileSystem::Check(FaultOp op, const std::string& path) {
  if (fired_ || op != fault_.op || path.find(fault_.path_contains) == std::string::npos)
    return absl::OkStatus();
  if (++seen_ < fault_.nth) return absl::OkStatus();
  fired_ = true;
  if (fault_.error_number == 0) _exit(137);
  return ErrnoStatus(fault_.error_number, "cannot write (injected fault)", path);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(
    const std::string& path) {
  TVLAB_RETURN_IF_ERROR(Check(FaultOp::kOpen, path));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, target()->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new FaultInjectionFile(this, std::move(file)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewAppendableFile(
    const std::string& path) {
  TVLAB_RETURN_IF_ERROR(Check(FaultOp::kOpen, path));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, target()->NewAppendableFile(path));
  return std::unique_ptr<WritableFile>(new FaultInjectionFile(this, std::move(file)));
}

absl::Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  TVLAB_RETURN_IF_ERROR(Check(FaultOp::kRename, to));
  return target()->RenameFile(from, to);
}

}  // namespace tvlab
