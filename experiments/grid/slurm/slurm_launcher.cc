#include "experiments/grid/slurm/slurm_launcher.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "experiments/grid/slurm/external_command.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"

namespace tvlab {
namespace {

// The cluster accepted the job but will never start it (squeue's reason).
constexpr const char* kNeverStarts[] = {"PartitionConfig", "BadConstraints",     "PartitionNodeLimit",
                                        "PartitionTimeLimit", "AccountNotAllowed", "QOSNotAllowed",
                                        "InvalidAccount",    "InvalidQOS"};

std::string SingleQuoted(const std::string& s) { return ShellQuoted({s}); }

// Both streams of a Slurm command, one line each, for an error message.
std::string Said(const CommandResult& r) {
  std::vector<std::string> lines;
  for (const std::string* text : {&r.err, &r.out})
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace()))
      lines.push_back(std::string(absl::StripAsciiWhitespace(line)));
  return lines.empty() ? "(it printed nothing)" : absl::StrJoin(lines, " / ");
}

// Which flag a refusal is about, so the message can name it.
std::string FlagBlamed(const std::string& said, const SlurmOptions& options) {
  const std::string lower = absl::AsciiStrToLower(said);
  if (absl::StrContains(lower, "partition") && !options.partition.empty())
    return absl::StrCat("--slurm_partition '", options.partition, "': ");
  if (absl::StrContains(lower, "partition"))
    return "the cluster's default partition (choose one with --slurm_partition; `sinfo -s` lists them): ";
  if (absl::StrContains(lower, "time") && !options.time.empty())
    return absl::StrCat("--slurm_time '", options.time, "': ");
  if (absl::StrContains(lower, "node configuration") || absl::StrContains(lower, "cpu"))
    return absl::StrCat("--slurm_cpus_per_task ", options.cpus_per_task,
                        " (more than a node of the partition has? `sinfo -o '%P %c %m'`): ");
  if (absl::StrContains(lower, "array"))
    return "the job array (more tasks than the cluster's MaxArraySize? `scontrol show config | grep "
           "MaxArraySize`): ";
  if (!options.extra.empty()) return absl::StrCat("--slurm_extra '", absl::StrJoin(options.extra, " "), "': ");
  return "";
}

absl::Status Refused(const std::string& what, const std::vector<std::string>& argv, const CommandResult& r,
                     const SlurmOptions& options) {
  const std::string said = Said(r);
  return absl::FailedPreconditionError(absl::StrCat(FlagBlamed(said, options), "Slurm refused ", what, " (",
                                                    ShellQuoted(argv), ": exit ", r.exit_code, "): ", said,
                                                    "; nothing was submitted"));
}

std::string Script(const LaunchRequest& request, const std::vector<const PlannedRun*>& runs) {
  const ExpandedGrid& grid = *request.grid;
  std::string keys;
  for (const PlannedRun* p : runs) absl::StrAppend(&keys, "  ", p->run->key, "  # ", p->cell->label, " seed ",
                                                   p->run->seed, "\n");
  return absl::StrCat(
      "#!/bin/bash\n"
      "# Grid '", grid.name, "', written by `run GRID --launcher slurm` (docs/grids.md).\n"
      "#   grid.sbatch cell     array task i trains KEYS[i] (as the local launcher would)\n"
      "#   grid.sbatch report   rebuilds results.* from the run directories\n"
      "set -euo pipefail\n"
      "BINARY=", SingleQuoted(request.run_binary), "\n",
      "GRID=", SingleQuoted(request.grid_path), "\n",
      "OUTPUT_DIR=", SingleQuoted(grid.output_dir), "\n",
      "KEYS=(\n", keys, ")\n",
      "case \"${1:-}\" in\n"
      "  cell)\n"
      "    task=\"${SLURM_ARRAY_TASK_ID:?not an array task}\"\n"
      "    [ \"$task\" -lt \"${#KEYS[@]}\" ] || { echo \"error: array task $task: the grid has ${#KEYS[@]} "
      "tasks\" >&2; exit 2; }\n"
      "    exec \"$BINARY\" \"$GRID\" --output_dir \"$OUTPUT_DIR\" --run_key \"${KEYS[$task]}\"\n"
      "    ;;\n"
      "  report)\n"
      "    exec \"$BINARY\" \"$GRID\" --output_dir \"$OUTPUT_DIR\" --report_only\n"
      "    ;;\n"
      "  *)\n"
      "    echo \"usage: sbatch [--array=0-$((${#KEYS[@]} - 1))] $0 cell|report\" >&2\n"
      "    exit 2\n"
      "    ;;\n"
      "esac\n");
}

