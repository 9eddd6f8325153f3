// Pre-registered hypotheses: checked against the cells when the grid is
// expanded (errors name the field and the valid choices), then tested as
// declared (values against scipy), Holm within each family, and the power
// columns.

#include "experiments/grid/report/hypothesis_report.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/grid/report/results_table.h"
#include "experiments/grid/report/seeds_for_power.h"
#include "framework/report/power.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

std::string Tmp() { return getenv("TEST_TMPDIR"); }

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// A grid over position encodings, 3 seeds, with `extra` appended.
absl::StatusOr<ExpandedGrid> Expand(const std::string& extra) {
  std::filesystem::remove_all(Tmp() + "/h/out");
  Write(Tmp() + "/h/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  const std::string path = Tmp() + "/h/g.pbtxt";
  Write(path, absl::StrCat(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "sinusoidal", "learned"] label: "position" }
    seeds: [0, 1, 2]
    main_metric: "eval_loss"
    output_dir: "out"
    )pb", extra));
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, Tmp());
}

std::string ErrorOf(const std::string& extra) {
  auto grid = Expand(extra);
  return grid.ok() ? "no error" : std::string(grid.status().message());
}

TEST(HypothesisSpec, UnknownCellsNameTheFieldAndTheValidCells) {
  const std::string bad_label = ErrorOf(R"pb(hypothesis { name: "h" a: "pos=none" b: "position=sinusoidal"
                                               direction: A_LESS smallest_effect: 0.1 })pb");
  EXPECT_THAT(bad_label, HasSubstr("hypothesis[0].a: 'pos=none' is not \"<axis label>=<value>\""));
  EXPECT_THAT(bad_label, HasSubstr("Valid: position=none|sinusoidal|learned"));
  const std::string bad_value = ErrorOf(R"pb(hypothesis { name: "h" a: "position=none" b: "position=rope"
                                               direction: A_LESS smallest_effect: 0.1 })pb");
  EXPECT_THAT(bad_value, HasSubstr("hypothesis[0].b [position=rope] selects 0 cells; it must select exactly one. "
                                   "Valid: position=none|sinusoidal|learned"));
  EXPECT_THAT(ErrorOf(R"pb(hypothesis { name: "h" a: "position=none" b: "position=none"
                           direction: A_LESS smallest_effect: 0.1 })pb"),
              HasSubstr("hypothesis[0]: a and b select the same cell 'position=none'"));
}

TEST(HypothesisSpec, DeclarationsAreChecked) {
  const std::string cells = R"pb(a: "position=none" b: "position=sinusoidal" )pb";
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells, " smallest_effect: 0.1 }")),
              HasSubstr("hypothesis[0].direction is required"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells,
                                   " direction: EITHER one_sided: true smallest_effect: 0.1 }")),
              HasSubstr("hypothesis[0].one_sided: a one-sided test needs direction A_LESS or A_GREATER"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells,
                                   " direction: EQUIVALENT one_sided: true smallest_effect: 0.1 }")),
              HasSubstr("hypothesis[0].one_sided: an EQUIVALENT hypothesis is already two one-sided tests (TOST)"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells,
                                   " direction: EQUIVALENT smallest_effect: 0.1 alpha: 0.5 }")),
              HasSubstr("hypothesis[0].alpha must be below 0.5 for EQUIVALENT"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells, " direction: A_LESS }")),
              HasSubstr("hypothesis[0].smallest_effect must be > 0"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h-1\" ", cells, " direction: A_LESS smallest_effect: 1 }")),
              HasSubstr("hypothesis[0].name: 'h-1' must be"));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells,
                                   " direction: A_LESS smallest_effect: 1 metric: \"los\" }")),
              HasSubstr("hypothesis[0].metric: "));
  EXPECT_THAT(ErrorOf(absl::StrCat("hypothesis { name: \"h\" ", cells, " direction: A_LESS smallest_effect: 1 }",
                                   "hypothesis { name: \"g\" ", cells,
                                   " direction: A_LESS smallest_effect: 1 alpha: 0.01 }")),
              HasSubstr("hypothesis[1].alpha 0.01 differs from the alpha 0.05 of another hypothesis of family "
                        "'primary'"));
}

