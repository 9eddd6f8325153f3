// The Slurm launcher against stand-in sbatch/squeue/scontrol/scancel scripts
// that log their arguments: the order of the submission (test-only, held
// array, report job, release), what a refused report job cancels, the
// "still queued" check, and the --slurm_time forms. The real cluster is
// //tests:grid_slurm_test.

#include "experiments/grid/slurm/slurm_launcher.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/cli/command_line.h"
#include "experiments/grid/slurm/external_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$FAKE_SLURM_CALLS\"\n" << body;
  chmod(path.c_str(), 0755);
}

class SlurmLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/bin");
    calls_ = dir_ + "/calls.txt";
    setenv("FAKE_SLURM_CALLS", calls_.c_str(), 1);
    old_path_ = std::getenv("PATH");
    setenv("PATH", (dir_ + "/bin:" + old_path_).c_str(), 1);
    // sbatch: job ids 41, 42, ... from a counter file; FAIL_REPORT refuses
    // the report job as a cluster would.
    WriteScript(dir_ + "/bin/sbatch",
                "[ -n \"$STUCK\" ] && case \"$*\" in *--hold*) sleep 30;; esac\n"
                "case \"$*\" in *--test-only*) echo 'sbatch: Job 40 to start at now' >&2; exit 0;; esac\n"
                "case \"$*\" in *' report') [ -n \"$FAIL_REPORT\" ] && { echo 'sbatch: error: Batch job "
                "submission failed: Job dependency problem' >&2; exit 1; };; esac\n"
                "n=$(cat \"$FAKE_SLURM_CALLS.n\" 2>/dev/null || echo 41); echo $((n + 1)) > \"$FAKE_SLURM_CALLS.n\"\n"
                "echo $n\n");
    WriteScript(dir_ + "/bin/scontrol", "exit 0\n");
    WriteScript(dir_ + "/bin/scancel", "exit 0\n");
    // squeue: the jobs are queued while QUEUED is set; unknown ids otherwise.
    WriteScript(dir_ + "/bin/squeue",
                "[ -n \"$QUEUED\" ] && { echo '41 PENDING'; exit 0; }\n"
                "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n");
    unsetenv("FAIL_REPORT");
    unsetenv("QUEUED");
    unsetenv("STUCK");

    grid_.name = "g";
    grid_.output_dir = dir_ + "/out";
    grid_.results_dir = grid_.output_dir;
    grid_.cells.resize(2);
    for (int i = 0; i < 2; ++i) {
      GridCell& cell = grid_.cells[i];
      cell.label = i == 0 ? "position=none" : "position=rope";
      GridRun run;
      run.seed = 0;
      run.key = i == 0 ? "00000000000000aa" : "00000000000000bb";
      run.run_dir = grid_.output_dir + "/runs/" + run.key;
      run.spec.mutable_runtime()->set_threads(i == 0 ? 1 : 3);
      cell.runs.push_back(run);
    }
    for (const GridCell& cell : grid_.cells) {
      PlannedRun p;
      p.cell = &cell;
      p.run = &cell.runs[0];
      plan_.to_run.push_back(p);
    }
    plan_.total = 2;
    request_.grid = &grid_;
    request_.plan = &plan_;
    request_.grid_path = dir_ + "/grid.pbtxt";
    request_.run_binary = "/opt/tvlab/run";
  }
  void TearDown() override { setenv("PATH", old_path_.c_str(), 1); }

  absl::StatusOr<LaunchOutcome> Launch(const SlurmOptions& slurm = {}) {
    EXPECT_TRUE(CheckSlurmOptions(slurm).ok());
    LauncherContext context;
    context.progress = &progress_;
    return NewSlurmLauncher(slurm, context)->Launch(request_);
  }

  std::string dir_, calls_, old_path_;
  ExpandedGrid grid_;
  GridPlan plan_;
  LaunchRequest request_;
  std::stringstream progress_;
};

