// Grid expansion: the product and zip shapes, per-cell validation with the
// reason, the baseline, and the run keys resume depends on.

#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/expand/run_key.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "framework/schema/spec_text.h"
#include "framework/spec/spec_loader.h"
#include "framework/spec/text_format_errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/task/text_lm/text_lm.pb.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kBase[] = R"pb(name: "tiny"
model {
  family: ENCODER_ONLY
  d_model: 16
  num_layers: 1
  num_heads: 2
}
task { plugin: "sort_digits" }
train { steps: 3 }
)pb";

std::string TempPath(const std::string& file) { return std::string(getenv("TEST_TMPDIR")) + "/" + file; }

std::string Write(const std::string& file, const std::string& text) {
  std::string path = TempPath(file);
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  Write("base.pbtxt", kBase);
  std::string path = Write("g.grid.pbtxt", grid_text);
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, TempPath("cwd"));
}

std::vector<std::string> Labels(const ExpandedGrid& g) {
  std::vector<std::string> out;
  for (const GridCell& c : g.cells) out.push_back(c.label);
  return out;
}

TEST(GridLoader, ProductOfAxesFirstAxisSlowest) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "sinusoidal"] }
    axis { field: "model.norm.placement" values: ["pre_ln", "post_ln"] }
    seeds: [0, 1, 2])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("plugin", "placement"));
  EXPECT_THAT(Labels(*g), ElementsAre("plugin=none placement=pre_ln", "plugin=none placement=post_ln",
                                      "plugin=sinusoidal placement=pre_ln",
                                      "plugin=sinusoidal placement=post_ln"));
  const GridCell& c = g->cells[2];
  EXPECT_THAT(c.overrides, ElementsAre("model.position.plugin=sinusoidal", "model.norm.placement=pre_ln"));
  ASSERT_EQ(c.runs.size(), 3u);
  EXPECT_EQ(c.runs[1].seed, 1u);
  EXPECT_EQ(c.runs[1].spec.seed(), 1u);
  EXPECT_EQ(c.runs[1].spec.model().position().plugin(), "sinusoidal");
  EXPECT_EQ(c.runs[1].spec.name(), "tiny");
  EXPECT_EQ(c.runs[1].run_dir, TempPath("cwd") + "/runs/g/runs/" + c.runs[1].key);
  EXPECT_EQ(g->baseline, -1);
}

TEST(GridLoader, SetOverridesTheBaseBeforeTheAxes) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    set: ["train.steps=7", "model.num_heads=4"]
    axis { field: "model.num_heads" values: ["1", "2"] })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->cells[0].runs[0].spec.train().steps(), 7);
  EXPECT_EQ(g->cells[0].runs[0].spec.model().num_heads(), 1);  // the axis comes after `set`
  EXPECT_THAT(g->cells[1].overrides, ElementsAre("train.steps=7", "model.num_heads=4", "model.num_heads=2"));
}

// An axis over a per-layer pattern's field: `set` adds the override (index
// one past the end appends), the axis varies it per cell.
TEST(GridLoader, AxesReachALayerOverride) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    set: ["model.num_layers=2", "model.layer_overrides[0].pattern=xy", "model.layer_overrides[0].letter=y"]
    axis { field: "model.layer_overrides[0].ffn.plugin" values: ["swiglu", "geglu"] }
    seeds: [0])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 2u);
  ASSERT_EQ(g->cells[0].runs.size(), 1u);
  ASSERT_TRUE(g->cells[0].valid()) << g->cells[0].invalid_reason;
  ASSERT_TRUE(g->cells[1].valid()) << g->cells[1].invalid_reason;
  EXPECT_EQ(g->cells[1].runs[0].spec.model().layer_overrides(0).ffn().plugin(), "geglu");
  EXPECT_NE(g->cells[0].runs[0].key, g->cells[1].runs[0].key);
  // A list of scalars (which layers) is not settable: the cell says so.
  g = Expand(R"pb(base_spec: "base.pbtxt"
    set: ["model.num_layers=2", "model.layer_overrides[0].layers=1"]
    seeds: [0])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->cells[0].invalid_reason, HasSubstr("model.layer_overrides[0].layers is a list"));
}

