// The size ladder of a grid (ladder.h, ladder_rungs.h): the sizes each
// variant is trained at, the runs it expands to, and its validation errors.

#include "experiments/grid/expand/ladder.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kBase[] = R"pb(name: "tiny"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" }
train { steps: 3 eval_every: 1 }
)pb";

std::string TempPath(const std::string& file) { return std::string(getenv("TEST_TMPDIR")) + "/" + file; }

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  std::ofstream(TempPath("base.pbtxt")) << kBase;
  const std::string path = TempPath("ladder.pbtxt");
  std::ofstream(path) << "base_spec: \"base.pbtxt\"\n" << grid_text;
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, TempPath("cwd"));
}

std::string Error(const std::string& grid_text) {
  auto g = Expand(grid_text);
  return g.ok() ? "(no error)" : std::string(g.status().message());
}

const char kDial[] = "ladder { dial { depths: [1, 2, 3] aspect_ratio: 10 head_dim: 8 ffn_multiplier: 2 } target_loss: 2 }\n";

// nanochat's dial with d_model = aspect_ratio x depth rounded up to a
// multiple of head_dim: 10 -> 16, 20 -> 24, 30 -> 32.
TEST(Ladder, DialSetsEverySizeFromTheDepth) {
  auto g = Expand(std::string(R"pb(
    axis { field: "model.position.plugin" values: ["sinusoidal", "rope"] label: "position" }
    baseline: ["position=sinusoidal"]
    seeds: [0, 1]
  )pb") + kDial);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("position", "depth"));
  EXPECT_EQ(g->ladder_column, 1);
  EXPECT_EQ(g->baseline, -1);
  ASSERT_EQ(g->cells.size(), 6u);  // 2 variants x 3 rungs
  EXPECT_EQ(g->cells[0].label, "position=sinusoidal depth=1");
  EXPECT_EQ(g->cells[5].label, "position=rope depth=3");
  EXPECT_EQ(LadderVariantLabel(*g, g->cells[5]), "position=rope");
  const int want_d[] = {16, 24, 32};
  for (int i = 0; i < 6; ++i) {
    const GridCell& c = g->cells[i];
    ASSERT_TRUE(c.valid()) << c.label << ": " << c.invalid_reason;
    ASSERT_EQ(c.runs.size(), 2u);
    const ModelSpec& m = c.runs[1].spec.model();
    EXPECT_EQ(m.num_layers(), i % 3 + 1);
    EXPECT_EQ(m.d_model(), want_d[i % 3]);
    EXPECT_EQ(m.num_heads(), m.d_model() / 8);
    EXPECT_EQ(m.d_ff(), 2 * m.d_model());
  }
  EXPECT_THAT(g->cells[1].overrides,
              testing::IsSupersetOf({"model.d_model=24", "model.num_layers=2", "model.num_heads=3", "model.d_ff=48"}));
}

// head_dim 0 keeps each variant's head count and rounds the width to it.
TEST(Ladder, DialWithoutHeadDimRoundsToEachVariantsHeads) {
  auto g = Expand(R"pb(
    axis { field: "model.num_heads" values: ["2", "4"] label: "heads" }
    ladder { dial { depths: [1, 2] aspect_ratio: 10 ffn_multiplier: 0 } target_loss: 2 })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 4u);
  const int want[] = {10, 20, 12, 20};  // 10 and 20 rounded up to multiples of 2, then of 4
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(g->cells[i].valid()) << g->cells[i].invalid_reason;
    EXPECT_EQ(g->cells[i].runs[0].spec.model().d_model(), want[i]) << g->cells[i].label;
    EXPECT_EQ(g->cells[i].runs[0].spec.model().d_ff(), 32);  // the variant's own
  }
}

TEST(Ladder, ExplicitRungsWithAnAblation) {
  auto g = Expand(R"pb(
    ablation { row { name: "rope" set: "model.position.plugin=rope" } }
    ladder { rung { d_model: 16 num_layers: 1 } rung { d_model: 32 num_layers: 2 d_ff: 64 } target_loss: 2
             compare: ["baseline", "rope"] })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("variant", "rung"));
  ASSERT_EQ(g->cells.size(), 4u);
  EXPECT_EQ(g->cells[3].label, "rope rung=L2-d32");
  EXPECT_EQ(g->cells[3].runs[0].spec.model().d_ff(), 64);
  EXPECT_EQ(g->cells[2].runs[0].spec.model().d_ff(), 32);  // no d_ff on the rung: the variant's
}

TEST(Ladder, RungSizesCountAgainstMaxRuns) {
  EXPECT_THAT(Error(std::string("seeds: [0, 1]\nmax_runs: 5\n") + kDial),
              HasSubstr("6 runs (ladder rungs: 3 x seeds: 2)"));
}

