#ifndef TVLAB_FRAMEWORK_CORE_RNG_H_
#define TVLAB_FRAMEWORK_CORE_RNG_H_

// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11), keyed by
// (seed, purpose, step). Any draw is a pure function of its key and index, so
// results do not depend on execution order, thread count or what else drew
// before: parameter init keyed by the parameter's name, data by the step,
// dropout by (site, step). This is what makes resume bit-exact.

#include <array>
#include <cstdint>
#include <string_view>

namespace tvlab {

// Distinct streams for distinct uses of randomness.
enum class RngPurpose : uint32_t {
  kInit = 1,
  kTrainData = 2,
  kEvalData = 3,
  kDropout = 4,
  kSampling = 5,
};

// One Philox4x32-10 block: 4 random words for (counter, key).
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

// 64-bit FNV-1a, for turning names (parameter paths, dropout sites) into
// stream ids.
uint64_t HashName(std::string_view name);

// A stream of random numbers for one (seed, purpose, step). Draw i of the
// stream is the same no matter which draws were made before.
class RngStream {
 public:
  RngStream(uint64_t seed, RngPurpose purpose, uint64_t step);

  // Raw 32-bit word number `index`.
  uint32_t Word(uint64_t index) const;
  // Words [first, first + n) into `out`; same values as Word(), 4x cheaper.
  void Words(uint64_t first, uint64_t n, uint32_t* out) const;
  // Uniform floats in [0, 1) for indices [first, first + n).
  void UniformFill(uint64_t first, uint64_t n, float* out) const;
  // Uniform in [0, 1) with 24 random bits, from word `index`.
  float Uniform(uint64_t index) const;
  // Standard normal via Box-Muller from words 2*index and 2*index+1.
  float Normal(uint64_t index) const;
  // Uniform integer in [0, n) from word `index` (n small; bias < n / 2^32).
  uint32_t UniformInt(uint64_t index, uint32_t n) const;

 private:
  std::array<uint32_t, 4> Block(uint64_t block) const;

  std::array<uint32_t, 2> key_;
  uint32_t purpose_;
  uint64_t step_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CORE_RNG_H_
