// parity_dump: runs one plugin on seeded random inputs and writes its inputs,
// parameters, outputs and gradients, for a PyTorch script written from the
// published formula to recompute and compare (see parity.py,
// attention_parity.py and the `parity` argument of tvlab_plugin in
// //plugins:plugin.bzl).
//
//   parity_dump kind=ffn plugin=swiglu options='multiple_of: 4' d_model=8
//               d_ff=12 bias=0 shape=2,3,8 out=/tmp/dump.txt
//   parity_dump kind=attention layout=mla score=additive score_options=...
//               position=rope cross=0 d_model=16 num_heads=4 salt=100 out=...
//   parity_dump kind=optimizer plugin=sgd options='momentum: 0.9' steps=10 out=...
//   parity_dump list=attention_score
//
// Arguments are key=value:
//   kind        position | normalization | ffn | attention
//   plugin      registered name; options  text format of its options message
//   d_model num_heads d_ff max_seq_len bias causal   the ModelDims (head_dim
//               derived; causal=1: a decoder-only model)
//   shape       comma-separated input shape (not for hook=bias)
//   hook        position only: embed (AddToEmbeddings), rotate
//               (RotateQueryOrKey), rotate_query, rotate_key or bias (LogitBias)
//   offset      position offset; t, s: query and key counts for hook=bias
//   out         output file
// The output has one tensor per line: `name rank d0 .. dn v0 v1 ...`, with
// x (input), g (the upstream gradient: loss = sum(y * g)), y, dx, and
// param/<name> and grad/<name> for each parameter. Parameters are drawn
// U(-1, 1) so that none sits at a trivial initial value.
//
// kind=attention runs one attention layer on the reference backend: layout,
// score and position (default none) with their *_options, cross (0: causal
// self-attention over T = 5 with sequence 1 padded to 3 tokens; 1:
// cross-attention to S = 6 memory tokens, sequence 1 padded to 4), B = 2,
// parameters from the plugins' own initialisation seeded by salt. It writes
// x, memory (cross), mask (B, 1, T, S, the additive bias), g, y, dx, dmemory
// (cross), and param/layout.<name>, grad/layout.<name>, param/score.<name>,
// grad/score.<name>. The attention options (attention_extras.h) come from
// softcap=<c> sink=off_by_one|learned qk_norm=rmsnorm|layernorm
// gate=headwise|elementwise (each off when absent), their parameters drawn
// U(0.5, 1.5) and written as param/options.<name>, grad/options.<name>.
//
// kind=optimizer runs an optimizer plugin for a number of steps
// (parity_dump_optimizer.cc has its arguments and output).
//
// kind=placement runs one residual wrapper around a linear sublayer
// (parity_dump_placement.cc has its arguments and output).
//
// list=<kind id> prints the kind's folder, its default plugin ("-" for
// none) and its registered plugins, one per line, and writes no file.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/parity_dump.h"
#include "framework/testing/plugin_test_util.h"

