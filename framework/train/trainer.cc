#include "framework/train/trainer.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/status_macros.h"
#include "framework/data/task.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/adamw.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", tmp, "'"));
  }
  std::filesystem::rename(tmp, path);
  return absl::OkStatus();
}

std::string FormatEta(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.0fs", seconds);
  return absl::StrFormat("%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
}

struct EvalResult {
  double token_accuracy = 0, sequence_accuracy = 0, loss = 0;
};

EvalResult Evaluate(const Model& model, const Task& task, const EvalSpec& eval) {
  NoGradGuard no_grad;
  int64_t tokens = 0, correct_tokens = 0, sequences = 0, correct_sequences = 0;
  double loss_sum = 0;
  for (int64_t first = 0; first < eval.examples(); first += eval.batch_size()) {
    int64_t count = std::min<int64_t>(eval.batch_size(), eval.examples() - first);
    Batch b = task.EvalBatch(eval.seed(), first, count);
    Var logits = model.Forward(b, ForwardContext{});  // (B, T, V)
    const int64_t v = logits.dim(2);
    Var flat = Reshape(logits, {b.batch * b.length, v});
    loss_sum += CrossEntropy(flat, b.targets, kIgnoreTarget).value().item() * count;
    const float* l = logits.value().data();
    for (int64_t r = 0; r < b.batch; ++r) {
      bool all = true;
      for (int64_t t = 0; t < b.length; ++t) {
        int64_t i = r * b.length + t;
        if (b.targets[i] == kIgnoreTarget) continue;
        int64_t best = 0;  // greedy argmax
        for (int64_t c = 1; c < v; ++c)
          if (l[i * v + c] > l[i * v + best]) best = c;
        bool ok = best == b.targets[i];
        correct_tokens += ok;
        ++tokens;
        all = all && ok;
      }
      correct_sequences += all;
      ++sequences;
    }
  }
  EvalResult r;
  r.token_accuracy = tokens ? static_cast<double>(correct_tokens) / tokens : 0;
  r.sequence_accuracy = sequences ? static_cast<double>(correct_sequences) / sequences : 0;
  r.loss = loss_sum / eval.examples();
  return r;
}

}  // namespace

absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress) {
  TVLAB_RETURN_IF_ERROR(SetBackend(spec.runtime().backend()));
  omp_set_num_threads(spec.runtime().threads());
  std::filesystem::create_directories(run_dir);
  TVLAB_RETURN_IF_ERROR(WriteFile(run_dir + "/spec.resolved.pbtxt", SpecToText(spec)));

  TVLAB_ASSIGN_OR_RETURN(const TaskEntry* task_entry, TaskRegistry().Get(TaskName(spec)));
  std::unique_ptr<Task> task = task_entry->create(spec);
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, BuildModel(spec, task->vocab_size()));
  auto params = model->NamedParameters();
  AdamW optimizer(params, spec.train().optimizer().adamw());
  const float lr = spec.train().optimizer().adamw().lr();

  std::ofstream csv(run_dir + "/train_log.csv", std::ios::trunc);
  csv << "step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec\n";
  const int64_t steps = spec.train().steps(), batch_size = spec.train().batch_size();
  progress << absl::StrFormat("%s: %d parameters, %d steps of %d sequences, backend %s, %d thread(s)\n",
                              spec.name(), model->NumParameters(), steps, batch_size,
                              spec.runtime().backend(), spec.runtime().threads());
  const auto start = Clock::now();
  int64_t tokens_seen = 0;
  double last_loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    Batch batch = task->TrainBatch(spec.seed(), step, batch_size);
    Var logits = model->Forward(batch, ForwardContext{true, spec.seed(), step});  // (B, T, V)
    Var loss = CrossEntropy(Reshape(logits, {batch.batch * batch.length, logits.dim(2)}),
                            batch.targets, kIgnoreTarget);
    last_loss = loss.value().item();
    if (!std::isfinite(last_loss)) {
      return absl::AbortedError(absl::StrFormat(
          "training loss became %f at step %d; stopped. Lower train.optimizer.adamw.lr (now %g) "
          "or check the data", last_loss, step, lr));
    }
    ZeroGrads(params);
    Backward(loss);
    double grad_norm = GlobalGradNorm(params);
    optimizer.Step(lr);
    tokens_seen += batch.batch * batch.length;
    if (step % spec.train().log_every() == 0 || step == steps - 1) {
      double elapsed = Seconds(start);
      double tps = tokens_seen / std::max(elapsed, 1e-9);
      double eta = elapsed / (step + 1) * (steps - step - 1);
      progress << absl::StrFormat("step %5d/%d  loss %.4f  %8.0f tok/s  ETA %s\n", step, steps,
                                  last_loss, tps, FormatEta(eta));
      progress.flush();
      csv << absl::StrFormat("%d,%.6f,%g,%.6f,%.1f,%.3f\n", step, last_loss, lr, grad_norm, tps,
                             elapsed);
      csv.flush();
    }
  }
  const double train_seconds = Seconds(start);
  EvalResult eval = Evaluate(*model, *task, spec.eval());

  RunMetrics metrics;
  metrics.set_token_accuracy(eval.token_accuracy);
  metrics.set_sequence_accuracy(eval.sequence_accuracy);
  metrics.set_final_train_loss(last_loss);
  metrics.set_eval_loss(eval.loss);
  metrics.set_parameters(model->NumParameters());
  metrics.set_train_seconds(train_seconds);
  metrics.set_tokens_per_second(tokens_seen / std::max(train_seconds, 1e-9));
  metrics.set_kv_cache_bytes_per_token(model->KvCacheBytesPerToken(sizeof(float)));
  metrics.set_steps(steps);
  metrics.set_backend(spec.runtime().backend());
  metrics.set_threads(spec.runtime().threads());

  TVLAB_RETURN_IF_ERROR(WriteSafetensors(run_dir + "/model.safetensors", params));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  auto printed = google::protobuf::util::MessageToJsonString(metrics, &json, options);
  if (!printed.ok()) return absl::InternalError(std::string(printed.message()));
  TVLAB_RETURN_IF_ERROR(WriteFile(run_dir + "/metrics.json", json));
  return metrics;
}

}  // namespace tvlab
