#include "experiments/grid/grid_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/io/atomic_file.h"
#include "framework/report/run_dir.h"
#include "framework/spec/spec_loader.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int signal) { g_stop_signal = signal; }

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, text);
}

// One run process in flight.
struct Child {
  const PlannedRun* planned = nullptr;
  pid_t pid = -1;
  int fd = -1;  // read end of the child's stdout+stderr
  std::unique_ptr<WritableFile> log;  // run.log; every append checked
  absl::Status log_status;            // the first failed append, reported when the run ends
  std::string partial;              // text after the last newline
  std::deque<std::string> tail;     // last lines, for failed.txt
  int64_t step = -1, steps = 0;     // from "step N/M" progress lines
  Clock::time_point started;
};

void ConsumeLine(Child* c, const std::string& line) {
  if (line.empty()) return;
  c->tail.push_back(line);
  if (c->tail.size() > 30) c->tail.pop_front();
  long long step, steps;
  if (std::sscanf(line.c_str(), " step %lld/%lld", &step, &steps) == 2) c->step = step, c->steps = steps;
}

void Consume(Child* c, const char* data, size_t n) {
  if (c->log != nullptr && c->log_status.ok()) c->log_status = c->log->Append(absl::string_view(data, n));
  c->partial.append(data, n);
  size_t start = 0;
  for (size_t i = 0; i < c->partial.size(); ++i) {
    if (c->partial[i] == '\n' || c->partial[i] == '\r') {
      ConsumeLine(c, c->partial.substr(start, i - start));
      start = i + 1;
    }
  }
  c->partial.erase(0, start);
}

// Prepares the run directory and starts the run process.
bool Start(const PlannedRun& p, const std::string& run_binary, Child* c, std::string* error) {
  const GridRun& run = *p.run;
  absl::Status prepared = DefaultFileSystem()->CreateDirs(run.run_dir);
  if (prepared.ok()) prepared = DefaultFileSystem()->RemoveFile(run.run_dir + "/" + kFailedFile);
  if (prepared.ok()) prepared = WriteText(run.run_dir + "/cell_spec.pbtxt", SpecToText(run.spec));
  GridRunRecord record;
  record.set_cell(p.cell->label);
  record.set_seed(run.seed);
  for (const std::string& o : p.cell->overrides) record.add_overrides(o);
  std::string record_text;
  google::protobuf::TextFormat::PrintToString(record, &record_text);
  if (prepared.ok()) prepared = WriteText(run.run_dir + "/grid_run.pbtxt", record_text);
  if (!prepared.ok()) {
    *error = std::string(prepared.message());
    return false;
  }

  std::vector<std::string> args = {run_binary};
  if (p.resume) {
    args.insert(args.end(), {"--resume", run.run_dir});
  } else {
    args.insert(args.end(), {run.run_dir + "/cell_spec.pbtxt", "--output_dir", run.run_dir});
  }
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    *error = absl::StrCat("pipe: ", std::strerror(errno));
    return false;
  }
  const std::string log_path = run.run_dir + "/run.log";
  auto log = p.resume ? DefaultFileSystem()->NewAppendableFile(log_path)
                      : DefaultFileSystem()->NewWritableFile(log_path);
  if (!log.ok()) {
    *error = std::string(log.status().message());
    close(pipe_fds[0]), close(pipe_fds[1]);
    return false;
  }
  c->log = std::move(*log);
  c->log_status = c->log->Append(absl::StrCat("$ ", absl::StrJoin(args, " "), "\n"));
  pid_t pid = fork();
  if (pid < 0) {
    *error = absl::StrCat("fork: ", std::strerror(errno));
    close(pipe_fds[0]), close(pipe_fds[1]);
    return false;
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]), close(pipe_fds[1]);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(run_binary.c_str(), argv.data());
    std::fprintf(stderr, "error: cannot start %s: %s\n", run_binary.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);
  fcntl(pipe_fds[0], F_SETFD, FD_CLOEXEC);  // later children must not inherit it
  c->planned = &p;
  c->pid = pid;
  c->fd = pipe_fds[0];
  c->started = Clock::now();
  return true;
}

// The exit status in words and the lines that explain it.
std::string FailureText(const Child& c, int status) {
  std::string how = WIFEXITED(status) ? absl::StrCat("exit code ", WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                                                         strsignal(WTERMSIG(status)), ")")
                                          : "ended abnormally";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) how = "exit code 0 but no metrics.json";
  std::vector<std::string> errors;
  for (const std::string& line : c.tail)
    if (line.rfind("error:", 0) == 0 || (!errors.empty() && line.rfind("  ", 0) == 0)) errors.push_back(line);
  if (errors.empty()) {  // no "error:" line: the last few lines say most
    size_t from = c.tail.size() > 8 ? c.tail.size() - 8 : 0;
    errors.assign(c.tail.begin() + from, c.tail.end());
  }
  return absl::StrCat(how, "\n", absl::StrJoin(errors, "\n"), "\n");
}

