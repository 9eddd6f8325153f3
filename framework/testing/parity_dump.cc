// parity_dump: runs one plugin on seeded random inputs and writes its inputs,
// parameters, outputs and gradients, for a PyTorch script written from the
// published formula to recompute and compare (see parity.py and the
// `parity` argument of tvlab_plugin in //plugins:plugin.bzl).
//
//   parity_dump kind=ffn plugin=swiglu options='multiple_of: 4' d_model=8
//               d_ff=12 bias=0 shape=2,3,8 out=/tmp/dump.txt
//
// Arguments are key=value:
//   kind        position | normalization | ffn
//   plugin      registered name; options  text format of its options message
//   d_model num_heads d_ff max_seq_len bias   the ModelDims (head_dim derived)
//   shape       comma-separated input shape (not for hook=bias)
//   hook        position only: embed (AddToEmbeddings), rotate
//               (RotateQueryOrKey) or bias (LogitBias)
//   offset      position offset; t, s: query and key counts for hook=bias
//   out         output file
// The output has one tensor per line: `name rank d0 .. dn v0 v1 ...`, with
// x (input), g (the upstream gradient: loss = sum(y * g)), y, dx, and
// param/<name> and grad/<name> for each parameter. Parameters are drawn
// U(-1, 1) so that none sits at a trivial initial value.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

int Fail(const std::string& message) {
  std::cerr << "parity_dump: " << message << "\n";
  return 2;
}

void Write(std::ostream& out, const std::string& name, const Tensor& t) {
  out << name << " " << t.rank();
  for (int64_t d : t.shape()) out << " " << d;
  char buffer[32];
  for (float v : t.ToVector()) {
    std::snprintf(buffer, sizeof(buffer), " %.9g", v);
    out << buffer;
  }
  out << "\n";
}

template <typename Entry>
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ParseOptions(
    const Entry& entry, const std::string& text) {
  std::unique_ptr<google::protobuf::Message> options(entry.default_options->New());
  if (!google::protobuf::TextFormat::ParseFromString(text, options.get()))
    return absl::InvalidArgumentError("cannot parse options '" + text + "'");
  return options;
}

// Builds the plugin of `registry` from the arguments and validates it.
template <typename Entry>
absl::StatusOr<std::unique_ptr<Module>> Build(const Registry<Entry>& registry,
                                              const std::string& name, const std::string& text,
                                              const ModelDims& dims) {
  auto entry = registry.Get(name);
  if (!entry.ok()) return entry.status();
  auto options = ParseOptions(**entry, text);
  if (!options.ok()) return options.status();
  absl::Status valid = (*entry)->validate(**options, dims);
  if (!valid.ok()) return valid;
  return std::unique_ptr<Module>((*entry)->create(**options, dims));
}

int Run(int argc, char** argv) {
  std::map<std::string, std::string> args = {{"options", ""},      {"d_model", "8"},
                                             {"num_heads", "2"},   {"d_ff", "0"},
                                             {"max_seq_len", "16"}, {"bias", "1"},
                                             {"offset", "0"},      {"hook", "embed"}};
  for (int i = 1; i < argc; ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    args[kv.first] = kv.second;
  }
  auto integer = [&](const std::string& key) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(args[key], &v)) std::cerr << "parity_dump: " << key << " is not an integer\n";
    return v;
  };
  ModelDims dims;
  dims.d_model = integer("d_model"), dims.num_heads = integer("num_heads");
  dims.head_dim = dims.d_model / dims.num_heads, dims.d_ff = integer("d_ff");
  dims.max_seq_len = integer("max_seq_len"), dims.bias = integer("bias") != 0;
  dims.num_layers = 1, dims.dropout = 0.0f;
  const std::string kind = args["kind"], hook = args["hook"];
  const int64_t offset = integer("offset");

  absl::StatusOr<std::unique_ptr<Module>> module = absl::InvalidArgumentError(
      "kind must be position, normalization or ffn (got '" + kind + "')");
  if (kind == "position") module = Build(PositionEncodingRegistry(), args["plugin"], args["options"], dims);
  if (kind == "normalization") module = Build(NormalizationRegistry(), args["plugin"], args["options"], dims);
  if (kind == "ffn") module = Build(FfnRegistry(), args["plugin"], args["options"], dims);
  if (!module.ok()) return Fail(std::string(module.status().message()));
  InitializeParameters(**module, 1);
  uint64_t salt = 100;
  for (auto& [name, var] : (*module)->NamedParameters()) {
    Tensor values = RandomTensor(var.shape(), salt++);
    std::copy(values.data(), values.data() + values.numel(), var.mutable_value().data());
  }

  Shape shape;
  if (hook != "bias") {
    for (absl::string_view d : absl::StrSplit(args["shape"], ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v)) return Fail("shape must be comma-separated integers");
      shape.push_back(v);
    }
  }
  Var x = hook == "bias" ? Var() : RandomVar(shape, 1, -2.0f, 2.0f);
  Var y;
  if (kind == "position") {
    const auto& pe = static_cast<const PositionEncoding&>(**module);
    if (hook == "embed") y = pe.AddToEmbeddings(x, offset);
    else if (hook == "rotate") y = pe.RotateQueryOrKey(x, offset);
    else if (hook == "bias") y = pe.LogitBias(dims.num_heads, offset, integer("t"), integer("s"));
    else return Fail("hook must be embed, rotate or bias (got '" + hook + "')");
    if (!y.defined()) return Fail("the plugin returned no value for hook " + hook);
  } else if (kind == "normalization") {
    y = static_cast<const Normalization&>(**module).Forward(x);
  } else {
    y = static_cast<const Ffn&>(**module).Forward(x, ForwardContext{});
  }
  Tensor g = RandomTensor(y.shape(), 2);
  Var loss = Sum(Mul(y, Var(g)));
  if (loss.requires_grad()) Backward(loss);

  std::ofstream out(args["out"]);
  if (!out) return Fail("cannot write out='" + args["out"] + "'");
  if (x.defined()) Write(out, "x", x.value());
  Write(out, "g", g);
  Write(out, "y", y.value());
  if (x.defined()) Write(out, "dx", x.grad().defined() ? x.grad() : Tensor::Zeros(x.shape()));
  for (auto& [name, var] : (*module)->NamedParameters()) {
    Write(out, "param/" + name, var.value());
    Write(out, "grad/" + name, var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
  return out.good() ? 0 : Fail("write failed");
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) { return tvlab::Run(argc, argv); }