TEST(HypothesisSpec, PairingNeedsTheSameDataOrder) {
  std::filesystem::remove_all(Tmp() + "/h/out");
  const std::string path = Tmp() + "/h/p.pbtxt";
  Write(path, R"pb(base_spec: "base.pbtxt"
    axis { field: "train.batch_size" values: ["4", "8"] label: "batch" }
    seeds: [0, 1]
    hypothesis { name: "h" a: "batch=4" b: "batch=8" direction: EITHER smallest_effect: 0.1
                 test: PAIRED_BY_SEED })pb");
  auto spec = ParseGridFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, path, Tmp());
  ASSERT_FALSE(grid.ok());
  EXPECT_THAT(std::string(grid.status().message()),
              HasSubstr("hypothesis[0].test: PAIRED_BY_SEED needs cells 'batch=4' and 'batch=8' to share data "
                        "order per seed, but their train.batch_size differs; use test: WELCH"));
}

void Finish(const GridRun& run, double eval_loss) {
  Write(run.run_dir + "/metrics.json", absl::StrFormat("{\"token_accuracy\": 0.5, \"eval_loss\": %.17g}", eval_loss));
}

// A 3-seed pilot of the position grid with `hypotheses`: cells 0 (none)
// and 1 (sinusoidal) finished with glu_variants' swiglu (A) and relu (B)
// eval losses, 'learned' not run.
const double kPilotA[] = {2.29006435, 2.30824492, 2.3100131};
const double kPilotB[] = {2.3249855, 2.31484604, 2.35120957};

absl::StatusOr<ExpandedGrid> Pilot(const std::string& hypotheses) {
  auto grid = Expand(hypotheses);
  if (!grid.ok()) return grid;
  for (int s = 0; s < 3; ++s) Finish(grid->cells[0].runs[s], kPilotA[s]), Finish(grid->cells[1].runs[s], kPilotB[s]);
  return grid;
}

const char kWelchAndPaired[] = R"pb(
    hypothesis { name: "welch" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.02 }
    hypothesis { name: "paired" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.02 test: PAIRED_BY_SEED })pb";