std::string RunName(const PlannedRun& p) { return absl::StrCat(p.cell->label, " seed ", p.run->seed); }

class Display {
 public:
  Display(const GridPlan& plan, const GridRunnerOptions& options)
      : options_(options), total_(plan.total), done_(plan.finished), pending_(plan.to_run.size()) {}

  void Event(const std::string& line) {
    ClearStatus();
    *options_.progress << line << "\n";
    options_.progress->flush();
  }

  void Started() { --pending_; }
  void Ended(bool ok, double seconds) {
    (ok ? ++done_ : ++failed_);
    if (ok) finished_seconds_ += seconds, ++finished_now_;
  }
  int done() const { return done_; }
  int total() const { return total_; }

  // Time left: runs in flight finish after the per-run estimate, pending
  // ones take it each, `jobs` at a time.
  std::string Eta(const std::vector<std::unique_ptr<Child>>& running) const {
    double per_run = EstimatePerRun(running);
    if (per_run <= 0) return "?";
    double remaining = per_run * pending_;
    for (const auto& c : running) remaining += std::max(0.0, per_run - SecondsSince(c->started));
    return FormatDuration(remaining / std::max(1, options_.jobs));
  }

  std::string Status(const std::vector<std::unique_ptr<Child>>& running) const {
    std::vector<std::string> parts;
    for (const auto& c : running) {
      std::string where = c->steps > 0 ? absl::StrCat("step ", c->step + 1, "/", c->steps) : "starting";
      parts.push_back(absl::StrCat(RunName(*c->planned), " ", where));
    }
    std::string failed = failed_ > 0 ? absl::StrCat(", ", failed_, " failed") : "";
    return absl::StrCat("[", done_, "/", total_, " done", failed, "] ", absl::StrJoin(parts, " | "),
                        " | ETA ", Eta(running));
  }

  void ShowStatus(const std::vector<std::unique_ptr<Child>>& running) {
    if (options_.interactive) {
      if (status_shown_ && SecondsSince(last_status_) < 0.2) return;  // ~5 redraws/s
      *options_.progress << "\r\033[K" << Status(running).substr(0, 200);
      options_.progress->flush();
      status_shown_ = true;
      last_status_ = Clock::now();
    } else if (SecondsSince(last_status_) >= options_.status_every_s) {
      *options_.progress << Status(running) << "\n";
      options_.progress->flush();
      last_status_ = Clock::now();
    }
  }

  void ClearStatus() {
    if (!status_shown_) return;
    *options_.progress << "\r\033[K";
    status_shown_ = false;
  }

 private:
  // Seconds one run takes: the mean of runs finished in this session, else
  // extrapolated from how far the running ones got.
  double EstimatePerRun(const std::vector<std::unique_ptr<Child>>& running) const {
    if (finished_now_ > 0) return finished_seconds_ / finished_now_;
    double sum = 0;
    int n = 0;
    for (const auto& c : running) {
      if (c->steps <= 0 || c->step < 0) continue;
      sum += SecondsSince(c->started) * c->steps / (c->step + 1);
      ++n;
    }
    return n > 0 ? sum / n : 0;
  }

  const GridRunnerOptions& options_;
  int total_, done_, failed_ = 0;
  int pending_;
  double finished_seconds_ = 0;
  int finished_now_ = 0;
  bool status_shown_ = false;
  Clock::time_point last_status_ = Clock::now();
};

}  // namespace

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