TEST_F(SlurmLauncherTest, SubmitsHeldArrayThenReportThenReleases) {
  SlurmOptions slurm;
  slurm.partition = "cpu";
  slurm.time = "1:00:00";
  slurm.extra = {"--qos=short"};
  auto outcome = Launch(slurm);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->state, LaunchOutcome::State::kSubmitted);
  std::vector<std::string> lines;
  std::istringstream calls(ReadFile(calls_));
  for (std::string line; std::getline(calls, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << ReadFile(calls_);  // no jobs.txt yet: no "still queued" squeue
  EXPECT_THAT(lines[0], HasSubstr("sbatch --test-only --parsable"));
  EXPECT_THAT(lines[1], HasSubstr("sbatch --hold --parsable"));
  for (int i : {0, 1}) {
    EXPECT_THAT(lines[i], HasSubstr("--partition=cpu --time=1:00:00 --qos=short --array=0-1"));
    // The largest runtime.threads of the runs.
    EXPECT_THAT(lines[i], HasSubstr("--cpus-per-task=3"));
    EXPECT_THAT(lines[i], HasSubstr(grid_.output_dir + "/slurm/grid.sbatch cell"));
  }
  EXPECT_THAT(lines[2], HasSubstr("--dependency=afterany:41"));
  EXPECT_THAT(lines[2], HasSubstr(grid_.output_dir + "/slurm/grid.sbatch report"));
  EXPECT_EQ(lines[3], "scontrol release 41");
  EXPECT_THAT(lines[4], HasSubstr("squeue -h -o %r -j 41"));  // a job that can never start?
  EXPECT_THAT(ReadFile(grid_.output_dir + "/slurm/jobs.txt"), HasSubstr("array=41 report=42 tasks=2"));
  const std::string script = ReadFile(grid_.output_dir + "/slurm/grid.sbatch");
  EXPECT_THAT(script, HasSubstr("BINARY=/opt/tvlab/run"));
  EXPECT_THAT(script, HasSubstr("00000000000000aa  # position=none seed 0\n  00000000000000bb"));
  EXPECT_THAT(script, HasSubstr("--run_key \"${KEYS[$task]}\""));
  EXPECT_THAT(ReadFile(grid_.output_dir + "/slurm/cells.txt"), HasSubstr("1\t00000000000000bb\tposition=rope\t0"));
  EXPECT_THAT(progress_.str(), HasSubstr("squeue -j 41,42"));
  EXPECT_TRUE(fs::is_directory(grid_.output_dir + "/slurm/logs"));
  // The script runs: an array task index past the keys is an error.
  auto task = RunCommand({"/usr/bin/env", "SLURM_ARRAY_TASK_ID=2", "/bin/bash",
                          grid_.output_dir + "/slurm/grid.sbatch", "cell"});
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->exit_code, 2);
  EXPECT_THAT(task->err, HasSubstr("array task 2: the grid has 2 tasks"));
}

TEST_F(SlurmLauncherTest, RefusedReportJobCancelsTheHeldArray) {
  setenv("FAIL_REPORT", "1", 1);
  auto outcome = Launch();
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.status().message(), HasSubstr("Slurm refused the report job"));
  EXPECT_THAT(outcome.status().message(), HasSubstr("Job dependency problem"));
  EXPECT_THAT(outcome.status().message(), HasSubstr("the held array 41 was cancelled"));
  const std::string calls = ReadFile(calls_);
  EXPECT_THAT(calls, HasSubstr("scancel 41"));
  EXPECT_THAT(calls, Not(HasSubstr("scontrol release")));
  EXPECT_FALSE(fs::exists(grid_.output_dir + "/slurm/jobs.txt"));
}

// A stuck controller: the launcher waited on sbatch forever.
TEST_F(SlurmLauncherTest, AStuckSbatchIsKilledAtTheDeadline) {
  setenv("STUCK", "1", 1);
  SlurmOptions slurm;
  slurm.command_timeout = absl::Milliseconds(500);
  auto outcome = Launch(slurm);
  ASSERT_FALSE(outcome.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(outcome.status())) << outcome.status();
  EXPECT_THAT(outcome.status().message(), HasSubstr("did not finish within 500ms and was killed"));
  EXPECT_THAT(outcome.status().message(), HasSubstr("squeue -n tvlab-g"));
  EXPECT_FALSE(fs::exists(grid_.output_dir + "/slurm/jobs.txt"));
}

TEST_F(SlurmLauncherTest, QueuedSubmissionIsFoundFromJobsTxt) {
  EXPECT_TRUE(CheckNoSlurmJobsQueued(grid_.output_dir).ok());  // no jobs.txt: no squeue call
  EXPECT_FALSE(fs::exists(calls_));
  ASSERT_TRUE(Launch().ok());
  setenv("QUEUED", "1", 1);
  absl::Status queued = CheckNoSlurmJobsQueued(grid_.output_dir);
  ASSERT_FALSE(queued.ok());
  EXPECT_THAT(queued.message(), HasSubstr("still queued or running (jobs 41,42"));
  EXPECT_THAT(queued.message(), HasSubstr("scancel 41 42"));
  EXPECT_THAT(ReadFile(calls_), HasSubstr("squeue -h -o %i %T -j 41,42"));
  // Once squeue no longer knows the jobs (exit 1), they are gone.
  unsetenv("QUEUED");
  EXPECT_TRUE(CheckNoSlurmJobsQueued(grid_.output_dir).ok());
  ASSERT_TRUE(Launch().ok());
  EXPECT_THAT(ReadFile(grid_.output_dir + "/slurm/jobs.txt"), HasSubstr("array=41 report=42 tasks=2"));
  EXPECT_THAT(ReadFile(grid_.output_dir + "/slurm/jobs.txt"), HasSubstr("array=43 report=44 tasks=2"));
}