TEST(GridLoader, TaskFilesResolveAgainstTheSpecThatNamesThem) {
  // Every run starts from cell_spec.pbtxt inside its run directory, so a
  // relative data path must be made absolute here, as LoadExperiment does.
  std::string dir = TempPath("paths");
  std::filesystem::create_directories(dir + "/specs");
  Write("paths/specs/lm.pbtxt", R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "corpus.txt" } } } train { steps: 3 })pb");
  Write("paths/g.pbtxt", R"pb(base_spec: "specs/lm.pbtxt")pb");
  Write("paths/inline.pbtxt", R"pb(base { task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "data/corpus.txt" } } } })pb");
  auto from_file = ParseGridFile(dir + "/g.pbtxt");
  auto inline_base = ParseGridFile(dir + "/inline.pbtxt");
  ASSERT_TRUE(from_file.ok() && inline_base.ok());
  // The corpus files do not exist, so the cells are invalid; the reasons name
  // the resolved paths.
  auto g = ExpandGrid(*from_file, dir + "/g.pbtxt", dir);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->cells[0].invalid_reason, HasSubstr(dir + "/specs/corpus.txt"));
  auto i = ExpandGrid(*inline_base, dir + "/inline.pbtxt", dir);
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(i->cells[0].invalid_reason, HasSubstr(dir + "/data/corpus.txt"));
}

TEST(GridLoader, ZippedAxesPairTheirValues) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.num_layers" values: ["1", "2"] }
    zip {
      axis { field: "model.d_model" values: ["16", "32"] }
      axis { field: "model.num_heads" values: ["2", "4"] label: "heads" }
    })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(Labels(*g), ElementsAre("num_layers=1 d_model=16 heads=2", "num_layers=1 d_model=32 heads=4",
                                      "num_layers=2 d_model=16 heads=2", "num_layers=2 d_model=32 heads=4"));
  EXPECT_EQ(g->cells[3].runs[0].spec.model().num_heads(), 4);
  EXPECT_EQ(g->cells[3].runs[0].spec.model().d_model(), 32);
  EXPECT_EQ(g->cells[3].runs[0].spec.model().num_layers(), 2);
}

TEST(GridLoader, InvalidCellsAreKeptWithTheirReason) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.num_heads" values: ["2", "3", "4"] }
    axis { field: "model.position.plugin" values: ["sinusoidal", "sinusodial"] })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 6u);
  EXPECT_EQ(g->num_invalid(), 4);  // heads=3 (both), and the misspelt plugin with 2 and 4 heads
  EXPECT_TRUE(g->cells[0].valid());
  EXPECT_FALSE(g->cells[1].valid());
  EXPECT_TRUE(g->cells[1].runs.empty());
  EXPECT_THAT(g->cells[1].invalid_reason, HasSubstr("unknown position encoding plugin 'sinusodial'"));
  EXPECT_THAT(g->cells[2].invalid_reason,
              HasSubstr("model.num_heads: d_model (16) must be divisible by num_heads (3)"));
  std::string report = InvalidCellsReport(*g);
  EXPECT_THAT(report, HasSubstr("4 of 6 cells are invalid:\n"));
  EXPECT_THAT(report, HasSubstr("  num_heads=3 plugin=sinusoidal:\n    model.num_heads: d_model (16)"));
  EXPECT_TRUE(InvalidCellsReport(*Expand(R"pb(base_spec: "base.pbtxt")pb")).empty());
}

TEST(GridLoader, ACellThatChangesNothingIsReportedAsADuplicate) {
  auto g = Expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.d_ff" values: ["0", "64"] })pb");  // relu's default width is 4 * 16 = 64
  ASSERT_TRUE(g.ok()) << g.status();
  // d_ff 0 resolves to the width it means (64), so both cells are one spec.
  EXPECT_EQ(g->num_invalid(), 1);
  EXPECT_THAT(g->cells[1].invalid_reason, HasSubstr("same spec as cell 'd_ff=0'"));
  auto same = Expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.dropout" values: ["0.1", "0.10"] })pb");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_THAT(same->cells[1].invalid_reason, HasSubstr("same spec as cell 'dropout=0.1'"));
}

