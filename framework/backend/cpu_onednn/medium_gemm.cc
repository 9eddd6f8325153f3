// MediumGemm: register-blocked AVX-512 sums over the whole of k
// (medium_gemm.h).

#include "framework/backend/cpu_onednn/medium_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/transpose16_avx512.h"
#include "framework/core/check.h"

namespace tvlab {
namespace onednn {
namespace {

// Columns of C one register block covers: NV AVX-512 vectors.
constexpr int kLanes = 16;

// How one block starts and ends (below).
struct BlockEnds {
  bool from_c = false;           // start from what C holds (a later panel)
  const float* bias = nullptr;   // + bias (last panel), or null
  bool add_c = false;            // + what C held before (beta 1, last panel)
  float* a_sums = nullptr;       // kSums: op(A)'s MR row sums, carried across panels
  bool from_sums = false;        // kSums: start from a_sums' values (a later panel)
  __mmask16 columns = 0xFFFF;    // kMasked: the block's columns below n (n % 16 of them)
};

// A masked block's B, C and bias lanes go through `columns` (its columns
// past n are neither read nor written). Only the last block of an n that
// is not a multiple of 16 is masked: with a masked load in the dW loop GCC
// kept the sums on the stack (64 x 16 x 512 took twice as long).
template <bool kMasked>
__attribute__((target("avx512f"), always_inline)) inline __m512 LoadColumns(__mmask16 columns, const float* p) {
  if constexpr (kMasked) return _mm512_maskz_loadu_ps(columns, p);
  return _mm512_loadu_ps(p);
}
template <bool kMasked>
__attribute__((target("avx512f"), always_inline)) inline void StoreColumns(__mmask16 columns, float* p, __m512 x) {
  if constexpr (kMasked) return _mm512_mask_storeu_ps(p, columns, x);
  _mm512_storeu_ps(p, x);
}

// C's MR rows x (kLanes * NV) columns from column j, over terms [0, k) of
// a panel: the sum over p in order of a(r, p) * b(p, j + ...), one FMA per
// term, from 0 (first panel) or from what C holds (a later panel: the
// float the chain had reached, so the panels change no bit), then + bias
// or + what C held before (last panel). a(r, p) is at a[r * a_row + p *
// a_col]; b's row p at b + p * ldb; C's rows ldc apart. With kSums (A
// transposed, a_row 1: a row's MR values lie together) it also adds
// a(r, p) to row r's sum, p in order, one float addition each (the order of
// cpu_onednn's ReduceSumTo down a column of A). MR and NV are compile-time
// so that the MR x NV sums stay in registers for the whole panel.
template <int MR, int NV, bool kSums, bool kMasked = false>
__attribute__((target("avx512f"), always_inline)) inline void Block(int64_t k, const float* a, int64_t a_row,
                                                                   int64_t a_col, const float* b, int64_t ldb,
                                                                   const BlockEnds& ends, float* c, int64_t ldc) {
  if constexpr (kSums) a_row = 1;  // known here: the offsets of a row's values become constants
  __m512 sum[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      sum[r][v] = ends.from_c ? LoadColumns<kMasked>(ends.columns, c + r * ldc + kLanes * v) : _mm512_setzero_ps();
  // MR row sums: a vector of eight, or one float (the blocks MR takes).
  static_assert(!kSums || MR == 8 || MR == 1, "row sums for blocks of 8 or 1 rows");
  static_assert(!kMasked || (NV == 1 && !kSums), "masked columns in one-vector blocks without row sums");
  __m256 sums8 = kSums && MR == 8 && ends.from_sums ? _mm256_loadu_ps(ends.a_sums) : _mm256_setzero_ps();
  float sum1 = kSums && MR == 1 && ends.from_sums ? ends.a_sums[0] : 0.0f;
  for (int64_t p = 0; p < k; ++p) {
    __m512 row[NV];  // B(p, j .. j + kLanes * NV)
    for (int v = 0; v < NV; ++v) row[v] = LoadColumns<kMasked>(ends.columns, b + p * ldb + kLanes * v);
    for (int r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * a_row + p * a_col]);
      for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_fmadd_ps(x, row[v], sum[r][v]);
    }
    if constexpr (kSums && MR == 8) sums8 = _mm256_add_ps(sums8, _mm256_loadu_ps(a + p * a_col));
    if constexpr (kSums && MR == 1) sum1 += a[p * a_col];
  }
  if constexpr (kSums && MR == 8) _mm256_storeu_ps(ends.a_sums, sums8);
  if constexpr (kSums && MR == 1) ends.a_sums[0] = sum1;
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      __m512 out = sum[r][v];
      if (ends.bias != nullptr) out = _mm512_add_ps(out, LoadColumns<kMasked>(ends.columns, ends.bias + kLanes * v));
      if (ends.add_c) out = _mm512_add_ps(out, LoadColumns<kMasked>(ends.columns, c + r * ldc + kLanes * v));
      StoreColumns<kMasked>(ends.columns, c + r * ldc + kLanes * v, out);
    }
}

// Where the rows and columns of one product lie.
struct Operands {
  int64_t m, n, k;
  const float* a;
  int64_t a_row, a_col;  // op(A)(i, p) at a[i * a_row + p * a_col]
  const float* b;        // (k, n)
  const float* bias;     // (n) or null
  bool add_c;            // beta 1: C += the product (k in one panel)
  float* c;              // (m, n)
  float* a_column_sums;  // (m): op(A)'s rows summed, or null
};

// RowBlock's first column block (`ends` as RowBlock set them for column 0)
// with op(A)'s row sums (A transposed: a_row 1); *j becomes the column
// after it.
template <int MR, int NV>
__attribute__((target("avx512f"), always_inline)) inline void FirstBlockWithSums(
    const Operands& o, const float* a, const float* b, float* c, int64_t i, int64_t p0, int64_t kc,
    const BlockEnds& ends, int64_t* j) {
  BlockEnds first = ends;
  first.a_sums = o.a_column_sums + i;
  first.from_sums = p0 > 0;
  if (NV * kLanes <= o.n) {
    Block<MR, NV, true>(kc, a, o.a_row, o.a_col, b, o.n, first, c, o.n);
    *j = NV * kLanes;
  } else {
    Block<MR, 1, true>(kc, a, o.a_row, o.a_col, b, o.n, first, c, o.n);
    *j = kLanes;
  }
}

// The terms [p0, p0 + kc) of rows [i, i + MR) of C, every column: blocks
// of NV vectors, then of one; the first block also sums op(A)'s rows when
// o.a_column_sums is set.
template <int MR, int NV>
__attribute__((target("avx512f"))) void RowBlock(const Operands& o, int64_t i, int64_t p0, int64_t kc) {
  const float* a = o.a + i * o.a_row + p0 * o.a_col;
  const float* b = o.b + p0 * o.n;
  const bool last = p0 + kc == o.k;
  float* c = o.c + i * o.n;
  BlockEnds ends;
  ends.from_c = p0 > 0;
  ends.add_c = last && o.add_c;
  int64_t j = 0;
  if constexpr (MR == 8 || MR == 1) {  // the row blocks of A transposed (Product)
    ends.bias = last && o.bias ? o.bias : nullptr;
    if (o.a_column_sums != nullptr) FirstBlockWithSums<MR, NV>(o, a, b, c, i, p0, kc, ends, &j);
  }
  for (; j + NV * kLanes <= o.n; j += NV * kLanes) {
    ends.bias = last && o.bias ? o.bias + j : nullptr;
    Block<MR, NV, false>(kc, a, o.a_row, o.a_col, b + j, o.n, ends, c + j, o.n);
  }
  for (; j < o.n; j += kLanes) {
    ends.bias = last && o.bias ? o.bias + j : nullptr;
    if (j + kLanes <= o.n) {
      Block<MR, 1, false>(kc, a, o.a_row, o.a_col, b + j, o.n, ends, c + j, o.n);
    } else {  // the last n % 16 columns
      ends.columns = Columns(j, o.n);
      Block<MR, 1, false, true>(kc, a, o.a_row, o.a_col, b + j, o.n, ends, c + j, o.n);
    }
  }
}

// Part `part` of `parts` of the cache lines of [p, p + bytes), prefetched.
inline void PrefetchPart(const float* p, int64_t bytes, int64_t part, int64_t parts) {
  const char* base = reinterpret_cast<const char*>(p);
  const int64_t lines = (bytes + 63) / 64;
  for (int64_t l = lines * part / parts; l < lines * (part + 1) / parts; ++l) _mm_prefetch(base + 64 * l, _MM_HINT_T0);
}

// Rows [first, end) of C in blocks of MR (the rest one at a time), the
// terms in panels of kc: a panel's rows of B (kc x n) stay in L1 while
// every row block uses them, and each row block prefetches its share of
// the next panel's (in a step, dW's B is an activation the forward wrote
// long before: it comes from L3, and the first row block of every panel
// waited for it).
template <int MR, int NV>
void RowRange(const Operands& o, int64_t first, int64_t end, int64_t kc) {
  const int64_t blocks = std::max<int64_t>(1, (end - first) / MR);
  for (int64_t p0 = 0; p0 < o.k; p0 += kc) {
    const int64_t panel = std::min(kc, o.k - p0);
    const int64_t next_rows = std::min(kc, o.k - p0 - panel);
    const float* next = o.b + (p0 + panel) * o.n;
    int64_t i = first;
    for (int64_t q = 0; i + MR <= end; i += MR, ++q) {
      if (next_rows > 0) PrefetchPart(next, next_rows * o.n * int64_t{sizeof(float)}, q, blocks);
      RowBlock<MR, NV>(o, i, p0, panel);
    }
    for (; i < end; ++i) RowBlock<1, NV>(o, i, p0, panel);
  }
}

// dW's panels (A transposed, k the batch's rows): kDwPanelTerms terms, so
// a panel's rows of B stay in L1 across row blocks (on the Xeon of
// bench/README.md, 98-106 -> 136-143 GFLOP/s at the sort model's 64..128 x
// 64..128 x 512; B's 128..256 KiB no longer streamed from L2 for every row
// block), or the whole of k where that runs faster: on an AMD EPYC Zen 4
// the sort step's dW products took 600-606 us a step in one panel against
// 654-658 in panels of 64 (bench/README.md, "dW's panels by measurement").
constexpr int64_t kDwPanelTerms = 64;

// Whether a 64 x 64 x kMediumGemmMaxK dW runs faster in one panel than in
// panels of kDwPanelTerms on this CPU, on one thread: the faster of the
// best of eight alternated calls each (about 0.6 ms, once a process).
bool DwWholeKIsFaster() {
  constexpr int64_t m = 64, n = 64, k = kMediumGemmMaxK;
  CacheLineVector<float> a(k * m, 0.5f), b(k * n, 0.25f), c(m * n), sums(m);
  const Operands o{m, n, k, a.data(), 1, m, b.data(), nullptr, false, c.data(), sums.data()};
  auto seconds = [&](int64_t kc) {
    const auto start = std::chrono::steady_clock::now();
    RowRange<8, 2>(o, 0, m, kc);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double panels = 1e30, whole = 1e30;
  for (int i = 0; i < 8; ++i) {
    panels = std::min(panels, seconds(kDwPanelTerms));
    whole = std::min(whole, seconds(k));
  }
  return whole < panels;
}

// dW = dY^T X: 8 rows x 2 vectors, in panels of `dw_panel` terms. dX = dY W
// (k at most 128 there, B in L1): 4 rows x 4 vectors over the whole of k;
// one vector of columns or less (the sort model's head, n 10), 8 rows x 1
// vector: 4 rows left a block of 4 sums, whose FMA latency set the pace.
// Threads take contiguous ranges of whole row blocks.
void Product(const Operands& o, bool trans_a, int64_t dw_panel) {
  TVLAB_CHECK(!trans_a || o.n % kLanes == 0) << "MediumGemm: dW takes whole vectors of columns, n " << o.n;
  TVLAB_CHECK(dw_panel >= 1) << "MediumGemm: panels of " << dw_panel << " terms";
  const bool narrow = !trans_a && o.n <= kLanes;
  const int mr = trans_a || narrow ? 8 : 4;
  const int64_t blocks = (o.m + mr - 1) / mr;
  const bool parallel = o.m * o.n * o.k >= kParallelGemmMacs;
  OnTeam(parallel ? omp_get_max_threads() : 1, [&](int64_t t, int64_t threads) {
    const int64_t first = std::min(o.m, blocks * t / threads * mr);
    const int64_t end = std::min(o.m, blocks * (t + 1) / threads * mr);
    if (trans_a) {
      RowRange<8, 2>(o, first, end, dw_panel);
    } else if (narrow) {
      RowRange<8, 1>(o, first, end, /*kc=*/o.k);
    } else {
      RowRange<4, 4>(o, first, end, /*kc=*/o.k);
    }
  });
}

// bt (k, n) = b (n, k) transposed, in 16 x 16 blocks through registers
// (k's last columns and n's last rows masked).
// (GCC 12's AVX-512 intrinsics inlined from Transpose16 start from
// _mm512_undefined_ps() and warn that it "may be used uninitialized": a
// false positive in the header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) void TransposeInto(const float* b, int64_t n, int64_t k, float* bt) {
  for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
    const int64_t height = std::min<int64_t>(kLanes, n - j0);
    const __mmask16 out_lanes = Columns(j0, n);
    for (int64_t p0 = 0; p0 < k; p0 += kLanes) {
      const int64_t width = std::min<int64_t>(kLanes, k - p0);
      const __mmask16 lanes = Columns(p0, k);
      __m512 rows[kLanes], columns[kLanes];
      for (int r = 0; r < kLanes; ++r)
        rows[r] = r < height ? _mm512_maskz_loadu_ps(lanes, b + (j0 + r) * k + p0) : _mm512_setzero_ps();
      Transpose16(rows, columns);
      for (int64_t e = 0; e < width; ++e) _mm512_mask_storeu_ps(bt + (p0 + e) * n + j0, out_lanes, columns[e]);
    }
  }
}
#pragma GCC diagnostic pop

}  // namespace

