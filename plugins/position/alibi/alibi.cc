// ALiBi, attention with linear biases (Press, Smith & Lewis 2022, "Train
// Short, Test Long"): no position embeddings; each head h adds
//   bias[h, i, j] = -m_h * |i - j|
// to the logit of query position i and key position j, so attention decays
// with distance at a per-head rate. Slopes m_h form the geometric sequence
// 2^(-8/H), 2^(-16/H), ... (max_bias 8); for H not a power of two, the
// paper's recipe: the slopes of the nearest lower power of two, then every
// other slope of twice that many. The bias depends on i - j only, so it
// extrapolates to unseen lengths and works with a KV cache (queries at
// q_offset + i). In a causal model only j <= i is visible and the bias is the
// paper's m (j - i); in a bidirectional encoder it is symmetric: it encodes
// distance but not direction.
//
// Example config (configs/sort_digits_alibi.pbtxt):
//   position { plugin: "alibi" }

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/alibi/alibi.pb.h"

namespace tvlab {
namespace {

// Slopes for `heads` heads (Press et al., the reference get_slopes()).
std::vector<double> Slopes(int64_t heads, double max_bias) {
  int64_t power = 1;
  while (power * 2 <= heads) power *= 2;  // nearest power of two <= heads
  std::vector<double> slopes;
  for (int64_t h = 1; h <= power; ++h) slopes.push_back(std::pow(2.0, -max_bias * h / power));
  // The rest: odd-numbered slopes of the 2 * power sequence.
  for (int64_t h = 1; static_cast<int64_t>(slopes.size()) < heads; h += 2)
    slopes.push_back(std::pow(2.0, -max_bias * h / (2 * power)));
  return slopes;
}

class Alibi : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kAddsLogitBias | kFusablePosition;
  static absl::Status Validate(const AlibiOptions& options, const ModelDims&) {
    if (!(options.max_bias() > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.max_bias must be > 0 (got ", options.max_bias(), "), e.g. 8"));
    }
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const AlibiOptions& options, const ModelDims&) {
    return std::make_unique<Alibi>(options.max_bias());
  }

  explicit Alibi(double max_bias) : max_bias_(max_bias) {}

  // The fused attention kernel computes the same bias inside its tiles.
  FusedLogitBias FusedLogitBiasFor(int64_t num_heads) const override {
    return {true, Slopes(num_heads, max_bias_)};
  }

  // -> (1, H, T, S) for queries at [q_offset, q_offset + T) and keys at [0, S).
  Var LogitBias(int64_t num_heads, int64_t q_offset, int64_t t, int64_t s) const override {
    const std::vector<double> slopes = Slopes(num_heads, max_bias_);
    Tensor bias = Tensor::Empty({1, num_heads, t, s});
    CurrentBackend().AlibiBias(slopes, q_offset, t, s, bias.ptr());
    return Var(bias);
  }

 private:
  double max_bias_;
};

TVLAB_REGISTER_POSITION_ENCODING("alibi", Alibi, AlibiOptions);

}  // namespace
}  // namespace tvlab
