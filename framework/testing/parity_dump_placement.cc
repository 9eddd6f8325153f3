// kind=placement of the parity dump tool: one residual wrapper of a
// placement plugin around a linear sublayer, forward and backward.
//
//   parity_dump kind=placement plugin=deepnorm options='' norm=layernorm
//               num_layers=6 decoder_layers=0 decoder_stack=0 shape=2,3,8 out=...
//
// The sublayer is nn::Linear(C, C) (with bias when bias=1). Writes x, g, y,
// dx, param/wrapper.<name> and grad/wrapper.<name> for the wrapper's norms,
// param/sublayer.weight (.bias) and their grads, and init_gain (1 value: the
// placement's SublayerInitGain). Parameters are drawn U(-1, 1) except the
// norms' weights, drawn U(0.5, 1.5) (a norm's gain near 0 hides its input).

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/nn/layers.h"
#include "framework/testing/parity_dump.h"
#include "framework/testing/plugin_test_util.h"

namespace tvlab {
namespace {

absl::StatusOr<PlacementArgs> PlacementArgsFrom(const ParityArgs& args) {
  PlacementArgs placement;
  ModelDims& dims = placement.dims;
  for (const auto& [key, field] : std::vector<std::pair<std::string, int64_t*>>{
           {"d_model", &dims.d_model}, {"num_heads", &dims.num_heads},
           {"num_layers", &dims.num_layers}, {"decoder_layers", &dims.decoder_layers}}) {
    auto v = IntegerArg(args, key);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  auto bias = IntegerArg(args, "bias"), decoder_stack = IntegerArg(args, "decoder_stack");
  if (!bias.ok()) return bias.status();
  if (!decoder_stack.ok()) return decoder_stack.status();
  dims.head_dim = dims.d_model / dims.num_heads, dims.bias = *bias != 0;
  placement.in_decoder_stack = *decoder_stack != 0;
  const std::string norm = args.at("norm");
  auto norm_entry = NormalizationRegistry().Get(norm);
  if (!norm_entry.ok()) return norm_entry.status();
  placement.make_norm = [norm, dims] { return MakeNormalization(norm, dims); };
  return placement;
}

void FillRandom(const Module& module, bool norm_gains_near_one, uint64_t* salt) {
  for (auto& [name, var] : module.NamedParameters()) {
    const bool gain = norm_gains_near_one && absl::EndsWith(name, "weight");
    Tensor values = RandomTensor(var.shape(), (*salt)++, gain ? 0.5f : -1.0f, gain ? 1.5f : 1.0f);
    std::copy(values.data(), values.data() + values.numel(), var.mutable_value().data());
  }
}

void WriteParameters(std::ostream& out, const std::string& prefix, const Module& module) {
  for (auto& [name, var] : module.NamedParameters()) {
    WriteTensor(out, "param/" + prefix + name, var.value());
    WriteTensor(out, "grad/" + prefix + name,
                var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
}

}  // namespace

absl::Status DumpPlacement(const ParityArgs& args, std::ostream& out) {
  auto placement_args = PlacementArgsFrom(args);
  if (!placement_args.ok()) return placement_args.status();
  auto placement = BuildPlugin(NormPlacementRegistry(), args.at("plugin"), args.at("options"),
                               *placement_args);
  if (!placement.ok()) return placement.status();
  std::unique_ptr<ResidualWrapper> wrapper = (*placement)->Wrap();
  const int64_t c = placement_args->dims.d_model;
  nn::Linear sublayer(c, c, placement_args->dims.bias);
  uint64_t salt = 100;
  FillRandom(*wrapper, /*norm_gains_near_one=*/true, &salt);
  FillRandom(sublayer, /*norm_gains_near_one=*/false, &salt);
  Shape shape;
  for (absl::string_view d : absl::StrSplit(args.at("shape"), ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(d, &v)) return absl::InvalidArgumentError("shape must be comma-separated integers");
    shape.push_back(v);
  }
  Var x = RandomVar(shape, 1, -2.0f, 2.0f);  // (B, T, C)
  Var y = wrapper->Forward(x, [&](const Var& h) { return sublayer.Forward(h); });  // (B, T, C)
  Tensor g = RandomTensor(y.shape(), 2);
  Backward(Sum(Mul(y, Var(g))));
  WriteTensor(out, "x", x.value());
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y.value());
  WriteTensor(out, "dx", x.grad().defined() ? x.grad() : Tensor::Zeros(x.shape()));
  WriteParameters(out, "wrapper.", *wrapper);
  WriteParameters(out, "sublayer.", sublayer);
  WriteTensor(out, "init_gain", Tensor::FromVector({1}, {(*placement)->SublayerInitGain()}));
  return absl::OkStatus();
}

}  // namespace tvlab
