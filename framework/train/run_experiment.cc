#include "framework/train/run_experiment.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/core/status_macros.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/distributed/gradient_reducer.h"
#include "framework/distributed/replica_check.h"
#include "framework/distributed/stop_message.h"
#include "framework/io/dir_lock.h"
#include "framework/interfaces/optimizer.h"
#include "framework/model/init_spec.h"
#include "framework/model/model.h"
#include "framework/perf/peak.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/schema/spec_text.h"
#include "framework/tensor/device_memory.h"
#include "framework/train/checkpoint.h"
#include "framework/train/evaluate.h"
#include "framework/train/optimizer_spec.h"
#include "framework/train/run_directory.h"
#include "framework/train/run_metrics.h"
#include "framework/train/tensorboard_log.h"
#include "framework/train/train_loop.h"
#include "framework/train/z_loss.h"

namespace tvlab {
namespace {

// One run, from its model to its last file. Each public method is one step
// of RunExperiment, called in the order declared; rank 0 (the writer) owns
// every file of the run, the other ranks write nothing.
class ExperimentRun {
 public:
  ExperimentRun(const Experiment& spec, const Task& task, const std::string& run_dir, std::ostream& progress,
                const RunOptions& options, Communicator& world)
      : spec_(spec),
        task_(task),
        run_dir_(run_dir),
        progress_(progress),
        options_(options),
        world_(world),
        fs_(options.file_system != nullptr ? options.file_system : DefaultFileSystem()),
        writer_(world.rank() == 0),
        dir_(run_dir, fs_),
        recorded_(spec) {
    const auto* generative = dynamic_cast<const GenerativeTask*>(&task);
    tokenizer_model_ = generative != nullptr ? generative->TokenizerModel() : "";
    if (!tokenizer_model_.empty()) PointTokenizerAt(&recorded_, RunDirectory::kTokenizerModel);
  }

  // The model, its parameters and the optimizer, and the weights of
  // --init_from: bad weights are refused before the run directory exists.
  absl::Status BuildModelAndOptimizer();
  // The run directory made (the writer) or the checkpoint to resume from
  // read; then the ranks agree that they are ready and run the same program,
  // spec and parameters. If that fails in a directory this run made, the
  // directory is removed so nothing half-made looks like a run.
  absl::Status PrepareRunDirectory();
  // With RunOptions::train_flops_per_token: the model's FLOPs per token and
  // the peak of the run's device (the writer's only; measured on a CPU
  // whose peak is not cached yet). Before the run directory: a bad
  // $TVLAB_PEAK_FLOPS leaves nothing behind.
  absl::Status ResolveEfficiency();
  // Under mpirun, what a stopped rank prints; and the run's progress line.
  void Announce();
  // The training loop, its log rows, periodic evaluations and checkpoints.
  absl::StatusOr<TrainLoopResult> Train();
  // train.step_profile's file and summary line (run_directory.h).
  absl::Status WriteStepProfile(const TrainLoopResult& trained);
  // A diverged run is a result, not an error: no evaluation (the weights are
  // not finite or far off) and no weights file; metrics.json says where.
  absl::StatusOr<RunMetrics> RecordDivergence(const TrainLoopResult& trained) const;
  // The final evaluation (each rank evaluates its share of the held-out set;
  // every rank gets the summed metrics), then the writer's weights,
  // metrics.json (last: the run counts as finished once it is written) and
  // final TensorBoard scalars.
  absl::StatusOr<RunMetrics> EvaluateAndWriteResults(const TrainLoopResult& trained);

 private:
  absl::Status PrepareAsWriter();
  absl::Status RestoreCheckpoint(std::string* checkpoint);
  TrainLoopCallbacks Callbacks();