TEST(GridLoader, BaselineSelectsExactlyOneCell) {
  const std::string axes = R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "sinusoidal"] }
    axis { field: "model.norm.placement" values: ["pre_ln", "post_ln"] label: "norm" })pb";
  auto g = Expand(axes + R"pb( baseline: ["model.position.plugin=sinusoidal", "norm=post_ln"])pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->baseline, 3);
  EXPECT_THAT(std::string(Expand(axes + R"pb( baseline: "norm=post_ln")pb").status().message()),
              HasSubstr("selects 2 cells (plugin=none norm=post_ln; plugin=sinusoidal norm=post_ln); "
                        "it must select exactly one"));
  EXPECT_THAT(std::string(Expand(axes + R"pb( baseline: "model.d_model=16")pb").status().message()),
              HasSubstr("no axis varies 'model.d_model'"));
}

TEST(GridLoader, GridMistakesAreErrorsWithWhereAndHow) {
  EXPECT_THAT(std::string(Expand(R"pb(axis { field: "seed" values: "1" })pb").status().message()),
              HasSubstr("the grid has no base experiment"));
  EXPECT_THAT(std::string(Expand(R"pb(base_spec: "missing.pbtxt")pb").status().message()),
              HasSubstr("base_spec: cannot read spec file"));
  EXPECT_THAT(std::string(Expand(R"pb(base_spec: "base.pbtxt" axis { field: "model.d_model" })pb")
                              .status()
                              .message()),
              HasSubstr("axis[0] (model.d_model): values is empty"));
  EXPECT_THAT(std::string(Expand(R"pb(base_spec: "base.pbtxt"
                                     zip { axis { field: "model.d_model" values: ["16", "32"] }
                                           axis { field: "model.num_heads" values: ["2"] } })pb")
                              .status()
                              .message()),
              HasSubstr("zip[0]: model.num_heads has 1 values but model.d_model has 2"));
  absl::Status typo = Expand("base_spec: \"base.pbtxt\"\naxis { feild: \"x\" }\n").status();
  EXPECT_THAT(std::string(typo.message()), HasSubstr("g.grid.pbtxt:2:"));
  EXPECT_THAT(std::string(typo.message()), HasSubstr("did you mean \"field\"?"));
}

// A grid of 2,000 x 1,000 values, or 100,000 seeds, expanded every cell
// (resolving and validating each) for a minute in silence.
TEST(GridLoader, TheRunCountIsBoundedBeforeExpansion) {
  std::string values, seeds;
  for (int i = 0; i < 2000; ++i) absl::StrAppend(&values, i ? ", " : "", "\"", i + 1, "\"");
  for (int i = 0; i < 100000; ++i) absl::StrAppend(&seeds, i ? ", " : "", i);
  absl::Status big = Expand(absl::StrCat(R"pb(base_spec: "base.pbtxt" axis { field: "model.d_model" values: [)pb",
                                         values, "] } axis { field: \"train.steps\" values: [", values, "] }"))
                         .status();
  EXPECT_THAT(std::string(big.message()),
              HasSubstr("the grid expands to 4000000 runs (model.d_model: 2000 x train.steps: 2000), "
                        "more than max_runs 10000"));
  absl::Status many_seeds = Expand(absl::StrCat(R"pb(base_spec: "base.pbtxt" seeds: [)pb", seeds, "]")).status();
  EXPECT_THAT(std::string(many_seeds.message()), HasSubstr("100000 runs (seeds: 100000)"));
  // Raised on purpose, the bound lets the grid through (3 seeds, 2 allowed: not).
  EXPECT_FALSE(Expand(R"pb(base_spec: "base.pbtxt" seeds: [1, 2, 3] max_runs: 2)pb").ok());
  EXPECT_TRUE(Expand(R"pb(base_spec: "base.pbtxt" seeds: [1, 2, 3] max_runs: 3)pb").ok());
  EXPECT_THAT(std::string(Expand(R"pb(base_spec: "base.pbtxt" max_runs: 0)pb").status().message()),
              HasSubstr("max_runs: 0 must be at least 1"));
}

TEST(GridLoader, TwoAxesMayNotShareALabel) {
  absl::Status s = Expand(R"pb(base_spec: "base.pbtxt"
                               axis { field: "model.d_model" values: ["16", "32"] label: "x" }
                               axis { field: "train.steps" values: ["2", "3"] label: "x" })pb")
                       .status();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("axes model.d_model and train.steps have the same label 'x'"));
  // An explicit label equal to another axis's default name clashes too.
  EXPECT_FALSE(Expand(R"pb(base_spec: "base.pbtxt"
                           axis { field: "model.d_model" values: ["16"] }
                           axis { field: "model.attention.layout" values: ["mha"] label: "d_model" })pb")
                   .ok());
}

