// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"): RoPE with
// a per-pair exponential scale that makes attention decay with distance.
// Pairs are (x[2i], x[2i+1]) (the paper's rotate_every_two), turned by
// angle p * theta_i, theta_i = base^(-2i / hs), and scaled:
//   zeta_i = (2i / hs + gamma) / (1 + gamma)
//   query at n: R_n q * zeta_i^(n / scale_base)
//   key at m:   R_m k * zeta_i^(-m / scale_base)
// so pair i of q.k carries zeta_i^((n - m) / scale_base): relative, and
// smaller the farther back the key. Scales use absolute positions (no
// centring), so keys cached at their positions and a newly decoded query
// line up at any offset. RotateQueryOrKey is the rotation alone (what q and
// k share); RotateQuery / RotateKey add the scales.
//
// Causal stacks only: in a bidirectional one a key after the query (m > n)
// would get zeta^(-(m - n) / B) > 1, growing without bound with distance, so
// validation refuses encoders (ENCODER_ONLY, and ENCODER_DECODER's encoder).
// Key scales grow as e^(m ln(1/zeta_0) / B); validation keeps
// model.max_seq_len where they stay far inside float range.
//
// Example config (configs/lm_copy_xpos.pbtxt):
//   position { plugin: "xpos" }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/xpos/xpos.pb.h"

namespace tvlab {
namespace {

// e-folds a key scale may reach at model.max_seq_len: e^40 ~ 2e17.
constexpr double kMaxLogScale = 40.0;

class Xpos : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kRotatesQueriesAndKeys | kFusablePosition;
  static absl::Status Validate(const XposOptions& options, const ModelDims& dims) {
    if (!dims.causal)
      return absl::InvalidArgumentError(
          "xpos scales keys by zeta^(-m / scale_base), which only decays with distance when "
          "keys precede the query: it needs a causal stack, and this model has a bidirectional "
          "encoder; use model.family: DECODER_ONLY, or rope / t5_bias / alibi for encoders");
    if (dims.head_dim % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "xpos rotates pairs of coordinates, so the head size d_model / num_heads must be even "
          "(got ", dims.head_dim, "); change model.d_model or model.num_heads"));
    if (!(options.base() > 1.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("options.base must be > 1 (got ", options.base(), "), e.g. 10000"));
    if (!(options.gamma() > 0.0f))
      return absl::InvalidArgumentError(
          absl::StrCat("options.gamma must be > 0 (got ", options.gamma(), "), e.g. 0.4"));
    if (!(options.scale_base() > 0.0f))
      return absl::InvalidArgumentError(absl::StrCat(
          "options.scale_base must be > 0 (got ", options.scale_base(), "), e.g. 512"));
    const double log_scale = dims.max_seq_len / options.scale_base() *
                             std::log((1.0 + options.gamma()) / options.gamma());
    if (log_scale > kMaxLogScale)
      return absl::InvalidArgumentError(absl::StrCat(
          "options.scale_base (", options.scale_base(), ") is too small for model.max_seq_len (",
          dims.max_seq_len, "): key scales would reach e^", log_scale, " (limit e^", kMaxLogScale,
          "); raise options.scale_base to at least ",
          std::ceil(dims.max_seq_len * std::log((1.0 + options.gamma()) / options.gamma()) /
                    kMaxLogScale)));
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const XposOptions& options, const ModelDims&) {
    return std::make_unique<Xpos>(options);
  }
  explicit Xpos(const XposOptions& options)
      : base_(options.base()), scale_base_(options.scale_base()), gamma_(options.gamma()) {}

  // Rotation and scales act on q and k before the score, so the fused
  // kernel runs on them; no logit bias.
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }

