#ifndef TVLAB_FRAMEWORK_TENSORBOARD_EVENT_FILE_WRITER_H_
#define TVLAB_FRAMEWORK_TENSORBOARD_EVENT_FILE_WRITER_H_

// Writes TensorBoard event files: a file named
// events.out.tfevents.<unix seconds>.<host>.<pid>.<n> holding TFRecords, each
//   uint64 length (little endian)
//   uint32 masked CRC-32C of those 8 length bytes
//   the serialized Event (event.proto)
//   uint32 masked CRC-32C of the serialized Event
// The first event is file_version "brain.Event:2"; then one Summary event of
// simple_value scalars per WriteScalars call. TensorBoard (and TensorFlow's
// summary_iterator) read these files; no TensorFlow dependency.
//
// Each record is one WritableFile::Append through the FileSystem seam
// (framework/io/file_system.h), written straight to the kernel, so a crash
// loses at most the record being written (TensorBoard's reader stops at a
// torn last record), and fault-injection tests reach these writes too. A
// failed write is an error naming the file (run_experiment stops the run, as
// it does for train_log.csv). Not thread-safe: one writer per file.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/io/file_system.h"

namespace tvlab {

// One TFRecord: the framing above around `data`.
std::string FrameRecord(const std::string& data);

class EventFileWriter {
 public:
  // Creates a new event file in `dir` (which must exist; a name already
  // taken gets the next <n>) through `fs` and writes the file_version event.
  // `fs` must outlive the writer.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Open(const std::string& dir,
                                                               FileSystem* fs = DefaultFileSystem());

  // Appends one event at `step` with a scalar per (tag, value); values are
  // stored as float, as TensorBoard's simple_value is.
  absl::Status WriteScalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::unique_ptr<WritableFile> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  absl::Status WriteEvent(const std::string& serialized_event);

  std::string path_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TENSORBOARD_EVENT_FILE_WRITER_H_
