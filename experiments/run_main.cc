#include "experiments/run_main.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "experiments/cli/command_line.h"
#include "experiments/grid/grid_main.h"
#include "experiments/hf/hf_import.h"
#include "experiments/list_plugins.h"
#include "experiments/run_flags.h"
#include "framework/report/cost_model.h"
#include "framework/distributed/communicator.h"
#include "framework/distributed/data_parallel_spec.h"
#include "framework/report/run_dir.h"
#include "framework/core/status_macros.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/checkpoint.h"
#include "framework/train/run_experiment.h"
#include "framework/train/schedule_resume.h"

namespace tvlab {
namespace {

std::string Timestamp() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::localtime(&now));
  return buf;
}

int UsageError(const absl::Status& status, const std::string& usage) {
  PrintUsageError(std::cerr, status, usage);
  return 2;
}

// Discards what is written to it: the progress of ranks other than 0.
class NullStream : public std::ostream {
 public:
  NullStream() : std::ostream(nullptr) {}
};

// --resume with --set: the run's own spec against `resumed`, from its latest
// checkpoint's step.
absl::Status CheckResumeIntoNewSchedule(const TrainFlags& flags, const std::string& spec_path,
                                        const Experiment& resumed) {
  TVLAB_ASSIGN_OR_RETURN(Experiment recorded, LoadExperiment(spec_path, {}));
  TVLAB_ASSIGN_OR_RETURN(std::string checkpoint, LatestCheckpoint(flags.resume_dir));
  TVLAB_ASSIGN_OR_RETURN(TrainState state, ReadTrainState(checkpoint));
  return CheckResumeOverrides(flags.overrides, recorded, resumed, state.next_step());
}

// --init_from: a directory that is neither HF nor tvlab is refused; a
// Hugging Face directory becomes tvlab weights first, in `imported`
// (experiments/hf/hf_import.h), and *init_from then names that file.
absl::Status ResolveInitFrom(const ModelSpec& model, const std::string& imported, std::string* init_from) {
  TVLAB_RETURN_IF_ERROR(CheckInitFromDirectory(*init_from));
  if (!IsHuggingFaceDirectory(*init_from)) return absl::OkStatus();
  absl::Status written = WriteImportedWeights(model, *init_from, imported);
  if (!written.ok()) return absl::Status(written.code(), absl::StrCat(*init_from, ": ", written.message()));
  *init_from = imported;
  return absl::OkStatus();
}

// The run's result lines on stdout (rank 0).
void PrintResult(const RunMetrics& metrics, const std::string& run_dir) {
  if (metrics.has_diverged_at_step()) {
    // A result (exit 0): the grid's table counts it; the warning with the
    // remedies was printed when it happened.
    std::cout << "diverged_at_step " << metrics.diverged_at_step() << "\n"
              << "diverged_loss " << metrics.diverged_loss() << "\n";
  } else {
    std::cout << "token_accuracy " << metrics.token_accuracy() << "\n"
              << "sequence_accuracy " << metrics.sequence_accuracy() << "\n";
    if (metrics.has_speculative_accepted_tokens_per_step())  // model.multi_token_prediction
      std::cout << "speculative_accepted_tokens_per_step " << metrics.speculative_accepted_tokens_per_step() << "\n"
                << "speculative_matches_greedy " << metrics.speculative_matches_greedy() << "\n";
  }
  std::cout << "final_train_loss " << metrics.final_train_loss() << "\n"
            << "parameters " << metrics.parameters() << "\n"
            << "train_seconds " << metrics.train_seconds() << "\n"
            << "run directory: " << run_dir << "\n";
}