TEST_F(SlurmLauncherTest, NoSbatchOnPath) {
  setenv("PATH", "/nonexistent", 1);
  auto outcome = Launch();
  ASSERT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.status().message(), HasSubstr("no `sbatch` on PATH (/nonexistent)"));
  EXPECT_FALSE(fs::exists(grid_.output_dir + "/slurm"));
}

TEST_F(SlurmLauncherTest, NothingToRunSubmitsNothing) {
  plan_.to_run.clear();
  auto outcome = Launch();
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->state, LaunchOutcome::State::kEnded);
  EXPECT_FALSE(fs::exists(calls_));
}

TEST(SlurmTime, AcceptsSlurmsForms) {
  for (const char* t : {"", "30", "30:00", "1:00:00", "2-0", "2-12:30", "2-12:30:00", "UNLIMITED"})
    EXPECT_TRUE(ValidateSlurmTime(t).ok()) << t;
}

TEST(SlurmTime, RejectsOthersNamingTheFlag) {
  for (const char* t : {"1h", "1:2:3:4", "-5", "a-1", ":", "1::2", "1:-2"}) {
    absl::Status s = ValidateSlurmTime(t);
    ASSERT_FALSE(s.ok()) << t;
    EXPECT_THAT(s.message(), HasSubstr("--slurm_time: '"));
    EXPECT_THAT(s.message(), HasSubstr("HH:MM:SS"));
  }
}

TEST(Launchers, BothRegisteredAndUnknownNamesListed) {
  const CommandLine none;  // every flag at its default
  EXPECT_TRUE(ReadLauncherFlags("local", none).ok());
  EXPECT_TRUE(ReadLauncherFlags("slurm", none).ok());
  auto unknown = ReadLauncherFlags("pbs", none);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("no launcher named 'pbs'; launchers: local, slurm"));
  EXPECT_EQ(AllLauncherFlags(),
            (std::vector<std::string>{"--jobs", "--slurm_command_timeout", "--slurm_cpus_per_task", "--slurm_extra",
                                      "--slurm_partition", "--slurm_time"}));
}

// A launcher's own flag with another launcher names the launcher it is for;
// slurm says why --jobs makes no sense with it.
TEST(Launchers, FlagsOfAnotherLauncherAreRefused) {
  CommandLine slurm_flag;
  slurm_flag.values["slurm_time"] = {"1:00:00"};
  auto local = ReadLauncherFlags("local", slurm_flag);
  ASSERT_FALSE(local.ok());
  EXPECT_EQ(local.status().message(), "--slurm_time is for --launcher slurm (the launcher is 'local')");
  CommandLine jobs;
  jobs.values["jobs"] = {"2"};
  auto slurm = ReadLauncherFlags("slurm", jobs);
  ASSERT_FALSE(slurm.ok());
  EXPECT_THAT(slurm.status().message(), HasSubstr("--jobs is for --launcher local; with --launcher slurm"));
}

TEST(SlurmOptions, NegativeCpusAreRefusedNamingTheFlag) {
  SlurmOptions options;
  options.cpus_per_task = -1;
  EXPECT_THAT(std::string(CheckSlurmOptions(options).message()), HasSubstr("--slurm_cpus_per_task: -1"));
}

TEST(ExternalCommand, CapturesBothStreamsAndTheExitCode) {
  auto r = RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(ShellQuoted({"a", "b c", "it's"}), "a 'b c' 'it'\\''s'");
}

// The deadline holds when the command ignores it, closes its output and
// waits, or leaves a child holding the pipes: all are killed, as a group.
TEST(ExternalCommand, ADeadlineKillsTheCommandAndItsChildren) {
  for (const char* script : {"sleep 30", "exec >&- 2>&-; sleep 30", "sleep 30 & wait"}) {
    const absl::Time start = absl::Now();
    auto r = RunCommand({"/bin/sh", "-c", script}, absl::Milliseconds(300));
    ASSERT_FALSE(r.ok()) << script;
    EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << script << ": " << r.status();
    EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << script;  // not the 30 s of sleep
  }
  auto quick = RunCommand({"/bin/sh", "-c", "echo fine"}, absl::Seconds(20));
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_EQ(quick->out, "fine\n");
}

}  // namespace
}  // namespace tvlab
