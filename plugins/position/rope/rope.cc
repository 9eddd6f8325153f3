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
// Example config (configs/sort_digits_rope.pbtxt):
//   position { plugin: "rope" options { [type.googleapis.com/tvlab.RopeOptions] { base: 10000 } } }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/rope/rope.pb.h"

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
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const RopeOptions& options, const ModelDims&) {
    return std::make_unique<Rope>(options.base(), options.pairing() == RopeOptions::INTERLEAVED);
  }

  Rope(double base, bool interleaved) : base_(base), interleaved_(interleaved) {}

  // Rotation acts on q and k before any score; no logit bias, so the fused
  // attention kernel may run on the rotated q and k (attend.h).
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }

  // qk (..., T, D) at positions [offset, offset + T) -> (..., T, D).
  Var RotateQueryOrKey(const Var& qk, int64_t offset) const override {
    const int r = static_cast<int>(qk.rank());
    TVLAB_CHECK(r >= 2) << "rope needs (..., T, D), got rank " << r;
    const int64_t t = qk.dim(r - 2), d = qk.dim(r - 1), half = d / 2;
    TVLAB_CHECK(d % 2 == 0) << "rope needs an even last dimension, got " << d
                            << " (the plugin using rope must validate this)";
    Tensor cos = Tensor::Empty({t, half}), sin = Tensor::Empty({t, half});  // (T, D/2)
    CurrentBackend().RotaryTables(offset, t, d, base_, cos.ptr(), sin.ptr());
    if (interleaved_) {
      Shape pairs = qk.shape();
      pairs.back() = half;
      pairs.push_back(2);
      Var x = Reshape(qk, pairs);  // (..., T, D/2, 2)
      Var a = Slice(x, r, 0, 1), b = Slice(x, r, 1, 1);  // (..., T, D/2, 1) each
      Var c(cos.Reshape({t, half, 1})), s(sin.Reshape({t, half, 1}));  // (T, D/2, 1)
      Var rotated = Concat({Sub(Mul(a, c), Mul(b, s)), Add(Mul(a, s), Mul(b, c))}, r);
      return Reshape(rotated, qk.shape());  // (..., T, D)
    }
    Var a = Slice(qk, r - 1, 0, half), b = Slice(qk, r - 1, half, half);  // (..., T, D/2)
    Var c(cos), s(sin);                                                   // (T, D/2)
    return Concat({Sub(Mul(a, c), Mul(b, s)), Add(Mul(a, s), Mul(b, c))}, r - 1);  // (..., T, D)
  }

 private:
  double base_;
  bool interleaved_;
};

TVLAB_REGISTER_POSITION_ENCODING("rope", Rope, RopeOptions);

}  // namespace
}  // namespace tvlab