namespace {

using Running = std::vector<std::unique_ptr<Child>>;

// Starts planned runs from plan.to_run[*next] on until `jobs` are in flight.
void StartRuns(const GridPlan& plan, const GridRunnerOptions& options, size_t* next, Display* display,
               Running* running, GridRunSummary* summary) {
  const int jobs = std::max(1, options.jobs);
  while (*next < plan.to_run.size() && static_cast<int>(running->size()) < jobs) {
    const PlannedRun& p = plan.to_run[(*next)++];
    auto child = std::make_unique<Child>();
    std::string error;
    display->Started();
    if (!Start(p, options.run_binary, child.get(), &error)) {
      WriteText(p.run->run_dir + "/" + kFailedFile, absl::StrCat("could not start: ", error, "\n"))
          .IgnoreError();  // reported just below; the run stays unfinished either way
      display->Ended(false, 0);
      ++summary->failed;
      display->Event(absl::StrCat("FAILED to start ", RunName(p), ": ", error));
      continue;
    }
    display->Event(absl::StrCat(p.resume ? "resuming " : "starting ", RunName(p), "  (", p.run->run_dir, ")"));
    running->push_back(std::move(child));
  }
}

// The run process whose output has ended: waits for it and records how it
// ended (failed.txt when it failed; nothing when it was stopped by a signal,
// so it reruns next time).
void EndRun(Child* c, const Running& running, Display* display, GridRunSummary* summary) {
  close(c->fd);
  c->fd = -1;
  int status = 0;
  waitpid(c->pid, &status, 0);
  if (!c->partial.empty()) ConsumeLine(c, c->partial);
  const double seconds = SecondsSince(c->started);
  const GridRun& run = *c->planned->run;
  if (!c->log_status.ok()) display->Event(absl::StrCat("warning: run.log is incomplete: ", c->log_status.message()));
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && ReadRunState(run.run_dir) == RunState::kFinished;
  // Stopped by Ctrl-C or a TERM: interrupted, not failed; it reruns next time.
  const bool stopped = !ok && (g_stop_signal != 0 || (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT ||
                                                                              WTERMSIG(status) == SIGTERM)));
  if (stopped) {
    summary->interrupted = true;
    display->Event(absl::StrCat("stopped ", RunName(*c->planned), " (interrupted; it reruns next time)"));
    return;
  }
  display->Ended(ok, seconds);
  if (ok) {
    ++summary->succeeded;
    auto metrics = ReadMetrics(run.run_dir);
    std::string score;
    if (metrics.ok() && metrics->has_diverged_at_step()) {
      score = absl::StrFormat(": diverged at step %d (loss %g), recorded", metrics->diverged_at_step(),
                              metrics->diverged_loss());
    } else if (metrics.ok()) {
      score = absl::StrFormat(": token_accuracy %.3f", metrics->token_accuracy());
    }
    display->Event(absl::StrCat("finished ", RunName(*c->planned), " in ", FormatDuration(seconds), score, "  [",
                                display->done(), "/", display->total(), " done, ETA ", display->Eta(running), "]"));
    return;
  }
  ++summary->failed;
  std::string text = FailureText(*c, status);
  if (absl::Status s = WriteText(run.run_dir + "/" + kFailedFile, text); !s.ok())
    display->Event(absl::StrCat("warning: ", s.message()));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  display->Event(absl::StrCat("FAILED ", RunName(*c->planned), ": ", absl::StrJoin(lines, " / "),
                              "  (log: ", run.run_dir, "/run.log)"));
}

// Reads what the running processes printed (up to a second's wait) and ends
// those whose output closed. False when poll failed.
bool PollRunning(Running* running, Display* display, GridRunSummary* summary) {
  std::vector<pollfd> fds;
  for (const auto& c : *running) fds.push_back({c->fd, POLLIN, 0});
  int ready = poll(fds.data(), fds.size(), 1000);
  if (ready < 0 && errno != EINTR) return false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Child* c = (*running)[i].get();
    char buffer[8192];
    ssize_t n = read(c->fd, buffer, sizeof(buffer));
    if (n > 0) {
      Consume(c, buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    EndRun(c, *running, display, summary);  // end of output: the process is exiting
  }
  running->erase(std::remove_if(running->begin(), running->end(), [](const auto& c) { return c->fd < 0; }),
                 running->end());
  return true;
}

// After SIGINT/SIGTERM: the runs in flight are stopped, to restart next time.
void StopRunning(const Running& running, Display* display) {
  for (const auto& c : running) kill(c->pid, SIGTERM);
  for (const auto& c : running) {
    waitpid(c->pid, nullptr, 0);
    close(c->fd);
  }
  display->Event(absl::StrCat("interrupted (", strsignal(g_stop_signal), "); ", running.size(),
                              " run(s) in flight were stopped and will restart, or resume from their "
                              "latest checkpoint, when the grid is run again"));
}

}  // namespace

GridRunSummary RunGrid(const GridPlan& plan, const GridRunnerOptions& options) {
  GridRunSummary summary;
  // One OpenMP thread per run by default; spinning waits would make
  // parallel runs on a small machine slow each other down.
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  g_stop_signal = 0;
  struct sigaction action = {}, old_int = {}, old_term = {};
  action.sa_handler = OnStopSignal;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  Display display(plan, options);
  Running running;
  size_t next = 0;
  while ((next < plan.to_run.size() || !running.empty()) && g_stop_signal == 0) {
    StartRuns(plan, options, &next, &display, &running, &summary);
    if (!PollRunning(&running, &display, &summary)) break;
    if (!running.empty()) display.ShowStatus(running);
  }
  if (g_stop_signal != 0) {
    summary.interrupted = true;
    StopRunning(running, &display);
  }
  display.ClearStatus();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return summary;
}

}  // namespace tvlab
