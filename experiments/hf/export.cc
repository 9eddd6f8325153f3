// bazel run //experiments/hf:export -- --run_dir DIR --format hf --out OUT
//
// Writes a finished run as a Hugging Face `transformers` model directory:
// OUT/config.json and OUT/model.safetensors, loadable with
// AutoModelForCausalLM.from_pretrained(OUT). Llama and GPT-2 shaped runs
// only (experiments/hf/hf_export.h lists the exact combinations); any other is
// an error naming the component with no HF equivalent. A run with a
// SentencePiece tokenizer gets its tokenizer.model copied beside the model
// (no transformers tokenizer files: load it with the sentencepiece package;
// its ids are the model's). The run directory is only read. Exit codes: 0 ok, 2 bad input or a model with no HF equivalent.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "experiments/cli/command_line.h"
#include "experiments/hf/hf_export.h"
#include "framework/io/atomic_file.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/safetensors.h"

ABSL_FLAG(std::string, run_dir, "", "DIR: the finished run to export (required)");
ABSL_FLAG(std::string, format, "", "hf: a Hugging Face transformers directory (required)");
ABSL_FLAG(std::string, out, "", "OUT: the directory to write (created if missing; required)");
ABSL_FLAG(bool, overwrite, false, "write into OUT even if it is not empty (replacing its config.json, ...)");

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments/hf:export -- --run_dir DIR --format hf --out OUT [--overwrite]\n";

int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> exit_code = tvlab::ParseFlagsOnlyOrExit(argc, argv, kUsage)) return *exit_code;
  const std::string run_dir = tvlab::UserPath(absl::GetFlag(FLAGS_run_dir));
  const std::string out = tvlab::UserPath(absl::GetFlag(FLAGS_out));
  const std::string format = absl::GetFlag(FLAGS_format);
  if (run_dir.empty() || out.empty() || format.empty()) {
    tvlab::PrintUsageError(std::cerr, absl::InvalidArgumentError("--run_dir, --format and --out are required"),
                           kUsage);
    return 2;
  }
  if (format != "hf") return Fail(absl::StrCat("--format '", format, "' is not known; the one format is 'hf'"));
  // A user's directory is not replaced by accident: config.json and the
  // weights of an earlier export (or of another model) would be lost.
  std::error_code error;
  if (std::filesystem::exists(out, error) && !absl::GetFlag(FLAGS_overwrite)) {
    if (!std::filesystem::is_directory(out, error))
      return Fail(absl::StrCat("--out ", out, " exists and is not a directory; choose another --out"));
    if (!std::filesystem::is_empty(out, error)) {
      return Fail(absl::StrCat("--out ", out, " is not empty; export writes config.json, model.safetensors and "
                               "the tokenizer files there, replacing any that exist: choose an empty or new "
                               "directory, or pass --overwrite"));
    }
  }
  auto spec = tvlab::LoadExperiment(run_dir + "/spec.resolved.pbtxt", {});
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  if (absl::Status applied = tvlab::ApplyRuntime(spec->runtime()); !applied.ok())
    return Fail(std::string(applied.message()));
  auto weights = tvlab::ReadSafetensors(run_dir + "/model.safetensors");
  if (!weights.ok()) {
    return Fail(absl::StrCat(weights.status().message(),
                             " (export reads the weights a finished run writes)"));
  }
  auto model = tvlab::ToHuggingFace(*spec, *weights);
  if (!model.ok()) return Fail(absl::StrCat(run_dir, ": ", model.status().message()));
  // A SentencePiece run: its ids are not bytes, so no byte-level tokenizer.
  std::ifstream sentencepiece(run_dir + "/tokenizer.model", std::ios::binary);
  std::stringstream sentencepiece_model;
  if (sentencepiece) {
    sentencepiece_model << sentencepiece.rdbuf();
    model->tokenizer_json.clear();
    model->tokenizer_config_json.clear();
  }
  absl::Status written = tvlab::WriteHuggingFace(*model, out);
  if (written.ok() && sentencepiece)
    written = tvlab::WriteFileAtomically(out + "/tokenizer.model", sentencepiece_model.str());
  if (!written.ok()) return Fail(std::string(written.message()));
  if (sentencepiece)
    std::cout << "tokenizer: SentencePiece, copied to " << out
              << "/tokenizer.model (sentencepiece.SentencePieceProcessor(model_file=...) gives the "
                 "model's ids; no transformers tokenizer files are written for it)\n";
  std::cout << "wrote " << out << " (" << model->architecture << ", " << model->tensors.size()
            << " tensors): load it with transformers.AutoModelForCausalLM.from_pretrained(\"" << out
            << "\")\n";
  return 0;
}
