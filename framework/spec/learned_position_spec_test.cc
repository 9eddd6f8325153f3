// Learned positions through a spec: the table is sized from
// model.max_seq_len (or the task), and a sequence longer than the table is a
// validation error, not a read past the end.

#include <fstream>

#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

std::string WriteSpec(const std::string& model_extra) {
  static int n = 0;
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/learned" + std::to_string(n++) + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 "
                         "num_heads: 2 position { plugin: \"learned\" } "
                      << model_extra << " }\ntask { plugin: \"sort_digits\" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 } } }\ntrain { steps: 1 }\n";
  return path;
}

TEST(LearnedPosition, TableIsSizedFromTheTaskWhenMaxSeqLenIsZero) {
  auto spec = LoadExperiment(WriteSpec(""), {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto model = BuildModel(*spec, 10);
  ASSERT_TRUE(model.ok()) << model.status();
  bool found = false;
  for (auto& [name, var] : (*model)->NamedParameters()) {
    if (name != "position.weight") continue;
    found = true;
    EXPECT_EQ(var.shape(), (Shape{8, 16}));
  }
  EXPECT_TRUE(found);
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