// The per-seed eval_loss of glu_variants' swiglu (A) and relu (B) cells;
// scipy's numbers for them are in framework/report/testdata/stats_reference.inc.
TEST(HypothesisReport, TestsAsDeclaredWithHolmPerFamily) {
  auto grid = Pilot(R"pb(
    hypothesis { name: "welch" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.02 family: "f" }
    hypothesis { name: "paired" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.02 family: "f" test: PAIRED_BY_SEED }
    hypothesis { name: "one_sided" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 one_sided: true smallest_effect: 0.02 family: "g" }
    hypothesis { name: "wrong_way" a: "position=sinusoidal" b: "position=none" direction: A_LESS
                 smallest_effect: 0.02 family: "h" alpha: 0.3 }
    hypothesis { name: "untested" a: "position=none" b: "position=learned" direction: EITHER
                 smallest_effect: 0.02 family: "h" alpha: 0.3 })pb");
  ASSERT_TRUE(grid.ok()) << grid.status();
  const GridResults results = CollectResults(*grid);
  const std::vector<HypothesisOutcome> out = TestHypotheses(results);
  ASSERT_EQ(out.size(), 5u);
  // scipy: ttest_ind(equal_var=False) p = 0.10931453330280472 (two-sided),
  // 0.05465726665140236 (less); ttest_rel p = 0.12222749056043568.
  EXPECT_NEAR(out[0].p, 0.10931453330280472, 1e-9);
  EXPECT_NEAR(out[1].p, 0.12222749056043568, 1e-9);
  EXPECT_NEAR(out[2].p, 0.05465726665140236, 1e-9);
  // Holm over family f (2 tests): 2 * 0.1093 = 0.2186 for both.
  EXPECT_NEAR(out[0].holm_p, 2 * 0.10931453330280472, 1e-9);
  EXPECT_NEAR(out[1].holm_p, 2 * 0.10931453330280472, 1e-9);
  EXPECT_NEAR(out[2].holm_p, out[2].p, 1e-12);  // a family of one
  EXPECT_EQ(out[0].verdict, "not supported");
  // Family h: the untested hypothesis counts with p = 1, so m = 2 and
  // wrong_way's Holm p is 2 * 0.1093 < 0.3: rejected, against its direction.
  EXPECT_EQ(out[3].verdict, "opposite sign");
  EXPECT_EQ(out[4].verdict, "untested");
  EXPECT_EQ(out[4].family_size, 2);
  EXPECT_NEAR(out[0].delta, (kPilotA[0] + kPilotA[1] + kPilotA[2] - kPilotB[0] - kPilotB[1] - kPilotB[2]) / 3, 1e-12);
  EXPECT_NEAR(out[1].effect_size, out[1].delta / out[1].sd, 1e-12);
  // Power at alpha / m = 0.025, from the grid's own std.
  PowerDesign design;
  design.paired = true;
  design.alpha = 0.05 / 2;
  EXPECT_NEAR(out[1].power_at_smallest, TTestPower(0.02 / out[1].sd, 3, design), 1e-12);
  ASSERT_TRUE(out[1].seeds_needed.has_value());
  EXPECT_GE(TTestPower(0.02 / out[1].sd, *out[1].seeds_needed, design), 0.8);
  EXPECT_LT(TTestPower(0.02 / out[1].sd, *out[1].seeds_needed - 1, design), 0.8);
  EXPECT_NEAR(TTestPower(out[1].minimum_detectable / out[1].sd, 3, design), 0.8, 1e-8);

  const std::string md = ResultsMarkdown(results);
  EXPECT_THAT(md, HasSubstr("## Pre-registered hypotheses"));
  EXPECT_THAT(md, HasSubstr("| paired | f | position=none | position=sinusoidal | eval_loss | paired by seed | "
                            "A < B, two-sided | 3 / 3 | -0.0276 |"));
  EXPECT_THAT(md, HasSubstr("## All cells (exploratory)"));
  const std::string csv = HypothesesCsv(results, out);
  EXPECT_THAT(csv, HasSubstr("\none_sided,g,eval_loss,position=none,position=sinusoidal,Welch,A < B,one-sided,"));
  EXPECT_THAT(csv, HasSubstr(",untested,,,,a group has no finished seeds\n"));
}