namespace tvlab {

absl::StatusOr<int64_t> IntegerArg(const ParityArgs& args, const std::string& key) {
  auto it = args.find(key);
  int64_t v = 0;
  if (it == args.end() || !absl::SimpleAtoi(it->second, &v))
    return absl::InvalidArgumentError(key + " must be an integer");
  return v;
}

namespace {

int Fail(const std::string& message) {
  std::cerr << "parity_dump: " << message << "\n";
  return 2;
}

absl::Status ListKind(const std::string& id) {
  for (const PluginKind& kind : PluginKinds()) {
    if (kind.id != id) continue;
    std::cout << kind.folder << "\n" << (kind.default_plugin.empty() ? "-" : kind.default_plugin)
              << "\n";
    for (const std::string& name : kind.names()) std::cout << name << "\n";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("list=" + id + ": no such plugin kind");
}

absl::StatusOr<ModelDims> DimsFrom(const ParityArgs& args) {
  ModelDims dims;
  for (const auto& [key, field] : std::vector<std::pair<std::string, int64_t*>>{
           {"d_model", &dims.d_model}, {"num_heads", &dims.num_heads},
           {"d_ff", &dims.d_ff}, {"max_seq_len", &dims.max_seq_len}}) {
    auto v = IntegerArg(args, key);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  auto bias = IntegerArg(args, "bias"), causal = IntegerArg(args, "causal");
  if (!bias.ok()) return bias.status();
  if (!causal.ok()) return causal.status();
  dims.head_dim = dims.d_model / dims.num_heads, dims.bias = *bias != 0, dims.causal = *causal != 0;
  dims.num_layers = 1, dims.dropout = 0.0f;
  return dims;
}

absl::StatusOr<std::unique_ptr<Module>> BuildModule(const ParityArgs& args, const ModelDims& dims) {
  const std::string& kind = args.at("kind");
  const std::string& name = args.at("plugin");
  const std::string& options = args.at("options");
  auto as_module = [](auto made) -> absl::StatusOr<std::unique_ptr<Module>> {
    if (!made.ok()) return made.status();
    return std::unique_ptr<Module>(std::move(*made));
  };
  if (kind == "position") return as_module(BuildPlugin(PositionEncodingRegistry(), name, options, dims));
  if (kind == "normalization") return as_module(BuildPlugin(NormalizationRegistry(), name, options, dims));
  if (kind == "ffn") return as_module(BuildPlugin(FfnRegistry(), name, options, dims));
  return absl::InvalidArgumentError(
      "kind must be position, normalization, ffn or attention (got '" + kind + "')");
}

// y for the module's kind and hook, on x.
absl::StatusOr<Var> Apply(const ParityArgs& args, const Module& module, const ModelDims& dims,
                          const Var& x) {
  const std::string& kind = args.at("kind");
  if (kind == "normalization") return static_cast<const Normalization&>(module).Forward(x);
  if (kind == "ffn") return static_cast<const Ffn&>(module).Forward(x, ForwardContext{});
  const auto& pe = static_cast<const PositionEncoding&>(module);
  const std::string& hook = args.at("hook");
  auto offset = IntegerArg(args, "offset");
  if (!offset.ok()) return offset.status();
  Var y;
  if (hook == "embed") {
    y = pe.AddToEmbeddings(x, *offset);
  } else if (hook == "rotate") {
    y = pe.RotateQueryOrKey(x, *offset);
  } else if (hook == "rotate_query") {
    y = pe.RotateQuery(x, *offset);
  } else if (hook == "rotate_key") {
    y = pe.RotateKey(x, *offset);
  } else if (hook == "bias") {
    auto t = IntegerArg(args, "t"), s = IntegerArg(args, "s");
    if (!t.ok() || !s.ok()) return absl::InvalidArgumentError("hook=bias needs integers t and s");
    y = pe.LogitBias(dims.num_heads, *offset, *t, *s);
  } else {
    return absl::InvalidArgumentError("hook must be embed, rotate, rotate_query, rotate_key or bias (got '" + hook + "')");
  }
  if (!y.defined()) return absl::InvalidArgumentError("the plugin returned no value for hook " + hook);
  return y;
}

// kind = position, normalization or ffn.
absl::Status DumpModule(const ParityArgs& args, std::ostream& out) {
  auto dims = DimsFrom(args);
  if (!dims.ok()) return dims.status();
  auto module = BuildModule(args, *dims);
  if (!module.ok()) return module.status();
  InitializeParameters(**module, 1);
  uint64_t salt = 100;
  for (auto& [name, var] : (*module)->NamedParameters()) {
    Tensor values = RandomTensor(var.shape(), salt++);
    std::copy(values.data(), values.data() + values.numel(), var.mutable_value().data());
  }
  Shape shape;
  const bool bias_hook = args.at("kind") == "position" && args.at("hook") == "bias";
  if (!bias_hook) {
    for (absl::string_view d : absl::StrSplit(args.count("shape") ? args.at("shape") : "", ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v)) return absl::InvalidArgumentError("shape must be comma-separated integers");
      shape.push_back(v);
    }
  }
  Var x = bias_hook ? Var() : RandomVar(shape, 1, -2.0f, 2.0f);
  auto y = Apply(args, **module, *dims, x);
  if (!y.ok()) return y.status();
  Tensor g = RandomTensor(y->shape(), 2);
  Var loss = Sum(Mul(*y, Var(g)));
  if (loss.requires_grad()) Backward(loss);

  if (x.defined()) WriteTensor(out, "x", x.value());
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y->value());
  if (x.defined()) WriteTensor(out, "dx", x.grad().defined() ? x.grad() : Tensor::Zeros(x.shape()));
  for (auto& [name, var] : (*module)->NamedParameters()) {
    WriteTensor(out, "param/" + name, var.value());
    WriteTensor(out, "grad/" + name, var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  ParityArgs args = {{"options", ""},       {"d_model", "8"}, {"num_heads", "2"},
                     {"d_ff", "0"},         {"max_seq_len", "16"}, {"bias", "1"}, {"causal", "0"},
                     {"offset", "0"},       {"hook", "embed"}, {"kind", ""}, {"steps", "10"},
                     {"norm", "layernorm"}, {"num_layers", "1"}, {"decoder_layers", "0"},
                     {"decoder_stack", "0"}};
  for (int i = 1; i < argc; ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    args[kv.first] = kv.second;
  }
  if (args.count("list")) {
    absl::Status listed = ListKind(args["list"]);
    return listed.ok() ? 0 : Fail(std::string(listed.message()));
  }
  std::ofstream out(args["out"]);
  if (!out) return Fail("cannot write out='" + args["out"] + "'");
  absl::Status done = args["kind"] == "attention"   ? DumpAttention(args, out)
                      : args["kind"] == "optimizer" ? DumpOptimizer(args, out)
                      : args["kind"] == "placement" ? DumpPlacement(args, out)
                                                    : DumpModule(args, out);
  if (!done.ok()) return Fail(std::string(done.message()));
  return out.good() ? 0 : Fail("write failed");
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) { return tvlab::Run(argc, argv); }
