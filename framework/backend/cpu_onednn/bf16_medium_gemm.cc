// Bf16MediumGemm: operands packed into bf16 pairs, then register-blocked
// `vdpbf16ps` sums (bf16_medium_gemm.h).

#include "framework/backend/cpu_onednn/bf16_medium_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/medium_gemm.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/transpose16_avx512.h"
#include "framework/core/check.h"

#define TVLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace tvlab {
namespace onednn {
namespace {

// GCC 12's AVX-512 intrinsics (Transpose16's shuffles, the conversions and
// shifts here) start from _mm512_undefined_*() and warn that it "may be
// used uninitialized": false positives in the headers (as medium_gemm.cc).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

constexpr int kLanes = 16;  // fp32 sums (or bf16 pairs) a vector

// The lanes of [c, c + 16) below n, none when c >= n.
TVLAB_BF16_TARGET inline __mmask16 LanesBelow(int64_t c, int64_t n) { return c < n ? Columns(c, n) : 0; }

// The bf16 pair words of 32 floats at x, `count` of them valid (the rest
// 0): word w = bf16(x[2w]) | bf16(x[2w + 1]) << 16.
TVLAB_BF16_TARGET inline __m512i PairsOf32(const float* x, int64_t count) {
  const __m512 lo = _mm512_maskz_loadu_ps(LanesBelow(0, count), x);
  const __m512 hi = _mm512_maskz_loadu_ps(LanesBelow(kLanes, count), x + kLanes);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // x[0..15] the low half
}

// out (rows, (cols + 1) / 2) words: each row's values in pairs (the last
// high half 0 for odd cols).
TVLAB_BF16_TARGET void PairsAlongRows(const float* x, int64_t rows, int64_t cols, uint32_t* out) {
  const int64_t words = (cols + 1) / 2;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; c += 2 * kLanes)
      _mm512_mask_storeu_epi32(out + i * words + c / 2, LanesBelow(c / 2, words),
                               PairsOf32(x + i * cols + c, cols - c));
}

// The 16 values at x (masked) as bf16 in the low halves of 16 words.
TVLAB_BF16_TARGET inline __m512i Bf16Words(__mmask16 lanes, const float* x) {
  const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, x));
  return _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(h));
}

// out ((rows + 1) / 2, cols) words, rows ldo (>= cols) apart: rows 2q and
// 2q + 1 paired column by column (the missing row of an odd count 0; the
// words past cols 0); sums (cols), when not null, each column's rows added
// in float in order from 0, unrounded.
TVLAB_BF16_TARGET void PairsAcrossRows(const float* x, int64_t rows, int64_t cols, uint32_t* out, int64_t ldo,
                                       float* sums) {
  for (int64_t j = 0; j < cols; j += kLanes) {
    const __mmask16 lanes = LanesBelow(j, cols), stored = LanesBelow(j, ldo);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; r += 2) {
      const bool pair = r + 1 < rows;
      const __m512i low = Bf16Words(lanes, x + r * cols + j);
      const __m512i high = pair ? Bf16Words(lanes, x + (r + 1) * cols + j) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(out + r / 2 * ldo + j, stored, _mm512_or_si512(low, _mm512_slli_epi32(high, 16)));
      if (sums == nullptr) continue;
      sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes, x + r * cols + j));
      if (pair) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes, x + (r + 1) * cols + j));
    }
    if (sums != nullptr) _mm512_mask_storeu_ps(sums + j, lanes, sum);
  }
}