// Equivalence (TOST) on the same values. scipy, max of ttest(a + m, b,
// "greater") and ttest(a - m, b, "less"): margin 0.06 paired p =
// 0.04646096588305004, Welch 0.037887271404901356; margin 0.03 paired
// 0.42038907681521975. The paired differences' 90% CI: [-0.05864513636406113,
// 0.0034993096973945995].
TEST(HypothesisReport, EquivalenceIsTwoOneSidedTests) {
  auto grid = Pilot(R"pb(
    hypothesis { name: "paired" a: "position=none" b: "position=sinusoidal" direction: EQUIVALENT
                 smallest_effect: 0.06 family: "p" test: PAIRED_BY_SEED }
    hypothesis { name: "welch" a: "position=none" b: "position=sinusoidal" direction: EQUIVALENT
                 smallest_effect: 0.06 family: "w" }
    hypothesis { name: "narrow" a: "position=none" b: "position=sinusoidal" direction: EQUIVALENT
                 smallest_effect: 0.03 family: "n" test: PAIRED_BY_SEED })pb");
  ASSERT_TRUE(grid.ok()) << grid.status();
  const GridResults results = CollectResults(*grid);
  const std::vector<HypothesisOutcome> out = TestHypotheses(results);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0].p, 0.04646096588305004, 1e-9);
  EXPECT_NEAR(out[1].p, 0.037887271404901356, 1e-9);
  EXPECT_NEAR(out[2].p, 0.42038907681521975, 1e-9);
  EXPECT_NEAR(out[0].ci_low, -0.05864513636406113, 1e-9);
  EXPECT_NEAR(out[0].ci_high, 0.0034993096973945995, 1e-9);
  EXPECT_EQ(out[0].verdict, "supported");  // the 90% CI is inside +-0.06
  EXPECT_EQ(out[1].verdict, "supported");
  EXPECT_EQ(out[2].verdict, "not supported");  // it is not inside +-0.03
  // Power: TOST's at a true difference of 0, with the margin as the effect.
  PowerDesign design;
  design.paired = true;
  design.equivalence = true;
  EXPECT_NEAR(out[0].power_at_smallest, TTestPower(0.06 / out[0].sd, 3, design), 1e-12);
  EXPECT_NEAR(TTestPower(out[0].minimum_detectable / out[0].sd, 3, design), 0.8, 1e-8);
  ASSERT_TRUE(out[2].seeds_needed.has_value());
  EXPECT_GE(TTestPower(0.03 / out[2].sd, *out[2].seeds_needed, design), 0.8);
  const std::string md = ResultsMarkdown(results);
  EXPECT_THAT(md, HasSubstr("| paired by seed | A ≈ B (±0.06), TOST | 3 / 3 | -0.0276 | [-0.0586, +0.0035] (90%) |"));
  EXPECT_THAT(HypothesesCsv(results, out), HasSubstr(",paired by seed,A ≈ B (±0.06),TOST,"));
}

SeedsForPower Options(SeedsForPower::Cells cells = SeedsForPower::EVERY_CELL, int max_seeds = 0) {
  SeedsForPower options;
  options.set_pilot_seeds(3);
  options.set_power(0.8);
  options.set_cells(cells);
  options.set_max_seeds(max_seeds);
  return options;
}

// Seeds for 80% power from a 3-seed pilot. scipy (nct, as in
// framework/report/testdata/stats_reference.py) on these values at alpha
// 0.05 / 2: pooled std 0.015396 -> 13 seeds for Welch at 0.02; std of the
// paired differences 0.018431 -> 11 seeds paired at 0.02, 132 at 0.005.
TEST(SeedsForPower, LargestNeedOverTheHypothesesAndMaxRuns) {
  auto grid = Pilot(kWelchAndPaired);
  ASSERT_TRUE(grid.ok()) << grid.status();
  const GridResults pilot = CollectResults(*grid);
  auto plan = PlanSeedsForPower(pilot, Options(), 10000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->seeds_per_cell, 13);
  ASSERT_EQ(plan->lines.size(), 2u);
  EXPECT_THAT(plan->lines[1], HasSubstr("'paired': smallest_effect 0.02 / pilot std 0.01843"));
  EXPECT_THAT(plan->lines[1], HasSubstr(": 11 seeds per cell"));
  // 3 valid cells x 13 seeds = 39 runs: max_runs 38 is too few.
  auto too_many = PlanSeedsForPower(pilot, Options(), 38);
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("seeds_for_power: hypothesis 'welch': smallest_effect 0.02 / pilot std 0.0154"));
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("needs more than 12 seeds per cell for 0.8 power, and 3 valid cells x 13 seeds exceed "
                        "max_runs 38; raise max_runs, declare a larger smallest_effect, or cap the seeds with "
                        "max_seeds"));
  EXPECT_TRUE(PlanSeedsForPower(pilot, Options(), 39).ok());
}

