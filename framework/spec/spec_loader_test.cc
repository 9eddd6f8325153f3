// Bad specs get messages that say where, what and how to fix; good specs
// resolve every default. Each case feeds one mistake.

#include "framework/spec/spec_loader.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/shipped_configs.h"
#include "google/protobuf/empty.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const char kGood[] = R"pb(name: "t"
model {
  family: ENCODER_ONLY
  d_model: 16
  num_layers: 1
  num_heads: 2
}
task { plugin: "sort_digits" }
train { steps: 3 }
)pb";

std::string WriteTemp(const std::string& text) {
  static int n = 0;
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/spec" + std::to_string(n++) + ".pbtxt";
  std::ofstream(path) << text;
  return path;
}

absl::Status Load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return LoadExperiment(WriteTemp(text), overrides).status();
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(SpecLoader, GoodSpecResolvesEveryDefault) {
  auto spec = LoadExperiment(WriteTemp(kGood), {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->model().has_dropout());
  EXPECT_FLOAT_EQ(spec->model().dropout(), 0.1f);
  EXPECT_EQ(spec->model().attention().layout(), "mha");
  EXPECT_EQ(spec->model().attention().layout_options().type_url(),
            "type.googleapis.com/tvlab.MhaOptions");
  EXPECT_EQ(spec->train().optimizer().plugin(), "adamw");
  EXPECT_EQ(spec->train().optimizer().options().type_url(), "type.googleapis.com/tvlab.AdamWOptions");
  EXPECT_FALSE(spec->train().optimizer().has_adamw());
  EXPECT_TRUE(spec->train().optimizer().groups().matrix().has_lr_multiplier());
  EXPECT_EQ(spec->model().max_seq_len(), 8);  // from the task
  std::string text = SpecToText(*spec);
  EXPECT_THAT(text, HasSubstr("[type.googleapis.com/tvlab.SinusoidalOptions]"));
  EXPECT_THAT(text, HasSubstr("base: 10000"));
  // The resolved text parses back to the same spec.
  auto again = ParseSpecText(text, "resolved");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->DebugString(), spec->DebugString());
}

TEST(SpecLoader, SyntaxErrorNamesFileLineAndColumn) {
  std::string path = WriteTemp("name: \"t\"\nmodel {\n  d_model: 16\n  num_layers 1 }\n}\n");
  absl::Status s = LoadExperiment(path, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path + ":4:"));
}

TEST(SpecLoader, UnknownFieldNamesLineAndSuggestsTheClosest) {
  std::string path = WriteTemp(Replace(kGood, "  d_model: 16", "  d_modle: 16"));
  absl::Status s = LoadExperiment(path, {}).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr(path + ":4:"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Message type \"tvlab.ModelSpec\" has no field named \"d_modle\""));
  EXPECT_THAT(std::string(s.message()), HasSubstr("did you mean \"d_model\"?"));
}

// document_mask belongs to token_store (it packs documents); a task with no
// documents to mask refuses it, naming the task that has it and the fix.
TEST(SpecLoader, AnotherTasksOptionNamesTheTaskThatHasIt) {
  std::string path = WriteTemp(Replace(
      kGood, "task { plugin: \"sort_digits\" }",
      "task { plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] {\n"
      "  path: \"/usr/share/common-licenses/GPL-3\" document_mask: true } } }"));
  absl::Status s = LoadExperiment(path, {}).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr(path + ":"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("Message type \"tvlab.TextLmOptions\" has no field named \"document_mask\""));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("\"document_mask\" is an option of task token_store: use that task or "
                        "remove the field"));
  // Not for a field of a message other than a task's options.
  s = LoadExperiment(WriteTemp(Replace(kGood, "  d_model: 16", "  context_length: 16")), {}).status();
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("is an option of task")));
}

