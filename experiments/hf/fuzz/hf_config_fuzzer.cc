// libFuzzer target for the checks --init_from runs on an HF directory's
// config.json (hf_config_checks.h): any text is parsed as JSON, and an
// object goes through the `architectures` check and the comparison with a
// fixed export's config (a tiny Llama), key by key, with rope_parameters.
// Any input must give OK or a Status: a crash, a sanitizer report, a leak or
// an abort is a bug. Built and run by tools/fuzz.sh; the seed corpus is
// corpus/ next to this file.

#include <cstddef>
#include <cstdint>
#include <string>

#include "experiments/hf/hf_config_checks.h"

namespace {

// The keys the import compares, as the Llama architecture declares them, and
// one null-means-times-hidden key as GPT-2's n_inner.
const tvlab::HfArchitecture& Llama() {
  static const tvlab::HfArchitecture* arch = [] {
    auto* a = new tvlab::HfArchitecture();  // never destroyed
    a->class_name = "LlamaForCausalLM";
    a->model_type = "llama";
    for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps",
                            "rope_theta", "tie_word_embeddings", "hidden_act"}) {
      tvlab::HfConfigKey k;
      k.key = key;
      k.compared = true;
      a->config.push_back(k);
    }
    tvlab::HfConfigKey n_inner;
    n_inner.key = "n_inner";
    n_inner.compared = true;
    n_inner.null_is_times_hidden = 4;
    a->config.push_back(n_inner);
    return a;
  }();
  return *arch;
}

const char kOurs[] =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 5, "hidden_size": 4,
        "intermediate_size": 2, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
        "head_dim": 4, "rms_norm_eps": 1e-06, "rope_theta": 10000, "tie_word_embeddings": false,
        "hidden_act": "silu", "n_inner": 16})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const google::protobuf::Struct ours = *tvlab::ParseJson(kOurs, "ours");
  auto config = tvlab::ParseJson(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!config.ok()) return 0;
  (void)tvlab::CheckArchitectures("fuzz", *config, Llama()).ok();
  (void)tvlab::CheckConfig("fuzz", *config, ours, Llama(), 4).ok();
  return 0;
}
