#include "framework/limits/size_limits.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/limits/memory_estimate.h"

namespace tvlab {
namespace {

struct Cap {
  const char* path;
  int64_t max;
  const char* why;
};

// Fields whose products size tensors, with bounds far above any model this
// framework can train and far below overflow.
constexpr Cap kCaps[] = {
    {"model.d_model", 1 << 20, "the model width"},
    {"model.d_ff", 1 << 22, "the FFN width"},
    {"model.num_heads", 1 << 16, "attention heads"},
    {"model.num_layers", 10000, "layers"},
    {"model.num_decoder_layers", 10000, "decoder layers"},
    {"model.max_seq_len", 1 << 22, "positions"},
    {"train.batch_size", 1 << 20, "sequences per step"},
    {"train.grad_accumulation", 1 << 16, "micro-batches per step"},
    {"eval.batch_size", 1 << 20, "sequences per evaluation batch"},
    {"eval.examples", 10000000, "evaluation examples"},
    {"eval.decode_examples", 10000000, "generated examples"},
    {"eval.decoding.max_new_tokens", 1 << 20, "generated tokens"},
    {"eval.decoding.beam_size", 1024, "beams"},
    {"eval.decoding.top_k", 1 << 24, "sampling candidates"},
};

}  // namespace

absl::Status CheckSizeLimits(const Experiment& spec, const std::optional<TaskSizes>& task,
                             int64_t available_bytes, int64_t hardware_threads) {
  std::vector<std::string> problems;
  for (const IntegerField& f : IntegerFields(spec)) {
    int64_t max = 0;
    std::string why;
    for (const Cap& c : kCaps) {
      if (f.path == c.path) {
        max = c.max;
        why = c.why;
      }
    }
    if (max == 0 && (f.in_plugin || f.path.rfind("task.", 0) == 0)) {
      max = kMaxTaskOrPluginInteger;
      why = f.in_plugin ? "a plugin option" : "a task size";
    }
    if (max > 0 && f.value > static_cast<double>(max))
      problems.push_back(absl::StrCat(f.path, " (", static_cast<int64_t>(f.value), ") is above ", max,
                                      ", the most tvlab accepts for ", why, "; lower it"));
  }
  const int64_t threads = spec.runtime().threads();
  const int64_t max_threads = 4 * std::max<int64_t>(hardware_threads, 1);
  if (threads > max_threads)
    problems.push_back(absl::StrCat("runtime.threads (", threads, ") is above ", max_threads,
                                    " (4 x the ", hardware_threads, " hardware threads of this machine); "
                                    "use at most ", hardware_threads));
  if (problems.empty() && task) {
    absl::Status fits = CheckFitsInMemory(spec, *task, available_bytes);
    if (!fits.ok()) problems.emplace_back(fits.message());
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

absl::Status CheckSizeLimits(const Experiment& spec, const std::optional<TaskSizes>& task) {
  return CheckSizeLimits(spec, task, AvailableMemoryBytes(), std::thread::hardware_concurrency());
}

}  // namespace tvlab
