// Packed documents (Batch::documents, token_store's document_mask) at the
// model level: with the documents given, the logits and the loss at a token
// do not change when the content of an earlier document in the same row
// changes; without them they do. For MHA and GQA, absolute, rotary and
// ALiBi positions, a sliding window, on the unfused and the fused attention
// paths (which agree). Untrained models: a property of the computation.

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "framework/attention/attend.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kVocab = 14, kRows = 2, kLength = 12;

Experiment Spec(const std::vector<std::string>& overrides) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/documents.pbtxt";
  std::ofstream(path) << "name: \"d\"\nmodel { family: DECODER_ONLY d_model: 16 num_layers: 2 "
                         "num_heads: 4 d_ff: 32 dropout: 0 }\n"
                         "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
                         "{ min_length: 1 max_length: 6 } } }\ntrain { steps: 1 }\n";
  auto spec = LoadExperiment(path, overrides);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// Two packed rows: row 0 documents of 4, 5 and 3 tokens, row 1 of 7 and 5.
// `salt` changes the tokens of each row's first document only.
Batch Packed(int salt, bool documents) {
  Batch b;
  b.batch = kRows, b.length = kLength;
  const std::vector<int32_t> ids = {0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2,
                                    0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};  // (B, T)
  for (int64_t p = 0; p < kRows * kLength; ++p) {
    const bool first = ids[p] == 0;
    b.inputs.push_back(static_cast<int32_t>(3 + (p * 5 + (first ? salt : 0)) % (kVocab - 3)));
    b.targets.push_back(static_cast<int32_t>(3 + (p * 7) % (kVocab - 3)));
  }
  if (documents) b.documents = ids;
  return b;
}

// Per-token cross entropy (B, T) from logits (B, T, V).
std::vector<double> TokenLosses(const Tensor& logits, const Batch& b) {
  std::vector<double> losses;
  const int64_t v = logits.dim(2);
  for (int64_t p = 0; p < b.batch * b.length; ++p) {
    const float* row = logits.data() + p * v;
    double most = row[0], sum = 0;
    for (int64_t c = 1; c < v; ++c) most = std::max<double>(most, row[c]);
    for (int64_t c = 0; c < v; ++c) sum += std::exp(row[c] - most);
    losses.push_back(most + std::log(sum) - row[b.targets[p]]);
  }
  return losses;
}

// Largest logit difference at the positions after each row's first document.
double LaterDocumentsChange(const Tensor& a, const Tensor& b) {
  const int64_t v = a.dim(2);
  double most = 0;
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t t = r == 0 ? 4 : 7; t < kLength; ++t)
      for (int64_t c = 0; c < v; ++c) {
        const int64_t at = (r * kLength + t) * v + c;
        most = std::max<double>(most, std::fabs(a.data()[at] - b.data()[at]));
      }
  return most;
}

TEST(DocumentMask, AnEarlierDocumentDoesNotReachLaterTokens) {
  const AttentionKernel policy = CurrentAttentionKernel();
  for (AttentionKernel kernel : {AttentionKernel::kUnfused, AttentionKernel::kFused})
    for (const char* layout : {"mha", "gqa"})
      for (const char* position : {"sinusoidal", "rope", "alibi"})
        for (const char* window : {"0", "3"}) {
          SCOPED_TRACE(std::string(layout) + " " + position + " window " + window +
                       (kernel == AttentionKernel::kFused ? " fused" : " unfused"));
          SetAttentionKernel(kernel);
          auto model = *BuildModel(Spec({std::string("model.attention.layout=") + layout,
                                         std::string("model.position.plugin=") + position,
                                         std::string("model.attention.window=") + window}),
                                   kVocab);
          NoGradGuard no_grad;
          const Batch a = Packed(0, true), changed = Packed(4, true);
          const Tensor la = model->Forward(a, {}).value(), lc = model->Forward(changed, {}).value();
          EXPECT_LE(LaterDocumentsChange(la, lc), 1e-5);
          const std::vector<double> loss_a = TokenLosses(la, a), loss_c = TokenLosses(lc, changed);
          for (int64_t t = 4; t < kLength; ++t) EXPECT_NEAR(loss_a[t], loss_c[t], 1e-5) << t;
          for (int64_t t = 7; t < kLength; ++t)
            EXPECT_NEAR(loss_a[kLength + t], loss_c[kLength + t], 1e-5) << t;
          EXPECT_GT(std::fabs(loss_a[0] - loss_c[0]), 1e-4);  // the changed document itself
          // Without the documents, attention crosses the boundary.
          const Tensor open_a = model->Forward(Packed(0, false), {}).value();
          const Tensor open_c = model->Forward(Packed(4, false), {}).value();
          EXPECT_GT(LaterDocumentsChange(open_a, open_c), 1e-4);
        }
  SetAttentionKernel(policy);
}

TEST(DocumentMask, FusedAndUnfusedPathsAgree) {
  const AttentionKernel policy = CurrentAttentionKernel();
  auto model = *BuildModel(Spec({"model.attention.layout=gqa", "model.position.plugin=rope"}), kVocab);
  NoGradGuard no_grad;
  SetAttentionKernel(AttentionKernel::kUnfused);
  const Tensor unfused = model->Forward(Packed(0, true), {}).value();
  const int64_t fused_before = FusedAttentionCalls();
  SetAttentionKernel(AttentionKernel::kFused);
  const Tensor fused = model->Forward(Packed(0, true), {}).value();
  SetAttentionKernel(policy);
  EXPECT_GT(FusedAttentionCalls(), fused_before);
  double most = 0;
  for (int64_t i = 0; i < fused.numel(); ++i)
    most = std::max<double>(most, std::fabs(fused.data()[i] - unfused.data()[i]));
  EXPECT_LE(most, 1e-5);
}

}  // namespace
}  // namespace tvlab