// cells: HYPOTHESIS_CELLS grows the two cells the hypotheses name (none and
// sinusoidal, cells 0 and 1); 'learned' keeps its 3 pilot runs, which count
// against max_runs: 2 x 13 + 3 = 29.
TEST(SeedsForPower, HypothesisCellsGrowOnlyTheCellsTheHypothesesName) {
  auto grid = Pilot(kWelchAndPaired);
  ASSERT_TRUE(grid.ok()) << grid.status();
  const GridResults pilot = CollectResults(*grid);
  auto plan = PlanSeedsForPower(pilot, Options(SeedsForPower::HYPOTHESIS_CELLS), 29);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->seeds_per_cell, 13);
  EXPECT_EQ(plan->grown_cells, (std::vector<int>{0, 1}));
  EXPECT_EQ(PlanSeedsForPower(pilot, Options(), 10000)->grown_cells, (std::vector<int>{0, 1, 2}));
  auto too_many = PlanSeedsForPower(pilot, Options(SeedsForPower::HYPOTHESIS_CELLS), 28);
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("needs more than 12 seeds per cell for 0.8 power, and 2 hypothesis cells x 13 seeds + 3 "
                        "pilot runs in the other cells exceed max_runs 28"));
}

// max_seeds caps a need beyond it (no error): the plan runs max_seeds and
// says what the hypothesis would need, its power there and its minimum
// detectable effect (power.h's functions at the pilot's paired std).
TEST(SeedsForPower, MaxSeedsCapsANeedBeyondItAndSaysWhatItCosts) {
  auto grid = Pilot(R"pb(
    hypothesis { name: "paired" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.005 test: PAIRED_BY_SEED })pb");
  ASSERT_TRUE(grid.ok()) << grid.status();
  const GridResults pilot = CollectResults(*grid);
  PowerDesign design;
  design.paired = true;
  const double sd = 0.018431142042413747, d = 0.005 / sd;
  const int needed = *SeedsNeeded(d, design);
  ASSERT_GT(needed, 8);
  auto plan = PlanSeedsForPower(pilot, Options(SeedsForPower::EVERY_CELL, 8), 10000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->seeds_per_cell, 8);
  ASSERT_EQ(plan->lines.size(), 1u);
  EXPECT_THAT(plan->lines[0],
              HasSubstr(absl::StrFormat("needs %d seeds per cell, more than max_seeds 8: planned at 8 (power %.2f "
                                        "at the smallest effect, minimum detectable effect %.4g at 0.8 power)",
                                        needed, TTestPower(d, 8, design),
                                        MinimumDetectableEffect(8, design) * sd)));
  // A cap that max_runs cannot hold (3 cells x 8 > 20) is still the error.
  EXPECT_FALSE(PlanSeedsForPower(pilot, Options(SeedsForPower::EVERY_CELL, 8), 20).ok());
  // A need within the cap is planned as it is.
  EXPECT_EQ(PlanSeedsForPower(pilot, Options(SeedsForPower::EVERY_CELL, needed + 5), 10000)->seeds_per_cell, needed);
}

TEST(SeedsForPower, SmallerEffectsNeedMoreSeeds) {
  auto grid = Pilot(R"pb(
    hypothesis { name: "paired" a: "position=none" b: "position=sinusoidal" direction: A_LESS
                 smallest_effect: 0.005 test: PAIRED_BY_SEED })pb");
  ASSERT_TRUE(grid.ok()) << grid.status();
  // A family of one: alpha 0.05 (not 0.025 as above).
  PowerDesign design;
  design.paired = true;
  auto plan = PlanSeedsForPower(CollectResults(*grid), Options(), 10000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->seeds_per_cell, *SeedsNeeded(0.005 / 0.018431142042413747, design));
  EXPECT_GT(plan->seeds_per_cell, 13);
  // The pilot gives no variance when a cell has no finished seed.
  std::filesystem::remove_all(grid->cells[1].runs[0].run_dir);
  std::filesystem::remove_all(grid->cells[1].runs[1].run_dir);
  auto untestable = PlanSeedsForPower(CollectResults(*grid), Options(), 10000);
  ASSERT_FALSE(untestable.ok());
  EXPECT_THAT(std::string(untestable.status().message()),
              HasSubstr("hypothesis 'paired' could not be tested on the pilot's seeds (fewer than 2 paired seeds"));
}

}  // namespace
}  // namespace tvlab
