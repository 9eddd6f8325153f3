// attention_parity_dump OUT_DIR
//
// For each attention case (every layout x every score on causal
// self-attention, every layout on padded cross-attention, rotary positions,
// non-default options), runs the layout forward and backward on fixed random
// inputs and writes OUT_DIR/<case>.safetensors with the inputs, the mask,
// every parameter, the output and the gradients of sum(y * r), plus
// OUT_DIR/cases.json describing the cases. attention_parity.py recomputes
// each case in PyTorch from the published formulas and compares.
//
// Tensor names in each file: x (B, T, C), memory (B, S, C) for cross cases,
// mask (B, 1, T, S) additive, r and y (B, T, C), grad.x, grad.memory,
// layout.<param> / score.<param> and grad.layout.<param> / grad.score.<param>.

#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/attention/mask.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

struct Case {
  std::string layout, layout_options;  // options in text format
  std::string score, score_options;
  std::string position = "none", position_options;
  bool cross = false;

  std::string Name() const {
    std::string name = absl::StrCat(layout, "_", score, cross ? "_cross" : "_self");
    if (position != "none") absl::StrAppend(&name, "_", position);
    if (!layout_options.empty() || !score_options.empty() || !position_options.empty())
      absl::StrAppend(&name, "_options");
    return name;
  }
};

ModelDims Dims() {
  ModelDims d;
  d.d_model = 16, d.num_heads = 4, d.head_dim = 4, d.num_layers = 1, d.max_seq_len = 16;
  d.dropout = 0.0f, d.bias = true;
  return d;
}

// The plugin `name` from `registry` with options parsed from `text`.
template <typename Entry>
auto Make(const Registry<Entry>& registry, const std::string& name, const std::string& text) {
  const Entry* entry = *registry.Get(name);
  std::unique_ptr<google::protobuf::Message> options(entry->default_options->New());
  if (!google::protobuf::TextFormat::ParseFromString(text, options.get())) {
    std::cerr << "bad options for " << name << ": " << text << "\n";
    std::exit(1);
  }
  absl::Status valid = entry->validate(*options, Dims());
  if (!valid.ok()) {
    std::cerr << name << ": " << valid.message() << "\n";
    std::exit(1);
  }
  return entry->create(*options, Dims());
}

absl::Status DumpCase(const Case& c, const std::string& dir, uint64_t salt) {
  const ModelDims dims = Dims();
  auto layout = Make(AttentionLayoutRegistry(), c.layout, c.layout_options);
  auto score = Make(AttentionScoreRegistry(), c.score, c.score_options);
  auto position = Make(PositionEncodingRegistry(), c.position, c.position_options);
  InitializeParameters(*layout, salt);
  InitializeParameters(*score, salt + 1);
  const int64_t b = 2, t = 5, s = c.cross ? 6 : t, width = dims.d_model;
  Var x = RandomVar({b, t, width}, salt + 2);
  Var memory = c.cross ? RandomVar({b, s, width}, salt + 3) : Var();
  // Causal and padded (sequence 1 has 3 real tokens) for self-attention;
  // padded source (sequence 1 has 4 real tokens) for cross-attention.
  AttentionMask mask = c.cross ? KeyPaddingMask({s, 4}) : KeyPaddingMask({t, 3});
  mask.causal = !c.cross;
  const Tensor mask_bias = MaskBias(mask, b, t, s);  // (B, 1, T, S), what PyTorch adds
  AttentionInput in;
  in.x = x;
  in.memory = memory;
  in.mask = mask;
  in.score = score.get();
  in.position = position.get();
  Var y = layout->Forward(in);  // (B, T, C)
  Var r(RandomTensor(y.shape(), salt + 4));
  Backward(Sum(Mul(y, r)));

  std::vector<std::pair<std::string, Var>> out = {
      {"x", Var(x.value())}, {"mask", Var(mask_bias)}, {"r", r}, {"y", Var(y.value())},
      {"grad.x", Var(x.grad())}};
  if (c.cross) {
    out.push_back({"memory", Var(memory.value())});
    out.push_back({"grad.memory", Var(memory.grad())});
  }
  for (const auto& [prefix, module] :
       std::vector<std::pair<std::string, const Module*>>{{"layout.", layout.get()},
                                                         {"score.", score.get()}})
    for (const auto& [name, var] : module->NamedParameters()) {
      out.push_back({prefix + name, Var(var.value())});
      out.push_back({"grad." + prefix + name,
                     Var(var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()))});
    }
  return WriteSafetensors(dir + "/" + c.Name() + ".safetensors", out);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) out += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
  return out + "\"";
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: attention_parity_dump OUT_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  (void)SetBackend("reference");
  std::vector<Case> cases;
  const auto layouts = AttentionLayoutRegistry().Names(), scores = AttentionScoreRegistry().Names();
  for (const auto& layout : layouts)
    for (const auto& score : scores) cases.push_back({layout, "", score, ""});
  for (const auto& layout : layouts) {
    Case cross{layout, "", "scaled_dot_product", ""};
    cross.cross = true;
    cases.push_back(cross);
  }
  if (PositionEncodingRegistry().Get("rope").ok()) {
    for (const auto& layout : layouts) {
      Case rotary{layout, "", "scaled_dot_product", ""};
      rotary.position = "rope";
      cases.push_back(rotary);
    }
    // MLA with a query latent, an explicit latent and rope size, the other
    // rope pairing, and an additive score of its own width.
    Case mla{"mla", "kv_latent_dim: 10 rope_head_dim: 2 q_latent_dim: 6", "additive",
             "hidden_size: 5"};
    mla.position = "rope";
    mla.position_options = "pairing: HALVES";
    cases.push_back(mla);
  }
  Case gqa{"gqa", "num_kv_heads: 1", "dot_product", ""};  // G = 1 through gqa's option
  cases.push_back(gqa);

  std::ofstream json(dir + "/cases.json");
  json << "{\"d_model\": " << Dims().d_model << ", \"num_heads\": " << Dims().num_heads
       << ", \"cases\": [";
  uint64_t salt = 100;
  for (size_t i = 0; i < cases.size(); ++i, salt += 10) {
    const Case& c = cases[i];
    absl::Status s = DumpCase(c, dir, salt);
    if (!s.ok()) {
      std::cerr << c.Name() << ": " << s.message() << "\n";
      return 1;
    }
    json << (i ? "," : "") << "\n  {\"name\": " << JsonString(c.Name())
         << ", \"layout\": " << JsonString(c.layout) << ", \"score\": " << JsonString(c.score)
         << ", \"position\": " << JsonString(c.position)
         << ", \"position_options\": " << JsonString(c.position_options)
         << ", \"cross\": " << (c.cross ? "true" : "false") << "}";
  }
  json << "\n]}\n";
  std::cout << cases.size() << " cases written to " << dir << "\n";
  return json ? 0 : 1;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) { return tvlab::Main(argc, argv); }