// out (cols, rows) = w (rows, cols) transposed, 32-bit words, out's rows
// ldo (>= rows) apart (the words past rows 0), 16 x 16 at a time through
// registers.
TVLAB_BF16_TARGET void TransposeWords(const uint32_t* w, int64_t rows, int64_t cols, uint32_t* out, int64_t ldo) {
  for (int64_t r0 = 0; r0 < rows; r0 += kLanes) {
    const int64_t height = std::min<int64_t>(kLanes, rows - r0);
    for (int64_t c0 = 0; c0 < cols; c0 += kLanes) {
      const int64_t width = std::min<int64_t>(kLanes, cols - c0);
      __m512 in[kLanes], t[kLanes];
      for (int r = 0; r < kLanes; ++r)
        in[r] =
            r < height ? _mm512_maskz_loadu_ps(LanesBelow(c0, cols), w + (r0 + r) * cols + c0) : _mm512_setzero_ps();
      Transpose16(in, t);  // moves bits: no float arithmetic
      for (int64_t e = 0; e < width; ++e) _mm512_mask_storeu_ps(out + (c0 + e) * ldo + r0, LanesBelow(r0, ldo), t[e]);
    }
  }
}

// Where one packed product's words lie.
struct Packed {
  int64_t m, n, words;  // C (m, n); words = k / 2 rounded up
  const uint32_t* a;    // op(A)'s pair p of row i at a[i * a_row + p * a_col]
  int64_t a_row, a_col;
  const uint32_t* b;  // (words, n), rows ldb apart: n rounded up to whole vectors,
  int64_t ldb;        // the words past n 0 (read, never reaching a stored column)
  const float* bias;  // (n) or null
  bool add_c;         // beta 1
  float* c;
};

// C's MR rows x (16 NV) columns from column j (kMasked: one vector, lanes
// `columns`): the k/2 pairs' dot products summed from 0, then + bias or
// + C.
template <int MR, int NV, bool kMasked>
TVLAB_BF16_TARGET inline void Block(const Packed& o, int64_t i, int64_t j, __mmask16 columns) {
  static_assert(!kMasked || NV == 1, "masked columns in one-vector blocks");
  const uint32_t* a = o.a + i * o.a_row;
  const uint32_t* b = o.b + j;
  __m512 sum[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < o.words; ++p) {
    __m512bh row[NV];
    for (int v = 0; v < NV; ++v) row[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + p * o.ldb + kLanes * v));
    for (int r = 0; r < MR; ++r) {
      const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * o.a_row + p * o.a_col])));
      for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_dpbf16_ps(sum[r][v], x, row[v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      const __mmask16 lanes = kMasked ? columns : __mmask16(0xFFFF);
      float* out = o.c + (i + r) * o.n + j + kLanes * v;
      __m512 y = sum[r][v];
      if (o.bias != nullptr) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(lanes, o.bias + j + kLanes * v));
      if (o.add_c) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(lanes, out));
      _mm512_mask_storeu_ps(out, lanes, y);
    }
}

// Rows [i, i + MR) of C, every column: blocks of NV vectors, then of one,
// then the last n % 16 columns masked.
template <int MR, int NV>
TVLAB_BF16_TARGET void RowBlock(const Packed& o, int64_t i) {
  int64_t j = 0;
  for (; j + NV * kLanes <= o.n; j += NV * kLanes) Block<MR, NV, false>(o, i, j, 0xFFFF);
  for (; j + kLanes <= o.n; j += kLanes) Block<MR, 1, false>(o, i, j, 0xFFFF);
  if (j < o.n) Block<MR, 1, true>(o, i, j, Columns(j, o.n));
}

// Rows [first, end) in blocks of MR, the rest one at a time.
template <int MR, int NV>
void RowRange(const Packed& o, int64_t first, int64_t end) {
  int64_t i = first;
  for (; i + MR <= end; i += MR) RowBlock<MR, NV>(o, i);
  for (; i < end; ++i) RowBlock<1, NV>(o, i);
}

