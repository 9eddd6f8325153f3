// The auxiliary-output channel end to end (framework/autograd/
// auxiliary_outputs.h): a test FFN declares a loss (mean square of its
// output, coefficient 1 or 0) and a statistic (mean of its output) per
// layer; a tiny sort run then
//   - backpropagates the loss: with coefficient 1 the output's mean square
//     ends lower than with 0 from the same start, and the weights differ;
//   - logs the task's loss alone (the first rows agree), and every declared
//     output as a train_log.csv column, in metrics.json and its sums in
//     every checkpoint's state.json;
// and a coefficient-0 run trains bit for bit like a plain run with no
// auxiliary outputs.

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "framework/train/train_in_tmpdir.h"
#include "gtest/gtest.h"
#include "plugins/ffn/relu/relu.pb.h"

namespace tvlab {
namespace {

// y = x W (C, C). `kTenths` / 10 is the loss's coefficient; kTenths < 0
// declares nothing (the plain twin).
template <int kTenths>
class ProbeFfn : public Ffn {
 public:
  static std::unique_ptr<Ffn> Create(const ReluFfnOptions&, const ModelDims& dims) {
    return std::make_unique<ProbeFfn>(dims);
  }
  explicit ProbeFfn(const ModelDims& dims) {
    w_ = AddChild("w", std::make_unique<nn::Linear>(dims.d_model, dims.d_model, false));
    if (kTenths < 0) return;
    DeclareAuxiliaryLoss("output_square", kTenths / 10.0f);
    DeclareAuxiliaryStatistic("output_mean");
  }
  Var Forward(const Var& x, const ForwardContext&) const override {
    Var y = w_->Forward(x);  // (B, T, C)
    if (kTenths >= 0 && CollectingAuxiliaryOutputs()) {
      EmitAuxiliaryLoss("output_square", Mean(Square(y)));
      EmitAuxiliaryStatistic("output_mean", Mean(y));
    }
    return y;
  }

 private:
  nn::Linear* w_;
};

TVLAB_REGISTER_FFN("probe_plain", ProbeFfn<-1>, ReluFfnOptions);
TVLAB_REGISTER_FFN("probe_0", ProbeFfn<0>, ReluFfnOptions);
TVLAB_REGISTER_FFN("probe_10", ProbeFfn<10>, ReluFfnOptions);

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

// Trains a tiny sort model with FFN `ffn`; returns the run directory.
std::string Train(const std::string& ffn) {
  return TrainInTmpDir(ffn, std::string(R"(name: "probe"
seed: 0
model { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 dropout: 0
        position { plugin: "sinusoidal" } ffn { plugin: ")") + ffn + R"(" } }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 vocab_size: 10 } } }
train { steps: 40 batch_size: 16 optimizer { adamw { lr: 1e-2 } } log_every: 10 checkpoint_every: 20 }
eval { examples: 50 seed: 42 }
runtime { backend: "reference" threads: 1 }
)");
}

std::vector<std::vector<std::string>> LogRows(const std::string& run_dir) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(ReadWholeFile(run_dir + "/train_log.csv"));
  for (std::string line; std::getline(in, line);) rows.push_back(absl::StrSplit(line, ','));
  return rows;
}

TEST(AuxiliaryTraining, LossesJoinTheGradientAndOutputsReachTheRunDirectory) {
  const auto on = LogRows(Train("probe_10")), off = LogRows(Train("probe_0"));
  const std::vector<std::string> auxiliary_columns = {
      "encoder.layers.0.ffn.output_square", "encoder.layers.0.ffn.output_mean",
      "encoder.layers.1.ffn.output_square", "encoder.layers.1.ffn.output_mean"};
  ASSERT_EQ(on[0].size(), 8 + auxiliary_columns.size());
  EXPECT_EQ(std::vector<std::string>(on[0].begin() + 8, on[0].end()), auxiliary_columns);
  ASSERT_EQ(on.size(), 6u);  // header, steps 0, 10, 20, 30, 39
  for (size_t r = 1; r < on.size(); ++r)
    for (size_t c = 8; c < on[r].size(); ++c) EXPECT_FALSE(on[r][c].empty()) << "row " << r << " column " << c;
  EXPECT_EQ(on[1][1], off[1][1]) << "step 0: the same weights, and the logged loss is the task's alone";
  for (size_t c : {8u, 10u})
    EXPECT_LT(std::stod(on.back()[c]), std::stod(off.back()[c])) << on[0][c] << " not pushed down";
  const std::string metrics = ReadWholeFile(TmpDir() + "/probe_10/metrics.json");
  EXPECT_NE(metrics.find("\"name\": \"encoder.layers.1.ffn.output_square\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"kind\": \"loss\""), std::string::npos);
  EXPECT_NE(metrics.find("\"kind\": \"statistic\""), std::string::npos);
  EXPECT_NE(metrics.find("\"last_interval_mean\""), std::string::npos);
  const std::string state = ReadWholeFile(TmpDir() + "/probe_10/checkpoints/step_0000020/state.json");
  EXPECT_NE(state.find("\"interval_count\""), std::string::npos) << state;
}

TEST(AuxiliaryTraining, CoefficientZeroTrainsLikeNoAuxiliaryOutputs) {
  const std::string plain = Train("probe_plain"), zero = Train("probe_0");
  EXPECT_EQ(ReadWholeFile(plain + "/model.safetensors"), ReadWholeFile(zero + "/model.safetensors"));
  const auto plain_rows = LogRows(plain), zero_rows = LogRows(zero);
  ASSERT_EQ(plain_rows.size(), zero_rows.size());
  for (size_t r = 1; r < plain_rows.size(); ++r) EXPECT_EQ(plain_rows[r][1], zero_rows[r][1]) << "row " << r;
}

}  // namespace
}  // namespace tvlab
