// Equal-budget grids against hand-counted parameters: SwiGLU's third matrix
// paid for with d_ff = 2/3 of GELU's; a d_model solution that respects
// num_heads' divisibility and is the closest valid value; budgets that
// cannot be matched are errors before training.

#include <fstream>

#include "experiments/grid/expand/equal_budget.h"
#include "experiments/grid/expand/grid_loader.h"
#include "framework/spec/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

// No biases: an FFN of width f on d = 16 has 2·d·f (GELU) or 3·d·f
// (SwiGLU) parameters; everything else is the same in both cells.
const char kBase[] = R"pb(name: "tiny"
model { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 4 d_ff: 96 bias: false
        ffn { plugin: "gelu" } }
task { plugin: "sort_digits" }
train { steps: 3 }
)pb";

std::string TempPath(const std::string& file) { return std::string(getenv("TEST_TMPDIR")) + "/" + file; }

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  std::ofstream(TempPath("base.pbtxt")) << kBase;
  const std::string path = TempPath("budget.pbtxt");
  std::ofstream(path) << grid_text;
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, TempPath("cwd"));
}

double Parameters(const Experiment& spec) { return *BudgetOf(spec, EqualBudget::PARAMETERS); }

TEST(EqualBudget, SwigluPaysForItsThirdMatrixWithTwoThirdsOfTheWidth) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    ablation { row { name: "swiglu" set: "model.ffn.plugin=swiglu" }
               row { name: "relu" set: "model.ffn.plugin=relu" } }
    equal_budget { match: PARAMETERS field: "model.d_ff" tolerance: 0 }
    seeds: [0, 1])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  // 3 · 16 · f = 2 · 16 · 96 per layer  =>  f = 64, exactly.
  const GridCell& swiglu = g->cells[1];
  ASSERT_TRUE(swiglu.budget.has_value());
  EXPECT_EQ(swiglu.budget->value, 64);
  EXPECT_EQ(swiglu.budget->deviation, 0);
  EXPECT_EQ(swiglu.overrides.back(), "model.d_ff=64");
  for (const GridRun& run : swiglu.runs) EXPECT_EQ(run.spec.model().d_ff(), 64);
  // ReLU's FFN has GELU's shapes: the width stays 96.
  EXPECT_EQ(g->cells[2].budget->value, 96);
  // The baseline keeps its width and reports it.
  EXPECT_EQ(g->cells[0].budget->value, 96);
  EXPECT_EQ(Parameters(swiglu.runs[0].spec), Parameters(g->cells[0].runs[0].spec));
  EXPECT_EQ(swiglu.budget->budget, swiglu.budget->target);
}

// A mixture of experts (8 SwiGLU experts, top-2; router 8 x 16 per layer)
// against GELU's 2 · 16 · 96 = 3072 FFN parameters per layer: on active
// parameters (and so FLOPs) 2 · 3 · 16 · f + 128, closest at f = 31
// (3104); on total parameters 8 · 3 · 16 · f + 128, closest at f = 8.
TEST(EqualBudget, MixtureOfExpertsMatchesOnActiveParametersOrTotal) {
  for (auto [match, width] : {std::pair<std::string, int>{"ACTIVE_PARAMETERS", 31},
                              {"TRAIN_FLOPS_PER_TOKEN", 31}, {"PARAMETERS", 8}}) {
    auto g = Expand(R"pb(base_spec: "base.pbtxt"
      ablation { row { name: "moe" set: "model.ffn.plugin=moe" } }
      equal_budget { match: )pb" + match + R"pb( field: "model.d_ff" tolerance: 0.05 })pb");
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->cells[1].budget->value, width) << match;
  }
}

TEST(EqualBudget, ClosestValueWithinToleranceWhenNoneIsExact) {
  // Baseline width 97: GELU 2·16·97 = 3104 per layer; SwiGLU 3·16·65 = 3120
  // (+16) is closer than 3·16·64 = 3072 (−32). Two layers: +32 parameters.
  auto g = Expand(R"pb(base_spec: "base.pbtxt" set: "model.d_ff=97"
    ablation { row { name: "swiglu" set: "model.ffn.plugin=swiglu" } }
    equal_budget { match: PARAMETERS field: "model.d_ff" tolerance: 0.01 })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->cells[1].budget->value, 65);
  EXPECT_EQ(g->cells[1].budget->budget - g->cells[1].budget->target, 32);
  EXPECT_NEAR(g->cells[1].budget->deviation, 32 / g->cells[1].budget->target, 1e-15);
}

