#include "plugins/position/rope/rope_scaling.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

constexpr double kPi = 3.14159265358979323846;

bool UsesOriginalLength(RopeScaling::Method m) {
  return m == RopeScaling::YARN || m == RopeScaling::LLAMA3;
}

// The unscaled theta_i = base^(-2i / d).
std::vector<double> Unscaled(double base, int64_t d) {
  std::vector<double> theta(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) theta[i] = std::pow(base, -2.0 * i / static_cast<double>(d));
  return theta;
}

// Llama 3.1: keep short wavelengths, divide long ones by the factor, blend
// between (smooth = original / wavelength mapped from [low, high] to [0, 1]).
std::vector<double> Llama3(const RopeScaling& s, double base, int64_t d) {
  std::vector<double> theta = Unscaled(base, d);
  const double original = s.original_max_positions();
  const double low = s.low_freq_factor(), high = s.high_freq_factor();
  for (double& f : theta) {
    const double wavelength = 2.0 * kPi / f;
    if (wavelength < original / high) continue;  // high frequency: unchanged
    if (wavelength > original / low) {           // low frequency: interpolated
      f /= s.factor();
      continue;
    }
    const double smooth = (original / wavelength - low) / (high - low);
    f = (1.0 - smooth) * f / s.factor() + smooth * f;
  }
  return theta;
}

// YaRN's "NTK-by-parts": the pair index at which a pair turns `turns` times
// over the original context is d ln(L / (2 pi turns)) / (2 ln base); pairs
// below the fast edge keep theta_i, above the slow edge get theta_i / factor,
// a linear ramp between (edges floored / ceiled, clamped to [0, d - 1]).
std::vector<double> Yarn(const RopeScaling& s, double base, int64_t d) {
  std::vector<double> theta = Unscaled(base, d);
  auto pair_index = [&](double turns) {
    return d * std::log(s.original_max_positions() / (turns * 2.0 * kPi)) / (2.0 * std::log(base));
  };
  const double low = std::max(std::floor(pair_index(s.beta_fast())), 0.0);
  double high = std::min(std::ceil(pair_index(s.beta_slow())), static_cast<double>(d - 1));
  if (low == high) high += 0.001;  // the paper's guard against a zero-width ramp
  for (int64_t i = 0; i < d / 2; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);  // 0 keep .. 1 interpolate
    theta[i] = theta[i] / s.factor() * ramp + theta[i] * (1.0 - ramp);
  }
  return theta;
}

}  // namespace

int64_t RotatedDims(int64_t d, float fraction) {
  const int64_t turned = static_cast<int64_t>(std::floor(d * static_cast<double>(fraction) + 1e-6));
  return std::min(turned, d) / 2 * 2;
}

absl::Status ValidateRopeScaling(const RopeScaling& s, int64_t rotated_dims) {
  if (s.method() == RopeScaling::NONE) return absl::OkStatus();
  const std::string method = RopeScaling::Method_Name(s.method());
  if (!(s.factor() > 1.0f))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.factor must be > 1 for method ", method, " (got ", s.factor(),
        "): the new context over the trained one, e.g. 4; or set options.scaling.method: NONE"));
  if (s.original_max_positions() < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.original_max_positions must be >= 0 (got ", s.original_max_positions(),
        "); 0 = model.max_seq_len"));
  if (s.method() == RopeScaling::LLAMA3 && !(s.high_freq_factor() > s.low_freq_factor() &&
                                             s.low_freq_factor() > 0.0f))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.high_freq_factor (", s.high_freq_factor(),
        ") must be > options.scaling.low_freq_factor (", s.low_freq_factor(),
        ") > 0, e.g. 4 and 1 as Llama 3.1"));
  if (s.method() == RopeScaling::YARN && !(s.beta_fast() > s.beta_slow() && s.beta_slow() > 0.0f))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.beta_fast (", s.beta_fast(), ") must be > options.scaling.beta_slow (",
        s.beta_slow(), ") > 0, e.g. 32 and 1 as YaRN"));
  if (s.attention_factor() < 0.0f || (s.attention_factor() != 0.0f && s.method() != RopeScaling::YARN))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.attention_factor (", s.attention_factor(),
        ") is YaRN's factor on q and k: >= 0 (0 = 0.1 ln(factor) + 1), and only with method YARN"));
  if (s.method() == RopeScaling::NTK && rotated_dims < 4)
    return absl::InvalidArgumentError(absl::StrCat(
        "options.scaling.method NTK raises the base to d / (d - 2) and needs d >= 4 rotated "
        "coordinates (got ", rotated_dims, "); raise options.rotary_fraction or the head size"));
  return absl::OkStatus();
}

void ResolveRopeScaling(RopeScaling* s, const ModelDims& dims) {
  if (UsesOriginalLength(s->method()) && s->original_max_positions() == 0 && dims.max_seq_len > 0)
    s->set_original_max_positions(static_cast<int32_t>(dims.max_seq_len));
  if (s->method() == RopeScaling::YARN && s->attention_factor() == 0.0f)
    s->set_attention_factor(static_cast<float>(0.1 * std::log(s->factor()) + 1.0));
}

std::vector<double> ScaledFrequencies(const RopeScaling& s, double base, int64_t d) {
  switch (s.method()) {
    case RopeScaling::LINEAR: {
      std::vector<double> theta = Unscaled(base, d);
      for (double& f : theta) f /= s.factor();
      return theta;
    }
    case RopeScaling::NTK:
      return Unscaled(base * std::pow(static_cast<double>(s.factor()),
                                      static_cast<double>(d) / static_cast<double>(d - 2)),
                      d);
    case RopeScaling::LLAMA3:
      TVLAB_CHECK(s.original_max_positions() > 0) << "RopeScaling not resolved";
      return Llama3(s, base, d);
    case RopeScaling::YARN:
      TVLAB_CHECK(s.original_max_positions() > 0) << "RopeScaling not resolved";
      return Yarn(s, base, d);
    default:
      return Unscaled(base, d);
  }
}

double YarnAttentionFactor(const RopeScaling& s) {
  return s.method() == RopeScaling::YARN ? s.attention_factor() : 1.0;
}

}  // namespace tvlab
