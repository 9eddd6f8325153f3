// Dumps a small decoder-only model with model.multi_token_prediction (n = 3
// LAYER heads, loss weights 0.5 and 0.25; 2 layers, MHA, no positions,
// Pre-LN LayerNorm, ReLU FFN, no dropout) for multi_token_parity.py:
// tokens, targets (some ignored), every parameter (drawn U(-1, 1)), the
// main logits y, each extra head's loss, the upstream gradient g and every
// parameter's gradient of sum(y * g) + sum_k w_k loss_k (the training loss's
// shape). One tensor a line: `name rank d0 .. dn v0 v1 ...`.
//   multi_token_parity_dump <out file>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/ops.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"

namespace tvlab {
namespace {

constexpr char kSpec[] =
    "name: \"multi_token_parity\"\n"
    "model { family: DECODER_ONLY d_model: 8 num_layers: 2 num_heads: 2 d_ff: 16 dropout: 0\n"
    "  scale_embeddings: false attention { layout: \"mha\" } position { plugin: \"none\" }\n"
    "  norm { plugin: \"layernorm\" placement: \"pre_ln\" } ffn { plugin: \"relu\" }\n"
    "  multi_token_prediction { num_tokens: 3 head: LAYER loss_weights: [0.5, 0.25] } }\n"
    "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
    "{ min_length: 1 max_length: 6 } } }\n"
    "train { steps: 1 }\n";

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

int Run(const std::string& out_path) {
  const std::string spec_path = out_path + ".spec.pbtxt";
  std::ofstream(spec_path) << kSpec;
  auto spec = LoadExperiment(spec_path, {});
  if (!spec.ok()) return std::cerr << spec.status() << "\n", 2;
  constexpr int64_t kVocab = 11, kB = 2, kT = 5;
  auto model = BuildModel(*spec, kVocab);
  if (!model.ok()) return std::cerr << model.status() << "\n", 2;
  uint64_t salt = 100;
  for (auto& [name, var] : (*model)->NamedParameters()) {
    Tensor values = RandomTensor(var.shape(), salt++);
    var.mutable_value() = values;  // host-made values, as parity_dump_attention.cc sets them
  }
  Batch batch;
  batch.batch = kB, batch.length = kT;
  batch.inputs = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};              // (B, T)
  batch.targets = {1, 4, 1, 5, 9, -100, -100, 5, 3, 10};      // (B, T); -100 ignored
  AuxiliaryOutputs auxiliary;
  Var y;
  {
    AuxiliaryScope collect(&auxiliary);
    y = (*model)->Forward(batch, ForwardContext{true, 0, 0});  // (B, T, V)
  }
  Tensor g = RandomTensor(y.shape(), 2);
  Backward(auxiliary.AddedTo(Sum(Mul(y, Var(g)))));
  std::ofstream out(out_path);
  std::vector<float> tokens(batch.inputs.begin(), batch.inputs.end());
  std::vector<float> targets(batch.targets.begin(), batch.targets.end());
  Write(out, "tokens", Tensor::FromVector({kB, kT}, tokens));
  Write(out, "targets", Tensor::FromVector({kB, kT}, targets));
  Write(out, "g", g);
  Write(out, "y", y.value());
  for (const AuxiliaryLoss& loss : auxiliary.losses()) {
    Write(out, "loss/" + loss.name, loss.loss.value());
    Write(out, "weight/" + loss.name, Tensor::FromVector({1}, {loss.coefficient}));
  }
  for (auto& [name, var] : (*model)->NamedParameters()) {
    Write(out, "param/" + name, var.value());
    Write(out, "grad/" + name, var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
  return out.good() ? 0 : 2;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: multi_token_parity_dump <out file>\n", 2;
  return tvlab::Run(argv[1]);
}
