// Data loading alone: the training batches of a spec (Task::TrainBatch, as
// the trainer calls it once per micro-batch), built without a model, timed.
// bench/store_bench.sh divides the time per batch by a run's time per step
// to give data loading's share of a training step.
//
//   bazel-bin/bench/data_loading_time SPEC.pbtxt BATCHES [field.path=value ...]
//
// Prints one JSON line: batches, seconds per batch, tokens per second.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "framework/spec/spec_loader.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SPEC.pbtxt BATCHES [field.path=value ...]\n", argv[0]);
    return 2;
  }
  const int64_t batches = std::atoll(argv[2]);
  std::vector<std::string> overrides(argv + 3, argv + argc);
  std::shared_ptr<const tvlab::Task> task;
  absl::StatusOr<tvlab::Experiment> spec = tvlab::LoadExperiment(argv[1], overrides, &task);
  if (!spec.ok() || batches <= 0) {
    std::fprintf(stderr, "%s\n", spec.ok() ? "BATCHES must be > 0" : std::string(spec.status().message()).c_str());
    return 2;
  }
  const int64_t batch_size = spec->train().batch_size();
  int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t index = 0; index < batches; ++index) {
    const tvlab::Batch batch = task->TrainBatch(spec->seed(), index, batch_size);
    tokens += static_cast<int64_t>(batch.inputs.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"batches\": %lld, \"seconds_per_batch\": %.9f, \"tokens_per_second\": %.0f}\n",
              static_cast<long long>(batches), seconds / batches, tokens / seconds);
  return 0;
}
