// Dumps a small decoder-only model with model.multi_token_prediction (n = 3
// LAYER heads, loss weights 0.5 and 0.25; 2 layers, MHA, no positions,
// Pre-LN LayerNorm, ReLU FFN, no dropout) for multi_token_parity.py:
// tokens, targets (some ignored), every parameter (drawn U(-1, 1)), the
// main logits y, each extra head's loss, the upstream gradient g and every
// parameter's gradient of sum(y * g) + sum_k w_k loss_k (the training loss's
// shape). One tensor a line: `name rank d0 .. dn v0 v1 ...`.
//   multi_token_parity_dump <out file>

#include <fstream>
#include <iostream>

#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/ops.h"
#include "framework/model/model.h"
#include "framework/model/parity_model.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/testing/tensor_dump.h"

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

int Run(const std::string& out_path) {
  constexpr int64_t kVocab = 11, kB = 2, kT = 5;
  auto model = RandomParityModel(kSpec, out_path, kVocab);
  if (!model.ok()) return std::cerr << model.status() << "\n", 2;
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
  WriteTensor(out, "tokens", Tensor::FromVector({kB, kT}, tokens));
  WriteTensor(out, "targets", Tensor::FromVector({kB, kT}, targets));
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y.value());
  for (const AuxiliaryLoss& loss : auxiliary.losses()) {
    WriteTensor(out, "loss/" + loss.name, loss.loss.value());
    WriteTensor(out, "weight/" + loss.name, Tensor::FromVector({1}, {loss.coefficient}));
  }
  WriteParametersAndGradients(out, **model);
  return out.good() ? 0 : 2;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: multi_token_parity_dump <out file>\n", 2;
  return tvlab::Run(argv[1]);
}
