// The MoE FFN's own math: one expert with gate 1 is that expert; parameter
// count (router + every expert + shared experts); validation messages.

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/moe/moe.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Ffn> Make(const MoeFfnOptions& options, const ModelDims& dims = SmallDims()) {
  return (*FfnRegistry().Get("moe"))->create(options, dims);
}

absl::Status Check(const MoeFfnOptions& options) {
  return (*FfnRegistry().Get("moe"))->validate(options, SmallDims());
}

TEST(MoeFfn, OneExpertWithGateOneIsThatExpert) {
  MoeFfnOptions options;
  options.set_num_experts(1), options.set_top_k(1);
  options.set_routing(MoeFfnOptions::TOP_K_THEN_SOFTMAX);  // softmax of one logit = 1
  auto moe = Make(options);
  const FfnEntry& swiglu = **FfnRegistry().Get("swiglu");
  auto dense = swiglu.create(*swiglu.default_options, SmallDims());
  InitializeParameters(*moe, 3);
  auto moe_params = moe->NamedParameters();
  for (auto& [name, var] : dense->NamedParameters())
    for (auto& [moe_name, moe_var] : moe_params)
      if (moe_name == "experts.0." + name) var.mutable_value() = moe_var.value().Clone();
  Var x = RandomVar({2, 3, 8}, 1);
  EXPECT_LE(MaxAbsDiff(moe->Forward(x, {}).value(), dense->Forward(x, {}).value()), 1e-6f);
}

TEST(MoeFfn, CountsEveryExpert) {
  MoeFfnOptions options;
  options.set_num_experts(4), options.set_num_shared_experts(1), options.set_expert_d_ff(6);
  ModelDims dims = SmallDims();
  dims.bias = false;
  const int64_t expert = 3 * 8 * 6;  // SwiGLU: w_1, w_3 (6, 8), w_2 (8, 6)
  auto moe = Make(options, dims);
  EXPECT_EQ(moe->NumParameters(), 4 * 8 + (4 + 1) * expert);
  EXPECT_EQ(moe->NumActiveParameters(), 4 * 8 + (2 + 1) * expert);  // top-2 of 4 + shared
}

TEST(MoeFfn, ValidationNamesTheOption) {
  MoeFfnOptions options;
  options.set_top_k(9);
  EXPECT_NE(Check(options).message().find("options.top_k must be in [1, options.num_experts = 8]"),
            std::string::npos) << Check(options);
  options = MoeFfnOptions();
  options.set_expert("moe");
  EXPECT_NE(Check(options).message().find("options.expert must be a dense FFN"), std::string::npos);
  options = MoeFfnOptions();
  options.set_expert_options("no_such_field: 1");
  EXPECT_NE(Check(options).message().find("options.expert_options"), std::string::npos);
  options = MoeFfnOptions();
  options.set_dropless(false), options.set_capacity_factor(0);
  EXPECT_NE(Check(options).message().find("options.capacity_factor must be > 0"),
            std::string::npos);
  options = MoeFfnOptions();
  options.set_expert("no_such_ffn");
  EXPECT_EQ(Check(options).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tvlab