TEST(GridLoader, InlineBaseAndDefaultSeed) {
  auto g = Expand(std::string("base {") + kBase + "} axis { field: \"seed\" values: [\"5\"] }");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 1u);
  ASSERT_EQ(g->cells[0].runs.size(), 1u);
  EXPECT_EQ(g->cells[0].runs[0].seed, 5u);  // no seeds list: the spec's own seed
  EXPECT_THAT(std::string(Expand(std::string("base {") + kBase +
                                 "} axis { field: \"seed\" values: [\"5\"] } seeds: [1, 2]")
                              .status()
                              .message()),
              HasSubstr("list the seeds in `seeds` only"));
}

// The default optimizer and schedule, plugins now, as resolution wrote them
// before: the old spellings with every field written out.
void WriteTheOldOptimizerSpelling(Experiment* spec) {
  LrSchedule* schedule = spec->mutable_train()->mutable_lr_schedule();
  schedule->Clear();
  const auto* d = LrSchedule::descriptor();
  schedule->GetReflection()->SetEnumValue(schedule, d->FindFieldByName("kind"), LrSchedule::CONSTANT);
  schedule->GetReflection()->SetInt32(schedule, d->FindFieldByName("warmup_steps"), 0);
  schedule->GetReflection()->SetFloat(schedule, d->FindFieldByName("min_lr_ratio"), 0.0f);
  AdamWSpec old;
  old.set_lr(old.lr()), old.set_beta1(old.beta1()), old.set_beta2(old.beta2()), old.set_eps(old.eps());
  old.set_weight_decay(old.weight_decay()), old.set_decay_biases_and_norms(true), old.set_decay_embeddings(true);
  spec->mutable_train()->clear_optimizer();
  *spec->mutable_train()->mutable_optimizer()->mutable_adamw() = old;
}

TEST(RunKey, FnvMatchesPublishedVectors) {
  // Test vectors of the FNV-1a 64-bit hash (Fowler, Noll, Vo).
  EXPECT_EQ(Fnv1a64Hex(""), "cbf29ce484222325");
  EXPECT_EQ(Fnv1a64Hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(Fnv1a64Hex("foobar"), "85944171f73967e8");
}

TEST(RunKey, FollowsTheResolvedSpecButNotItsName) {
  std::string path = Write("key.pbtxt", kBase);
  auto a = LoadExperiment(path, {});
  auto b = LoadExperiment(path, {"name=renamed"});
  auto c = LoadExperiment(path, {"seed=1"});
  auto d = LoadExperiment(path, {"model.dropout=0.1"});  // the default, written out
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(RunKey(*a).size(), 16u);
  EXPECT_EQ(RunKey(*a), RunKey(*b));
  EXPECT_NE(RunKey(*a), RunKey(*c));
  EXPECT_EQ(RunKey(*a), RunKey(*d));
  // Resolving a resolved spec again (what the spawned run binary does) keeps
  // the key.
  auto again = ResolveExperiment(*a, {}, "again", "x");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(RunKey(*again), RunKey(*a));
}

// A run trained before train.z_loss existed is keyed without it; the grid
// finds its directory under that older key instead of training it again,
// and a run of the current key wins where both exist.
TEST(RunKey, RunsTrainedBeforeZLossAreFoundUnderTheirOlderKey) {
  auto first = Expand(R"pb(base_spec: "base.pbtxt" seeds: [0])pb");
  ASSERT_TRUE(first.ok()) << first.status();
  const GridRun& run = first->cells[0].runs[0];
  const std::vector<std::string> older = OlderRunKeys(run.spec);
  ASSERT_EQ(older.size(), 1u);
  EXPECT_NE(older[0], run.key);
  Experiment before = run.spec;
  before.mutable_train()->clear_z_loss();
  EXPECT_EQ(older[0], RunKey(before));
  const std::string runs = TempPath("cwd") + "/runs/g/runs/";
  std::filesystem::create_directories(runs + older[0]);
  auto again = Expand(R"pb(base_spec: "base.pbtxt" seeds: [0])pb");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cells[0].runs[0].key, older[0]);
  EXPECT_EQ(again->cells[0].runs[0].run_dir, runs + older[0]);
  std::filesystem::create_directories(runs + run.key);
  auto both = Expand(R"pb(base_spec: "base.pbtxt" seeds: [0])pb");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->cells[0].runs[0].key, run.key);
  // A z_loss other than 0 has no older key.
  Experiment with_z_loss = run.spec;
  with_z_loss.mutable_train()->set_z_loss(1e-4f);
  EXPECT_TRUE(OlderRunKeys(with_z_loss).empty());
  std::filesystem::remove_all(runs);
}

