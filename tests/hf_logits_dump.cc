// For tests/hf_interop_test.sh and bench/interop_check.py: a run's logits on
// given tokens and its greedy continuation, as JSON on stdout:
//   {"logits": [[V floats] x T], "greedy": [ids]}
// usage: hf_logits_dump RUN_DIR TOKENS MAX_NEW_TOKENS   (TOKENS: "5,6,7")

#include <iomanip>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/model/decoding.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/checkpoint.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: hf_logits_dump RUN_DIR TOKENS MAX_NEW_TOKENS\n";
    return 2;
  }
  const std::string run_dir = argv[1];
  std::vector<int32_t> tokens;
  for (absl::string_view s : absl::StrSplit(argv[2], ',')) {
    int32_t id;
    if (!absl::SimpleAtoi(s, &id)) {
      std::cerr << "bad token '" << s << "'\n";
      return 2;
    }
    tokens.push_back(id);
  }
  int max_new = 0;
  if (!absl::SimpleAtoi(argv[3], &max_new)) return 2;
  auto spec = tvlab::LoadExperiment(run_dir + "/spec.resolved.pbtxt", {});
  if (!spec.ok()) {
    std::cerr << spec.status() << "\n";
    return 2;
  }
  if (!tvlab::SetBackend(spec->runtime().backend()).ok()) return 2;
  auto task = tvlab::LoadTask(*spec);
  if (!task.ok()) return 2;
  auto model = tvlab::BuildModel(*spec, (*task)->vocab_size(), tvlab::HeadOutputs(**task));
  if (!model.ok()) return 2;
  absl::Status loaded = tvlab::LoadWeights(run_dir, (*model)->NamedParameters());
  if (!loaded.ok()) {
    std::cerr << loaded << "\n";
    return 2;
  }
  tvlab::Batch batch;
  batch.batch = 1;
  batch.length = static_cast<int64_t>(tokens.size());
  batch.inputs = tokens;
  const std::vector<float> logits =
      (*model)->Forward(batch, tvlab::ForwardContext{}).value().ToVector();  // (1, T, V)
  const size_t v = logits.size() / tokens.size();
  tvlab::DecodingSpec greedy;
  greedy.set_method(tvlab::DecodingSpec::GREEDY);
  greedy.set_max_new_tokens(max_new);
  const std::vector<int32_t> out =
      tvlab::Generate(**model, {}, tokens, greedy, spec->model().max_seq_len(), 0);
  std::cout << std::setprecision(9) << "{\"logits\": [";
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::cout << (t ? ", [" : "[");
    for (size_t i = 0; i < v; ++i) std::cout << (i ? ", " : "") << logits[t * v + i];
    std::cout << "]";
  }
  std::cout << "], \"greedy\": [";
  for (size_t i = 0; i < out.size(); ++i) std::cout << (i ? ", " : "") << out[i];
  std::cout << "]}\n";
  return 0;
}
