// column_parts.h: which products cpu_onednn cuts into 512-column parts, and
// that a cut product is bit for bit the one oneDNN matmul of the whole
// product (B as is and transposed, with and without a bias), on one and
// two threads. The bit checks skip on CPUs without AVX-512, where nothing
// is cut.

#include "framework/backend/cpu_onednn/column_parts.h"

#include <omp.h>

#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

GemmDesc Desc(int64_t m, int64_t n, int64_t k, bool trans_b) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.trans_b = trans_b;
  return d;
}

TEST(GemmColumnParts, CutsWideShortProductsOnAvx512Only) {
  // The GPT config's FFN up-projection and its down-projection's dX; a
  // byte LM's head at vocab 8192.
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 1024, 256, true), true), 2);
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 1024, 256, false), true), 2);
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 8192, 256, true), true), 16);
  EXPECT_EQ(onednn::GemmColumnParts(Desc(1024, 2048, 128, false), true), 4);
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 1024, 256, true), false), 1);  // not AVX-512
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 1024, 512, true), true), 1);   // k > 256: other bits
  EXPECT_EQ(onednn::GemmColumnParts(Desc(512, 1024, 256, true), true), 1);    // too few rows
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 512, 256, true), true), 1);    // one part already
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 1024, 128, true), true), 1);   // B is 512 KiB
  EXPECT_EQ(onednn::GemmColumnParts(Desc(4096, 768, 256, true), true), 1);    // not whole parts
  GemmDesc other = Desc(4096, 1024, 256, false);
  other.trans_a = true;
  EXPECT_EQ(onednn::GemmColumnParts(other, true), 1);
  other = Desc(4096, 1024, 256, false);
  other.beta = 1.0f;
  EXPECT_EQ(onednn::GemmColumnParts(other, true), 1);
  other = Desc(4096, 1024, 256, false);
  other.precision = Precision::kBf16;
  EXPECT_EQ(onednn::GemmColumnParts(other, true), 1);
  other = Desc(256, 1024, 256, false);
  other.batch = 4;  // batched, C not folded into rows
  EXPECT_EQ(onednn::GemmColumnParts(other, true), 1);
}

TEST(GemmColumnParts, PartsLieWhereTheirColumnsDo) {
  const GemmDesc d = Desc(1024, 2048, 128, true);
  EXPECT_EQ(onednn::ColumnPart(d).n, 512);
  const onednn::ColumnPartOffsets t = onednn::ColumnPartAt(d, 3);
  EXPECT_EQ(t.b, 3 * 512 * 128);  // W (n, k): its rows 1536..
  EXPECT_EQ(t.c, 1536);
  EXPECT_EQ(t.bias, 1536);
  EXPECT_EQ(onednn::ColumnPartAt(Desc(1024, 2048, 128, false), 3).b, 1536);  // B (k, n): its columns 1536..
}

// One oneDNN matmul of the whole product: c (m, n) = a @ op(b) (+ bias).
std::vector<float> WholeProduct(const GemmDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                                const float* bias) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  memory::desc a_md({d.m, d.k}, memory::data_type::f32, memory::dims{d.k, 1});
  memory::desc b_md({d.k, d.n}, memory::data_type::f32, d.trans_b ? memory::dims{1, d.k} : memory::dims{d.n, 1});
  memory::desc c_md({d.m, d.n}, memory::data_type::f32, memory::dims{d.n, 1});
  memory::desc bias_md({1, d.n}, memory::data_type::f32, memory::dims{d.n, 1});
  dnnl::matmul matmul(dnnl::matmul::primitive_desc(
      bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md), engine));
  std::vector<float> c(d.m * d.n);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(a_md, engine, const_cast<float*>(a.data()))},
                                          {DNNL_ARG_WEIGHTS, memory(b_md, engine, const_cast<float*>(b.data()))},
                                          {DNNL_ARG_DST, memory(c_md, engine, c.data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_md, engine, const_cast<float*>(bias)));
  matmul.execute(stream, args);
  stream.wait();
  return c;
}

TEST(GemmColumnParts, ACutProductIsTheWholeProductBitForBit) {
  if (!onednn::OnednnHasAvx512Core()) GTEST_SKIP() << "no AVX-512: cpu_onednn cuts nothing here";
  OnednnBackend backend;
  for (const int64_t k : {128, 256})
    for (const bool trans_b : {false, true})
      for (const bool with_bias : {false, true}) {
        const GemmDesc d = Desc(1024, 2048, k, trans_b);
        ASSERT_GT(onednn::GemmColumnParts(d, true), 1);
        const std::vector<float> a = Values(d.m * d.k, 1), b = Values(d.k * d.n, 2), bias = Values(d.n, 3);
        const std::vector<float> whole = WholeProduct(d, a, b, with_bias ? bias.data() : nullptr);
        for (const int threads : {1, 2}) {
          omp_set_num_threads(threads);
          std::vector<float> c(d.m * d.n, -7.0f);
          if (with_bias) {
            backend.GemmBias(d, a.data(), b.data(), bias.data(), c.data());
          } else {
            backend.Gemm(d, a.data(), b.data(), c.data());
          }
          EXPECT_EQ(std::memcmp(c.data(), whole.data(), c.size() * sizeof(float)), 0)
              << "k " << k << (trans_b ? " B^T" : " B") << (with_bias ? " bias" : "") << ", " << threads
              << " thread(s)";
        }
      }
  omp_set_num_threads(1);
}

}  // namespace
}  // namespace tvlab
