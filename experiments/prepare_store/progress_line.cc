#include "experiments/prepare_store/progress_line.h"

#include <cstdio>


namespace tvlab {

ProgressLine::ProgressLine(std::string label, int64_t total_bytes, bool enabled)
    : label_(std::move(label)),
      total_bytes_(total_bytes),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressLine::Update(int64_t done_bytes, const std::string& detail) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(500)) return;
  last_draw_ = now;
  Draw(done_bytes, detail);
}

void ProgressLine::Finish(const std::string& detail) {
  Draw(total_bytes_, detail);
  if (enabled_) std::fprintf(stderr, "\n");
}

void ProgressLine::Draw(int64_t done_bytes, const std::string& detail) {
  if (!enabled_) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double mb = done_bytes / 1e6, total_mb = total_bytes_ / 1e6;
  const double rate = seconds > 0 ? mb / seconds : 0;
  const int64_t eta = rate > 0 ? static_cast<int64_t>((total_mb - mb) / rate) : 0;
  const double percent = total_bytes_ > 0 ? 100.0 * done_bytes / total_bytes_ : 100.0;
  std::fprintf(stderr, "\r%s: %.1f / %.1f MB (%.1f%%)  %.1f MB/s  ETA %lld:%02lld  %s\033[K",
               label_.c_str(), mb, total_mb, percent, rate, static_cast<long long>(eta / 60),
               static_cast<long long>(eta % 60), detail.c_str());
  std::fflush(stderr);
}

}  // namespace tvlab
