#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_PROGRESS_LINE_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_PROGRESS_LINE_H_

// A progress line on stderr, redrawn in place at most twice a second:
//   prepare: 12.0 / 50.0 MB (24.0%)  8.1 MB/s  ETA 0:05  file 3 of 40
// Thread-safety: none; the thread that reads the inputs updates it.

#include <chrono>
#include <cstdint>
#include <string>

namespace tvlab {

class ProgressLine {
 public:
  ProgressLine(std::string label, int64_t total_bytes, bool enabled);
  // `done_bytes` of the total are read; `detail` is appended.
  void Update(int64_t done_bytes, const std::string& detail);
  // The final state, and a newline.
  void Finish(const std::string& detail);

 private:
  void Draw(int64_t done_bytes, const std::string& detail);

  std::string label_;
  int64_t total_bytes_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_PROGRESS_LINE_H_