// "12" from sbatch --parsable's "12" or "12;cluster".
absl::StatusOr<std::string> ParseJobId(const CommandResult& r) {
  std::string id = std::string(absl::StripAsciiWhitespace(r.out));
  id = id.substr(0, id.find(';'));
  int64_t number;
  if (!absl::SimpleAtoi(id, &number)) return absl::InternalError(absl::StrCat("sbatch printed '", r.out, "'"));
  return id;
}

// The last submission's job ids ("array=12 report=13 ..." in jobs.txt).
std::vector<std::string> LastJobIds(const std::string& jobs_file) {
  std::ifstream in(jobs_file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  std::vector<std::string> ids;
  for (absl::string_view field : absl::StrSplit(last, ' ')) {
    if (absl::ConsumePrefix(&field, "array=") || absl::ConsumePrefix(&field, "report="))
      ids.push_back(std::string(field));
  }
  return ids;
}

// The tasks of one submission, written to <output_dir>/slurm/.
struct Tasks {
  std::string dir;                       // <output_dir>/slurm
  std::vector<const PlannedRun*> runs;   // task i trains runs[i]
  int cpus = 1;                          // per task
};

class SlurmLauncher : public Launcher {
 public:
  SlurmLauncher(const SlurmOptions& options, const LauncherContext& context)
      : options_(options), context_(context) {}

  absl::StatusOr<LaunchOutcome> Launch(const LaunchRequest& request) override {
    LaunchOutcome outcome;
    if (request.plan->to_run.empty()) {
      *context_.progress << "nothing to submit to Slurm: every run of the grid has finished or failed before "
                            "(--retry_failed resubmits the failed ones)\n";
      outcome.state = LaunchOutcome::State::kEnded;
      return outcome;
    }
    const std::string sbatch = FindOnPath("sbatch");
    if (sbatch.empty()) {
      const char* path = std::getenv("PATH");
      return absl::FailedPreconditionError(absl::StrCat(
          "--launcher slurm: no `sbatch` on PATH (", path == nullptr ? "PATH is not set" : path,
          "); run the grid where Slurm's client commands are installed (a cluster's login node; Debian "
          "package slurm-client), or use --launcher local; nothing was submitted"));
    }
    TVLAB_ASSIGN_OR_RETURN(Tasks tasks, WriteTasks(request));
    const std::vector<std::string> common = CommonOptions(*request.grid);
    TVLAB_ASSIGN_OR_RETURN(std::string array_id, SubmitArray(sbatch, common, *request.grid, tasks));
    TVLAB_ASSIGN_OR_RETURN(std::string report_id, SubmitReport(sbatch, common, *request.grid, tasks, array_id));
    TVLAB_RETURN_IF_ERROR(Release(array_id, report_id));
    Record(*request.grid, tasks, array_id, report_id);
    outcome.state = LaunchOutcome::State::kSubmitted;
    return outcome;
  }

 private:
  // cells.txt and grid.sbatch; the CPUs per task.
  absl::StatusOr<Tasks> WriteTasks(const LaunchRequest& request) {
    Tasks tasks;
    tasks.dir = request.grid->output_dir + "/slurm";
    int threads = 1;
    std::string cells = "# task\tkey\tcell\tseed\n";
    for (const PlannedRun& p : request.plan->to_run) {
      absl::StrAppend(&cells, tasks.runs.size(), "\t", p.run->key, "\t", p.cell->label, "\t", p.run->seed, "\n");
      tasks.runs.push_back(&p);
      threads = std::max(threads, p.run->spec.runtime().threads());
    }
    tasks.cpus = options_.cpus_per_task > 0 ? options_.cpus_per_task : threads;
    TVLAB_RETURN_IF_ERROR(DefaultFileSystem()->CreateDirs(tasks.dir + "/logs"));
    TVLAB_RETURN_IF_ERROR(WriteFileAtomically(tasks.dir + "/cells.txt", cells));
    TVLAB_RETURN_IF_ERROR(WriteFileAtomically(tasks.dir + "/grid.sbatch", Script(request, tasks.runs)));
    return tasks;
  }

  // sbatch options of both jobs.
  std::vector<std::string> CommonOptions(const ExpandedGrid& grid) const {
    std::vector<std::string> common = {"--parsable", absl::StrCat("--chdir=", grid.output_dir)};
    if (!options_.partition.empty()) common.push_back("--partition=" + options_.partition);
    if (!options_.time.empty()) common.push_back("--time=" + options_.time);
    for (const std::string& e : options_.extra) common.push_back(e);
    return common;
  }

  // The array, after --test-only says the cluster would ever run it (which
  // submits nothing), held until the report job is accepted too.
  absl::StatusOr<std::string> SubmitArray(const std::string& sbatch, const std::vector<std::string>& common,
                                          const ExpandedGrid& grid, const Tasks& tasks) {
    std::vector<std::string> array = {sbatch};
    array.insert(array.end(), common.begin(), common.end());
    array.insert(array.end(), {absl::StrCat("--array=0-", tasks.runs.size() - 1),
                               absl::StrCat("--cpus-per-task=", tasks.cpus), absl::StrCat("--job-name=tvlab-", grid.name),
                               absl::StrCat("--output=", tasks.dir, "/logs/%A_%a.out")});
    std::vector<std::string> test = array;
    test.insert(test.begin() + 1, "--test-only");
    test.insert(test.end(), {tasks.dir + "/grid.sbatch", "cell"});
    TVLAB_ASSIGN_OR_RETURN(CommandResult tried, RunCommand(test, options_.command_timeout));
    if (tried.exit_code != 0) return Refused("the job array", test, tried, options_);
    array.insert(array.begin() + 1, "--hold");
    array.insert(array.end(), {tasks.dir + "/grid.sbatch", "cell"});
    absl::StatusOr<CommandResult> submitted = RunCommand(array, options_.command_timeout);
    if (!submitted.ok() && absl::IsDeadlineExceeded(submitted.status())) {
      return absl::Status(submitted.status().code(),
                          absl::StrCat(submitted.status().message(), "; the held array may have been queued "
                                       "all the same: look for it (squeue -n tvlab-", grid.name,
                                       ") and scancel it before running the grid again"));
    }
    if (!submitted.ok()) return submitted.status();
    if (submitted->exit_code != 0) return Refused("the job array", array, *submitted, options_);
    return ParseJobId(*submitted);
  }

  // The report job: after every task has ended, however it ended. On a
  // refusal the held array is cancelled.
  absl::StatusOr<std::string> SubmitReport(const std::string& sbatch, const std::vector<std::string>& common,
                                           const ExpandedGrid& grid, const Tasks& tasks,
                                           const std::string& array_id) {
    std::vector<std::string> report = {sbatch};
    report.insert(report.end(), common.begin(), common.end());
    report.insert(report.end(), {absl::StrCat("--dependency=afterany:", array_id), "--cpus-per-task=1",
                                 absl::StrCat("--job-name=tvlab-", grid.name, "-report"),
                                 absl::StrCat("--output=", tasks.dir, "/logs/report_%j.out"),
                                 tasks.dir + "/grid.sbatch", "report"});
    absl::StatusOr<CommandResult> reported = RunCommand(report, options_.command_timeout);
    absl::StatusOr<std::string> report_id =
        !reported.ok() ? reported.status()
        : reported->exit_code != 0 ? Refused("the report job", report, *reported, options_)
                                   : ParseJobId(*reported);
    if (report_id.ok()) return report_id;
    Cancel({array_id});
    return absl::Status(report_id.status().code(), absl::StrCat(report_id.status().message(), " (the held array ",
                                                                array_id, " was cancelled)"));
  }

  // Releases the held array, then checks the cluster can start it.
  absl::Status Release(const std::string& array_id, const std::string& report_id) {
    const std::string scontrol = FindOnPath("scontrol");
    std::vector<std::string> release = {scontrol.empty() ? "scontrol" : scontrol, "release", array_id};
    absl::StatusOr<CommandResult> released = RunCommand(release, options_.command_timeout);
    if (!released.ok() || released->exit_code != 0) {
      Cancel({array_id, report_id});
      return absl::InternalError(absl::StrCat("could not release the held array ", array_id, " (",
                                              ShellQuoted(release), ": ",
                                              released.ok() ? Said(*released) : released.status().message(),
                                              "); both jobs were cancelled, nothing ran"));
    }
    return CheckStartable(array_id, report_id);
  }

  // jobs.txt gets the submission; the user gets how to follow it.
  void Record(const ExpandedGrid& grid, const Tasks& tasks, const std::string& array_id,
              const std::string& report_id) {
    const size_t n = tasks.runs.size();
    const std::string record = absl::StrCat("array=", array_id, " report=", report_id, " tasks=", n,
                                            " submitted=", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                                                                            absl::UTCTimeZone()),
                                            "\n");
    std::ifstream old(tasks.dir + "/jobs.txt");
    std::stringstream history;
    history << old.rdbuf();
    std::ostream& progress = *context_.progress;
    if (absl::Status s = WriteFileAtomically(tasks.dir + "/jobs.txt", history.str() + record); !s.ok())
      progress << "warning: " << s.message() << "\n";
    const std::string& dir = tasks.dir;
    progress << "submitted to Slurm: job array " << array_id << " (" << n << " task" << (n == 1 ? "" : "s")
             << ", one per run still to run; " << tasks.cpus << " CPU" << (tasks.cpus == 1 ? "" : "s")
             << " each), report job " << report_id << " (--report_only, after the array ends)\n"
             << "  follow:   squeue -j " << array_id << "," << report_id << "\n"
             << "            sacct -j " << array_id << "," << report_id
             << "   (exit codes; where the cluster keeps accounting)\n"
             << "            scontrol show job " << array_id << "\n"
             << "  logs:     " << dir << "/logs/" << array_id << "_<task>.out (which run each task trains: " << dir
             << "/cells.txt); each run's own output: <run_dir>/run.log\n"
             << "  results:  " << grid.results_dir << "/results.md when job " << report_id << " ends\n"
             << "  cancel:   scancel " << array_id << " " << report_id
             << "   (cancelled runs are not failed: the next submission runs them)\n";
    std::cout << "slurm_array_job " << array_id << "\nslurm_report_job " << report_id << "\n";
  }

  // A job that was accepted but that the cluster can never start.
  absl::Status CheckStartable(const std::string& array_id, const std::string& report_id) {
    const std::string squeue = FindOnPath("squeue");
    if (squeue.empty()) return absl::OkStatus();
    absl::StatusOr<CommandResult> q = RunCommand({squeue, "-h", "-o", "%r", "-j", array_id}, options_.command_timeout);
    if (!q.ok() || q->exit_code != 0) return absl::OkStatus();
    for (const char* reason : kNeverStarts) {
      if (!absl::StrContains(q->out, reason)) continue;
      Cancel({array_id, report_id});
      return absl::FailedPreconditionError(absl::StrCat(
          "Slurm accepted job array ", array_id, " but can never start it (reason ", reason,
          "): check --slurm_partition, --slurm_time and --slurm_cpus_per_task against the partition's "
          "limits (`sinfo -o '%P %l %c %m'`); both jobs were cancelled, nothing ran"));
    }
    return absl::OkStatus();
  }

  void Cancel(const std::vector<std::string>& ids) {
    const std::string scancel = FindOnPath("scancel");
    if (scancel.empty()) {
      *context_.progress << "warning: no scancel on PATH: cancel jobs " << absl::StrJoin(ids, " ") << " yourself\n";
      return;
    }
    std::vector<std::string> argv = {scancel};
    argv.insert(argv.end(), ids.begin(), ids.end());
    absl::StatusOr<CommandResult> r = RunCommand(argv, options_.command_timeout);
    if (!r.ok() || r->exit_code != 0)
      *context_.progress << "warning: " << ShellQuoted(argv) << " failed: "
                         << (r.ok() ? Said(*r) : std::string(r.status().message())) << "\n";
  }

  SlurmOptions options_;
  LauncherContext context_;
};

}  // namespace