// The train fields that exist when this test was last updated. A field
// added to TrainSpec is written out in every resolved spec, so it changes
// the key of every finished run unless ClearLaterFieldsAtDefault (run_key.cc)
// leaves it out at its default: add it there (with a case above) and here.
// (train.step_capture once went in without it, and every study's run
// directory lost its key until this test was added.)
TEST(RunKey, EveryTrainFieldIsKnownToTheKey) {
  const std::set<std::string> known = {
      "steps", "batch_size", "optimizer", "log_every", "lr_schedule", "clip_grad_norm",
      "grad_accumulation", "label_smoothing", "eval_every", "checkpoint_every",
      "divergence_loss", "fail_on_divergence",
      "activation_checkpointing", "probe_every", "z_loss", "step_capture", "step_profile"};
  const google::protobuf::Descriptor* d = TrainSpec::descriptor();
  for (int i = 0; i < d->field_count(); ++i)
    EXPECT_EQ(known.count(d->field(i)->name()), 1u)
        << "train." << d->field(i)->name() << " is new: decide in run_key.cc's "
        << "ClearLaterFieldsAtDefault whether it is left out of the run key at its default";
}

// Fields added to the schema later (train.divergence_loss,
// train.fail_on_divergence, eval.context_length, runtime.attention,
// runtime.precision, eval.decode_speed_tokens, eval.context_lengths,
// eval.context_targets) are
// written out in the
// resolved spec but leave the key as it was before they existed while at
// their defaults, so finished runs are found again; other values count.
TEST(RunKey, FieldsAddedLaterKeepOldKeysAtTheirDefaults) {
  auto a = LoadExperiment(Write("later.pbtxt", kBase), {});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->train().has_divergence_loss());  // resolved: every default written out
  Experiment before = *a;  // what a binary without these fields resolved
  before.clear_name();
  before.mutable_train()->clear_divergence_loss();
  before.mutable_train()->clear_fail_on_divergence();
  before.mutable_eval()->clear_context_length();
  before.mutable_eval()->clear_decode_speed_tokens();
  before.mutable_eval()->clear_context_targets();
  before.mutable_runtime()->clear_attention();
  before.mutable_runtime()->clear_precision();
  before.mutable_train()->clear_step_capture();
  before.mutable_train()->clear_step_profile();
  WriteTheOldOptimizerSpelling(&before);
  EXPECT_EQ(RunKey(*a), Fnv1a64Hex(SpecToText(before)));
  // train.step_capture: written out at CAPTURE_AUTO, keyed only when set
  // otherwise (the studies' runs were trained before it existed).
  ASSERT_TRUE(a->train().has_step_capture());
  Experiment eager = *a;
  eager.mutable_train()->set_step_capture(TrainSpec::CAPTURE_OFF);
  EXPECT_NE(RunKey(eager), RunKey(*a));
  // train.step_profile likewise: written out false, keyed only when on.
  ASSERT_TRUE(a->train().has_step_profile());
  Experiment profiled = *a;
  profiled.mutable_train()->set_step_profile(true);
  EXPECT_NE(RunKey(profiled), RunKey(*a));
  // Other optimizer settings than the old spelling could say change the key.
  auto slower_head = LoadExperiment(Write("head.pbtxt", kBase), {"train.optimizer.groups.head.lr_multiplier=0.5"});
  ASSERT_TRUE(slower_head.ok()) << slower_head.status();
  EXPECT_NE(RunKey(*slower_head), RunKey(*a));
  Experiment threshold = *a, fail = *a, longer = *a, unfused = *a, bf16 = *a;
  unfused.mutable_runtime()->set_attention("unfused");
  EXPECT_NE(RunKey(unfused), RunKey(*a));
  bf16.mutable_runtime()->set_precision("bf16");
  EXPECT_NE(RunKey(bf16), RunKey(*a));
  threshold.mutable_train()->set_divergence_loss(10);
  fail.mutable_train()->set_fail_on_divergence(true);
  longer.mutable_eval()->set_context_length(1024);
  EXPECT_NE(RunKey(threshold), RunKey(*a));
  EXPECT_NE(RunKey(fail), RunKey(*a));
  EXPECT_NE(RunKey(longer), RunKey(*a));
  // eval.decode_speed_tokens and eval.context_lengths (added with the
  // reproductions): at their defaults (0, empty) they are in `before` above
  // neither written nor keyed; set, they change the key.
  ASSERT_TRUE(a->eval().has_decode_speed_tokens());
  Experiment timed = *a, contexts = *a;
  timed.mutable_eval()->set_decode_speed_tokens(64);
  contexts.mutable_eval()->add_context_lengths(256);
  EXPECT_NE(RunKey(timed), RunKey(*a));
  EXPECT_NE(RunKey(contexts), RunKey(*a));
  // eval.context_targets: written out at 0, keyed only when set.
  ASSERT_TRUE(a->eval().has_context_targets());
  Experiment same_targets = contexts;
  same_targets.mutable_eval()->set_context_targets(128);
  EXPECT_NE(RunKey(same_targets), RunKey(contexts));
}

