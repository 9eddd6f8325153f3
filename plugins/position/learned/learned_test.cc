// Learned positions: the rows of the table are what gets added, an offset
// picks later rows, and a sequence longer than the table is a validation
// error, not a read past the end. (That the table is sized from the task when
// model.max_seq_len is 0 is checked with the whole model, tests/model_test.cc.)

#include <cmath>
#include <fstream>

#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

TEST(LearnedPosition, AddsTheTableRowsFromTheOffset) {
  ModelDims dims = SmallDims();  // max_seq_len 16, C = 8
  auto pe = MakePositionEncoding("learned", dims);
  auto params = pe->NamedParameters();
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "weight");
  ASSERT_EQ(params[0].second.shape(), (Shape{16, 8}));
  const float* table = params[0].second.value().data();
  Tensor x = RandomTensor({2, 3, 8}, 1);
  std::vector<float> y = pe->AddToEmbeddings(Var(x), 5).value().ToVector();  // rows 5..7
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 8; ++c) {
        int i = (b * 3 + t) * 8 + c;
        EXPECT_EQ(y[i], x.data()[i] + table[(5 + t) * 8 + c]) << b << t << c;
      }
  // The last rows of the table are reachable.
  EXPECT_EQ(pe->AddToEmbeddings(Var(Tensor::Zeros({1, 1, 8})), 15).value().ToVector(),
            std::vector<float>(table + 15 * 8, table + 16 * 8));
}

TEST(LearnedPosition, TableStartsWithTheConfiguredSpread) {
  ModelDims dims = SmallDims();
  dims.max_seq_len = 64, dims.d_model = 32;
  auto pe = MakePositionEncoding("learned", dims);  // init_std 0.02
  std::vector<float> w = pe->NamedParameters()[0].second.value().ToVector();
  double sq = 0.0, mean = 0.0;
  for (float v : w) sq += v * v, mean += v;
  mean /= w.size();
  EXPECT_NEAR(std::sqrt(sq / w.size()), 0.02, 0.002);
  EXPECT_NEAR(mean, 0.0, 0.002);
}

std::string WriteSpec(const std::string& model_extra) {
  static int n = 0;
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/learned" + std::to_string(n++) + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 "
                         "num_heads: 2 position { plugin: \"learned\" } "
                      << model_extra << " }\ntask { sort_digits { length: 8 } }\ntrain { steps: 1 }\n";
  return path;
}

TEST(LearnedPosition, SequencesLongerThanTheTableAreRejectedAtValidation) {
  absl::Status s = LoadExperiment(WriteSpec("max_seq_len: 4"), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("model.max_seq_len (4) is shorter than the task's sequences (8)"));
  // A longer table is fine (positions past the task's length go unused).
  EXPECT_TRUE(LoadExperiment(WriteSpec("max_seq_len: 12"), {}).ok());
}

TEST(LearnedPosition, BadOptionsAreRejectedWithTheFieldPath) {
  absl::Status s = LoadExperiment(WriteSpec(""), {"model.position.options.init_std=0"}).status();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("model.position.options (learned): options.init_std must be > 0 (got 0)"));
}

}  // namespace
}  // namespace tvlab
