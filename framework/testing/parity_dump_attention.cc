// parity_dump kind=attention: one attention layer (layout + score + position)
// forward and backward, for attention_parity.py (usage in parity_dump.cc).

#include <map>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "framework/attention/attention_extras.h"
#include "framework/attention/mask.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/testing/parity_dump.h"
#include "framework/testing/plugin_test_util.h"

namespace tvlab {
namespace {

std::string ArgOr(const ParityArgs& args, const std::string& key, const std::string& fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->second;
}

absl::StatusOr<ModelDims> AttentionDims(const ParityArgs& args) {
  auto d_model = IntegerArg(args, "d_model"), heads = IntegerArg(args, "num_heads"),
       bias = IntegerArg(args, "bias");
  if (!d_model.ok()) return d_model.status();
  if (!heads.ok()) return heads.status();
  if (!bias.ok()) return bias.status();
  ModelDims d;
  d.d_model = *d_model, d.num_heads = *heads, d.head_dim = *d_model / *heads;
  d.num_layers = 1, d.max_seq_len = 16, d.dropout = 0.0f, d.bias = *bias != 0;
  return d;
}

// The attention options of the args (softcap=<c>, sink=off_by_one|learned,
// qk_norm=rmsnorm|layernorm, gate=headwise|elementwise; each absent = off).
absl::StatusOr<AttentionOptions> OptionsOf(const ParityArgs& args) {
  AttentionOptions o;
  const std::string cap = ArgOr(args, "softcap", "0");
  if (!absl::SimpleAtof(cap, &o.logit_softcap) || o.logit_softcap < 0.0f)
    return absl::InvalidArgumentError(absl::StrCat("softcap=", cap, ": want a number >= 0"));
  const std::map<std::string, AttentionOptions::Sink> sinks = {
      {"none", AttentionOptions::Sink::kNone},
      {"off_by_one", AttentionOptions::Sink::kOffByOne},
      {"learned", AttentionOptions::Sink::kLearned}};
  const std::map<std::string, AttentionOptions::QkNorm> norms = {
      {"none", AttentionOptions::QkNorm::kNone},
      {"rmsnorm", AttentionOptions::QkNorm::kRmsNorm},
      {"layernorm", AttentionOptions::QkNorm::kLayerNorm}};
  const std::map<std::string, AttentionOptions::OutputGate> gates = {
      {"none", AttentionOptions::OutputGate::kNone},
      {"headwise", AttentionOptions::OutputGate::kHeadwise},
      {"elementwise", AttentionOptions::OutputGate::kElementwise}};
  auto sink = sinks.find(ArgOr(args, "sink", "none"));
  auto norm = norms.find(ArgOr(args, "qk_norm", "none"));
  auto gate = gates.find(ArgOr(args, "gate", "none"));
  if (sink == sinks.end() || norm == norms.end() || gate == gates.end())
    return absl::InvalidArgumentError(
        "sink=none|off_by_one|learned, qk_norm=none|rmsnorm|layernorm, "
        "gate=none|headwise|elementwise");
  o.sink = sink->second, o.qk_norm = norm->second, o.output_gate = gate->second;
  return o;
}

void WriteParameters(std::ostream& out, const std::string& prefix, const Module& module) {
  for (const auto& [name, var] : module.NamedParameters()) {
    WriteTensor(out, "param/" + prefix + name, var.value());
    WriteTensor(out, "grad/" + prefix + name,
                var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
}

}  // namespace

absl::Status DumpAttention(const ParityArgs& args, std::ostream& out) {
  auto dims = AttentionDims(args);
  if (!dims.ok()) return dims.status();
  auto salt = IntegerArg(args, "salt"), cross_arg = IntegerArg(args, "cross");
  if (!salt.ok()) return salt.status();
  if (!cross_arg.ok()) return cross_arg.status();
  const bool cross = *cross_arg != 0;
  absl::Status backend = SetBackend("reference");
  if (!backend.ok()) return backend;
  auto layout = BuildPlugin(AttentionLayoutRegistry(), ArgOr(args, "layout", ""),
                            ArgOr(args, "layout_options", ""), *dims);
  if (!layout.ok()) return layout.status();
  auto score = BuildPlugin(AttentionScoreRegistry(), ArgOr(args, "score", ""),
                           ArgOr(args, "score_options", ""), *dims);
  if (!score.ok()) return score.status();
  auto position = BuildPlugin(PositionEncodingRegistry(), ArgOr(args, "position", "none"),
                              ArgOr(args, "position_options", ""), *dims);
  if (!position.ok()) return position.status();
  InitializeParameters(**layout, *salt);
  InitializeParameters(**score, *salt + 1);
  auto options = OptionsOf(args);
  if (!options.ok()) return options.status();
  std::unique_ptr<AttentionExtras> extras;
  if (options->any()) {
    extras = std::make_unique<AttentionExtras>(*options, *dims);
    uint64_t param_salt = *salt + 10;  // away from scales 1 and sinks 0
    for (const auto& [name, var] : extras->NamedParameters())
      Var(var).mutable_value() = RandomTensor(var.shape(), param_salt++, 0.5f, 1.5f);
  }

  const int64_t b = 2, t = 5, s = cross ? 6 : t, width = dims->d_model;
  Var x = RandomVar({b, t, width}, *salt + 2);                      // (B, T, C)
  Var memory = cross ? RandomVar({b, s, width}, *salt + 3) : Var();  // (B, S, C)
  // Causal and padded (sequence 1 has 3 real tokens) for self-attention;
  // padded source (sequence 1 has 4 real tokens) for cross-attention.
  AttentionMask mask = cross ? KeyPaddingMask({s, 4}) : KeyPaddingMask({t, 3});
  mask.causal = !cross;
  AttentionInput in;
  in.x = x;
  in.memory = memory;
  in.mask = mask;
  in.score = score->get();
  in.position = position->get();
  in.extras = extras.get();
  Var y = (*layout)->Forward(in);                 // (B, T, C)
  Tensor g = RandomTensor(y.shape(), *salt + 4);  // (B, T, C)
  Backward(Sum(Mul(y, Var(g))));

  WriteTensor(out, "x", x.value());
  WriteTensor(out, "mask", MaskBias(mask, b, t, s));  // (B, 1, T, S), what PyTorch adds
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y.value());
  WriteTensor(out, "dx", x.grad());
  if (cross) {
    WriteTensor(out, "memory", memory.value());
    WriteTensor(out, "dmemory", memory.grad());
  }
  WriteParameters(out, "layout.", **layout);
  WriteParameters(out, "score.", **score);
  if (extras) WriteParameters(out, "options.", *extras);
  return absl::OkStatus();
}

}  // namespace tvlab
