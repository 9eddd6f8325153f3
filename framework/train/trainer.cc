#include "framework/train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/schema/spec_text.h"
#include "framework/train/adamw.h"
#include "framework/train/checkpoint.h"
#include "framework/train/evaluate.h"
#include "framework/train/lr_schedule.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kLogHeader[] =
    "step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec,eval_loss,eval_token_accuracy\n";

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

// Keeps the log rows of steps before `next_step` (a resumed run redoes the
// rest, bit for bit).
absl::Status TruncateLog(const std::string& path, int64_t next_step) {
  std::ifstream in(path);
  std::string line, kept = kLogHeader;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (std::stoll(line.substr(0, line.find(','))) < next_step) kept += line + "\n";
  }
  return WriteFile(path, kept);
}

absl::Status WriteMetrics(const std::string& path, const RunMetrics& metrics) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  auto printed = google::protobuf::util::MessageToJsonString(metrics, &json, options);
  if (!printed.ok()) return absl::InternalError(std::string(printed.message()));
  return WriteFile(path, json);
}

}  // namespace

absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress, const RunOptions& options) {
  if (options.eval_only && options.init_from.empty()) {
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  }
  TVLAB_RETURN_IF_ERROR(SetBackend(spec.runtime().backend()));
  omp_set_num_threads(spec.runtime().threads());
  std::filesystem::create_directories(run_dir);
  TVLAB_RETURN_IF_ERROR(WriteFile(run_dir + "/spec.resolved.pbtxt", SpecToText(spec)));

  TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Task> task, LoadTask(spec));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                         BuildModel(spec, task->vocab_size(), HeadOutputs(*task)));
  auto params = model->NamedParameters();
  const TrainSpec& train = spec.train();
  AdamW optimizer(params, train.optimizer().adamw());
  const float peak_lr = train.optimizer().adamw().lr();
  const int64_t steps = train.steps(), batch_size = train.batch_size();
  const int64_t accumulation = train.grad_accumulation();

  TrainState state;
  if (options.resume) {
    TVLAB_ASSIGN_OR_RETURN(std::string dir, LatestCheckpoint(run_dir));
    TVLAB_ASSIGN_OR_RETURN(state, LoadCheckpoint(dir, params, &optimizer));
    TVLAB_RETURN_IF_ERROR(TruncateLog(run_dir + "/train_log.csv", state.next_step()));
    progress << "resuming " << run_dir << " at step " << state.next_step() << " from " << dir << "\n";
  } else {
    if (!options.init_from.empty()) TVLAB_RETURN_IF_ERROR(LoadWeights(options.init_from, params));
    TVLAB_RETURN_IF_ERROR(WriteFile(run_dir + "/train_log.csv", kLogHeader));
  }
  std::ofstream csv(run_dir + "/train_log.csv", std::ios::app);

  progress << absl::StrFormat("%s: %d parameters, %d steps of %d sequences, backend %s, %d thread(s)\n",
                              spec.name(), model->NumParameters(), steps, batch_size * accumulation,
                              spec.runtime().backend(), spec.runtime().threads());
  const auto start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(state.elapsed_seconds()));
  const int64_t first_step = options.eval_only ? steps : state.next_step();
  int64_t tokens_seen = static_cast<int64_t>(state.tokens_seen());
  double last_loss = state.last_loss();
  for (int64_t step = first_step; step < steps; ++step) {
    ZeroGrads(params);
    double loss_sum = 0;
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      const int64_t index = step * accumulation + micro;  // data and dropout key
      Batch batch = task->TrainBatch(spec.seed(), index, batch_size);
      Var logits = model->Forward(batch, ForwardContext{true, spec.seed(), index});  // (B, T', V)
      Var loss = CrossEntropy(Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}),
                              batch.targets, kIgnoreTarget, train.label_smoothing());
      const double value = loss.value().item();
      if (!std::isfinite(value)) {
        return absl::AbortedError(absl::StrFormat(
            "training loss became %f at step %d; stopped. Lower train.optimizer.adamw.lr (now %g), "
            "set train.clip_grad_norm, or check the data", value, step, peak_lr));
      }
      loss_sum += value;
      Backward(accumulation == 1 ? loss : Scale(loss, 1.0f / accumulation));
      tokens_seen += batch.batch * batch.length;
    }
    last_loss = loss_sum / accumulation;
    const double grad_norm = ClipGradNorm(params, train.clip_grad_norm());
    const float lr = LearningRate(train.lr_schedule(), peak_lr, step, steps);
    optimizer.Step(lr);

    const bool last = step == steps - 1;
    const bool log = step % train.log_every() == 0 || last;
    const bool eval = train.eval_every() > 0 && ((step + 1) % train.eval_every() == 0 || last);
    if (log || eval) {
      double elapsed = Seconds(start);
      double tps = tokens_seen / std::max(elapsed, 1e-9);
      double eta = elapsed / (step + 1) * (steps - step - 1);
      std::string eval_columns = ",";
      std::string eval_text;
      if (eval) {
        RunMetrics e;
        Evaluate(*model, *task, spec, /*full=*/false, &e);
        eval_columns = absl::StrFormat("%.6f,%.6f", e.eval_loss(), e.token_accuracy());
        eval_text = absl::StrFormat("  eval loss %.4f acc %.3f", e.eval_loss(), e.token_accuracy());
      }
      progress << absl::StrFormat("step %5d/%d  loss %.4f  lr %.3g  %8.0f tok/s  ETA %s%s\n", step,
                                  steps, last_loss, lr, tps, FormatEta(eta), eval_text);
      progress.flush();
      csv << absl::StrFormat("%d,%.6f,%g,%.6f,%.1f,%.3f,%s\n", step, last_loss, lr, grad_norm, tps,
                             elapsed, eval_columns);
      csv.flush();
    }
    const bool checkpoint = last || (train.checkpoint_every() > 0 && (step + 1) % train.checkpoint_every() == 0);
    if (checkpoint) {
      state.set_next_step(static_cast<int32_t>(step + 1));
      state.set_last_loss(last_loss);
      state.set_tokens_seen(static_cast<double>(tokens_seen));
      state.set_elapsed_seconds(Seconds(start));
      TVLAB_RETURN_IF_ERROR(SaveCheckpoint(run_dir, state, params, optimizer, SpecToText(spec)));
    }
    if (step == options.crash_after_step) {
      csv.flush();
      _exit(137);  // as if killed: no destructors, no final files
    }
  }
  const double train_seconds = Seconds(start);
  RunMetrics metrics;
  Evaluate(*model, *task, spec, /*full=*/true, &metrics);
  metrics.set_final_train_loss(last_loss);
  metrics.set_parameters(model->NumParameters());
  metrics.set_train_seconds(options.eval_only ? 0 : train_seconds);
  metrics.set_tokens_per_second(tokens_seen / std::max(train_seconds, 1e-9));
  metrics.set_kv_cache_bytes_per_token(model->KvCacheBytesPerToken(sizeof(float)));
  metrics.set_steps(options.eval_only ? 0 : steps);
  metrics.set_backend(spec.runtime().backend());
  metrics.set_threads(spec.runtime().threads());

  TVLAB_RETURN_IF_ERROR(WriteSafetensors(run_dir + "/model.safetensors", params));
  TVLAB_RETURN_IF_ERROR(WriteMetrics(run_dir + "/metrics.json", metrics));
  return metrics;
}

}  // namespace tvlab
