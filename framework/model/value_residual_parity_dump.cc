// Dumps a small decoder-only model with model.value_residual on (3 layers,
// MHA, no positions, Pre-LN LayerNorm, ReLU FFN, no dropout) for
// value_residual_parity.py: tokens, every parameter (drawn U(-1, 1), the
// lambdas included, so none sits at its init), logits y, the upstream
// gradient g (loss = sum(y * g)) and every parameter's gradient. One tensor
// a line: `name rank d0 .. dn v0 v1 ...`.
//   value_residual_parity_dump <out file>

#include <fstream>
#include <iostream>

#include "framework/autograd/ops.h"
#include "framework/model/model.h"
#include "framework/model/parity_model.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/testing/tensor_dump.h"

namespace tvlab {
namespace {

constexpr char kSpec[] =
    "name: \"value_residual_parity\"\n"
    "model { family: DECODER_ONLY d_model: 8 num_layers: 3 num_heads: 2 d_ff: 16 dropout: 0\n"
    "  scale_embeddings: false attention { layout: \"mha\" } position { plugin: \"none\" }\n"
    "  norm { plugin: \"layernorm\" placement: \"pre_ln\" } ffn { plugin: \"relu\" }\n"
    "  value_residual { enabled: true } }\n"
    "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
    "{ min_length: 1 max_length: 6 } } }\n"
    "train { steps: 1 }\n";

int Run(const std::string& out_path) {
  constexpr int64_t kVocab = 11, kB = 2, kT = 5;
  auto model = RandomParityModel(kSpec, out_path, kVocab);
  if (!model.ok()) return std::cerr << model.status() << "\n", 2;
  Batch batch;
  batch.batch = kB, batch.length = kT;
  batch.inputs = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};  // (B, T)
  Var y = (*model)->Forward(batch, ForwardContext{});  // (B, T, V)
  Tensor g = RandomTensor(y.shape(), 2);
  Backward(Sum(Mul(y, Var(g))));
  std::ofstream out(out_path);
  std::vector<float> tokens(batch.inputs.begin(), batch.inputs.end());
  WriteTensor(out, "tokens", Tensor::FromVector({kB, kT}, tokens));
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y.value());
  WriteParametersAndGradients(out, **model);
  return out.good() ? 0 : 2;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: value_residual_parity_dump <out file>\n", 2;
  return tvlab::Run(argv[1]);
}