// One spec trained (or resumed) into its run directory; `who` prefixes this
// rank's error lines under mpirun.
// `every_rank` is set when the error returned is one every rank met alike
// (so MPI can end cleanly).
int TrainOneRank(const TrainFlags& flags, TrainerHooks* hooks, FileSystem* fs, Communicator& world,
                 const std::string& who, bool* every_rank) {
  const bool resume = !flags.resume_dir.empty();
  const std::string spec_path = resume ? flags.resume_dir + "/spec.resolved.pbtxt" : flags.spec_path;
  std::shared_ptr<const Task> task;  // built once, by validation
  auto spec = LoadExperiment(spec_path, flags.overrides, &task);
  if (!spec.ok()) {
    std::cerr << absl::StrCat(who, "error: ", spec.status().message(), "\n");
    return 2;
  }
  if (resume && !flags.overrides.empty()) {  // into another length or decay (schedule_resume.h)
    absl::Status allowed = CheckResumeIntoNewSchedule(flags, spec_path, *spec);
    if (!allowed.ok()) {
      std::cerr << absl::StrCat(who, "error: ", allowed.message(), "\n");
      return 2;
    }
  }
  if (absl::Status split = ValidateDataParallel(spec->train(), world.size()); !split.ok()) {
    std::cerr << absl::StrCat(who, "error: ", split.message(), "\n");
    return 2;
  }
  const std::string run_dir = resume                     ? flags.resume_dir
                              : flags.output_dir.empty() ? flags.runs_root + "/" + spec->name() + "/" + Timestamp()
                                                         : flags.output_dir;
  // Finished means a metrics.json that parses: a damaged one (a partial
  // write by an older trainer) is redone.
  if (ReadRunState(run_dir) == RunState::kFinished) {
    std::cerr << who << "error: " << run_dir
              << " already holds a finished run (metrics.json); "
              << (resume ? "there is nothing to resume" : "choose another --output_dir") << "\n";
    return 2;
  }
  RunOptions options;
  options.resume = resume;
  options.init_from = flags.init_from;
  // A Hugging Face directory becomes tvlab weights first (experiments/hf/hf_import.h).
  const std::string imported = (std::filesystem::temp_directory_path() /
                                ("tvlab_init_from_hf_" + std::to_string(getpid()) + ".safetensors")).string();
  if (absl::Status resolved = ResolveInitFrom(spec->model(), imported, &options.init_from); !resolved.ok()) {
    std::cerr << who << "error: --init_from " << resolved.message() << "\n";
    return 2;
  }
  options.eval_only = flags.eval_only;
  options.hooks = hooks;
  options.file_system = fs;
  options.world = &world;
  // metrics.json's FLOP/s and MFU count the cost model's FLOPs (the grid's column).
  options.train_flops_per_token = [&](const Model& model) {
    return CostOfModel(*spec, *task, model).train_flops_per_token;
  };
  NullStream quiet;  // rank 0 alone reports progress
  auto metrics = RunExperiment(*spec, *task, run_dir, world.rank() == 0 ? std::cerr : quiet, options);
  if (options.init_from == imported) std::filesystem::remove(imported);
  if (!metrics.ok()) {
    // One write per line: ranks share the terminal.
    std::cerr << absl::StrCat(who, "error: ",
                              absl::StrReplaceAll(metrics.status().message(),
                                                  {{imported, flags.init_from + " (imported)"}}),
                              "\n");
    *every_rank = IsOnEveryRank(metrics.status());
    return 1;
  }
  if (world.rank() == 0) PrintResult(*metrics, run_dir);
  return 0;
}

// One spec trained (or resumed) into its run directory, by this process
// alone or as one rank of an mpirun (docs/distributed.md).
int TrainOne(const TrainFlags& flags, TrainerHooks* hooks, FileSystem* fs) {
  auto started = World();
  if (!started.ok()) {
    std::cerr << "error: " << started.status().message() << "\n";
    return 2;
  }
  Communicator& world = **started;
  world.SetCollectiveTimeout(flags.collective_timeout);
  // Under mpirun every rank reports its own errors, marked with its rank;
  // then the whole job stops: MPI_Abort, since the other ranks may be
  // waiting in a collective and would never return, unless every rank met
  // the same error at the same point.
  const std::string who =
      world.size() > 1 ? absl::StrCat("[rank ", world.rank(), "/", world.size(), "] ") : "";
  bool every_rank = false;
  const int code = TrainOneRank(flags, hooks, fs, world, who, &every_rank);
  if (code != 0 && !every_rank && world.size() > 1) world.AbortAll(code);  // does not return
  FinishMpi();
  return code;
}

// A grid: many runs, each by this same binary in its own process.
int Grid(const GridFlags& flags, FileSystem* fs) {
  if (LaunchedWorldSize() > 1) {
    std::cerr << "error: a grid is not launched by mpirun: it runs each cell as its own process; "
                 "run the grid without mpirun (docs/distributed.md)\n";
    return 2;
  }
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::cerr << "error: cannot find this program's path (/proc/self/exe: " << error.message()
              << "); grids need /proc mounted\n";
    return 1;
  }
  return GridMain(flags, self, fs != nullptr ? fs : DefaultFileSystem());
}

}  // namespace

int RunMain(int argc, char** argv, TrainerHooks* hooks, FileSystem* fs) {
  // Training allocates and frees the same large activation buffers every
  // step; keep them in the heap instead of mmap/munmap (page faults) per step.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  std::string usage;
  auto flags = ParseRunFlags(argc, argv, &usage);
  if (!flags.ok()) return UsageError(flags.status(), usage);
  switch (flags->command) {
    case RunFlags::Command::kHelp:
      PrintHelp(std::cout, usage);
      return 0;
    case RunFlags::Command::kListPlugins:
      ListPlugins(std::cout);
      return 0;
    case RunFlags::Command::kGrid:
      return Grid(flags->grid, fs);
    case RunFlags::Command::kTrain:
      break;
  }
  return TrainOne(flags->train, hooks, fs);
}

}  // namespace tvlab