TEST(SpecLoader, UnknownPluginListsRegisteredOnes) {
  absl::Status s = Load(Replace(kGood, "  num_heads: 2\n", "  num_heads: 2\n  attention { layout: \"mhq\" }\n"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.attention.layout: unknown attention layout plugin 'mhq'; registered: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("did you mean 'mha'?"));
}

TEST(SpecLoader, HeadsMustDivideWidth) {
  absl::Status s = Load(Replace(kGood, "num_heads: 2", "num_heads: 3"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.num_heads: d_model (16) must be divisible by num_heads (3); divisors of d_model: 1, 2, 4, 8, 16"));
}

TEST(SpecLoader, ZeroAndNegativeSizesAreRejectedWithTheFieldPath) {
  EXPECT_THAT(std::string(Load(Replace(kGood, "num_layers: 1", "num_layers: 0")).message()),
              HasSubstr("model.num_layers must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(Replace(kGood, "d_model: 16", "d_model: -4")).message()),
              HasSubstr("model.d_model must be > 0 (got -4)"));
  EXPECT_THAT(std::string(Load(Replace(kGood, "steps: 3", "steps: 0")).message()),
              HasSubstr("train.steps must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(kGood, {"task.options.length=0"}).message()),
              HasSubstr("task (sort_digits): task.options.length must be > 0 (got 0)"));
}

TEST(SpecLoader, MissingTaskAndFamilyAreRequired) {
  absl::Status s = Load(Replace(Replace(kGood, "task { plugin: \"sort_digits\" }\n", ""), "family: ENCODER_ONLY\n", ""));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("task.plugin is required; e.g. task { plugin: \"sort_digits\" } "
                                     "(registered tasks: ",
                                     absl::StrJoin(PluginKindById("task").names(), ", "), ")")));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.family is required"));
}

TEST(SpecLoader, TrainingFeatureFieldsAreChecked) {
  EXPECT_THAT(std::string(Load(kGood, {"train.grad_accumulation=0"}).message()),
              HasSubstr("train.grad_accumulation must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(kGood, {"train.label_smoothing=1.5"}).message()),
              HasSubstr("train.label_smoothing must be in [0, 1) (got 1.5)"));
  EXPECT_THAT(std::string(Load(kGood, {"train.lr_schedule.kind=INVERSE_SQRT", "train.lr_schedule.warmup_steps=0"}).message()),
              HasSubstr("train.lr_schedule.options (inverse_sqrt): warmup_steps must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(kGood, {"train.clip_grad_norm=-1"}).message()),
              HasSubstr("train.clip_grad_norm must be >= 0 (got -1)"));
  EXPECT_THAT(std::string(Load(kGood, {"train.probe_every=-2"}).message()),
              HasSubstr("train.probe_every must be >= 0 (got -2); 0 turns the training probes off"));
}

TEST(SpecLoader, DecodingFieldsAreChecked) {
  EXPECT_THAT(std::string(Load(kGood, {"eval.decoding.beam_size=0"}).message()),
              HasSubstr("eval.decoding.beam_size must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(kGood, {"eval.decoding.temperature=0"}).message()),
              HasSubstr("eval.decoding.temperature must be > 0 (got 0)"));
  EXPECT_THAT(std::string(Load(kGood, {"eval.decoding.top_k=-2"}).message()),
              HasSubstr("eval.decoding.top_k must be >= 0 (got -2)"));
}

TEST(SpecLoader, AllProblemsAreReportedAtOnce) {
  absl::Status s = Load(Replace(Replace(kGood, "num_layers: 1", "num_layers: 0"), "steps: 3", "steps: -1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.num_layers"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("train.steps"));
}

TEST(SpecLoader, UnreadableFileIsNamed) {
  absl::Status s = LoadExperiment("/nonexistent/spec.pbtxt", {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cannot read spec file '/nonexistent/spec.pbtxt': No such file or directory"));
}

TEST(SpecLoader, OverridesSetScalarsEnumsAndPluginOptions) {
  auto spec = LoadExperiment(WriteTemp(kGood), {"model.num_heads=4", "model.position.options.base=500",
                                                "model.norm.placement=post_ln", "seed=7"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().num_heads(), 4);
  EXPECT_EQ(spec->seed(), 7u);
  EXPECT_EQ(spec->model().norm().placement(), "post_ln");
  EXPECT_THAT(SpecToText(*spec), HasSubstr("base: 500"));
}

TEST(SpecLoader, BadOverridesSayWhatIsWrong) {
  EXPECT_THAT(std::string(Load(kGood, {"model.d_modle=3"}).message()),
              HasSubstr("--set model.d_modle: tvlab.ModelSpec has no field 'd_modle'; its fields: family, d_model"));
  EXPECT_THAT(std::string(Load(kGood, {"model.d_model=abc"}).message()),
              HasSubstr("--set model.d_model=abc: 'abc' is not an integer (int32)"));
  EXPECT_THAT(std::string(Load(kGood, {"model.family=DECODER"}).message()),
              HasSubstr("is not one of FAMILY_UNSPECIFIED, ENCODER_ONLY, DECODER_ONLY, ENCODER_DECODER"));
  EXPECT_THAT(std::string(Load(kGood, {"model.d_model"}).message()), HasSubstr("expected field.path=value"));
  EXPECT_THAT(std::string(Load(kGood, {"model.position.options.nope=1"}).message()),
              HasSubstr("tvlab.SinusoidalOptions has no field 'nope'; its fields: base"));
}

// The attention options (model.attention fields 6..9): validated with the
// field path, and written into the resolved spec, defaults included.
TEST(SpecLoader, AttentionOptionsAreValidatedAndResolved) {
  EXPECT_THAT(std::string(Load(kGood, {"model.attention.logit_softcap=-1"}).message()),
              HasSubstr("model.attention.logit_softcap must be 0 (off) or a finite number > 0 "
                        "(got -1)"));
  EXPECT_THAT(std::string(Load(kGood, {"model.attention.sink=YES"}).message()),
              HasSubstr("is not one of NONE, OFF_BY_ONE, LEARNED"));
  auto plain = LoadExperiment(WriteTemp(kGood), {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(SpecToText(*plain), HasSubstr("logit_softcap: 0"));
  EXPECT_THAT(SpecToText(*plain), HasSubstr("sink: NONE"));
  auto spec = LoadExperiment(WriteTemp(kGood),
                             {"model.attention.qk_norm=LAYERNORM", "model.attention.sink=LEARNED",
                              "model.attention.output_gate=ELEMENTWISE",
                              "model.attention.logit_softcap=50"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string text = SpecToText(*spec);
  for (const char* field : {"qk_norm: LAYERNORM", "sink: LEARNED", "output_gate: ELEMENTWISE",
                            "logit_softcap: 50"})
    EXPECT_THAT(text, HasSubstr(field));
}

// A learned sink and the output gate have one parameter per model head;
// differential attends with num_heads / 2, so both are refused with it,
// naming the field and the fix; the off-by-one sink has no parameter.
TEST(SpecLoader, PerHeadAttentionOptionsAreRefusedWithDifferential) {
  const std::string differential = "model.attention.layout=differential";
  EXPECT_THAT(std::string(Load(kGood, {differential, "model.attention.sink=LEARNED"}).message()),
              HasSubstr("model.attention.sink: LEARNED learns one per model head, but layout "
                        "'differential' attends with fewer heads"));
  EXPECT_THAT(std::string(Load(kGood, {differential, "model.attention.output_gate=HEADWISE"})
                              .message()),
              HasSubstr("model.attention.output_gate learns one per model head"));
  EXPECT_TRUE(Load(kGood, {differential, "model.attention.sink=OFF_BY_ONE"}).ok());
  EXPECT_TRUE(Load(kGood, {"model.attention.sink=LEARNED"}).ok());
}

TEST(SpecLoader, OptionsOfTheWrongTypeNameBothTypes) {
  absl::Status s = Load(Replace(kGood, "  num_heads: 2\n",
                                "  num_heads: 2\n  position { plugin: \"sinusoidal\" options { "
                                "[type.googleapis.com/tvlab.LayerNormOptions] { eps: 1 } } }\n"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.position.options: plugin 'sinusoidal' takes options of type tvlab.SinusoidalOptions, but tvlab.LayerNormOptions was given"));
}

TEST(SpecLoader, PluginValidationIsPrefixedWithItsFieldPath) {
  absl::Status s = Load(kGood, {"model.position.options.base=0.5"});
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.position.options (sinusoidal): options.base must be > 1 (got 0.5)"));
}

TEST(SpecLoader, ChangingAPluginDropsTheOldPluginsOptions) {
  std::string text = Replace(kGood, "  num_heads: 2\n",
                             "  num_heads: 2\n  position { plugin: \"sinusoidal\" options { "
                             "[type.googleapis.com/tvlab.SinusoidalOptions] { base: 100 } } }\n");
  auto spec = LoadExperiment(WriteTemp(text), {"model.position.plugin=none"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(SpecToText(*spec), HasSubstr("tvlab.NoPositionOptions"));
}

TEST(SpecLoader, EveryShippedConfigValidates) {
  // Every configs/*.pbtxt (the //configs:all glob), so a new config is
  // checked without being listed here.
  const std::vector<std::string> paths = ShippedConfigs();
  std::vector<std::string> names;
  for (const std::string& path : paths) names.push_back(path.substr(path.rfind('/') + 1));
  EXPECT_THAT(names, ::testing::IsSupersetOf({"sort_digits.pbtxt", "sort_digits_rope.pbtxt"}));
  for (const std::string& path : paths) {
    auto spec = LoadExperiment(path, {});
    EXPECT_TRUE(spec.ok()) << path << ": " << spec.status();
  }
}

// A layout that declares no capabilities (as a new plugin written without
// thinking about positions would), registered only in this test binary.
class PlainLayout : public AttentionLayout {
 public:
  static std::unique_ptr<AttentionLayout> Create(const google::protobuf::Empty&, const ModelDims&) {
    return std::make_unique<PlainLayout>();
  }
  Var Forward(const AttentionInput& in) const override { return in.x; }
  int64_t KvCacheBytesPerToken(int64_t) const override { return 0; }
};
TVLAB_REGISTER_ATTENTION_LAYOUT("test_plain_layout", PlainLayout, google::protobuf::Empty);

TEST(SpecLoader, PositionsALayoutCannotApplyAreRejectedWithTheReason) {
  std::vector<std::string> layout = {"model.attention.layout=test_plain_layout"};
  EXPECT_TRUE(LoadExperiment(WriteTemp(kGood), layout).ok());  // sinusoidal acts on embeddings
  auto rope = layout;
  rope.push_back("model.position.plugin=rope");
  EXPECT_THAT(std::string(Load(kGood, rope).message()),
              HasSubstr("model.position.plugin: 'rope' rotates queries and keys inside attention, "
                        "but attention layout 'test_plain_layout' does not declare that it applies it"));
  auto alibi = layout;
  alibi.push_back("model.position.plugin=alibi");
  EXPECT_THAT(std::string(Load(kGood, alibi).message()),
              HasSubstr("'alibi' adds a bias to attention logits, but attention layout 'test_plain_layout'"));
  // Every registered layout gets rope and alibi exactly when it declares
  // that it applies them.
  const PluginKind& layouts = PluginKindById("attention_layout");
  int applying = 0;
  for (const std::string& l : layouts.names())
    for (const auto& [p, capability] : std::vector<std::pair<std::string, uint32_t>>{
             {"rope", kAppliesRotaryPositions}, {"alibi", kAppliesLogitBias}}) {
      const bool declared = (layouts.capabilities(l) & capability) != 0;
      applying += declared;
      EXPECT_EQ(LoadExperiment(WriteTemp(kGood), {"model.attention.layout=" + l,
                                                  "model.position.plugin=" + p})
                    .ok(),
                declared)
          << l << " + " << p;
    }
  EXPECT_GT(applying, 0) << "no registered layout applies rope or alibi";
}

TEST(SpecLoader, NamesThatWouldLeaveTheRunsDirectoryAreRefused) {
  for (const char* bad : {"../../../x", "a/b", "..", "with space"}) {
    absl::Status s = Load(kGood, {std::string("name=") + bad});
    EXPECT_THAT(std::string(s.message()), HasSubstr("must be letters, digits, '.', '_' and '-' only"))
        << bad;
  }
  EXPECT_TRUE(Load(kGood, {"name=sort_digits-rope.v2"}).ok());
}

TEST(PluginKinds, CoverEveryKindOnce) {
  std::vector<std::string> kinds;
  for (const PluginKind& kind : PluginKinds()) kinds.push_back(kind.id);
  EXPECT_EQ(kinds, (std::vector<std::string>{"attention_score", "attention_layout", "position",
                                             "normalization", "placement", "ffn", "task", "optimizer",
                                             "schedule", "init"}));
}

// The old spelling train.optimizer { adamw { ... } } resolves into the
// plugin form with the same settings, also through --set, and its decay
// switches become the groups'.
TEST(SpecLoader, TheOldOptimizerSpellingResolvesIntoThePluginForm) {
  const std::string old = Replace(kGood, "train { steps: 3 }",
                                  "train { steps: 3 optimizer { adamw { lr: 3e-3 beta2: 0.95 "
                                  "decay_biases_and_norms: false } } }");
  auto spec = LoadExperiment(WriteTemp(old), {"train.optimizer.adamw.eps=1e-6"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const OptimizerSpec& o = spec->train().optimizer();
  EXPECT_FALSE(o.has_adamw());
  EXPECT_EQ(o.plugin(), "adamw");
  std::string text = SpecToText(*spec);
  EXPECT_THAT(text, HasSubstr("[type.googleapis.com/tvlab.AdamWOptions]"));
  EXPECT_THAT(text, HasSubstr("lr: 0.003"));
  EXPECT_THAT(text, HasSubstr("beta2: 0.95"));
  EXPECT_THAT(text, HasSubstr("eps: 1e-06"));
  EXPECT_FALSE(o.groups().bias().weight_decay());
  EXPECT_FALSE(o.groups().norm().weight_decay());
  EXPECT_TRUE(o.groups().embedding().weight_decay());
  EXPECT_TRUE(o.groups().matrix().weight_decay());
  // A --set through the options after the old spelling: both reach the plugin.
  auto mixed = LoadExperiment(WriteTemp(old), {"train.optimizer.options.weight_decay=0.5",
                                               "train.optimizer.adamw.lr=0.02"});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_THAT(SpecToText(*mixed), HasSubstr("weight_decay: 0.5"));
  EXPECT_THAT(SpecToText(*mixed), HasSubstr("lr: 0.02"));
  // With another plugin the old spelling is an error naming both.
  EXPECT_THAT(std::string(Load(old, {"train.optimizer.plugin=nonesuch"}).message()),
              HasSubstr("train.optimizer.adamw is the old spelling"));
}

TEST(SpecLoader, PluginDefaultsComeFromTheKindTable) {
  auto spec = LoadExperiment(WriteTemp(kGood), {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  for (const PluginKind& kind : PluginKinds())
    if (!kind.default_plugin.empty()) {
      EXPECT_EQ(PluginNameIn(*spec, kind), kind.default_plugin) << kind.id;
    }
}

TEST(SpecLoader, TheOldTaskSyntaxSaysHowToRewriteIt) {
  absl::Status s = Load(Replace(kGood, "task { plugin: \"sort_digits\" }", "task { sort_digits { length: 6 } }"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("tasks are plugins now: rewrite task { sort_digits { ... } } as"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("task { plugin: \"sort_digits\" options { [type.googleapis.com/tvlab.SortDigitsOptions] { ... } } }"));
}

TEST(SpecLoader, TaskOptionsAreSetThroughTheAny) {
  auto spec = LoadExperiment(WriteTemp(kGood), {"task.options.length=5"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().max_seq_len(), 5);
  EXPECT_THAT(SpecToText(*spec), HasSubstr("length: 5"));
}

TEST(SpecLoader, AutomaticSizesAreResolvedToTheSizesUsed) {
  // d_model 16 / 2 heads: head_dim 8, so MLA's latent is 4 * 8 and its rotary
  // part 8 / 2; the ReLU FFN is 4 * 16 wide.
  auto spec = LoadExperiment(WriteTemp(kGood), {"model.attention.layout=mla"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string text = SpecToText(*spec);
  EXPECT_THAT(text, HasSubstr("kv_latent_dim: 32"));
  EXPECT_THAT(text, HasSubstr("rope_head_dim: 4"));
  EXPECT_THAT(text, HasSubstr("q_latent_dim: 0"));  // 0 = no query latent: a setting, not a size
  EXPECT_EQ(spec->model().d_ff(), 64);
  // Loading the resolved spec again changes nothing.
  auto again = LoadExperiment(WriteTemp(text), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SpecToText(*again), text);
  // Sizes a spec sets stay as set.
  auto set = LoadExperiment(WriteTemp(kGood), {"model.attention.layout=mla", "model.d_ff=40",
                                               "model.attention.layout_options.kv_latent_dim=12"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->model().d_ff(), 40);
  EXPECT_THAT(SpecToText(*set), HasSubstr("kv_latent_dim: 12"));
  // GQA's key/value heads and SwiGLU's width likewise.
  auto gqa = LoadExperiment(WriteTemp(kGood), {"model.attention.layout=gqa", "model.ffn.plugin=swiglu"});
  ASSERT_TRUE(gqa.ok()) << gqa.status();
  EXPECT_THAT(SpecToText(*gqa), HasSubstr("num_kv_heads: 1"));
  EXPECT_GT(gqa->model().d_ff(), 0);
}

TEST(SpecLoader, EvalExamplesBeyondTheHeldOutDataAreAnError) {
  // 2000 bytes, a tenth held out: (200 - 1) / 16 = 12 evaluation windows.
  const std::string corpus = std::string(getenv("TEST_TMPDIR")) + "/corpus.txt";
  std::string text;
  uint32_t x = 1;
  for (int i = 0; i < 2000; ++i) {
    x = x * 1103515245u + 12345u;  // fixed pseudo-random letters
    text += static_cast<char>('a' + (x >> 16) % 26);
  }
  std::ofstream(corpus) << text;
  const std::string lm = absl::StrCat(R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] { path: ")pb",
                                      corpus, R"pb(" context_length: 16 } } }
    train { steps: 3 })pb");
  EXPECT_THAT(std::string(Load(lm + "\neval { examples: 50 }").message()),
              HasSubstr("eval.examples: 50 evaluation examples requested, but task 'text_lm' holds "
                        "only 12 held-out examples; set eval.examples to at most 12"));
  // The default (1000) is checked like any value.
  EXPECT_THAT(std::string(Load(lm).message()), HasSubstr("eval.examples: 1000 evaluation examples"));
  EXPECT_TRUE(Load(lm + "\neval { examples: 12 }").ok());
}

// eval.context_lengths: each length is checked like eval.context_length and
// named by its index; learned positions cannot go past their table.
TEST(SpecLoader, EvalContextLengthsAreValidatedOneByOne) {
  const std::string lm = R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 position { plugin: "learned" } }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
      path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
    train { steps: 3 })pb";
  EXPECT_TRUE(Load(lm + "\neval { examples: 20 context_lengths: [16, 8] }").ok());
  const std::string past = std::string(Load(lm + "\neval { examples: 20 context_lengths: [16, 64] }").message());
  EXPECT_THAT(past, HasSubstr("eval.context_lengths[1] (64) is past the positions 'learned' has: its table "
                              "has model.max_seq_len = 16 rows"));
  EXPECT_THAT(past, HasSubstr("Set eval.context_lengths[1] <= 16, or use a position plugin that extrapolates"));
  // Positions that extrapolate are fine at any length the held-out text holds.
  EXPECT_TRUE(Load(lm + "\neval { examples: 20 context_lengths: [16, 64, 1024] }",
                   {"model.position.plugin=alibi"}).ok());
  EXPECT_THAT(std::string(Load(lm + "\neval { examples: 20 context_lengths: [100000] }",
                               {"model.position.plugin=alibi"}).message()),
              AllOf(HasSubstr("eval.context_lengths[0] (100000): task (text_lm): eval.context_lengths[0]: the "
                              "held-out split of '/usr/share/common-licenses/GPL-3' has 3515 tokens, too few"),
                    HasSubstr("lower eval.context_lengths[0]")));
  EXPECT_THAT(std::string(Load(lm + "\neval { examples: 20 context_lengths: [1, 16, 16] }").message()),
              AllOf(HasSubstr("eval.context_lengths[0] must be >= 2 (got 1)"),
                    HasSubstr("eval.context_lengths[2] (16) repeats eval.context_lengths[1]")));
  // A task that evaluates at its own length cannot take other lengths.
  EXPECT_THAT(std::string(Load(std::string(kGood) + "eval { context_lengths: [32] }").message()),
              HasSubstr("eval.context_lengths[0] (32): task 'sort_digits' evaluates at its own length (8)"));
}

TEST(SpecLoader, DecodeSpeedNeedsAGeneratingModelWithinItsPositions) {
  const std::string lm = R"pb(name: "lm"
    model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
      path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
    train { steps: 3 }
    eval { examples: 20 })pb";
  EXPECT_TRUE(Load(lm, {"eval.decode_speed_tokens=16"}).ok());
  EXPECT_THAT(std::string(Load(lm, {"eval.decode_speed_tokens=17"}).message()),
              HasSubstr("eval.decode_speed_tokens (17) is more than the model's positions"));
  EXPECT_TRUE(Load(lm, {"eval.decode_speed_tokens=64", "model.max_seq_len=64"}).ok());
  EXPECT_THAT(std::string(Load(lm, {"eval.decode_speed_tokens=-1"}).message()),
              HasSubstr("eval.decode_speed_tokens must be >= 0 (got -1)"));
  EXPECT_THAT(std::string(Load(kGood, {"eval.decode_speed_tokens=4"}).message()),
              HasSubstr("eval.decode_speed_tokens (4): model.family ENCODER_ONLY does not generate"));
}

TEST(SpecLoader, InputSpacesTooSmallToHoldOutAreRefused) {
  EXPECT_THAT(std::string(Load(kGood, {"task.options.length=1"}).message()),
              HasSubstr("task (sort_digits): task.options: the task has only 10 distinct inputs "
                        "(vocab_size^length = 10^1), too few to hold 1 in 8 out"));
  EXPECT_TRUE(Load(kGood, {"task.options.length=2"}).ok());
}

}  // namespace
}  // namespace tvlab
