// Mamba-2's own properties beyond the mixer conformance suite (which runs
// the default options): the reference's initial ranges of dt and A, the
// state bytes with the conv's window, validation naming each option, and,
// for options the suite does not run (groups, other conv widths, a prefill
// shorter than the conv's window), the chunked, recurrent and decoding
// paths agreeing with each other.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "framework/attention/gated_linear.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "google/protobuf/text_format.h"
#include "plugins/attention/mamba2/mamba2.pb.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

const AttentionLayoutEntry& Entry() { return **AttentionLayoutRegistry().Get("mamba2"); }

Mamba2Options Options(const std::string& text) {
  Mamba2Options o;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &o)) << text;
  return o;
}

std::unique_ptr<AttentionLayout> Make(const Mamba2Options& options, const ModelDims& dims, uint64_t seed = 5) {
  EXPECT_TRUE(Entry().validate(options, dims).ok()) << Entry().validate(options, dims);
  auto layout = Entry().create(options, dims);
  InitializeParameters(*layout, seed);
  return layout;
}

std::vector<float> Param(const AttentionLayout& layout, const std::string& name) {
  for (auto& [n, var] : layout.NamedParameters())
    if (n == name) return var.value().ToVector();
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

AttentionInput Input(const Var& x, const AttentionMask& mask) {
  AttentionInput in;
  in.x = x;
  in.mask = mask;
  return in;
}

// softplus(dt_bias) in [dt_min, dt_max], -A = exp(a_log) in [1, 16], both
// spread over the range (not one value), D = 1: the reference's init.
TEST(Mamba2, InitialDtAndALieInTheReferenceRanges) {
  ModelDims dims = SmallDims();
  dims.d_model = 64, dims.num_heads = 8, dims.head_dim = 8;  // 16 SSD heads
  auto layout = Make(Options(""), dims);
  const std::vector<float> dt_bias = Param(*layout, "dt_bias"), a_log = Param(*layout, "a_log");
  ASSERT_EQ(dt_bias.size(), 16u);
  std::vector<double> dts, as;
  for (float b : dt_bias) dts.push_back(std::log1p(std::exp(static_cast<double>(b))));
  for (float a : a_log) as.push_back(std::exp(static_cast<double>(a)));
  for (double dt : dts) {
    EXPECT_GE(dt, 0.001 * (1 - 1e-3));
    EXPECT_LE(dt, 0.1 * (1 + 1e-3));
  }
  for (double a : as) {
    EXPECT_GE(a, 1.0 - 1e-5);
    EXPECT_LE(a, 16.0 * (1 + 1e-5));
  }
  EXPECT_GT(*std::max_element(dts.begin(), dts.end()) / *std::min_element(dts.begin(), dts.end()), 5.0);
  EXPECT_GT(*std::max_element(as.begin(), as.end()) - *std::min_element(as.begin(), as.end()), 5.0);
  for (float d : Param(*layout, "d")) EXPECT_EQ(d, 1.0f);
  // The floor: dt_min below it starts no dt below the floor.
  auto floored = Make(Options("dt_min: 1e-6 dt_max: 1e-5 dt_init_floor: 1e-3"), dims);
  for (float b : Param(*floored, "dt_bias"))
    EXPECT_NEAR(std::log1p(std::exp(static_cast<double>(b))), 1e-3, 1e-5);
}

TEST(Mamba2, StateBytesCountTheSsmStateAndTheConvWindow) {
  const ModelDims dims = SmallDims();  // d_model 8, head size 4
  // d_in 16, 4 heads of 4, N 16: 4 * 16 * 4 state + 3 rows of 16 + 2 * 16 conv inputs.
  EXPECT_EQ(Make(Options(""), dims)->RecurrentStateBytes(4), (256 + 3 * 48) * 4);
  // expand 1, 2 heads of 4, N 2, 2 groups: 2 * 2 * 4 + 1 row of 8 + 2 * 2 * 2.
  EXPECT_EQ(Make(Options("expand: 1 d_state: 2 ngroups: 2 d_conv: 2"), dims)->RecurrentStateBytes(2),
            (16 + 16) * 2);
  EXPECT_EQ(Make(Options("d_conv: 1"), dims)->RecurrentStateBytes(1), 256);
}

TEST(Mamba2, ValidationNamesTheOptionAndTheFix) {
  const ModelDims dims = SmallDims();
  const std::map<std::string, std::string> cases = {
      {"d_state: 0", "d_state must be > 0"},
      {"d_conv: 0", "d_conv must be > 0"},
      {"expand: 0", "expand must be > 0"},
      {"headdim: -1", "headdim must be >= 0"},
      {"headdim: 3", "headdim 3 does not divide expand * d_model = 2 * 8 = 16"},
      {"ngroups: 0", "ngroups must be > 0"},
      {"ngroups: 3", "ngroups 3 does not divide the 4 SSD heads"},
      {"chunk_size: 0", "chunk_size must be > 0"},
      {"dt_min: 0", "0 < dt_min <= dt_max"},
      {"dt_min: 0.5 dt_max: 0.1", "0 < dt_min <= dt_max"},
      {"dt_init_floor: 0", "dt_init_floor must be > 0"},
      {"a_init_min: 0", "0 < a_init_min <= a_init_max"},
      {"a_init_min: 4 a_init_max: 2", "0 < a_init_min <= a_init_max"},
  };
  for (const auto& [text, message] : cases) {
    const absl::Status status = Entry().validate(Options(text), dims);
    EXPECT_FALSE(status.ok()) << text;
    EXPECT_THAT(std::string(status.message()), HasSubstr(message)) << text;
  }
  ModelDims odd = dims;
  odd.d_model = 6, odd.num_heads = 2, odd.head_dim = 3;
  EXPECT_TRUE(Entry().validate(Options(""), odd).ok());  // headdim 0 = 3 divides 12
  EXPECT_THAT(std::string(Entry().validate(Options("headdim: 4 expand: 1"), odd).message()),
              HasSubstr("choose a headdim that divides 6"));
}

// For options the conformance suite does not run: the chunked form (chunk 3)
// equals the recurrent one, and decoding (a prefill of 2, shorter than the
// conv's window of 3, then single tokens; and one token at a time) equals
// the full forward, with the cache's bytes constant.
TEST(Mamba2, FormsAndDecodingAgreeForGroupsAndConvWidths) {
  const ModelDims dims = SmallDims();
  const int64_t b = 2, t = 7;
  for (const char* text : {"ngroups: 2 d_state: 3", "ngroups: 4 d_conv: 1", "d_conv: 2 headdim: 2",
                                  "d_conv: 5 expand: 1 headdim: 8"}) {
    auto layout = Make(Options(text), dims, 9);
    const Tensor x = RandomTensor({b, t, dims.d_model}, 41);
    SetMixerFormForTesting(MixerForm::kChunked, 3);
    const Tensor want = layout->Forward(Input(Var(x), CausalMask(0))).value();  // (B, T, C)
    SetMixerFormForTesting(MixerForm::kRecurrent, 0);
    const Tensor recurrent = layout->Forward(Input(Var(x), CausalMask(0))).value();
    SetMixerFormForTesting(MixerForm::kChunked, 0);
    const float scale = 1.0f + MaxAbsDiff(want, Tensor::Zeros(want.shape()));
    EXPECT_LE(MaxAbsDiff(recurrent, want), 1e-5f * scale) << text;
    for (const std::vector<int64_t>& steps : {std::vector<int64_t>{2, 1, 3, 1}, std::vector<int64_t>(7, 1)}) {
      KvCache cache;
      int64_t offset = 0;
      for (int64_t n : steps) {
        AttentionInput in = Input(Slice(Var(x), 1, offset, n), CausalMask(offset));
        in.position_offset = offset;
        in.cache = &cache;
        const Tensor got = layout->Forward(in).value();  // (B, n, C)
        EXPECT_LE(MaxAbsDiff(got, Slice(Var(want), 1, offset, n).value()), 1e-5f * scale)
            << text << ": tokens " << offset << ".." << offset + n - 1;
        offset += n;
        EXPECT_EQ(cache.length(), offset) << text;
        EXPECT_EQ(cache.Bytes(4), b * layout->RecurrentStateBytes(4)) << text;
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