// A text task's tokenizer option (added later; bytes by default) is written
// into the resolved task options; at its default it leaves the key alone
// (the scaling_positions runs were trained before it existed).
TEST(RunKey, DefaultTokenizerOfATextTaskKeepsTheOldKey) {
  const std::string spec =
      "name: \"lm\"\nmodel { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
      "task { plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { "
      "path: \"/usr/share/common-licenses/GPL-3\" context_length: 16 } } }\n"
      "train { steps: 2 }\neval { examples: 2 }\n";
  auto bytes = LoadExperiment(Write("lm.pbtxt", spec), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_NE(SpecToText(*bytes).find("tokenizer"), std::string::npos);  // written out
  Experiment before = *bytes;  // what a binary without the option resolved
  before.clear_name();
  before.mutable_train()->clear_divergence_loss();
  before.mutable_train()->clear_fail_on_divergence();
  before.mutable_eval()->clear_context_length();
  before.mutable_eval()->clear_decode_speed_tokens();
  before.mutable_eval()->clear_context_targets();
  before.mutable_runtime()->clear_attention();
  before.mutable_runtime()->clear_precision();
  before.mutable_train()->clear_step_capture();
  before.mutable_train()->clear_step_profile();
  TextLmOptions options;
  ASSERT_TRUE(before.task().options().UnpackTo(&options));
  options.clear_tokenizer();
  before.mutable_task()->mutable_options()->PackFrom(options);
  WriteTheOldOptimizerSpelling(&before);
  EXPECT_EQ(RunKey(*bytes), Fnv1a64Hex(SpecToText(before)));
  auto sentencepiece = LoadExperiment(
      Write("lm.pbtxt", spec), {"task.options.tokenizer.kind=SENTENCEPIECE",
                                "task.options.tokenizer.vocab_size=500"});
  ASSERT_TRUE(sentencepiece.ok()) << sentencepiece.status();
  EXPECT_NE(RunKey(*sentencepiece), RunKey(*bytes));
}

TEST(LooksLikeGridSpec, TellsGridsFromExperiments) {
  EXPECT_FALSE(LooksLikeGridSpec(kBase));
  EXPECT_TRUE(LooksLikeGridSpec("# a grid\nbase_spec: \"x\"\n"));
  EXPECT_TRUE(LooksLikeGridSpec("name: \"g\"\nbase { name: \"t\" }\naxis { field: \"seed\" }"));
  // Grid field names nested inside an experiment or in comments do not count.
  EXPECT_FALSE(LooksLikeGridSpec("# axis { }\nmodel { family: ENCODER_ONLY }\n"));
  EXPECT_FALSE(LooksLikeGridSpec("model { base_spec: 1 }"));
  std::string text;
  ASSERT_TRUE(ReadTextFile(std::string(getenv("TEST_SRCDIR")) + "/tvlab/configs/sort_digits.pbtxt",
                           "spec", &text)
                  .ok());
  EXPECT_FALSE(LooksLikeGridSpec(text));
}

}  // namespace
}  // namespace tvlab
