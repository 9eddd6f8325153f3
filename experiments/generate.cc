// bazel run //experiments:generate -- --run_dir DIR --prompt TEXT
//     [--method greedy|sample|beam] [--max_new_tokens N] [--temperature T]
//     [--top_k K] [--beam_size B] [--length_penalty A] [--seed S] [--no_cache]
//
// Loads a finished (or checkpointed) run of a decoder-only or encoder-decoder
// model and generates from a prompt: for a sequence-pair task the prompt is
// the source ("3 1 4" for reverse, "12+34" for addition); for a language
// model it is the text to continue. Decoding defaults come from the run's
// eval.decoding; flags override them. Exit codes: 0 ok, 2 bad input.

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/model/decoding.h"
#include "framework/model/model.h"
#include "experiments/spec/spec_loader.h"
#include "framework/train/checkpoint.h"

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments:generate -- --run_dir DIR --prompt TEXT [--method "
    "greedy|sample|beam]\n"
    "         [--max_new_tokens N] [--temperature T] [--top_k K] [--beam_size B]\n"
    "         [--length_penalty A] [--seed S] [--no_cache]\n";

std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string run_dir, prompt;
  bool have_prompt = false;
  std::vector<std::pair<std::string, std::string>> sets;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--run_dir") {
      if (!value(&run_dir)) return Fail("--run_dir needs a value");
    } else if (a == "--prompt") {
      if (!value(&prompt)) return Fail("--prompt needs a value");
      have_prompt = true;
    } else if (a == "--no_cache") {
      sets.emplace_back("use_kv_cache", "false");
    } else if (a == "--method" || a == "--max_new_tokens" || a == "--temperature" ||
               a == "--top_k" || a == "--beam_size" || a == "--length_penalty" || a == "--seed") {
      if (!value(&v)) return Fail(a + " needs a value");
      std::string field = a.substr(2);
      if (field == "method") {
        for (char& c : v) c = static_cast<char>(std::toupper(c));
      }
      sets.emplace_back(field, v);
    } else {
      std::cerr << "error: unknown argument '" << a << "'\n\n" << kUsage;
      return 2;
    }
  }
  if (run_dir.empty() || !have_prompt) {
    std::cerr << "error: --run_dir and --prompt are required\n\n" << kUsage;
    return 2;
  }
  run_dir = UserPath(run_dir);
  std::vector<std::string> overrides;
  for (const auto& [field, val] : sets) overrides.push_back("eval.decoding." + field + "=" + val);
  auto spec = tvlab::LoadExperiment(run_dir + "/spec.resolved.pbtxt", overrides);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  if (spec->model().family() == tvlab::ModelSpec::ENCODER_ONLY)
    return Fail("this run is an ENCODER_ONLY model, which does not generate; use a DECODER_ONLY or "
                "ENCODER_DECODER run");
  if (!tvlab::SetBackend(spec->runtime().backend()).ok()) return Fail("backend unavailable");
  auto loaded_task = tvlab::LoadTask(*spec);
  if (!loaded_task.ok()) return Fail(std::string(loaded_task.status().message()));
  // Encoder-only runs were refused above: the task generates text.
  auto task = std::static_pointer_cast<const tvlab::GenerativeTask>(*loaded_task);
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