std::unique_ptr<Launcher> NewSlurmLauncher(const SlurmOptions& options, const LauncherContext& context) {
  return std::unique_ptr<Launcher>(new SlurmLauncher(options, context));
}

absl::Status CheckNoSlurmJobsQueued(const std::string& output_dir) {
  std::vector<std::string> ids = LastJobIds(output_dir + "/slurm/jobs.txt");
  const std::string squeue = FindOnPath("squeue");
  if (ids.empty() || squeue.empty()) return absl::OkStatus();
  absl::StatusOr<CommandResult> q = RunCommand({squeue, "-h", "-o", "%i %T", "-j", absl::StrJoin(ids, ",")});
  // A stuck squeue is not "none queued": starting would risk training twice.
  if (!q.ok() && absl::IsDeadlineExceeded(q.status()))
    return absl::Status(q.status().code(), absl::StrCat("cannot tell whether an earlier submission of this grid "
                                                        "is still queued: ", q.status().message()));
  // squeue exits 1 for ids it no longer knows: those jobs are long gone.
  if (!q.ok() || q->exit_code != 0 || absl::StripAsciiWhitespace(q->out).empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "an earlier Slurm submission of this grid is still queued or running (jobs ", absl::StrJoin(ids, ","),
      ": ", Said(*q), "); it would train the same runs: wait for it (squeue -j ", absl::StrJoin(ids, ","),
      ") or cancel it (scancel ", absl::StrJoin(ids, " "), "), then run the grid again; nothing was started"));
}

}  // namespace tvlab