TEST(Ladder, LadderErrorsNameTheField) {
  EXPECT_THAT(Error("ladder { dial { depths: [1, 2] } }"), HasSubstr("ladder.target_loss is required"));
  EXPECT_THAT(Error("ladder { dial { depths: [1, 2] } target_loss: -1 }"), HasSubstr("ladder.target_loss: -1"));
  EXPECT_THAT(Error("ladder { dial { depths: [2, 2] } target_loss: 1 }"),
              HasSubstr("ladder.dial.depths[1]: 2 does not exceed depths[0] 2"));
  EXPECT_THAT(Error("ladder { dial { depths: [2] } target_loss: 1 }"), HasSubstr("at least 2 depths"));
  EXPECT_THAT(Error("ladder { target_loss: 1 }"), HasSubstr("exactly one of dial"));
  EXPECT_THAT(Error("ladder { rung { d_model: 32 num_layers: 2 } rung { d_model: 16 num_layers: 3 } target_loss: 1 }"),
              HasSubstr("ladder.rung[1]: d_model 16, num_layers 3 after ladder.rung[0]'s 32, 2: rungs must be increasing"));
  EXPECT_THAT(Error("ladder { rung { d_model: 16 num_layers: 1 } rung { d_model: 16 num_layers: 1 } target_loss: 1 }"),
              HasSubstr("rungs must be increasing"));
  EXPECT_THAT(Error("ladder { rung { d_model: 16 num_layers: 0 } rung { d_model: 32 num_layers: 1 } target_loss: 1 }"),
              HasSubstr("ladder.rung[0].num_layers: 0 must be >= 1"));
  EXPECT_THAT(Error("ladder { dial { depths: [1, 2] } target_loss: 1 confidence: 1.5 }"),
              HasSubstr("ladder.confidence: 1.5"));
  EXPECT_THAT(Error("ladder { dial { depths: [1, 2] } target_loss: 1 compare: [\"x\", \"x\"] }"),
              HasSubstr("ladder.compare: give two different variant labels"));
  EXPECT_THAT(Error("ladder { dial { depths: [1, 2] } target_loss: 1 compare: [\"base\", \"rope\"] }"),
              HasSubstr("ladder.compare: 'rope' is not a variant of this grid; the variants are: 'base'"));
}

// A rung whose d_model the variant's heads do not divide: every conflict in
// one error, each naming the rung and the variant.
TEST(Ladder, RungIncompatibleWithAVariantsHeadCount) {
  const std::string e = Error(R"pb(
    axis { field: "model.num_heads" values: ["2", "3"] label: "heads" }
    ladder { rung { d_model: 16 num_layers: 1 } rung { d_model: 32 num_layers: 2 } target_loss: 1 })pb");
  EXPECT_THAT(e, HasSubstr("2 problem(s)"));
  EXPECT_THAT(e, HasSubstr("ladder.rung[0].d_model 16 is not a multiple of variant 'heads=3''s model.num_heads 3"));
  EXPECT_THAT(e, HasSubstr("ladder.rung[1].d_model 32 is not a multiple of variant 'heads=3''s model.num_heads 3"));
  EXPECT_THAT(Error("ladder { rung { d_model: 16 num_layers: 1 num_heads: 3 } rung { d_model: 33 num_layers: 2 "
                    "num_heads: 3 } target_loss: 1 }"),
              HasSubstr("ladder.rung[0].d_model 16 is not a multiple of ladder.rung[0].num_heads 3"));
}

TEST(Ladder, NeedsEvaluationsDuringTraining) {
  EXPECT_THAT(Error(std::string("set: \"train.eval_every=0\"\n") + kDial),
              HasSubstr("variant 'base': train.eval_every is 0; the ladder finds target_loss on the evaluation curve"));
}

TEST(Ladder, FieldsTheLadderSetsCannotBeVariedElsewhere) {
  EXPECT_THAT(Error(std::string("axis { field: \"model.d_model\" values: [\"8\", \"16\"] }\n") + kDial),
              HasSubstr("ladder: an axis varies model.d_model, which the ladder sets on every cell"));
  EXPECT_THAT(Error(std::string("set: \"model.num_heads=4\"\n") + kDial),
              HasSubstr("ladder: `set` (model.num_heads=4) sets model.num_heads"));
  EXPECT_THAT(Error(std::string("ablation { row { name: \"wide\" set: \"model.d_ff=64\" } }\n") + kDial),
              HasSubstr("ladder: ablation row 'wide' (model.d_ff=64) sets model.d_ff"));
}

TEST(Ladder, FormsThatDoNotComposeAreRefusedWithTheReason) {
  EXPECT_THAT(Error(std::string("axis { field: \"model.position.plugin\" values: [\"rope\", \"none\"] }\n"
                                "scaling { axis: \"plugin\" }\n") + kDial),
              HasSubstr("ladder and scaling in one grid"));
  EXPECT_THAT(Error(std::string("lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] }\n") + kDial),
              HasSubstr("ladder and lr_sweep in one grid are not supported"));
  EXPECT_THAT(Error(std::string("ablation { row { name: \"r\" set: \"model.position.plugin=rope\" } }\n"
                                "equal_budget { match: PARAMETERS field: \"model.d_ff\" }\n") + kDial),
              HasSubstr("ladder and equal_budget in one grid"));
  EXPECT_THAT(Error(std::string("ablation { row { name: \"r\" set: \"model.position.plugin=rope\" } }\n"
                                "hypothesis { name: \"h\" a: \"variant=r\" b: \"variant=baseline\" "
                                "smallest_effect: 0.1 direction: A_LESS }\n") + kDial),
              HasSubstr("ladder with hypothesis or seeds_for_power"));
}

// A rung the model's validation refuses is an invalid cell with its reason,
// as any other cell (here RoPE on an odd head dimension).
TEST(Ladder, RungsTheValidatorRefusesAreInvalidCells) {
  auto g = Expand(R"pb(
    set: "model.position.plugin=rope"
    ladder { rung { d_model: 16 num_layers: 1 } rung { d_model: 18 num_layers: 1 } target_loss: 1 }
    invalid_cells: SKIP)pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 2u);
  EXPECT_TRUE(g->cells[0].valid());
  EXPECT_FALSE(g->cells[1].valid());
  EXPECT_THAT(g->cells[1].invalid_reason, HasSubstr("model.d_model"));
}

}  // namespace
}  // namespace tvlab
