// eval.context_targets is validated with the spec: negative, without
// eval.context_lengths, more than the shortest entry (named), and for a task
// that cannot evaluate at other lengths; each message names the field, what
// is wrong and how to fix it.

#include <string>
#include <vector>

#include "framework/spec/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const char kLm[] = R"pb(name: "lm"
  model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 position { plugin: "alibi" } }
  task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
    path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
  train { steps: 3 })pb";

const char kSort[] = R"pb(name: "t"
  model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
  task { plugin: "sort_digits" }
  train { steps: 3 })pb";

std::string Load(const std::string& spec, const std::string& eval) {
  auto parsed = ParseSpecText(spec + "\neval { " + eval + " }", "spec.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return std::string(ResolveExperiment(*parsed, {}, "spec.pbtxt", "x").status().message());
}

TEST(ContextTargetsSpec, AValidSpecLoads) {
  EXPECT_EQ(Load(kLm, "examples: 20 context_lengths: [16, 64, 256] context_targets: 16"), "");
  EXPECT_EQ(Load(kLm, "examples: 20 context_lengths: [64, 16] context_targets: 1"), "");
  EXPECT_EQ(Load(kLm, "examples: 20 context_lengths: [16, 64] context_targets: 0"), "");
}

TEST(ContextTargetsSpec, NegativeIsRefused) {
  EXPECT_THAT(Load(kLm, "examples: 20 context_lengths: [16, 64] context_targets: -1"),
              AllOf(HasSubstr("eval.context_targets must be >= 0 (got -1)"),
                    HasSubstr("0 evaluates each of eval.context_lengths on its own windows")));
}

TEST(ContextTargetsSpec, NeedsContextLengths) {
  EXPECT_THAT(Load(kLm, "examples: 20 context_targets: 16"),
              AllOf(HasSubstr("eval.context_targets (16) needs eval.context_lengths"),
                    HasSubstr("context_lengths: [16, 32], or remove eval.context_targets")));
}

TEST(ContextTargetsSpec, AtMostTheShortestLengthWhichItNames) {
  EXPECT_THAT(Load(kLm, "examples: 20 context_lengths: [64, 16, 256] context_targets: 32"),
              HasSubstr("eval.context_targets (32) is more than the shortest context, eval.context_lengths[1] "
                        "(16): a window of 16 tokens has only 16 targets to score; set eval.context_targets <= "
                        "16"));
}

TEST(ContextTargetsSpec, ATaskThatEvaluatesAtItsOwnLengthOnlyIsRefusedSensibly) {
  const std::string message = Load(kSort, "context_lengths: [32] context_targets: 8");
  EXPECT_THAT(message, HasSubstr("eval.context_lengths[0] (32): task 'sort_digits' evaluates at its own length (8)"));
  EXPECT_THAT(message, HasSubstr("eval.context_targets (8): task 'sort_digits' cannot score the same targets at "
                                 "several contexts; remove eval.context_targets (language-model tasks such as "
                                 "text_lm and token_store support it)"));
}

TEST(ContextTargetsSpec, ALongestLengthTheHeldOutTextCannotHoldIsSaidOnce) {
  const std::string message = Load(kLm, "examples: 20 context_lengths: [16, 100000] context_targets: 16");
  EXPECT_THAT(message, HasSubstr("eval.context_lengths[1] (100000): task (text_lm): eval.context_lengths[1]: the "
                                 "held-out split"));
  EXPECT_THAT(message, Not(HasSubstr("eval.context_targets (16) at")));
}

}  // namespace
}  // namespace tvlab
