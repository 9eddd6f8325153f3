// ExpShifted (exp_shifted.h) and each of its vector kernels this CPU can run
// are std::exp(x - shift) to the bit: on a sweep
// of float bit patterns that covers every exponent and many mantissas of
// each (about 17 million inputs), at three shifts, at every offset of the
// four- and eight-lane chunks, and with glibc's special cases (overflow, underflow,
// infinities, NaN) mixed into a chunk.

#include "framework/backend/cpu_onednn/exp_shifted.h"

#include "framework/core/cpu_features.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Every 2^32 / count-th bit pattern from `start` (both signs, every exponent).
std::vector<float> Sweep(uint32_t start, int64_t count) {
  std::vector<float> x(count);
  const uint64_t step = (uint64_t{1} << 32) / count;
  for (int64_t i = 0; i < count; ++i) x[i] = FromBits(static_cast<uint32_t>(start + i * step));
  return x;
}

using Kernel = void (*)(const float*, float, float*, int64_t);

// ExpShifted and each vector kernel this CPU can run.
std::vector<Kernel> Kernels() {
  std::vector<Kernel> kernels = {onednn::ExpShifted};
  if (CpuHasAvx512f()) kernels.push_back(onednn::exp_shifted_internal::ExpShiftedAvx512);
  if (CpuHasAvx2Fma()) kernels.push_back(onednn::exp_shifted_internal::ExpShiftedAvx2);
  return kernels;
}

void ExpectSameAsStdExp(const std::vector<float>& x, float shift) {
  std::vector<float> y(x.size());
  for (Kernel kernel : Kernels()) {
    kernel(x.data(), shift, y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::exp(x[i] - shift);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << "x " << x[i] << " shift " << shift;
      } else {
        ASSERT_EQ(Bits(y[i]), Bits(want)) << "x " << x[i] << " (bits " << Bits(x[i]) << ") shift " << shift << ": "
                                          << y[i] << " against std::exp's " << want;
      }
    }
  }
}

TEST(ExpShifted, IsStdExpBitForBitOverEveryExponent) {
  for (uint32_t start : {0u, 12345u}) {
    const std::vector<float> x = Sweep(start, int64_t{1} << 23);
    ExpectSameAsStdExp(x, 0.0f);
  }
  // The softmax case: x - max over a dense range of small negative values.
  std::vector<float> dense;
  for (float v = -90.0f; v < 1.0f; v += 1.0f / 4096) dense.push_back(v);
  ExpectSameAsStdExp(dense, 0.0f);
  ExpectSameAsStdExp(dense, 0.75f);
  ExpectSameAsStdExp(dense, -3.5f);
}

TEST(ExpShifted, SpecialCasesInsideAChunkAndEveryTailLength) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {-inf, inf, std::numeric_limits<float>::quiet_NaN(), 88.8f, -104.0f,
                                       -87.9f, 0.0f, -0.0f, 1e-30f, -88.0f, 88.0f, 88.72f};
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = offset; length <= 24; ++length) {
      std::vector<float> x(length);
      for (size_t i = 0; i < length; ++i) x[i] = 0.1f * static_cast<float>(i) - 1.0f;
      for (size_t i = offset; i < length; i += 5) x[i] = specials[(i + length) % specials.size()];
      ExpectSameAsStdExp(x, 0.0f);
    }
  }
}

// ExpShiftedEach and its kernels: every element with its own shift (each
// lane of a chunk another), specials in the inputs and in the shifts.
TEST(ExpShifted, EachElementWithItsOwnShift) {
  using EachKernel = void (*)(const float*, const float*, float*, int64_t);
  std::vector<EachKernel> kernels = {onednn::ExpShiftedEach};
  if (CpuHasAvx512f()) kernels.push_back(onednn::exp_shifted_internal::ExpShiftedEachAvx512);
  if (CpuHasAvx2Fma()) kernels.push_back(onednn::exp_shifted_internal::ExpShiftedEachAvx2);
  const float inf = std::numeric_limits<float>::infinity();
  // Finite shifts almost everywhere, so that most chunks take the vector
  // path (a special case anywhere in a chunk sends it to std::exp); the
  // infinite ones in every 97th element only.
  const std::vector<float> shifts = {0.0f, 0.75f, -3.5f, 10.0f, -0.0f, 87.0f, 1e-30f};
  const float specials[] = {-inf, inf};
  std::vector<float> x = Sweep(777u, int64_t{1} << 20);
  for (float v = -90.0f; v < 1.0f; v += 1.0f / 256) x.push_back(v);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(3.0f);  // a tail shorter than a chunk
  std::vector<float> shift(x.size()), y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    shift[i] = i % 97 == 0 ? specials[(i / 97) % 2] : shifts[(i * 7 + i / 3) % shifts.size()];
  for (EachKernel kernel : kernels) {
    kernel(x.data(), shift.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::exp(x[i] - shift[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << "x " << x[i] << " shift " << shift[i];
      } else {
        ASSERT_EQ(Bits(y[i]), Bits(want)) << "x " << x[i] << " shift " << shift[i] << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
