#include "framework/train/run_experiment.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/attention/attend.h"
#include "framework/autograd/matmul_precision.h"
#include "framework/backend/backend.h"
#include "framework/core/status_macros.h"
#include "framework/data/eval_train_overlap.h"
#include "framework/distributed/gradient_reducer.h"
#include "framework/distributed/replica_check.h"
#include "framework/distributed/stop_message.h"
#include "framework/data/load_task.h"
#include "framework/io/dir_lock.h"
#include "framework/model/model.h"
#include "framework/schema/spec_text.h"
#include "framework/train/adamw.h"
#include "framework/train/checkpoint.h"
#include "framework/train/context_evals.h"
#include "framework/train/decode_speed.h"
#include "framework/train/evaluate.h"
#include "framework/train/run_directory.h"
#include "framework/train/tensorboard_log.h"
#include "framework/train/train_loop.h"

namespace tvlab {
namespace {

// The final evaluation (sharded over the ranks) plus what the run cost.
// The evaluations at other contexts and the decoding speed run on every
// rank alike (the same weights: the same numbers); rank 0 writes them.
absl::StatusOr<RunMetrics> FinalMetrics(const Experiment& spec, const Model& model, const Task& task,
                                        const TrainLoopResult& trained, bool eval_only, Communicator& world) {
  RunMetrics metrics;
  TVLAB_RETURN_IF_ERROR(Evaluate(model, task, spec, /*full=*/true, &metrics, &world));
  TVLAB_RETURN_IF_ERROR(EvaluateAtContexts(model, spec, &metrics));
  if (spec.eval().decode_speed_tokens() > 0) {
    // Timed from the task's first token id; greedy, so the same tokens
    // every timing.
    const DecodeSpeed speed = MeasureDecodeSpeed(model, /*first_token=*/0, spec.eval().decode_speed_tokens(),
                                                 /*repeats=*/3);
    metrics.set_decode_tokens_per_second(speed.tokens_per_second());
  }
  metrics.set_final_train_loss(trained.last_loss);
  metrics.set_parameters(model.NumParameters());
  metrics.set_train_seconds(eval_only ? 0 : trained.train_seconds);
  metrics.set_tokens_per_second(trained.tokens_seen / std::max(trained.train_seconds, 1e-9));
  metrics.set_kv_cache_bytes_per_token(model.KvCacheBytesPerToken(sizeof(float)));
  metrics.set_steps(eval_only ? 0 : spec.train().steps());
  metrics.set_backend(spec.runtime().backend());
  metrics.set_threads(spec.runtime().threads());
  metrics.set_precision(spec.runtime().precision());
  metrics.set_peak_memory_bytes(
      static_cast<double>(AllocatorFor(CurrentDevice()).Stats().peak_in_use_bytes));
  // Measured over the spec's whole training stream (also for --eval_only,
  // whose weights were trained on it elsewhere).
  const EvalTrainOverlap overlap = MeasureEvalTrainOverlap(
      task, spec.seed(), spec.train().steps() * spec.train().grad_accumulation(),
      spec.train().batch_size(), spec.eval().seed(), metrics.eval_examples());
  metrics.set_eval_train_overlap(static_cast<int32_t>(overlap.overlapping));
  metrics.set_eval_train_overlap_fraction(overlap.fraction());
  return metrics;
}

// What a diverged run records: where it diverged and what the steps before
// it cost; evaluation metrics stay absent.
RunMetrics DivergedMetrics(const Experiment& spec, const Model& model, const TrainLoopResult& trained) {
  RunMetrics metrics;
  metrics.set_diverged_at_step(static_cast<int32_t>(*trained.diverged_at_step));
  metrics.set_diverged_loss(trained.diverged_loss);
  metrics.set_final_train_loss(trained.last_loss);
  metrics.set_parameters(model.NumParameters());
  metrics.set_train_seconds(trained.train_seconds);
  metrics.set_tokens_per_second(trained.tokens_seen / std::max(trained.train_seconds, 1e-9));
  metrics.set_kv_cache_bytes_per_token(model.KvCacheBytesPerToken(sizeof(float)));
  metrics.set_steps(static_cast<int32_t>(trained.steps_done));
  metrics.set_backend(spec.runtime().backend());
  metrics.set_threads(spec.runtime().threads());
  metrics.set_precision(spec.runtime().precision());
  metrics.set_peak_memory_bytes(
      static_cast<double>(AllocatorFor(CurrentDevice()).Stats().peak_in_use_bytes));
  return metrics;
}

}  // namespace

absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress, const RunOptions& options) {
  if (options.eval_only && options.init_from.empty()) {
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  }
  TVLAB_RETURN_IF_ERROR(SetBackend(spec.runtime().backend()));
  SetAttentionKernel(ParseAttentionKernel(spec.runtime().attention())
                         .value_or(AttentionKernel::kAuto));  // validated
  SetMatMulPrecision(
      ParsePrecision(spec.runtime().precision()).value_or(Precision::kFp32));  // validated
  AllocatorFor(CurrentDevice()).ResetPeak();
  omp_set_num_threads(spec.runtime().threads());
  FileSystem* fs = options.file_system != nullptr ? options.file_system : DefaultFileSystem();

  // The task validation built (data files are read once per process).
  TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Task> task, LoadTask(spec));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                         BuildModel(spec, task->vocab_size(), HeadOutputs(*task)));
  const NamedVars params = model->NamedParameters();
  AdamW optimizer(params, spec.train().optimizer().adamw());
  // Bad weights are refused before the run directory exists.
  if (!options.resume && !options.init_from.empty())
    TVLAB_RETURN_IF_ERROR(LoadWeights(options.init_from, params));

  SingleProcess one_process;
  Communicator& world = options.world != nullptr ? *options.world : one_process;
  // Rank 0 owns every file of the run; the other ranks write nothing.
  const bool writer = world.rank() == 0;
  const std::string spec_text = SpecToText(spec);
  RunDirectory dir(run_dir, fs);
  std::error_code ignored;
  const bool existed = std::filesystem::exists(run_dir, ignored);
  absl::StatusOr<DirLock> lock = absl::UnknownError("not locked yet");
  TrainState state;
  // The spec as recorded: a SentencePiece model is kept in the run directory
  // and the resolved spec points at that copy (relative to the spec file,
  // so it resolves to this directory wherever the run is later read from).
  Experiment recorded = spec;
  const auto* generative = dynamic_cast<const GenerativeTask*>(task.get());
  const std::string tokenizer_model = generative != nullptr ? generative->TokenizerModel() : "";
  if (!tokenizer_model.empty()) PointTokenizerAt(&recorded, RunDirectory::kTokenizerModel);
  // Everything before the first step; if it fails in a directory this run
  // made, the directory is removed so nothing half-made looks like a run.
  absl::Status prepared = [&]() -> absl::Status {
    if (!writer) {  // reads the checkpoint rank 0 restores, and nothing else
      if (!options.resume) return absl::OkStatus();
      TVLAB_ASSIGN_OR_RETURN(std::string checkpoint, LatestCheckpoint(run_dir));
      TVLAB_ASSIGN_OR_RETURN(state, LoadCheckpoint(checkpoint, params, &optimizer));
      return absl::OkStatus();
    }
    TVLAB_RETURN_IF_ERROR(dir.Create());
    lock = DirLock::Acquire(run_dir, ".run.lock");
    if (!lock.ok()) {
      return absl::Status(lock.status().code(),
                          absl::StrCat("another run is writing into ", run_dir, " (", lock.status().message(),
                                       "); wait for it to end, or choose another --output_dir"));
    }
    if (!tokenizer_model.empty()) TVLAB_RETURN_IF_ERROR(dir.WriteTokenizerModel(tokenizer_model));
    if (options.resume) {
      TVLAB_ASSIGN_OR_RETURN(std::string checkpoint, LatestCheckpoint(run_dir));
      TVLAB_ASSIGN_OR_RETURN(state, LoadCheckpoint(checkpoint, params, &optimizer));
      TVLAB_RETURN_IF_ERROR(dir.WriteResolvedSpec(recorded));
      TVLAB_RETURN_IF_ERROR(dir.ContinueLog(state.next_step()));
      progress << "resuming " << run_dir << " at step " << state.next_step() << " from " << checkpoint
               << "\n";
    } else {
      TVLAB_RETURN_IF_ERROR(dir.WriteResolvedSpec(recorded));
      TVLAB_RETURN_IF_ERROR(dir.StartLog());
    }
    return absl::OkStatus();
  }();
  // Every rank learns whether the others are ready, then that all of them
  // run the same program, spec and parameters (a no-op for one process).
  prepared = AgreeOnSuccess(world, prepared);
  if (prepared.ok()) prepared = CheckReplicasAgree(world, spec_text, params);
  if (!prepared.ok()) {
    // Only while holding the lock: two runs started at once into a new
    // directory both see it missing, and the one refused must not remove it.
    if (writer && !existed && lock.ok()) fs->RemoveAll(run_dir).IgnoreError();  // best effort
    return prepared;
  }
  if (world.size() > 1) {
    world.SetStopHint(absl::StrFormat(
        "Every file in %s is whole; continue from its last checkpoint with: mpirun -np %d "
        "bazel-bin/experiments/run --resume %s",
        run_dir, world.size(), run_dir));
    PrintOnSigterm(absl::StrFormat(
        "error: rank %d of %d stopped by mpirun: another rank ended first (mpirun's message names it). "
        "Every file in %s is whole; continue from its last checkpoint with: mpirun -np %d "
        "bazel-bin/experiments/run --resume %s",
        world.rank(), world.size(), run_dir, world.size(), run_dir));
  }
  progress << absl::StrFormat("%s: %d parameters, %d steps of %d sequences, backend %s, %d thread(s)%s\n",
                              spec.name(), model->NumParameters(), spec.train().steps(),
                              spec.train().batch_size() * spec.train().grad_accumulation(),
                              spec.runtime().backend(), spec.runtime().threads(),
                              world.size() > 1 ? absl::StrFormat(", %d data-parallel ranks", world.size())
                                               : std::string());

  TrainLoopCallbacks callbacks;
  callbacks.evaluate = [&]() -> absl::StatusOr<RunMetrics> {
    RunMetrics periodic;
    TVLAB_RETURN_IF_ERROR(Evaluate(*model, *task, spec, /*full=*/false, &periodic, &world));
    return periodic;
  };
  std::optional<TensorBoardLog> curves;
  if (writer) {
    TVLAB_ASSIGN_OR_RETURN(TensorBoardLog opened, TensorBoardLog::Open(run_dir, fs));
    curves.emplace(std::move(opened));
  }
  callbacks.log = [&](const TrainLogRow& row) -> absl::Status {
    if (!writer) return absl::OkStatus();
    TVLAB_RETURN_IF_ERROR(dir.AppendLogRow(row));
    return curves->WriteRow(row);
  };
  const std::string recorded_text = SpecToText(recorded);  // what checkpoints hold
  callbacks.checkpoint = [&](const TrainState& at) -> absl::Status {
    if (!writer) return absl::OkStatus();
    return SaveCheckpoint(run_dir, at, params, optimizer, recorded_text, fs);
  };
  callbacks.hooks = options.hooks;
  std::unique_ptr<GradientReducer> reducer = MakeGradientReducer(&world);
  callbacks.reducer = reducer.get();
  TVLAB_ASSIGN_OR_RETURN(TrainLoopResult trained,
                         RunTrainLoop(spec, *model, *task, params, optimizer, state,
                                      options.eval_only, progress, callbacks));

  if (trained.diverged_at_step) {
    // A result, not an error: no evaluation (the weights are not finite or
    // far off) and no weights file; metrics.json says where it diverged.
    RunMetrics metrics = DivergedMetrics(spec, *model, trained);
    if (writer) TVLAB_RETURN_IF_ERROR(dir.WriteMetrics(metrics));
    return metrics;
  }

  // Each rank evaluates its share of the held-out set; every rank gets the
  // summed metrics; rank 0 writes them.
  world.SetPhase("the final evaluation");
  TVLAB_ASSIGN_OR_RETURN(RunMetrics metrics, FinalMetrics(spec, *model, *task, trained, options.eval_only, world));
  if (world.size() > 1) {
    metrics.set_data_parallel_ranks(world.size());
    metrics.set_allreduce_seconds(reducer->reduce_seconds());
    metrics.set_allreduce_wait_seconds(reducer->wait_seconds());
    metrics.set_backward_seconds(trained.backward_seconds);
  }
  if (!writer) return metrics;
  TVLAB_RETURN_IF_ERROR(dir.WriteWeights(params));
  TVLAB_RETURN_IF_ERROR(dir.WriteMetrics(metrics));
  TVLAB_RETURN_IF_ERROR(
      curves->WriteFinalMetrics(metrics.steps(), metrics, EvaluationMetricNames(*task, spec)));
  return metrics;
}

}  // namespace tvlab
