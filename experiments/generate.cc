// bazel run //experiments:generate -- --run_dir DIR --prompt TEXT
//     [--method greedy|sample|beam] [--max_new_tokens N] [--temperature T]
//     [--top_k K] [--beam_size B] [--length_penalty A] [--seed S] [--no_cache]
//     [--tokenize]
//
// Loads a finished (or checkpointed) run of a decoder-only or encoder-decoder
// model and generates from a prompt: for a sequence-pair task the prompt is
// the source ("3 1 4" for reverse, "12+34" for addition); for a language
// model it is the text to continue. Decoding defaults come from the run's
// eval.decoding; flags override them. The run's tokenizer is the task's
// (bytes, or the SentencePiece model its spec.resolved.pbtxt names, kept in
// the run directory); --tokenize prints the prompt's token ids with it and
// stops. Exit codes: 0 ok, 2 bad input.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/cli/command_line.h"
#include "framework/model/decoding.h"
#include "framework/model/model.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/checkpoint.h"

ABSL_FLAG(std::string, run_dir, "", "DIR: the run to generate with (required)");
ABSL_FLAG(std::string, prompt, "",
          "TEXT: the source of a sequence-pair task, or the text a language model continues "
          "(required)");
// The decoding flags override the run's eval.decoding; unset, the run's values apply.
ABSL_FLAG(std::string, method, "", "greedy|sample|beam (default: the run's eval.decoding)");
ABSL_FLAG(int, max_new_tokens, 0, "N: tokens to generate at most (default: the run's)");
ABSL_FLAG(double, temperature, 0, "T: sampling temperature (default: the run's)");
ABSL_FLAG(int, top_k, 0, "K: sample from the K likeliest tokens, 0 = all (default: the run's)");
ABSL_FLAG(int, beam_size, 0, "B: hypotheses kept by beam search (default: the run's)");
ABSL_FLAG(double, length_penalty, 0, "A: beam search length penalty (default: the run's)");
ABSL_FLAG(uint64_t, seed, 0, "S: sampling seed (default: the run's)");
ABSL_FLAG(bool, tokenize, false, "print the token ids of --prompt (one line, space-separated) and stop");
ABSL_FLAG(bool, no_cache, false, "recompute the prefix every step instead of using the KV cache");

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments:generate -- --run_dir DIR --prompt TEXT [--method "
    "greedy|sample|beam]\n"
    "         [--max_new_tokens N] [--temperature T] [--top_k K] [--beam_size B]\n"
    "         [--length_penalty A] [--seed S] [--no_cache]\n";

// The decoding flags given, in eval.decoding's field names.
constexpr const char* kDecodingFlags[] = {"method",    "max_new_tokens", "temperature", "top_k",
                                          "beam_size", "length_penalty", "seed"};

// "--method 'frob' is not a decoding method; use greedy, sample or beam".
absl::Status UnknownMethod(const std::string& typed) {
  const google::protobuf::EnumDescriptor* methods = tvlab::DecodingSpec::Method_descriptor();
  std::vector<std::string> names;
  for (int i = 0; i < methods->value_count(); ++i) names.push_back(absl::AsciiStrToLower(methods->value(i)->name()));
  const std::string last = names.back();
  names.pop_back();
  return absl::InvalidArgumentError(absl::StrCat("--method '", typed, "' is not a decoding method; use ",
                                                 absl::StrJoin(names, ", "), " or ", last));
}

int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  tvlab::CommandLine line;
  if (std::optional<int> exit_code = tvlab::ParseFlagsOnlyOrExit(argc, argv, kUsage, &line))
    return *exit_code;
  std::string run_dir = absl::GetFlag(FLAGS_run_dir);
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (run_dir.empty() || !line.Has("prompt")) {
    tvlab::PrintUsageError(
        std::cerr, absl::InvalidArgumentError("--run_dir and --prompt are required"), kUsage);
    return 2;
  }
  // The text as typed (the spec loader parses and checks it as it does --set).
  std::vector<std::pair<std::string, std::string>> sets;
  for (const char* field : kDecodingFlags) {
    if (!line.Has(field)) continue;
    std::string v = line.values.at(field).back();
    if (std::string(field) == "method") {
      for (char& c : v) c = static_cast<char>(std::toupper(c));
      if (tvlab::DecodingSpec::Method_descriptor()->FindValueByName(v) == nullptr) {
        tvlab::PrintUsageError(std::cerr, UnknownMethod(line.values.at(field).back()), kUsage);
        return 2;
      }
    }
    sets.emplace_back(field, v);
  }
  if (absl::GetFlag(FLAGS_no_cache)) sets.emplace_back("use_kv_cache", "false");
  run_dir = tvlab::UserPath(run_dir);
  std::vector<std::string> overrides;
  for (const auto& [field, val] : sets) overrides.push_back("eval.decoding." + field + "=" + val);
  std::shared_ptr<const tvlab::Task> loaded_task;  // built once, by validation
  auto spec = tvlab::LoadExperiment(run_dir + "/spec.resolved.pbtxt", overrides, &loaded_task);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  if (spec->model().family() == tvlab::ModelSpec::ENCODER_ONLY)
    return Fail("this run is an ENCODER_ONLY model, which does not generate; use a DECODER_ONLY or "
                "ENCODER_DECODER run");
  if (absl::Status applied = tvlab::ApplyRuntime(spec->runtime()); !applied.ok())
    return Fail(std::string(applied.message()));
  // Encoder-only runs were refused above: the task generates text.
  auto task = std::static_pointer_cast<const tvlab::GenerativeTask>(loaded_task);
  if (absl::GetFlag(FLAGS_tokenize)) {
    for (int32_t id : task->Tokenize(prompt)) std::cout << id << " ";
    std::cout << "\n";
    return 0;
  }
  auto model = tvlab::BuildModel(*spec, task->vocab_size(), tvlab::HeadOutputs(*task));
  if (!model.ok()) return Fail(std::string(model.status().message()));
  absl::Status loaded = tvlab::LoadWeights(run_dir, (*model)->NamedParameters());
  if (!loaded.ok()) return Fail(std::string(loaded.message()));

  std::vector<int32_t> tokens = task->Tokenize(prompt);
  if (tokens.empty() && !prompt.empty())
    return Fail(absl::StrCat("the prompt '", prompt, "' has no tokens this task knows (task ",
                             spec->task().plugin(), ")"));
  std::vector<int32_t> source, prefix;
  if (task->kind() == tvlab::TaskKind::kLanguageModel) {
    prefix = tokens;
    if (prefix.empty()) return Fail("a language model needs a non-empty --prompt to continue");
  } else {
    tvlab::PromptFor(spec->model().family(), tokens, &source, &prefix);
  }
  if (static_cast<int64_t>(prefix.size()) > spec->model().max_seq_len())
    return Fail(absl::StrCat("the prompt is ", prefix.size(), " tokens; the model takes at most ",
                             spec->model().max_seq_len()));
  std::vector<int32_t> out = tvlab::Generate(**model, source, prefix, spec->eval().decoding(),
                                             spec->model().max_seq_len(), 0);
  std::cout << task->Detokenize(out) << "\n";
  return 0;
}