TEST(EqualBudget, DModelSolutionRespectsDivisibilityAndIsTheClosestValidValue) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    ablation { row { name: "swiglu" set: "model.ffn.plugin=swiglu" } }
    equal_budget { match: TRAIN_FLOPS_PER_TOKEN field: "model.d_model" tolerance: 0.05 })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  const GridCell& cell = g->cells[1];
  const int64_t d = *cell.budget->value;
  EXPECT_EQ(d % 4, 0) << d;  // num_heads 4 divides it
  EXPECT_LT(d, 16);          // SwiGLU at the same width costs more: narrower
  // Independently: the neighbouring valid widths are no closer.
  const double target = cell.budget->target;
  for (int64_t other : {d - 4, d + 4}) {
    auto spec = ResolveExperiment(g->cells[1].runs[0].spec, {"model.d_model=" + std::to_string(other)}, "t", "t");
    if (!spec.ok()) continue;
    EXPECT_GE(std::abs(*BudgetOf(*spec, EqualBudget::TRAIN_FLOPS_PER_TOKEN) - target),
              std::abs(cell.budget->budget - target))
        << other;
  }
}

TEST(EqualBudget, CellInvalidAtTheBaseWidthIsValidAtTheSolvedOne) {
  // 3 heads do not divide d_model 16, but the solved d_model is a multiple
  // of 3; a cell invalid at every value stays an invalid cell with its reason.
  auto g = Expand(R"pb(base_spec: "base.pbtxt" invalid_cells: SKIP
    ablation { row { name: "3 heads" set: "model.num_heads=3" }
               row { name: "bogus" set: "model.ffn.plugin=bogus" } }
    equal_budget { match: PARAMETERS field: "model.d_model" tolerance: 0.2 })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->cells[1].valid()) << g->cells[1].invalid_reason;
  EXPECT_EQ(*g->cells[1].budget->value % 3, 0);
  EXPECT_EQ(g->cells[1].runs[0].spec.model().d_model() % 3, 0);
  EXPECT_FALSE(g->cells[2].valid());
  EXPECT_THAT(g->cells[2].invalid_reason, HasSubstr("bogus"));
}

TEST(EqualBudget, UnmatchableBudgetsAreErrorsBeforeTraining) {
  // d_ff does not move the KV cache; MQA's is a quarter of MHA's.
  auto kv = Expand(R"pb(base_spec: "base.pbtxt"
    ablation { row { name: "mqa" set: "model.attention.layout=mqa" } }
    equal_budget { match: KV_CACHE_BYTES_PER_TOKEN field: "model.d_ff" max_value: 4096 })pb");
  ASSERT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("1 cell(s) cannot be matched to the baseline's budget"));
  EXPECT_THAT(kv.status().message(), HasSubstr("cell 'mqa': cannot match the baseline's KV-cache bytes/token"));
  EXPECT_THAT(kv.status().message(), HasSubstr("the field cannot move far enough"));
  // A step too coarse for the tolerance (see above: +32 of ~4.6k is 0.7%).
  auto coarse = Expand(R"pb(base_spec: "base.pbtxt" set: "model.d_ff=97"
    ablation { row { name: "swiglu" set: "model.ffn.plugin=swiglu" } }
    equal_budget { match: PARAMETERS field: "model.d_ff" tolerance: 0.0001 })pb");
  ASSERT_FALSE(coarse.ok());
  EXPECT_THAT(coarse.status().message(), HasSubstr("closest is model.d_ff=65"));
  EXPECT_THAT(coarse.status().message(), HasSubstr("too coarse"));
}

TEST(EqualBudget, OptionMistakes) {
  auto error = [](const std::string& grid) {
    auto g = Expand(grid);
    return g.ok() ? std::string("(no error)") : std::string(g.status().message());
  };
  const std::string rows = "ablation { row { name: \"swiglu\" set: \"model.ffn.plugin=swiglu\" } }\n";
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" " + rows + "equal_budget { field: \"model.d_ff\" }"),
              HasSubstr("equal_budget.match is required"));
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" " + rows + "equal_budget { match: PARAMETERS }"),
              HasSubstr("equal_budget.field is required"));
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" " + rows + "equal_budget { match: PARAMETERS field: \"model.dff\" }"),
              HasSubstr("equal_budget.field 'model.dff' is not an integer field"));
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" " + rows +
                    "equal_budget { match: PARAMETERS field: \"model.d_ff\" tolerance: -1 }"),
              HasSubstr("equal_budget.tolerance: -1 must be >= 0"));
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" axis { field: \"model.ffn.plugin\" values: [\"gelu\", \"swiglu\"] }\n"
                    "equal_budget { match: PARAMETERS field: \"model.d_ff\" }"),
              HasSubstr("equal_budget needs a baseline"));
  EXPECT_THAT(error("base_spec: \"base.pbtxt\" ablation { row { name: \"w\" set: \"model.d_ff=64\" } }\n"
                    "equal_budget { match: PARAMETERS field: \"model.d_ff\" }"),
              HasSubstr("cell 'w' sets model.d_ff (model.d_ff=64), the field equal_budget solves for"));
}

}  // namespace
}  // namespace tvlab
