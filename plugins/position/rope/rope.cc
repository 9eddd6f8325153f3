// Rotary position embedding (Su et al. 2021, RoFormer): queries and keys are
// rotated inside attention, pair by pair, by an angle proportional to their
// position, so <R_m q, R_n k> depends on m - n only:
//   theta_i = base^(-2i / D),  angle = p * theta_i,  i = 0 .. D/2 - 1
//   (a, b) -> (a cos(angle) - b sin(angle), a sin(angle) + b cos(angle))
// with (a, b) = (x[2i], x[2i+1]) (INTERLEAVED) or (x[i], x[i + D/2]) (HALVES).
// D is the last dimension of whatever is rotated: the head size for MHA/GQA,
// or the decoupled rope part of an MLA head. A token at offset p gets angle
// p * theta_i, so cached keys and a newly decoded token line up.
// Nothing is added to the embeddings and there are no parameters.
//
// Partial rotary (options.rotary_fraction, GPT-NeoX rotary_pct, Phi): only
// the first d = fraction * D coordinates (rounded down to even) turn, with
// theta_i = base^(-2i / d); the other D - d pass through.
// Scaling (options.scaling, rope_scaling.cc): theta_i is replaced by a
// stretched frequency (linear interpolation, NTK-aware base, YaRN, Llama 3),
// and YaRN multiplies q and k by its attention factor. With the defaults
// (fraction 1, no scaling) the tables come from the backend as always.
//
// Example config (configs/sort_digits_rope.pbtxt):
//   position { plugin: "rope" options { [type.googleapis.com/tvlab.RopeOptions] { base: 10000 } } }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/rope/rope.pb.h"
#include "plugins/position/rope/rope_scaling.h"

