// bazel run //experiments:prepare -- --input DIR_OR_FILE [--input ...] --output STORE [flags]
//
// Tokenizes text once into a token store (framework/data/token_store/README.md)
// that the token_store task trains on by memory map. Inputs: plain text files,
// JSON Lines files (a named string field per record), optionally .gz, and
// directories of them. Exit codes: 0 ok, 2 bad flags or input, 1 a failure
// while writing.

#include <iostream>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "experiments/cli/command_line.h"
#include "experiments/prepare_store/prepare.h"

ABSL_FLAG(std::string, input, "",
          "a text or JSON Lines file (.gz allowed) or a directory of them; repeat for more (required)");
ABSL_FLAG(std::string, output, "", "the token store directory to write (required)");
ABSL_FLAG(bool, overwrite, false, "replace an existing token store at --output");
ABSL_FLAG(std::string, document, "file",
          "what a document of a text file is: file (the whole file) or paragraph (text between "
          "blank lines); a JSON Lines record is always one document");
ABSL_FLAG(std::string, jsonl_field, "text", "the JSON Lines field that holds a record's text");
ABSL_FLAG(std::string, dir_extensions, "txt,jsonl",
          "in a directory, the file name extensions read (each optionally followed by .gz)");
ABSL_FLAG(std::string, tokenizer, "bytes", "bytes (256 ids) or sentencepiece");
ABSL_FLAG(std::string, spm_model, "", "sentencepiece: an existing .model file");
ABSL_FLAG(int32_t, spm_vocab_size, 0, "sentencepiece: train a model of this many pieces");
ABSL_FLAG(int64_t, spm_sample_bytes, 20 << 20,
          "sentencepiece: train on the first this many bytes of training documents' lines");
ABSL_FLAG(double, train_fraction, 0.98, "share of documents (by hash) in the train split");
ABSL_FLAG(double, validation_fraction, 0.01, "share of documents in the validation split");
ABSL_FLAG(double, test_fraction, 0.01, "share of documents in the test split");
ABSL_FLAG(int32_t, threads, 2, "tokenizer threads");
ABSL_FLAG(bool, progress, true, "a progress line with ETA on stderr");

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments:prepare -- --input DIR_OR_FILE [--input ...] --output STORE "
    "[--tokenizer sentencepiece --spm_vocab_size N] [flags]\n";

}  // namespace

int main(int argc, char** argv) {
  tvlab::CommandLine line;
  if (std::optional<int> exit_code = tvlab::ParseFlagsOnlyOrExit(argc, argv, kUsage, &line)) return *exit_code;
  tvlab::PrepareOptions options;
  if (line.Has("input"))
    for (const std::string& input : line.values.at("input")) options.inputs.push_back(tvlab::UserPath(input));
  options.output = tvlab::UserPath(absl::GetFlag(FLAGS_output));
  options.overwrite = absl::GetFlag(FLAGS_overwrite);
  const std::string document = absl::GetFlag(FLAGS_document);
  if (document != "file" && document != "paragraph") {
    std::cerr << "error: --document must be file or paragraph (got '" << document << "')\n";
    return 2;
  }
  options.unit = document == "file" ? tvlab::DocumentUnit::kFile : tvlab::DocumentUnit::kParagraph;
  options.jsonl_field = absl::GetFlag(FLAGS_jsonl_field);
  options.dir_extensions = absl::StrSplit(absl::GetFlag(FLAGS_dir_extensions), ',', absl::SkipEmpty());
  options.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  options.spm_model = tvlab::UserPath(absl::GetFlag(FLAGS_spm_model));
  options.spm_vocab_size = absl::GetFlag(FLAGS_spm_vocab_size);
  options.spm_sample_bytes = absl::GetFlag(FLAGS_spm_sample_bytes);
  options.train_fraction = absl::GetFlag(FLAGS_train_fraction);
  options.validation_fraction = absl::GetFlag(FLAGS_validation_fraction);
  options.test_fraction = absl::GetFlag(FLAGS_test_fraction);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.progress = absl::GetFlag(FLAGS_progress);
  if (absl::Status valid = tvlab::ValidatePrepareOptions(options); !valid.ok()) {
    tvlab::PrintUsageError(std::cerr, valid, kUsage);
    return 2;
  }
  const absl::Status prepared = tvlab::Prepare(options);
  if (!prepared.ok()) {
    std::cerr << "\nerror: " << prepared.message() << "\n";
    const bool input_error = prepared.code() == absl::StatusCode::kInvalidArgument ||
                             prepared.code() == absl::StatusCode::kNotFound ||
                             prepared.code() == absl::StatusCode::kAlreadyExists ||
                             prepared.code() == absl::StatusCode::kFailedPrecondition;
    return input_error ? 2 : 1;
  }
  return 0;
}
