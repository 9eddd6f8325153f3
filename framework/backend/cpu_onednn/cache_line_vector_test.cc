// cache_line_vector.h: the data of every size, element type and growth
// starts on a 64-byte boundary (malloc's 16 would put three of four
// starts off it), and the vector still behaves as a std::vector.

#include "framework/backend/cpu_onednn/cache_line_vector.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(CacheLineVector, EverySizeStartsOnACacheLine) {
  for (size_t n = 1; n <= 200; ++n) {
    onednn::CacheLineVector<float> f(n);
    onednn::CacheLineVector<uint32_t> w(n);
    onednn::CacheLineVector<double> d(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.data()) % 64, 0u) << "float x " << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % 64, 0u) << "uint32 x " << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data()) % 64, 0u) << "double x " << n;
  }
}

TEST(CacheLineVector, GrowthKeepsTheValuesAndTheAlignment) {
  onednn::CacheLineVector<float> v;
  for (int i = 0; i < 1000; ++i) {
    v.push_back(static_cast<float>(i));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u) << "after " << i + 1 << " push_backs";
  }
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(v[i], static_cast<float>(i));
  v.resize(5000, 7.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u);
  EXPECT_EQ(v[999], 999.0f);
  EXPECT_EQ(v[4999], 7.0f);
  onednn::CacheLineVector<float> copy = v;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u);
  EXPECT_EQ(copy, v);
}

}  // namespace
}  // namespace tvlab
