#include "experiments/grid/slurm_launcher.h"

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
#include "experiments/grid/external_command.h"
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

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(const LauncherOptions& options) : options_(options) {}

  absl::StatusOr<LaunchOutcome> Launch(const LaunchRequest& request) override {
    std::ostream& progress = *options_.progress;
    LaunchOutcome outcome;
    if (request.plan->to_run.empty()) {
      progress << "nothing to submit to Slurm: every run of the grid has finished or failed before "
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
    const ExpandedGrid& grid = *request.grid;
    const std::string dir = grid.output_dir + "/slurm";

    std::vector<const PlannedRun*> runs;
    int threads = 1;
    std::string cells = "# task\tkey\tcell\tseed\n";
    for (const PlannedRun& p : request.plan->to_run) {
      absl::StrAppend(&cells, runs.size(), "\t", p.run->key, "\t", p.cell->label, "\t", p.run->seed, "\n");
      runs.push_back(&p);
      threads = std::max(threads, p.run->spec.runtime().threads());
    }
    const int cpus = options_.slurm.cpus_per_task > 0 ? options_.slurm.cpus_per_task : threads;
    absl::Status written = DefaultFileSystem()->CreateDirs(dir + "/logs");
    if (written.ok()) written = WriteFileAtomically(dir + "/cells.txt", cells);
    if (written.ok()) written = WriteFileAtomically(dir + "/grid.sbatch", Script(request, runs));
    if (!written.ok()) return written;

    std::vector<std::string> common = {"--parsable", absl::StrCat("--chdir=", grid.output_dir)};
    if (!options_.slurm.partition.empty()) common.push_back("--partition=" + options_.slurm.partition);
    if (!options_.slurm.time.empty()) common.push_back("--time=" + options_.slurm.time);
    for (const std::string& e : options_.slurm.extra) common.push_back(e);
    std::vector<std::string> array = {sbatch};
    array.insert(array.end(), common.begin(), common.end());
    array.insert(array.end(), {absl::StrCat("--array=0-", runs.size() - 1), absl::StrCat("--cpus-per-task=", cpus),
                               absl::StrCat("--job-name=tvlab-", grid.name),
                               absl::StrCat("--output=", dir, "/logs/%A_%a.out")});

    // 1. Would the cluster ever run it? (--test-only submits nothing.)
    std::vector<std::string> test = array;
    test.insert(test.begin() + 1, "--test-only");
    test.insert(test.end(), {dir + "/grid.sbatch", "cell"});
    absl::StatusOr<CommandResult> tried = RunCommand(test);
    if (!tried.ok()) return tried.status();
    if (tried->exit_code != 0) return Refused("the job array", test, *tried, options_.slurm);

    // 2. The array, held until the report job is accepted too.
    array.insert(array.begin() + 1, "--hold");
    array.insert(array.end(), {dir + "/grid.sbatch", "cell"});
    absl::StatusOr<CommandResult> submitted = RunCommand(array);
    if (!submitted.ok()) return submitted.status();
    if (submitted->exit_code != 0) return Refused("the job array", array, *submitted, options_.slurm);
    absl::StatusOr<std::string> array_id = ParseJobId(*submitted);
    if (!array_id.ok()) return array_id.status();

    // 3. The report job: after every task has ended, however it ended.
    std::vector<std::string> report = {sbatch};
    report.insert(report.end(), common.begin(), common.end());
    report.insert(report.end(), {absl::StrCat("--dependency=afterany:", *array_id), "--cpus-per-task=1",
                                 absl::StrCat("--job-name=tvlab-", grid.name, "-report"),
                                 absl::StrCat("--output=", dir, "/logs/report_%j.out"), dir + "/grid.sbatch",
                                 "report"});
    absl::StatusOr<CommandResult> reported = RunCommand(report);
    absl::StatusOr<std::string> report_id =
        !reported.ok() ? reported.status()
        : reported->exit_code != 0 ? Refused("the report job", report, *reported, options_.slurm)
                                   : ParseJobId(*reported);
    if (!report_id.ok()) {
      Cancel({*array_id});
      return absl::Status(report_id.status().code(),
                          absl::StrCat(report_id.status().message(), " (the held array ", *array_id,
                                       " was cancelled)"));
    }

    // 4. Release the array.
    const std::string scontrol = FindOnPath("scontrol");
    std::vector<std::string> release = {scontrol.empty() ? "scontrol" : scontrol, "release", *array_id};
    absl::StatusOr<CommandResult> released = RunCommand(release);
    if (!released.ok() || released->exit_code != 0) {
      Cancel({*array_id, *report_id});
      return absl::InternalError(absl::StrCat("could not release the held array ", *array_id, " (",
                                              ShellQuoted(release), ": ",
                                              released.ok() ? Said(*released) : released.status().message(),
                                              "); both jobs were cancelled, nothing ran"));
    }
    if (absl::Status never = CheckStartable(*array_id, *report_id); !never.ok()) return never;

    const std::string record = absl::StrCat("array=", *array_id, " report=", *report_id, " tasks=", runs.size(),
                                            " submitted=", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                                                                            absl::UTCTimeZone()),
                                            "\n");
    std::ifstream old(dir + "/jobs.txt");
    std::stringstream history;
    history << old.rdbuf();
    if (absl::Status s = WriteFileAtomically(dir + "/jobs.txt", history.str() + record); !s.ok())
      progress << "warning: " << s.message() << "\n";

    progress << "submitted to Slurm: job array " << *array_id << " (" << runs.size() << " task"
             << (runs.size() == 1 ? "" : "s") << ", one per run still to run; " << cpus << " CPU"
             << (cpus == 1 ? "" : "s") << " each), report job " << *report_id << " (--report_only, after the array "
             << "ends)\n"
             << "  follow:   squeue -j " << *array_id << "," << *report_id << "\n"
             << "            sacct -j " << *array_id << "," << *report_id
             << "   (exit codes; where the cluster keeps accounting)\n"
             << "            scontrol show job " << *array_id << "\n"
             << "  logs:     " << dir << "/logs/" << *array_id << "_<task>.out (which run each task trains: " << dir
             << "/cells.txt); each run's own output: <run_dir>/run.log\n"
             << "  results:  " << grid.results_dir << "/results.md when job " << *report_id << " ends\n"
             << "  cancel:   scancel " << *array_id << " " << *report_id
             << "   (cancelled runs are not failed: the next submission runs them)\n";
    std::cout << "slurm_array_job " << *array_id << "\nslurm_report_job " << *report_id << "\n";
    outcome.state = LaunchOutcome::State::kSubmitted;
    return outcome;
  }

 private:
  // A job that was accepted but that the cluster can never start.
  absl::Status CheckStartable(const std::string& array_id, const std::string& report_id) {
    const std::string squeue = FindOnPath("squeue");
    if (squeue.empty()) return absl::OkStatus();
    absl::StatusOr<CommandResult> q = RunCommand({squeue, "-h", "-o", "%r", "-j", array_id});
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
      *options_.progress << "warning: no scancel on PATH: cancel jobs " << absl::StrJoin(ids, " ") << " yourself\n";
      return;
    }
    std::vector<std::string> argv = {scancel};
    argv.insert(argv.end(), ids.begin(), ids.end());
    absl::StatusOr<CommandResult> r = RunCommand(argv);
    if (!r.ok() || r->exit_code != 0)
      *options_.progress << "warning: " << ShellQuoted(argv) << " failed: "
                         << (r.ok() ? Said(*r) : std::string(r.status().message())) << "\n";
  }

  LauncherOptions options_;
};