namespace tvlab {
namespace {

class Rope : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kRotatesQueriesAndKeys | kFusablePosition;
  static absl::Status Validate(const RopeOptions& options, const ModelDims& dims) {
    if (dims.head_dim % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rope rotates pairs of coordinates, so the head size d_model / num_heads must be even "
          "(got ", dims.d_model, " / ", dims.num_heads, " = ", dims.head_dim,
          "); change model.d_model or model.num_heads"));
    }
    if (!(options.base() > 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.base must be > 1 (got ", options.base(), "), e.g. 10000"));
    }
    if (!(options.rotary_fraction() > 0.0f && options.rotary_fraction() <= 1.0f) ||
        RotatedDims(dims.head_dim, options.rotary_fraction()) < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.rotary_fraction must be in (0, 1] and turn at least one pair of the head's ",
          dims.head_dim, " coordinates (got ", options.rotary_fraction(), ", which turns ",
          RotatedDims(dims.head_dim, options.rotary_fraction()), "), e.g. 0.25 or 1"));
    }
    return ValidateRopeScaling(options.scaling(), RotatedDims(dims.head_dim, options.rotary_fraction()));
  }
  static void Resolve(RopeOptions* options, ModelDims* dims) {
    if (options->has_scaling()) ResolveRopeScaling(options->mutable_scaling(), *dims);
  }
  static std::unique_ptr<PositionEncoding> Create(const RopeOptions& options, const ModelDims& dims) {
    RopeScaling scaling = options.scaling();
    ResolveRopeScaling(&scaling, dims);
    return std::make_unique<Rope>(options, scaling);
  }

  Rope(const RopeOptions& options, const RopeScaling& scaling)
      : base_(options.base()),
        interleaved_(options.pairing() == RopeOptions::INTERLEAVED),
        fraction_(options.rotary_fraction()),
        scaling_(scaling) {}

  // Rotation acts on q and k before any score; no logit bias, so the fused
  // attention kernel may run on the rotated q and k (attend.h).
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }

  // qk (..., T, D) at positions [offset, offset + T) -> (..., T, D).
  Var RotateQueryOrKey(const Var& qk, int64_t offset) const override {
    const int r = static_cast<int>(qk.rank());
    TVLAB_CHECK(r >= 2) << "rope needs (..., T, D), got rank " << r;
    return RotateLeadingPairs(qk, offset, /*token_major=*/false);
  }

  // Token-major q or k (B, T, H, D), turned where it lies (Rotary's
  // token-major form), so attention needs no head permutes.
  bool RotatesTokenMajor() const override { return true; }
  Var RotateQueryTokenMajor(const Var& q, int64_t offset) const override {
    return RotateLeadingPairs(q, offset, /*token_major=*/true);
  }
  Var RotateKeyTokenMajor(const Var& k, int64_t offset) const override {
    return RotateLeadingPairs(k, offset, /*token_major=*/true);
  }

 private:
  // cos and sin (T, d/2) of the angles for positions [offset, offset + T).
  void Tables(int64_t offset, int64_t t, int64_t d, Tensor* cos, Tensor* sin) const {
    if (scaling_.method() == RopeScaling::NONE) {
      *cos = Tensor::Empty({t, d / 2}), *sin = Tensor::Empty({t, d / 2});
      CurrentBackend().RotaryTables(offset, t, d, base_, cos->ptr(), sin->ptr());
      return;
    }
    const std::vector<double> theta = ScaledFrequencies(scaling_, base_, d);  // (d/2)
    const double gain = YarnAttentionFactor(scaling_);
    std::vector<float> c(t * d / 2), s(t * d / 2);
    for (int64_t p = 0; p < t; ++p)
      for (int64_t i = 0; i < d / 2; ++i) {
        const double angle = static_cast<double>(offset + p) * theta[i];
        c[p * d / 2 + i] = static_cast<float>(gain * std::cos(angle));
        s[p * d / 2 + i] = static_cast<float>(gain * std::sin(angle));
      }
    *cos = Tensor::FromVector({t, d / 2}, c), *sin = Tensor::FromVector({t, d / 2}, s);
  }

  // The first RotatedDims of qk's last dimension D turned, the rest passed
  // through: qk (..., T, D), or (B, T, H, D) when `token_major`.
  Var RotateLeadingPairs(const Var& qk, int64_t offset, bool token_major) const {
    const int r = static_cast<int>(qk.rank());
    const int64_t d = qk.dim(r - 1);
    TVLAB_CHECK(d % 2 == 0) << "rope needs an even last dimension, got " << d
                            << " (the plugin using rope must validate this)";
    const int64_t turned = fraction_ == 1.0f ? d : RotatedDims(d, fraction_);
    TVLAB_CHECK(turned >= 2) << "rotary_fraction " << fraction_ << " turns no pair of " << d;
    if (turned == d) return Rotate(qk, offset, token_major);
    Var head = Slice(qk, r - 1, 0, turned), tail = Slice(qk, r - 1, turned, d - turned);
    return Concat({Rotate(head, offset, token_major), tail}, r - 1);  // as qk
  }

  // Every coordinate of qk (..., T, d), or token-major (B, T, H, d), turned:
  // one kernel each way (Backend::Rotary), the same bits as composing
  // slices, products and a concatenation.
  Var Rotate(const Var& qk, int64_t offset, bool token_major) const {
    const int r = static_cast<int>(qk.rank());
    TVLAB_CHECK(!token_major || r == 4) << "token-major rope needs (B, T, H, D), got rank " << r;
    Tensor cos, sin;  // (T, d/2)
    Tables(offset, qk.dim(token_major ? 1 : r - 2), qk.dim(r - 1), &cos, &sin);
    return token_major ? RotaryTokenMajor(qk, cos, sin, interleaved_) : Rotary(qk, cos, sin, interleaved_);
  }

  double base_;
  bool interleaved_;
  float fraction_;
  RopeScaling scaling_;  // resolved: original_max_positions and attention_factor set
};

TVLAB_REGISTER_POSITION_ENCODING("rope", Rope, RopeOptions);

}  // namespace
}  // namespace tvlab
