// Dumps a small decoder-only model with model.memory_tokens (N = 2; 2
// layers, MHA, sinusoidal positions, Pre-LN LayerNorm, ReLU FFN, no
// dropout; rows padded: lengths 5 and 3) for memory_tokens_parity.py:
// tokens, lengths, every parameter (drawn U(-1, 1)), logits y, the upstream
// gradient g (loss = sum(y * g) over real positions) and every parameter's
// gradient. One tensor a line: `name rank d0 .. dn v0 v1 ...`.
//   memory_tokens_parity_dump <out file>

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
    "name: \"memory_tokens_parity\"\n"
    "model { family: DECODER_ONLY d_model: 8 num_layers: 2 num_heads: 2 d_ff: 16 dropout: 0\n"
    "  scale_embeddings: false attention { layout: \"mha\" } position { plugin: \"sinusoidal\" }\n"
    "  norm { plugin: \"layernorm\" placement: \"pre_ln\" } ffn { plugin: \"relu\" }\n"
    "  memory_tokens { count: 2 } }\n"
    "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
    "{ min_length: 1 max_length: 6 } } }\n"
    "train { steps: 1 }\n";

int Run(const std::string& out_path) {
  constexpr int64_t kVocab = 11, kB = 2, kT = 5;
  auto model = RandomParityModel(kSpec, out_path, kVocab);
  if (!model.ok()) return std::cerr << model.status() << "\n", 2;
  Batch batch;
  batch.batch = kB, batch.length = kT;
  batch.inputs = {3, 1, 4, 1, 5, 9, 2, 6, 0, 0};  // (B, T)
  batch.lengths = {5, 3};
  Var y = (*model)->Forward(batch, ForwardContext{});  // (B, T, V)
  std::vector<float> mask(kB * kT * kVocab, 1.0f);     // padding positions get no gradient
  for (int64_t i = (kT + 3) * kVocab; i < kB * kT * kVocab; ++i) mask[i] = 0.0f;
  Tensor g = Mul(Var(RandomTensor(y.shape(), 2)), Var(Tensor::FromVector(y.shape(), mask))).value();
  Backward(Sum(Mul(y, Var(g))));
  std::ofstream out(out_path);
  std::vector<float> tokens(batch.inputs.begin(), batch.inputs.end());
  WriteTensor(out, "tokens", Tensor::FromVector({kB, kT}, tokens));
  WriteTensor(out, "lengths", Tensor::FromVector({kB}, {5.0f, 3.0f}));
  WriteTensor(out, "g", g);
  WriteTensor(out, "y", y.value());
  WriteParametersAndGradients(out, **model);
  return out.good() ? 0 : 2;
}

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  if (argc != 2) return std::cerr << "usage: memory_tokens_parity_dump <out file>\n", 2;
  return tvlab::Run(argv[1]);
}