  const Experiment& spec_;
  const Task& task_;
  const AttentionCallCounts attention_at_start_ = AttentionCallCounts::Now();  // metrics.json counts from here
  const std::string& run_dir_;
  std::ostream& progress_;
  const RunOptions& options_;
  Communicator& world_;
  FileSystem* fs_;
  const bool writer_;
  RunDirectory dir_;
  std::unique_ptr<Model> model_;
  NamedVars params_;
  std::unique_ptr<Optimizer> optimizer_;
  // The spec as recorded: a SentencePiece model is kept in the run
  // directory and the resolved spec points at that copy (relative to the
  // spec file, so it resolves to this directory wherever the run is later
  // read from).
  Experiment recorded_;
  std::string tokenizer_model_;
  absl::StatusOr<DirLock> lock_ = absl::UnknownError("not locked yet");
  TrainState state_;
  std::optional<TensorBoardLog> curves_;
  std::unique_ptr<GradientReducer> reducer_;
  double train_flops_per_token_ = 0;  // 0: not reported
  DevicePeak peak_;
};

absl::Status ExperimentRun::BuildModelAndOptimizer() {
  TVLAB_ASSIGN_OR_RETURN(model_, BuildModel(spec_, task_.vocab_size(), HeadOutputs(task_)));
  params_ = model_->NamedParameters();
  // The init plugin's parametrisation scales rates per parameter (µP).
  TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Initializer> init, BuildInitializer(spec_));
  TVLAB_ASSIGN_OR_RETURN(optimizer_, BuildOptimizer(spec_.train().optimizer(), params_, LrScaleOf(init)));
  if (!options_.resume && !options_.init_from.empty())
    TVLAB_RETURN_IF_ERROR(LoadWeights(options_.init_from, params_));
  return absl::OkStatus();
}

absl::Status ExperimentRun::RestoreCheckpoint(std::string* checkpoint) {
  TVLAB_ASSIGN_OR_RETURN(*checkpoint, LatestCheckpoint(run_dir_));
  TVLAB_ASSIGN_OR_RETURN(state_, LoadCheckpoint(*checkpoint, params_, optimizer_.get()));
  // A spec whose train.steps was lowered below the checkpoint would end at
  // once and record the later step's weights as a shorter run.
  if (state_.next_step() > spec_.train().steps()) {
    return absl::FailedPreconditionError(absl::StrCat(
        *checkpoint, " is at step ", state_.next_step(), ", beyond train.steps ", spec_.train().steps(),
        " of the spec: resume with train.steps of at least ", state_.next_step(),
        " (the run's spec.resolved.pbtxt), or start a new run"));
  }
  return absl::OkStatus();
}

absl::Status ExperimentRun::PrepareAsWriter() {
  TVLAB_RETURN_IF_ERROR(dir_.Create());
  lock_ = DirLock::Acquire(run_dir_, ".run.lock");
  if (!lock_.ok()) {
    return absl::Status(lock_.status().code(),
                        absl::StrCat("another run is writing into ", run_dir_, " (", lock_.status().message(),
                                     "); wait for it to end, or choose another --output_dir"));
  }
  if (!tokenizer_model_.empty()) TVLAB_RETURN_IF_ERROR(dir_.WriteTokenizerModel(tokenizer_model_));
  dir_.SetAuxiliaryColumns(TrainingAuxiliaryOutputs(spec_.train(), model_->DeclaredAuxiliaryOutputs()));
  if (spec_.train().probe_every() > 0)  // the columns from a probe forward of one row
    dir_.SetProbeColumns(TrainingProbes(spec_.train(), spec_.seed(), *model_, task_, params_).Names());
  if (!options_.resume) {
    TVLAB_RETURN_IF_ERROR(dir_.WriteResolvedSpec(recorded_));
    return dir_.StartLog();
  }
  std::string checkpoint;
  TVLAB_RETURN_IF_ERROR(RestoreCheckpoint(&checkpoint));
  TVLAB_RETURN_IF_ERROR(dir_.WriteResolvedSpec(recorded_));
  TVLAB_RETURN_IF_ERROR(dir_.ContinueLog(state_.next_step()));
  progress_ << "resuming " << run_dir_ << " at step " << state_.next_step() << " from " << checkpoint << "\n";
  return absl::OkStatus();
}

absl::Status ExperimentRun::PrepareRunDirectory() {
  std::error_code ignored;
  const bool existed = std::filesystem::exists(run_dir_, ignored);
  absl::Status prepared;
  if (writer_) {
    prepared = PrepareAsWriter();
  } else if (options_.resume) {  // reads the checkpoint the writer restores, and nothing else
    std::string checkpoint;
    prepared = RestoreCheckpoint(&checkpoint);
  }
  // Every rank learns whether the others are ready, then that all of them
  // run the same program, spec and parameters (a no-op for one process).
  prepared = AgreeOnSuccess(world_, prepared);
  if (prepared.ok()) prepared = CheckReplicasAgree(world_, SpecToText(spec_), params_);
  // Only while holding the lock: two runs started at once into a new
  // directory both see it missing, and the one refused must not remove it.
  if (!prepared.ok() && writer_ && !existed && lock_.ok())
    fs_->RemoveAll(run_dir_).IgnoreError();  // best effort: the run's own error is the one to report
  return prepared;
}

absl::Status ExperimentRun::ResolveEfficiency() {
  if (!options_.train_flops_per_token || !writer_ || options_.eval_only) return absl::OkStatus();
  train_flops_per_token_ = options_.train_flops_per_token(*model_);
  switch (CurrentDevice()) {
    case Device::kCpu: {
      TVLAB_ASSIGN_OR_RETURN(peak_, HostPeak(spec_.runtime().threads(), spec_.runtime().precision()));
      break;
    }
    case Device::kCuda:
      peak_ = GpuPeak(CurrentBackend().device_model(), spec_.runtime().precision());
      break;
    default:
      peak_.device = DeviceName(CurrentDevice());
      peak_.unknown_why = absl::StrCat("unknown peak: the ", peak_.device, " device has none");
  }
  if (world_.size() > 1 && peak_.flops_per_second > 0) {  // the rate counts every rank's tokens
    peak_.flops_per_second *= world_.size();
    absl::StrAppend(&peak_.basis, " x ", world_.size(), " ranks");
  }
  return absl::OkStatus();
}

void ExperimentRun::Announce() {
  if (world_.size() > 1) {
    world_.SetStopHint(absl::StrFormat(
        "Every file in %s is whole; continue from its last checkpoint with: mpirun -np %d "
        "bazel-bin/experiments/run --resume %s",
        run_dir_, world_.size(), run_dir_));
    PrintOnSigterm(absl::StrFormat(
        "error: rank %d of %d stopped by mpirun: another rank ended first (mpirun's message names it). "
        "Every file in %s is whole; continue from its last checkpoint with: mpirun -np %d "
        "bazel-bin/experiments/run --resume %s",
        world_.rank(), world_.size(), run_dir_, world_.size(), run_dir_));
  }
  const TrainSpec& train = spec_.train();
  progress_ << absl::StrFormat("%s: %d parameters, %d steps of %d sequences, backend %s, %d thread(s)%s\n",
                               spec_.name(), model_->NumParameters(), train.steps(),
                               train.batch_size() * train.grad_accumulation(), spec_.runtime().backend(),
                               spec_.runtime().threads(),
                               world_.size() > 1 ? absl::StrFormat(", %d data-parallel ranks", world_.size())
                                                 : std::string());
  if (train_flops_per_token_ <= 0) return;
  progress_ << absl::StrFormat("%.4g training FLOPs per token (cost model: 3x forward); ", train_flops_per_token_);
  if (peak_.flops_per_second > 0) {
    progress_ << absl::StrFormat("peak %.1f GFLOP/s (%s, %s; %s)\n", peak_.flops_per_second / 1e9, peak_.basis,
                                 peak_.device, peak_.source);
  } else {
    progress_ << "no MFU: " << peak_.unknown_why << "\n";
  }
  if (!peak_.note.empty()) progress_ << "note: " << peak_.note << "\n";
}

TrainLoopCallbacks ExperimentRun::Callbacks() {
  TrainLoopCallbacks callbacks;
  callbacks.evaluate = [this]() -> absl::StatusOr<RunMetrics> {
    RunMetrics periodic;
    TVLAB_RETURN_IF_ERROR(
        Evaluate(*model_, task_, spec_.eval(), spec_.model(), /*full=*/false, &periodic, &world_));
    return periodic;
  };
  callbacks.log = [this](const TrainLogRow& row) -> absl::Status {
    if (!writer_) return absl::OkStatus();
    TVLAB_RETURN_IF_ERROR(dir_.AppendLogRow(row));
    return curves_->WriteRow(row);
  };
  callbacks.checkpoint = [this, recorded_text = SpecToText(recorded_)](const TrainState& at) -> absl::Status {
    if (!writer_) return absl::OkStatus();
    return SaveCheckpoint(run_dir_, at, params_, *optimizer_, recorded_text, fs_);
  };
  callbacks.hooks = options_.hooks;
  callbacks.reducer = reducer_.get();
  callbacks.train_flops_per_token = train_flops_per_token_;
  callbacks.peak_flops_per_second = peak_.flops_per_second;
  return callbacks;
}

absl::StatusOr<TrainLoopResult> ExperimentRun::Train() {
  if (writer_) {
    TVLAB_ASSIGN_OR_RETURN(TensorBoardLog opened, TensorBoardLog::Open(run_dir_, fs_));
    curves_.emplace(std::move(opened));
  }
  reducer_ = MakeGradientReducer(&world_);
  TVLAB_ASSIGN_OR_RETURN(TrainLoopResult trained,
                         RunTrainLoop(spec_.train(), spec_.seed(), *model_, task_, params_, *optimizer_, state_,
                                      options_.eval_only, progress_, Callbacks()));
  if (options_.eval_only) return trained;
  TVLAB_RETURN_IF_ERROR(WriteStepProfile(trained));
  trained.peak_memory_bytes = AllocatorFor(CurrentDevice()).Stats().peak_in_use_bytes;  // before evaluation
  trained.peak_rss_bytes = ProcessPeakRssBytes();
  return trained;
}

// train.step_profile: step_profile.tsv and a summary line, or why there is
// none (no step was replayed).
absl::Status ExperimentRun::WriteStepProfile(const TrainLoopResult& trained) {
  if (!spec_.train().step_profile()) return absl::OkStatus();
  if (trained.step_profile.empty()) {
    progress_ << "step profile: none written, no step was replayed (step capture "
              << (trained.step_capture.empty() ? "never started" : trained.step_capture) << ")\n";
    return absl::OkStatus();
  }
  progress_ << "step profile: " << trained.step_profile_summary << "; every operation in step_profile.tsv\n";
  return writer_ ? dir_.WriteStepProfile(trained.step_profile) : absl::OkStatus();
}

absl::StatusOr<RunMetrics> ExperimentRun::RecordDivergence(const TrainLoopResult& trained) const {
  RunMetrics metrics = DivergedMetrics(spec_.runtime(), *model_, trained);
  if (train_flops_per_token_ > 0) RecordEfficiency(train_flops_per_token_, peak_, &metrics);
  RecordAttentionCalls(attention_at_start_, &metrics);
  RecordOptimizer(spec_.train().optimizer(), *optimizer_, &metrics);
  RecordCheckpointing(spec_.train(), &metrics);
  if (writer_) TVLAB_RETURN_IF_ERROR(dir_.WriteMetrics(metrics));
  return metrics;
}

absl::StatusOr<RunMetrics> ExperimentRun::EvaluateAndWriteResults(const TrainLoopResult& trained) {
  world_.SetPhase("the final evaluation");
  TVLAB_ASSIGN_OR_RETURN(RunMetrics metrics,
                         FinalMetrics(spec_, *model_, task_, trained, options_.eval_only, world_));
  RecordAttentionCalls(attention_at_start_, &metrics);
  RecordOptimizer(spec_.train().optimizer(), *optimizer_, &metrics);
  if (!options_.eval_only) RecordCheckpointing(spec_.train(), &metrics);
  if (train_flops_per_token_ > 0) RecordEfficiency(train_flops_per_token_, peak_, &metrics);
  if (world_.size() > 1) {
    metrics.set_data_parallel_ranks(world_.size());
    metrics.set_allreduce_seconds(reducer_->reduce_seconds());
    metrics.set_allreduce_wait_seconds(reducer_->wait_seconds());
    metrics.set_backward_seconds(trained.backward_seconds);
  }
  if (!writer_) return metrics;
  TVLAB_RETURN_IF_ERROR(dir_.WriteWeights(params_));
  TVLAB_RETURN_IF_ERROR(dir_.WriteMetrics(metrics));
  TVLAB_RETURN_IF_ERROR(
      curves_->WriteFinalMetrics(metrics.steps(), metrics, EvaluationMetricNames(task_, spec_.eval())));
  return metrics;
}

}  // namespace

absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const Task& task, const std::string& run_dir,
                                         std::ostream& progress, const RunOptions& options) {
  if (options.eval_only && options.init_from.empty()) {
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  }
  TVLAB_RETURN_IF_ERROR(ApplyRuntime(spec.runtime()));
  AllocatorFor(CurrentDevice()).ResetPeak();
  SingleProcess one_process;
  Communicator& world = options.world != nullptr ? *options.world : one_process;
  ExperimentRun run(spec, task, run_dir, progress, options, world);
  TVLAB_RETURN_IF_ERROR(run.BuildModelAndOptimizer());
  TVLAB_RETURN_IF_ERROR(run.ResolveEfficiency());
  TVLAB_RETURN_IF_ERROR(run.PrepareRunDirectory());
  run.Announce();
  TVLAB_ASSIGN_OR_RETURN(const TrainLoopResult trained, run.Train());
  if (trained.diverged_at_step) return run.RecordDivergence(trained);
  return run.EvaluateAndWriteResults(trained);
}

}  // namespace tvlab
