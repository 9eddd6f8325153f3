// bazel run //experiments:attention_dump -- RUN_DIR [--input "3 1 4 1 5 9 2 6"]
//     [--example N] [--output_dir DIR]
//
// Loads a finished run (spec.resolved.pbtxt + model.safetensors), runs one
// input through the model and writes the attention weights of every layer
// and head: attention.json (all of them) and one CSV per layer and head,
// rows = queries, columns = keys, each row summing to 1. Reading these maps
// is how one sees what a variant learned (e.g. in the sort task, which input
// position each output position reads).
// Exit codes: 0 success, 2 bad command line, run directory or input.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "experiments/cli/command_line.h"
#include "framework/backend/backend.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"
#include "framework/model/model.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/safetensors.h"

ABSL_FLAG(std::string, input, "",
          "IDS: token ids separated by spaces or commas (default: an evaluation example of the "
          "run's task)");
ABSL_FLAG(int64_t, example, 0, "N: which evaluation example when --input is not given (default 0)");
ABSL_FLAG(std::string, output_dir, "", "DIR: where to write (default RUN_DIR/attention)");

namespace tvlab {
namespace {

const char kUsage[] =
    "usage: bazel run //experiments:attention_dump -- RUN_DIR [--input \"3 1 4 1\"] "
    "[--example N] [--output_dir DIR]\n"
    "  RUN_DIR  a finished run of //experiments:run (spec.resolved.pbtxt, model.safetensors)\n"
    "Writes DIR/attention.json and DIR/<layer>.head<h>.csv for every layer and head.\n";

struct Flags {
  std::string run_dir, input, output_dir;
  int64_t example = 0;
  bool help = false;
};

// Paths typed by the user are relative to where they ran `bazel run`.
absl::StatusOr<Flags> ParseCommandLine(int argc, char** argv) {
  auto line = ParseFlags(argc, argv, kUsage);
  if (!line.ok()) return line.status();
  Flags f;
  f.help = line->help;
  if (f.help) return f;
  if (line->positional.size() > 1)
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", line->positional[1],
                                                   "': give one run directory"));
  if (line->positional.empty()) return absl::InvalidArgumentError("no run directory given");
  f.run_dir = line->positional[0];
  f.input = absl::GetFlag(FLAGS_input);
  f.output_dir = absl::GetFlag(FLAGS_output_dir);
  f.example = absl::GetFlag(FLAGS_example);
  if (f.example < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--example '", f.example, "' is not a non-negative integer"));
  return f;
}

// One sequence from --input, checked against the task's vocabulary and length.
absl::StatusOr<Batch> InputBatch(const std::string& text, const Task& task) {
  Batch b;
  for (absl::string_view piece : absl::StrSplit(text, absl::ByAnyChar(" ,"), absl::SkipEmpty())) {
    int32_t id;
    if (!absl::SimpleAtoi(piece, &id))
      return absl::InvalidArgumentError(
          absl::StrCat("--input: '", std::string(piece), "' is not a token id (an integer)"));
    if (id < 0 || id >= task.vocab_size())
      return absl::InvalidArgumentError(absl::StrCat(
          "--input: token ", id, " at position ", b.inputs.size(),
          " is outside the vocabulary [0, ", task.vocab_size(), ")"));
    b.inputs.push_back(id);
  }
  if (b.inputs.empty()) return absl::InvalidArgumentError("--input holds no token ids");
  if (static_cast<int64_t>(b.inputs.size()) > task.max_length())
    return absl::InvalidArgumentError(absl::StrCat("--input has ", b.inputs.size(),
                                                   " tokens; this run's model takes at most ",
                                                   task.max_length()));
  b.batch = 1;
  b.length = static_cast<int64_t>(b.inputs.size());
  b.targets.assign(b.inputs.size(), kIgnoreTarget);
  return b;
}

struct LayerWeights {
  std::string layer;  // e.g. "encoder.layers.0.attention"
  Tensor weights;     // (1, H, T, S)
};

// Every file through the atomic writer: a full disk or a file in the way is
// an error naming the path, never a partial file.
absl::Status WriteOutputs(const std::string& dir, const Batch& batch,
                          const std::vector<LayerWeights>& layers) {
  FileSystem* fs = DefaultFileSystem();
  if (absl::Status s = fs->CreateDirs(dir); !s.ok())
    return absl::Status(s.code(), absl::StrCat("cannot create the --output_dir: ", s.message()));
  std::ostringstream json;
  json << "{\n  \"tokens\": [";
  for (size_t i = 0; i < batch.inputs.size(); ++i) json << (i ? ", " : "") << batch.inputs[i];
  json << "],\n  \"layers\": [";
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor w = layers[l].weights.ToHost();  // (1, H, T, S), an edge: reporting
    const int64_t h = w.dim(1), t = w.dim(2), s = w.dim(3);
    const std::vector<float> values = w.ToVector();
    json << (l ? "," : "") << "\n    {\"layer\": \"" << layers[l].layer << "\", \"heads\": [";
    for (int64_t hd = 0; hd < h; ++hd) {
      std::ostringstream csv;
      csv << "query\\key";
      for (int64_t j = 0; j < s; ++j) csv << ",k" << j << "=" << batch.inputs[j];
      csv << "\n";
      json << (hd ? ", " : "") << "\n      [";
      for (int64_t i = 0; i < t; ++i) {
        csv << "q" << i << "=" << batch.inputs[i];
        json << (i ? ", " : "") << "[";
        for (int64_t j = 0; j < s; ++j) {
          const float v = values[(hd * t + i) * s + j];
          csv << absl::StrFormat(",%.6g", v);
          json << (j ? ", " : "") << absl::StrFormat("%.6g", v);
        }
        csv << "\n";
        json << "]";
      }
      json << "]";
      TVLAB_RETURN_IF_ERROR(
          WriteFileAtomically(fs, absl::StrCat(dir, "/", layers[l].layer, ".head", hd, ".csv"), csv.str()));
    }
    json << "]}";
  }
  json << "\n  ]\n}\n";
  return WriteFileAtomically(fs, dir + "/attention.json", json.str());
}

