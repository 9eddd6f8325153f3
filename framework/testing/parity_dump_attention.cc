// parity_dump kind=attention: one attention layer (layout + score + position)
// forward and backward, for attention_parity.py (usage in parity_dump.cc).

#include "absl/strings/str_cat.h"
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
  return absl::OkStatus();
}

}  // namespace tvlab
