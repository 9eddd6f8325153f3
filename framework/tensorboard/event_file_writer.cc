#include "framework/tensorboard/event_file_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "framework/tensorboard/crc32c.h"
#include "framework/tensorboard/event.pb.h"

namespace tvlab {
namespace {

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string FrameRecord(const std::string& data) {
  std::string record;
  record.reserve(data.size() + 16);
  AppendLittleEndian(data.size(), 8, &record);
  AppendLittleEndian(MaskCrc32c(Crc32c(record.data(), 8)), 4, &record);
  record += data;
  AppendLittleEndian(MaskCrc32c(Crc32c(data)), 4, &record);
  return record;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Open(const std::string& dir,
                                                                      FileSystem* fs) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat("TensorBoard event file: directory ", dir, " does not exist"));
  }
  const std::string stem =
      absl::StrCat(dir, "/events.out.tfevents.", static_cast<int64_t>(WallTime()), ".", HostName(),
                   ".", static_cast<int64_t>(getpid()), ".");
  int n = 0;
  while (Exists(absl::StrCat(stem, n))) ++n;
  const std::string path = absl::StrCat(stem, n);
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->NewWritableFile(path);
  if (!file.ok()) {
    return absl::Status(file.status().code(),
                        absl::StrCat("TensorBoard event file: ", file.status().message()));
  }
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(path, std::move(*file)));
  tensorboard::Event version;
  version.set_wall_time(WallTime());
  version.set_step(0);
  version.set_file_version("brain.Event:2");
  absl::Status written = writer->WriteEvent(version.SerializeAsString());
  if (!written.ok()) return written;
  return writer;
}

absl::Status EventFileWriter::WriteScalars(
    int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  tensorboard::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteEvent(event.SerializeAsString());
}

absl::Status EventFileWriter::WriteEvent(const std::string& serialized_event) {
  absl::Status written = file_->Append(FrameRecord(serialized_event));
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat("TensorBoard event file: ", written.message()));
  }
  return absl::OkStatus();
}

}  // namespace tvlab