absl::StatusOr<std::unique_ptr<Launcher>> CreateSlurmLauncher(const LauncherOptions& options) {
  if (options.slurm.cpus_per_task < 0)
    return absl::InvalidArgumentError(absl::StrCat("--slurm_cpus_per_task: ", options.slurm.cpus_per_task,
                                                   " is not a number of CPUs >= 1 (0: the runs' runtime.threads)"));
  if (absl::Status time = ValidateSlurmTime(options.slurm.time); !time.ok()) return time;
  return std::unique_ptr<Launcher>(new SlurmLauncher(options));
}

}  // namespace

absl::Status CheckNoSlurmJobsQueued(const std::string& output_dir) {
  std::vector<std::string> ids = LastJobIds(output_dir + "/slurm/jobs.txt");
  const std::string squeue = FindOnPath("squeue");
  if (ids.empty() || squeue.empty()) return absl::OkStatus();
  absl::StatusOr<CommandResult> q = RunCommand({squeue, "-h", "-o", "%i %T", "-j", absl::StrJoin(ids, ",")});
  // squeue exits 1 for ids it no longer knows: those jobs are long gone.
  if (!q.ok() || q->exit_code != 0 || absl::StripAsciiWhitespace(q->out).empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "an earlier Slurm submission of this grid is still queued or running (jobs ", absl::StrJoin(ids, ","),
      ": ", Said(*q), "); it would train the same runs: wait for it (squeue -j ", absl::StrJoin(ids, ","),
      ") or cancel it (scancel ", absl::StrJoin(ids, " "), "), then run the grid again; nothing was started"));
}

absl::Status ValidateSlurmTime(const std::string& time) {
  if (time.empty() || time == "UNLIMITED" || time == "INFINITE") return absl::OkStatus();
  absl::string_view rest = time;
  bool days = false;
  if (size_t dash = rest.find('-'); dash != absl::string_view::npos) {
    int d;
    days = absl::SimpleAtoi(rest.substr(0, dash), &d) && d >= 0;
    if (!days) rest = "";  // reported below
    else rest = rest.substr(dash + 1);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  bool ok = !rest.empty() && parts.size() <= 3;
  for (absl::string_view part : parts) {
    int value;
    ok = ok && !part.empty() && absl::SimpleAtoi(part, &value) && value >= 0;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--slurm_time: '", time, "' is not a Slurm time limit; write MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
      "D-HH:MM:SS (e.g. --slurm_time 1:00:00 for one hour per run)"));
}

REGISTER_GRID_LAUNCHER("slurm", CreateSlurmLauncher);

}  // namespace tvlab
