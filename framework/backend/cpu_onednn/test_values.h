#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TEST_VALUES_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TEST_VALUES_H_

// Operands for this folder's kernel tests: n floats in [-1, 1) from a
// linear congruential sequence per seed (reproducible, no RNG dependency).

#include <cstdint>
#include <vector>

namespace tvlab {
namespace onednn_testing {

inline std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return v;
}

}  // namespace onednn_testing
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TEST_VALUES_H_
