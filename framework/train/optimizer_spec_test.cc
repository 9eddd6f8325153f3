// Parameter roles, groups (lr multipliers, decay switches) and the
// validation of train.optimizer.

#include "framework/train/optimizer_spec.h"

#include "framework/train/test_optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

TEST(ParamRoles, FollowTheNameAndRank) {
  EXPECT_EQ(RoleOfParameter("embedding.weight", 2), ParamRole::kEmbedding);
  EXPECT_EQ(RoleOfParameter("position.weight", 2), ParamRole::kEmbedding);  // learned positions
  EXPECT_EQ(RoleOfParameter("position.encoder.weight", 2), ParamRole::kEmbedding);  // t5 bias table
  EXPECT_EQ(RoleOfParameter("head.weight", 2), ParamRole::kHead);
  EXPECT_EQ(RoleOfParameter("head.bias", 1), ParamRole::kBias);
  EXPECT_EQ(RoleOfParameter("encoder.layers.0.ffn.w_1.weight", 2), ParamRole::kMatrix);
  EXPECT_EQ(RoleOfParameter("encoder.layers.0.ffn.w_1.bias", 1), ParamRole::kBias);
  EXPECT_EQ(RoleOfParameter("encoder.final_norm.weight", 1), ParamRole::kNorm);
  EXPECT_EQ(RoleOfParameter("decoder.layers.1.attention.lambda_q1", 1), ParamRole::kBias);
}

TEST(ParamGroups, GiveEachParameterItsGroupsSettings) {
  ParamGroups groups;
  groups.mutable_bias()->set_weight_decay(false);
  groups.mutable_embedding()->set_lr_multiplier(0.5f);
  NamedVars params = {{"embedding.weight", Var(Tensor::Zeros({3, 2}), true)},
                      {"a.bias", Var(Tensor::Zeros({2}), true)},
                      {"a.weight", Var(Tensor::Zeros({2, 2}), true)}};
  const std::vector<OptimizerParam> got = OptimizerParams(groups, params);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].role, ParamRole::kEmbedding);
  EXPECT_EQ(got[0].lr_multiplier, 0.5f);
  EXPECT_TRUE(got[0].decay);
  EXPECT_EQ(got[1].role, ParamRole::kBias);
  EXPECT_FALSE(got[1].decay);
  EXPECT_EQ(got[2].lr_multiplier, 1.0f);
  EXPECT_TRUE(got[2].decay);
}

// AdamW with zero gradients: a decayed parameter shrinks by 1 - lr * wd, an
// excluded one stays.
TEST(ParamGroups, TheDecaySwitchReachesTheOptimizer) {
  OptimizerSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "plugin: \"adamw\" options { [type.googleapis.com/tvlab.AdamWOptions] { weight_decay: 0.5 } } "
      "groups { norm { weight_decay: false } }",
      &spec));
  NamedVars params = {{"a.norm.weight", Var(Tensor::Full({4}, 1.0f), true)},
                      {"a.weight", Var(Tensor::Full({2, 2}, 1.0f), true)}};
  for (auto& [name, var] : params) var.mutable_grad() = Tensor::Zeros(var.shape());
  auto optimizer = BuildOptimizer(spec, params);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  (*optimizer)->Step(0.1f);
  EXPECT_EQ(params[0].second.value().ToVector(), std::vector<float>(4, 1.0f));
  EXPECT_FLOAT_EQ(params[1].second.value().ToVector()[0], 1.0f - 0.1f * 0.5f);
}

TEST(OptimizerSpecValidation, NamesTheFieldAndTheFix) {
  OptimizerSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "plugin: \"adamw\" options { [type.googleapis.com/tvlab.AdamWOptions] { lr: -1 beta2: 1 } } "
      "groups { head { lr_multiplier: -2 } }",
      &spec));
  Problems p;
  ValidateOptimizerSpec(spec, &p);
  const std::string all = p.ToStatus().ToString();
  EXPECT_THAT(all, HasSubstr("train.optimizer.options (adamw): lr must be > 0 (got -1), e.g. 1e-3"));
  EXPECT_THAT(all, HasSubstr("train.optimizer.groups.head.lr_multiplier must be a finite number >= 0 (got -2)"));

  OptimizerSpec unknown;
  unknown.set_plugin("adamww");
  Problems q;
  ValidateOptimizerSpec(unknown, &q);
  EXPECT_THAT(q.ToStatus().ToString(), HasSubstr("train.optimizer.plugin: "));
  EXPECT_THAT(q.ToStatus().ToString(), HasSubstr("adamw"));

  OptimizerSpec both;
  both.set_plugin("other");
  both.mutable_adamw()->set_lr(1e-3f);
  Problems r;
  ValidateOptimizerSpec(both, &r);
  EXPECT_THAT(r.ToStatus().ToString(), HasSubstr("train.optimizer.adamw is the old spelling of plugin \"adamw\""));
}

}  // namespace
}  // namespace tvlab