bool IsMediumGemm(const GemmDesc& d, bool onednn_has_avx512_core) {
  const bool operands = !d.trans_b || (!d.trans_a && d.beta == 0.0f);  // B transposed: a Linear's forward
  const bool beta = d.beta == 0.0f || (d.beta == 1.0f && !d.trans_a);   // dW's panels overwrite C
  const bool columns = !d.trans_a || d.n % kLanes == 0;                   // dW's blocks are whole vectors
  return onednn_has_avx512_core && d.precision == Precision::kFp32 && d.batch == 1 && operands && d.alpha == 1.0f &&
         beta && columns && d.m > 0 && d.k > 0 && d.n > 0 && d.n <= kMediumGemmMaxN &&
         d.k <= kMediumGemmMaxK && d.m * d.n * d.k <= kMediumGemmMaxMacs;
}

void MediumGemm(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c) {
  if (d.trans_b) {  // (n, k) into (k, n) rows, in a buffer the thread keeps
    thread_local CacheLineVector<float> bt;
    bt.resize(static_cast<size_t>(d.k * d.n));
    TransposeInto(b, d.n, d.k, bt.data());
    b = bt.data();
  }
  Product(Operands{d.m, d.n, d.k, a, d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1, b, bias, d.beta == 1.0f, c, nullptr},
          d.trans_a, MediumGemmDwPanelTerms(d.k));
}

void MediumGemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c, float* a_column_sums) {
  MediumGemmAndColumnSumsInPanels(d, a, b, c, a_column_sums, MediumGemmDwPanelTerms(d.k));
}

void MediumGemmAndColumnSumsInPanels(const GemmDesc& d, const float* a, const float* b, float* c,
                                     float* a_column_sums, int64_t panel_terms) {
  TVLAB_CHECK(d.trans_a && !d.trans_b && d.beta == 0.0f) << "MediumGemmAndColumnSums: A transposed, B not, beta 0";
  Product(Operands{d.m, d.n, d.k, a, 1, d.m, b, nullptr, false, c, a_column_sums}, true, panel_terms);
}

int64_t MediumGemmDwPanelTerms(int64_t k) {
  static const bool whole = DwWholeKIsFaster();
  return whole ? k : std::min(k, kDwPanelTerms);
}

}  // namespace onednn
}  // namespace tvlab
