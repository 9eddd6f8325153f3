// The one-factor-at-a-time form of a grid: a baseline cell and named rows
// that each change something from it, crossed with seeds; and its errors.

#include <fstream>

#include "experiments/grid/expand/grid_loader.h"
#include "framework/schema/spec_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kBase[] = R"pb(name: "tiny"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" }
train { steps: 3 }
)pb";

std::string TempPath(const std::string& file) { return std::string(getenv("TEST_TMPDIR")) + "/" + file; }

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  std::ofstream(TempPath("base.pbtxt")) << kBase;
  const std::string path = TempPath("ablation.pbtxt");
  std::ofstream(path) << grid_text;
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, TempPath("cwd"));
}

std::string Error(const std::string& grid_text) {
  auto g = Expand(grid_text);
  return g.ok() ? "(no error)" : std::string(g.status().message());
}

TEST(GridAblation, BaselineThenOneCellPerRowCrossedWithSeeds) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    set: "train.steps=5"
    ablation {
      baseline: ["model.norm.placement=pre_ln"]
      row { name: "no position" set: ["model.position.plugin=none"] }
      row { name: "rope" set: ["model.position.plugin=rope"] }
      row { name: "gqa+rope" set: ["model.attention.layout=mqa", "model.position.plugin=rope"] }
    }
    seeds: [0, 1, 2])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("variant"));
  ASSERT_EQ(g->cells.size(), 4u);
  EXPECT_EQ(g->baseline, 0);
  EXPECT_EQ(g->cells[0].label, "baseline");
  EXPECT_THAT(g->cells[0].overrides, ElementsAre("train.steps=5", "model.norm.placement=pre_ln"));
  EXPECT_EQ(g->cells[3].label, "gqa+rope");
  EXPECT_THAT(g->cells[3].axis_values, ElementsAre("gqa+rope"));
  EXPECT_THAT(g->cells[3].overrides, ElementsAre("train.steps=5", "model.norm.placement=pre_ln",
                                                 "model.attention.layout=mqa", "model.position.plugin=rope"));
  for (const GridCell& c : g->cells) {
    ASSERT_TRUE(c.valid()) << c.label << ": " << c.invalid_reason;
    ASSERT_EQ(c.runs.size(), 3u);
    EXPECT_EQ(c.runs[2].seed, 2u);
    EXPECT_EQ(c.runs[0].spec.train().steps(), 5);
  }
  EXPECT_EQ(g->cells[0].runs[0].spec.model().position().plugin(), "sinusoidal");
  EXPECT_EQ(g->cells[1].runs[0].spec.model().position().plugin(), "none");
  EXPECT_EQ(g->cells[3].runs[0].spec.model().attention().layout(), "mqa");
  EXPECT_EQ(g->cells[3].runs[0].spec.model().position().plugin(), "rope");
}

TEST(GridAblation, EmptyBaselineIsTheBaseAndNamesAreConfigurable) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    ablation { baseline_name: "sinusoidal" label: "position"
               row { name: "learned" set: "model.position.plugin=learned" } })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("position"));
  EXPECT_EQ(g->cells[0].label, "sinusoidal");
  EXPECT_TRUE(g->cells[0].overrides.empty());
}

// A row (or the grid's set, or the baseline) may choose a plugin and then set
// that plugin's options: each override is checked after the earlier ones.
TEST(GridAblation, AnOverrideMaySetOptionsOfAPluginChosenJustBefore) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    set: ["model.num_heads=4", "model.attention.layout=gqa", "model.attention.layout_options.num_kv_heads=2"]
    ablation {
      baseline: ["model.attention.layout=mha"]
      row { name: "gqa-1" set: ["model.attention.layout=gqa", "model.attention.layout_options.num_kv_heads=1"] }
    })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 2u);
  ASSERT_TRUE(g->cells[1].valid()) << g->cells[1].invalid_reason;
  EXPECT_EQ(g->cells[0].runs[0].spec.model().attention().layout(), "mha");
  EXPECT_EQ(g->cells[1].runs[0].spec.model().attention().layout(), "gqa");
  EXPECT_THAT(SpecToText(g->cells[1].runs[0].spec), HasSubstr("num_kv_heads: 1"));
  // An option of a plugin the row has not chosen is still an error.
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt"
    ablation { row { name: "x" set: ["model.attention.layout_options.num_kv_heads=1"] } })pb"),
              HasSubstr("ablation.row[0] (\"x\").set[0]: --set model.attention.layout_options.num_kv_heads: "
                        "tvlab.MhaOptions has no field 'num_kv_heads'"));
}

TEST(GridAblation, RowThatChangesNothingIsAnInvalidCell) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    ablation { row { name: "same" set: "model.position.plugin=sinusoidal" } })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->cells[1].invalid_reason, HasSubstr("resolves to the same spec as cell 'baseline'"));
}

TEST(GridAblation, MistakesAreErrorsThatSayWhatToDo) {
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation { row { name: "rope" } })pb"),
              HasSubstr("ablation.row[0] (\"rope\"): set is empty, so the row would repeat the baseline"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation {
                row { name: "rope" set: "model.position.plugin=rope" }
                row { name: "rope" set: "model.position.plugin=alibi" } })pb"),
              HasSubstr("ablation.row[1] (\"rope\"): the name 'rope' is used twice"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation {
                row { name: "baseline" set: "model.position.plugin=rope" } })pb"),
              HasSubstr("it is the baseline's name"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation { row { set: "model.position.plugin=rope" } })pb"),
              HasSubstr("ablation.row[0]: name is required"));
  // A path that does not exist names the row, the override and the fields there are.
  const std::string typo = Error(R"pb(base_spec: "base.pbtxt" ablation {
                row { name: "wide" set: ["model.d_model=32", "model.dff=64"] } })pb");
  EXPECT_THAT(typo, HasSubstr("ablation.row[0] (\"wide\").set[1]: "));
  EXPECT_THAT(typo, HasSubstr("dff"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation {
                baseline: "model.norm.placment=pre_ln" row { name: "x" set: "model.d_model=32" } })pb"),
              HasSubstr("ablation.baseline[0]: "));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation { row { name: "x" set: "model.d_model" } })pb"),
              HasSubstr("is not field=value"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" ablation { })pb"), HasSubstr("ablation has no row"));
  // Mixed with axes, zip or a top-level baseline: ambiguous.
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt"
                axis { field: "model.num_layers" values: ["1", "2"] }
                ablation { row { name: "rope" set: "model.position.plugin=rope" } })pb"),
              HasSubstr("the grid has both an ablation and axis fields: it is ambiguous"));
  EXPECT_THAT(Error(R"pb(base_spec: "base.pbtxt" baseline: "x=1"
                ablation { row { name: "rope" set: "model.position.plugin=rope" } })pb"),
              HasSubstr("both an ablation and baseline fields"));
}

TEST(GridAblation, IsRecognisedAsAGrid) {
  EXPECT_TRUE(LooksLikeGridSpec("base_spec: \"b.pbtxt\"\nablation { row { name: \"a\" set: \"seed=1\" } }\n"));
  EXPECT_TRUE(LooksLikeGridSpec("base { }\nequal_budget { match: PARAMETERS field: \"model.d_ff\" }\n"));
}

}  // namespace
}  // namespace tvlab