  // qk (..., T, D) -> (..., T, D), turned only: pairs (2i, 2i + 1) by RoPE's
  // angles (the Rotary op, one kernel each way).
  Var RotateQueryOrKey(const Var& qk, int64_t offset) const override {
    const int r = static_cast<int>(qk.rank());
    TVLAB_CHECK(r >= 2 && qk.dim(r - 1) % 2 == 0) << "xpos needs (..., T, even D)";
    const Angles a = AnglesFor(qk.dim(r - 2), qk.dim(r - 1), offset);
    return Rotary(qk, a.cos, a.sin, /*interleaved=*/true);  // (..., T, D)
  }
  Var RotateQuery(const Var& q, int64_t offset) const override {
    return Mul(RotateQueryOrKey(q, offset), Scales(q, offset, +1.0));  // (..., T, D)
  }
  Var RotateKey(const Var& k, int64_t offset) const override {
    return Mul(RotateQueryOrKey(k, offset), Scales(k, offset, -1.0));  // (..., T, D)
  }

  // Token-major q or k (B, T, H, D), turned and scaled where it lies (the
  // same products as above), so attention needs no head permutes.
  bool RotatesTokenMajor() const override { return true; }
  Var RotateQueryTokenMajor(const Var& q, int64_t offset) const override {
    return Mul(TurnTokenMajor(q, offset), TokenMajorScales(q, offset, +1.0));  // (B, T, H, D)
  }
  Var RotateKeyTokenMajor(const Var& k, int64_t offset) const override {
    return Mul(TurnTokenMajor(k, offset), TokenMajorScales(k, offset, -1.0));  // (B, T, H, D)
  }

 private:
  // zeta_i^(sign * p / scale_base) for positions p in [offset, offset + T),
  // both coordinates of pair i, the same for each of `heads` -> (T, heads, D).
  std::vector<float> ScaleValues(int64_t t, int64_t heads, int64_t d, int64_t offset, double sign) const {
    std::vector<float> scales(t * heads * d);
    for (int64_t p = 0; p < t; ++p)
      for (int64_t i = 0; i < d / 2; ++i) {
        const double zeta = (2.0 * i / d + gamma_) / (1.0 + gamma_);
        const float v = static_cast<float>(std::pow(zeta, sign * (offset + p) / scale_base_));
        for (int64_t h = 0; h < heads; ++h) {
          float* pair = &scales[(p * heads + h) * d + 2 * i];
          pair[0] = pair[1] = v;
        }
      }
    return scales;
  }
  // qk (..., T, D) -> its scales (T, D).
  Var Scales(const Var& qk, int64_t offset, double sign) const {
    const int r = static_cast<int>(qk.rank());
    const int64_t t = qk.dim(r - 2), d = qk.dim(r - 1);
    return Var(Tensor::FromVector({t, d}, ScaleValues(t, 1, d, offset, sign)));
  }
  // qk (B, T, H, D) -> its scales (T, H, D), repeated over B by Mul.
  Var TokenMajorScales(const Var& qk, int64_t offset, double sign) const {
    const int64_t t = qk.dim(1), h = qk.dim(2), d = qk.dim(3);
    return Var(Tensor::FromVector({t, h, d}, ScaleValues(t, h, d, offset, sign)));
  }
  // qk (B, T, H, D) turned only, by RoPE's angles for its T positions.
  Var TurnTokenMajor(const Var& qk, int64_t offset) const {
    TVLAB_CHECK(qk.rank() == 4 && qk.dim(3) % 2 == 0) << "token-major xpos needs (B, T, H, even D)";
    const Angles a = AnglesFor(qk.dim(1), qk.dim(3), offset);
    return RotaryTokenMajor(qk, a.cos, a.sin, /*interleaved=*/true);  // (B, T, H, D)
  }
  // RoPE's cos and sin for positions [offset, offset + t) and head size d:
  // (T, D/2) each.
  struct Angles {
    Tensor cos, sin;
  };
  Angles AnglesFor(int64_t t, int64_t d, int64_t offset) const {
    Angles a{Tensor::Empty({t, d / 2}), Tensor::Empty({t, d / 2})};
    CurrentBackend().RotaryTables(offset, t, d, base_, a.cos.ptr(), a.sin.ptr());
    return a;
  }

  double base_, scale_base_, gamma_;
};

TVLAB_REGISTER_POSITION_ENCODING("xpos", Xpos, XposOptions);

}  // namespace
}  // namespace tvlab
