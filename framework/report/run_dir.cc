#include "framework/report/run_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

bool Exists(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::exists(path, ignored);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

const char* RunStateName(RunState state) {
  switch (state) {
    case RunState::kFinished: return "finished";
    case RunState::kFailed: return "failed";
    case RunState::kNotRun: return "not run";
  }
  return "?";
}

RunState ReadRunState(const std::string& run_dir) {
  const bool has_metrics = Exists(run_dir + "/" + kMetricsFile);
  if (has_metrics && ReadMetrics(run_dir).ok()) return RunState::kFinished;
  if (has_metrics || Exists(run_dir + "/" + kFailedFile)) return RunState::kFailed;
  return RunState::kNotRun;
}

absl::StatusOr<RunMetrics> ReadMetrics(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kMetricsFile;
  if (!Exists(path)) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  const std::string text = Slurp(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return absl::DataLossError(absl::StrCat(path, " is empty: the run did not finish writing it; rerun or --resume it"));
  RunMetrics metrics;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage(text, &metrics, options);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat(path, " is not valid metrics JSON: ", std::string(parsed.message())));
  }
  return metrics;
}

std::string ReadFailure(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kFailedFile;
  if (Exists(path)) return Slurp(path);
  if (!Exists(run_dir + "/" + kMetricsFile)) return "";
  absl::StatusOr<RunMetrics> metrics = ReadMetrics(run_dir);
  return metrics.ok() ? "" : std::string(metrics.status().message());
}

std::vector<std::pair<double, double>> ReadLogCurve(const std::string& run_dir, const std::string& column) {
  std::vector<std::pair<double, double>> curve;
  std::ifstream in(run_dir + "/" + kTrainLogFile);
  std::string line;
  if (!std::getline(in, line)) return curve;
  std::vector<std::string> header = absl::StrSplit(line, ',');
  int step_col = -1, value_col = -1;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "step") step_col = static_cast<int>(i);
    if (header[i] == column) value_col = static_cast<int>(i);
  }
  if (step_col < 0 || value_col < 0) return curve;
  while (std::getline(in, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    double step, value;
    if (static_cast<int>(cells.size()) <= std::max(step_col, value_col)) continue;  // torn last line
    // An empty cell (eval_loss on a row without an evaluation) is no point.
    if (absl::SimpleAtod(cells[step_col], &step) && absl::SimpleAtod(cells[value_col], &value))
      curve.emplace_back(step, value);
  }
  return curve;
}

std::vector<std::pair<double, double>> ReadLossCurve(const std::string& run_dir) {
  return ReadLogCurve(run_dir, "loss");
}

std::vector<std::string> MetricNames() {
  std::vector<std::string> names;
  const auto* d = RunMetrics::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    auto type = d->field(i)->cpp_type();
    if (type == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE ||
        type == google::protobuf::FieldDescriptor::CPPTYPE_INT32)
      names.push_back(d->field(i)->name());
  }
  return names;
}

namespace {

// "perplexity@256" -> ("perplexity", 256); false for a name without '@'.
// The part before '@' must be a ContextEval metric and the length a
// positive integer, else `error` says what is wrong.
bool SplitContextMetric(const std::string& name, std::string* metric, int32_t* length, std::string* error) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return false;
  *metric = name.substr(0, at);
  const std::string digits = name.substr(at + 1);
  if (std::find(kContextMetrics, kContextMetrics + 3, *metric) == kContextMetrics + 3) {
    *error = absl::StrCat("'", name, "': only ", absl::StrJoin(kContextMetrics, kContextMetrics + 3, ", "),
                          " are measured per context (METRIC@LENGTH, e.g. perplexity@1024)");
  } else if (!absl::SimpleAtoi(digits, length) || *length <= 0) {
    *error = absl::StrCat("'", name, "': '", digits,
                          "' is not a context length; write METRIC@LENGTH, e.g. perplexity@1024");
  }
  return true;
}

}  // namespace

absl::Status CheckMetricName(const std::string& name) {
  std::string metric, error;
  int32_t length = 0;
  if (SplitContextMetric(name, &metric, &length, &error))
    return error.empty() ? absl::OkStatus() : absl::NotFoundError(error);
  const std::vector<std::string> names = MetricNames();
  if (std::find(names.begin(), names.end(), name) != names.end()) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("'", name, "' is not a metric; metrics: ",
                                          absl::StrJoin(names, ", "),
                                          ", and per evaluation context (eval.context_lengths) ",
                                          "eval_loss@N, perplexity@N, bits_per_byte@N"));
}

absl::StatusOr<double> MetricValue(const RunMetrics& metrics, const std::string& name) {
  if (absl::Status known = CheckMetricName(name); !known.ok()) return known;
  std::string metric, error;
  int32_t length = 0;
  if (SplitContextMetric(name, &metric, &length, &error)) {
    for (const ContextEval& e : metrics.context_evals()) {
      if (e.context_length() != length) continue;
      if (metric == "eval_loss") return e.eval_loss();
      if (metric == "perplexity" && e.has_perplexity()) return e.perplexity();
      if (metric == "bits_per_byte" && e.has_bits_per_byte()) return e.bits_per_byte();
    }
    return absl::NotFoundError(absl::StrCat("metric '", name, "' is absent from this run: it was not evaluated at context ",
                                            length, " (eval.context_lengths)"));
  }
  const auto* f = RunMetrics::descriptor()->FindFieldByName(name);
  const auto* r = metrics.GetReflection();
  if (f->has_presence() && !r->HasField(metrics, f))
    return absl::NotFoundError(absl::StrCat(
        "metric '", name, "' is absent from this run: it does not apply to the run's task"));
  if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) return r->GetDouble(metrics, f);
  return static_cast<double>(r->GetInt32(metrics, f));
}

}  // namespace tvlab