// Threads take contiguous ranges of whole row blocks: dW (A transposed) 8
// rows x 2 vectors, n at most 16 8 x 1, else 4 x 4 (medium_gemm.cc's
// blocks, for the same reasons).
void Product(const Packed& o, bool trans_a, int64_t k) {
  const bool narrow = !trans_a && o.n <= kLanes;
  const int mr = trans_a || narrow ? 8 : 4;
  const int64_t blocks = (o.m + mr - 1) / mr;
  const bool parallel = o.m * o.n * k >= kParallelGemmMacs;
  OnTeam(parallel ? omp_get_max_threads() : 1, [&](int64_t t, int64_t threads) {
    const int64_t first = std::min(o.m, blocks * t / threads * mr);
    const int64_t end = std::min(o.m, blocks * (t + 1) / threads * mr);
    if (trans_a) {
      RowRange<8, 2>(o, first, end);
    } else if (narrow) {
      RowRange<8, 1>(o, first, end);
    } else {
      RowRange<4, 4>(o, first, end);
    }
  });
}

// This thread's packing buffers (grown as needed, kept across calls).
struct PackBuffers {
  CacheLineVector<uint32_t> a, b, pairs;
};

PackBuffers& ThreadPackBuffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

uint32_t* Grown(CacheLineVector<uint32_t>& v, int64_t words) {
  if (static_cast<int64_t>(v.size()) < words) v.resize(static_cast<size_t>(words));
  return v.data();
}

// op(A) and B packed (bf16_medium_gemm.h), a_column_sums filled when not
// null (A transposed), then the product.
void PackAndMultiply(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c,
                     float* a_column_sums) {
  PackBuffers& buf = ThreadPackBuffers();
  const int64_t words = (d.k + 1) / 2;
  Packed o{d.m, d.n, words, nullptr, 0, 0, nullptr, 0, bias, d.beta == 1.0f, c};
  uint32_t* pa = Grown(buf.a, d.m * words);
  if (d.trans_a) {  // a (k, m): pairs of its rows, (words, m)
    PairsAcrossRows(a, d.k, d.m, pa, d.m, a_column_sums);
    o.a_row = 1, o.a_col = d.m;
  } else {  // a (m, k): its rows in pairs, (m, words)
    PairsAlongRows(a, d.m, d.k, pa);
    o.a_row = words, o.a_col = 1;
  }
  const int64_t ldb = (d.n + kLanes - 1) / kLanes * kLanes;  // whole vectors: no masked loads of B
  uint32_t* pb = Grown(buf.b, words * ldb);
  if (d.trans_b) {  // b (n, k): its rows in pairs (n, words), transposed
    uint32_t* rows = Grown(buf.pairs, d.n * words);
    PairsAlongRows(b, d.n, d.k, rows);
    TransposeWords(rows, d.n, words, pb, ldb);
  } else {  // b (k, n): pairs of its rows
    PairsAcrossRows(b, d.k, d.n, pb, ldb, nullptr);
  }
  o.a = pa, o.b = pb, o.ldb = ldb;
  Product(o, d.trans_a, d.k);
}

#pragma GCC diagnostic pop

}  // namespace

bool CpuRunsBf16DotProducts() {
  static const bool runs = [] {
    __builtin_cpu_init();
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return __builtin_cpu_supports("avx512bf16") && (isa & bf16) == bf16;
  }();
  return runs;
}

bool IsBf16MediumGemm(const GemmDesc& d) {
  GemmDesc fp32 = d;
  fp32.precision = Precision::kFp32;
  return d.precision == Precision::kBf16 && CpuRunsBf16DotProducts() && IsMediumGemm(fp32, true);
}

void Bf16MediumGemm(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c) {
  TVLAB_CHECK(IsBf16MediumGemm(d)) << "Bf16MediumGemm on a product it does not take";
  PackAndMultiply(d, a, b, bias, c, nullptr);
}

void Bf16MediumGemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c, float* a_column_sums) {
  TVLAB_CHECK(IsBf16MediumGemm(d) && d.trans_a && !d.trans_b && d.beta == 0.0f)
      << "Bf16MediumGemmAndColumnSums: A transposed, B not, beta 0";
  PackAndMultiply(d, a, b, nullptr, c, a_column_sums);
}

}  // namespace onednn
}  // namespace tvlab