int Main(int argc, char** argv) {
  auto flags = ParseCommandLine(argc, argv);
  if (!flags.ok()) {
    PrintUsageError(std::cerr, flags.status(), kUsage);
    return 2;
  }
  if (flags->help) {
    PrintHelp(std::cout, kUsage);
    return 0;
  }
  const std::string run_dir = tvlab::UserPath(flags->run_dir);
  auto fail = [](const absl::Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return 2;
  };
  const std::string spec_path = run_dir + "/spec.resolved.pbtxt";
  std::error_code ignored;  // an odd path (a file in the middle) is "no", not an exception
  if (!std::filesystem::is_regular_file(spec_path, ignored))
    return fail(absl::NotFoundError(absl::StrCat(
        run_dir, " is not a run directory (no spec.resolved.pbtxt); give the directory "
                 "//experiments:run wrote")));
  std::shared_ptr<const Task> task;  // built once, by validation
  auto spec = LoadExperiment(spec_path, {}, &task);
  if (!spec.ok()) return fail(spec.status());
  if (absl::Status s = ApplyRuntime(spec->runtime()); !s.ok()) return fail(s);
  auto model = BuildModel(*spec, task->vocab_size(), HeadOutputs(*task));
  if (!model.ok()) return fail(model.status());
  const std::string weights_path = run_dir + "/model.safetensors";
  auto tensors = ReadSafetensors(weights_path);
  if (!tensors.ok()) return fail(tensors.status());
  if (absl::Status s = AssignByName(*tensors, (*model)->NamedParameters(), weights_path); !s.ok())
    return fail(s);

  Batch batch;
  if (!flags->input.empty()) {
    auto b = InputBatch(flags->input, *task);
    if (!b.ok()) return fail(b.status());
    batch = *b;
  } else {
    const int64_t available = task->NumEvalExamples(spec->eval().examples());
    if (flags->example >= available)
      return fail(absl::OutOfRangeError(absl::StrCat(
          "--example ", flags->example, " is out of range: this run's task has ", available,
          " evaluation examples (0..", available - 1, "); choose one of them or give --input")));
    batch = task->EvalBatch(spec->eval().seed(), flags->example, 1);
  }
  std::vector<LayerWeights> layers;
  AttentionProbe probe = [&](const std::string& layer, const Tensor& w) {
    layers.push_back({layer, w.Clone()});
  };
  {
    NoGradGuard no_grad;
    (*model)->Forward(batch, ForwardContext{}, &probe);
  }
  const std::string out_dir =
      flags->output_dir.empty() ? run_dir + "/attention" : tvlab::UserPath(flags->output_dir);
  if (absl::Status s = WriteOutputs(out_dir, batch, layers); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  std::cout << "input";
  for (int32_t id : batch.inputs) std::cout << " " << id;
  std::cout << "\n" << layers.size() << " layers x " << (layers.empty() ? 0 : layers[0].weights.dim(1))
            << " heads written to " << out_dir << "/ (attention.json, <layer>.head<h>.csv)\n";
  return 0;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) { return tvlab::Main(argc, argv); }
