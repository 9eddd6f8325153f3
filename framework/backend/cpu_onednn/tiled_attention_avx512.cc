// The tiled fused attention kernel on AVX-512F, for plain attention
// (tiled_attention_avx512.h).

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn that
// it "may be used uninitialized" or "is used uninitialized" (a false
// positive in the header: _mm512_reduce_add_ps, inlined into ExpRow).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "framework/backend/cpu_onednn/tiled_attention_avx512.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"
#include "framework/backend/cpu_onednn/tiled_attention_avx512_blocks.h"
#include "framework/backend/cpu_onednn/tiled_attention_avx512_rows.h"
#include "framework/core/check.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace onednn {
namespace tiled_avx512 {
namespace {

using short_avx512::Exp;
using short_avx512::Transpose16;

// Query rows a block: the causal mask wastes a block's upper triangle of
// products on the diagonal (at T 256, 12% of them with 32 rows, 20% with
// 64), while the key gradients' products (AddToKeys) sum over the block's
// rows in registers.
constexpr int64_t kBlockRows = 32;
// Below this many multiply-adds a call runs on one thread (the tiled
// kernel's threshold).
constexpr int64_t kParallelMacs = int64_t{1} << 22;

// One thread's buffers, grown as needed and kept across calls: a key/value
// head's panels, a query block's scores and weights, the key and value
// gradient sums.
struct Scratch {
  std::vector<float> kt, vt;       // (D, S rounded up to 16): keys, values transposed
  std::vector<float> kc, vc;       // (S, D): keys, values side by side
  std::vector<float> dk, dv;       // (S, D): gradient sums
  std::vector<float> s, p;         // (kBlockRows, S rounded up): scores / weights, dp / ds
  std::vector<float> keep, kept;   // with dropout, as s: the factors, and weights times them
  std::vector<float> inv_sum, big_d;
  std::vector<int64_t> first, end;  // (kBlockRows): each row's visible keys (RowKeys)
  std::vector<uint32_t> words;     // DropoutFactors' scratch
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

void Grow(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// Where one query block's operands lie: its rows of q, out, dout and dq,
// the keys every row of it may see, and each row's visible keys.
struct Block {
  int64_t i0 = 0, rows = 0;     // queries [i0, i0 + rows)
  int64_t key_begin = 0, key_end = 0;  // the union of its rows' visible keys
  int64_t c0 = 0, c1 = 0;       // [key_begin, key_end) widened to whole vectors
};

Block QueryBlock(const FusedAttentionDesc& d, int64_t b, int64_t i0) {
  Block blk;
  blk.i0 = i0;
  blk.rows = std::min(kBlockRows, d.queries - i0);
  blk.key_begin = d.VisibleBegin(b, i0);
  blk.key_end = std::max(blk.key_begin, d.VisibleEnd(b, i0 + blk.rows - 1));
  blk.c0 = blk.key_begin / kLanes * kLanes;
  blk.c1 = RoundUp(blk.key_end);
  return blk;
}

// The keys each row of `blk` sees, in w.first and w.end.
RowKeys KeysOfRows(const FusedAttentionDesc& d, int64_t b, const Block& blk, Scratch& w) {
  for (int64_t r = 0; r < blk.rows; ++r) {
    w.first[r] = d.VisibleBegin(b, blk.i0 + r);
    w.end[r] = d.VisibleEnd(b, blk.i0 + r);
  }
  return RowKeys{w.first.data(), w.end.data()};
}

// Leading dimensions of q (dq), k (dk), v (dv), out (dout): a head's rows
// one row apart head-major, H or G rows apart token-major.
struct RowSteps {
  explicit RowSteps(const FusedAttentionDesc& d)
      : q(d.QueryRowStep() * d.head_dim), k(d.KeyRowStep() * d.head_dim),
        v(d.KeyRowStep() * d.value_dim), o(d.QueryRowStep() * d.value_dim) {}
  int64_t q, k, v, o;
};

// Grows this thread's buffers for `d`.
Scratch& ScratchFor(const FusedAttentionDesc& d) {
  Scratch& w = ThreadScratch();
  const int64_t panel = d.head_dim * RoundUp(d.keys);
  for (std::vector<float>* v : {&w.kt, &w.vt, &w.kc, &w.vc, &w.dk, &w.dv}) Grow(*v, panel);
  Grow(w.s, kBlockRows * RoundUp(d.keys));
  Grow(w.p, kBlockRows * RoundUp(d.keys));
  if (d.dropout > 0.0f) {
    Grow(w.keep, kBlockRows * RoundUp(d.keys));
    Grow(w.kept, kBlockRows * RoundUp(d.keys));
  }
  Grow(w.inv_sum, kBlockRows);
  if (w.first.size() < static_cast<size_t>(kBlockRows)) w.first.resize(kBlockRows), w.end.resize(kBlockRows);
  Grow(w.big_d, d.queries);
  return w;
}

// out rows (rows, D) = weights (rows, the keys each row sees) @ x (keys,
// D), each row times scale (null: 1): V = D / 16 vectors a row.
void Weighted(int64_t width, const float* w, int64_t ldw, int64_t rows, const float* x, const RowKeys& keys,
              const float* scale, float* out, int64_t ldo) {
  switch (width / kLanes) {
    case 1: return WeightedRows<1>(w, ldw, rows, x, keys, scale, out, ldo);
    case 2: return WeightedRows<2>(w, ldw, rows, x, keys, scale, out, ldo);
    default: return WeightedRows<4>(w, ldw, rows, x, keys, scale, out, ldo);
  }
}

// acc (keys [j0, j1), D) += w^T (keys, rows) @ x (rows, D), each key over
// the rows that see it.
void AddTo(int64_t width, const float* w, int64_t ldw, int64_t rows, const float* x, int64_t ldx, int64_t j0,
           int64_t j1, const RowKeys& keys, float* acc) {
  switch (width / kLanes) {
    case 1: return AddToKeys<1>(w, ldw, rows, x, ldx, j0, j1, keys, acc);
    case 2: return AddToKeys<2>(w, ldw, rows, x, ldx, j0, j1, keys, acc);
    default: return AddToKeys<4>(w, ldw, rows, x, ldx, j0, j1, keys, acc);
  }
}

// Query head (b, h): out and lse, one block of query rows at a time, every
// key a block sees in one pass (so no running rescale).
void ForwardHead(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                 float* lse, int64_t b, int64_t h, Scratch& w) {
  const int64_t hd = d.head_dim, sp = RoundUp(d.keys);
  const RowSteps ld(d);
  const int64_t g = h / d.group_size();
  PackTransposed(k + d.KeyRow(b, g, 0) * hd, ld.k, d.keys, hd, w.kt.data(), sp);  // (hd, sp)
  CopyRows(v + d.KeyRow(b, g, 0) * hd, ld.v, d.keys, hd, w.vc.data(), hd);        // (S, hd)
  for (int64_t i0 = 0; i0 < d.queries; i0 += kBlockRows) {
    const Block blk = QueryBlock(d, b, i0);
    const float* qb = q + d.QueryRow(b, h, i0) * hd;  // (rows, hd), rows ld.q apart
    float* ob = out + d.QueryRow(b, h, i0) * hd;      // (rows, hd), rows ld.o apart
    float* lse_b = lse + (b * d.heads + h) * d.queries + i0;
    const RowKeys keys = KeysOfRows(d, b, blk, w);
    // s (rows, [c0, c1)) = scale * q_block @ k^T, on the vectors of the keys each row group sees
    Scores(qb, ld.q, blk.rows, w.kt.data(), sp, hd, d.scale, keys, w.s.data(), sp);
    for (int64_t r = 0; r < blk.rows; ++r) {
      float* s = w.s.data() + r * sp;
      const int64_t first = w.first[r], end = w.end[r];
      if (first >= end) {  // no visible key: zero output
        std::fill(s + blk.c0, s + blk.c1, 0.0f);
        w.inv_sum[r] = 0.0f;
        lse_b[r] = kNegInf;
        continue;
      }
      const float m = RowMax(s, first, end);
      const float sum = ExpRow(s, blk.c0, blk.c1, first, end, m);  // s = exp(s - m) where visible, else 0
      w.inv_sum[r] = 1.0f / sum;
      lse_b[r] = m + std::log(sum);
      if (d.dropout > 0.0f) {  // s = exp(s - m) * keep: the sum above stays the undropped one
        KeepRow(d, (b * d.heads + h) * d.queries + i0 + r, first, end, w.keep.data() + first, w.words);
        MultiplyColumns(s, w.keep.data(), first, end);
      }
    }
    // out (rows, hd) = weights @ v / sums
    Weighted(hd, w.s.data(), sp, blk.rows, w.vc.data(), keys, w.inv_sum.data(), ob, ld.o);
  }
}

// Row r of a block: weights p = exp(s - lse) on the row's visible keys, 0
// elsewhere in [c0, c1).
void BackwardWeights(const FusedAttentionDesc& d, int64_t b, const Block& blk, const float* lse_b, float* s,
                     int64_t sp) {
  for (int64_t r = 0; r < blk.rows; ++r) {
    float* row = s + r * sp;
    const int64_t first = d.VisibleBegin(b, blk.i0 + r), end = d.VisibleEnd(b, blk.i0 + r);
    if (first >= end || lse_b[r] == kNegInf) {
      std::fill(row + blk.c0, row + blk.c1, 0.0f);
      continue;
    }
    ExpRow(row, blk.c0, blk.c1, first, end, lse_b[r]);
  }
}

// With dropout, for each row r of a block whose weights p (rows, [c0, c1))
// hold: keep (as p) = its dropout factors on the row's visible keys, 0 on
// the rest; kept = p * keep, the weights the forward multiplied v by.
TVLAB_AVX512 void KeptWeights(const FusedAttentionDesc& d, int64_t b, int64_t h, const Block& blk, const float* p,
                              int64_t sp, Scratch& w) {
  for (int64_t r = 0; r < blk.rows; ++r) {
    float* keep = w.keep.data() + r * sp;
    std::fill(keep + blk.c0, keep + blk.c1, 0.0f);
    const int64_t first = d.VisibleBegin(b, blk.i0 + r), end = d.VisibleEnd(b, blk.i0 + r);
    if (first < end) KeepRow(d, (b * d.heads + h) * d.queries + blk.i0 + r, first, end, keep + first, w.words);
    const float* pr = p + r * sp;
    float* kept = w.kept.data() + r * sp;
    for (int64_t c = blk.c0; c < blk.c1; c += kLanes)
      _mm512_storeu_ps(kept + c, _mm512_mul_ps(_mm512_loadu_ps(pr + c), _mm512_loadu_ps(keep + c)));
  }
}

// ds = p * (keep * dp - D_i) * scale over a block's columns [c0, c1), in
// dp (keep null: 1): on the columns Scores computed dp for (a row group's,
// ScoreGroup), and 0 on the rest (hidden keys, p 0 there).
TVLAB_AVX512 void LogitGradients(const Block& blk, const RowKeys& keys, const float* p, const float* keep,
                                 float* dp, int64_t sp, const float* big_d, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  int64_t g0 = 0, g1 = 0, group_end = 0;  // the current row group's columns, and its rows' end
  for (int64_t r = 0; r < blk.rows; ++r) {
    if (r == group_end) group_end = r + ScoreGroup(keys, r, blk.rows, &g0, &g1);
    const __m512 dr = _mm512_set1_ps(big_d[r]);
    const int64_t c0 = std::max(blk.c0, g0), c1 = std::min(blk.c1, g1);
    for (int64_t c = blk.c0; c < c0; c += kLanes) _mm512_storeu_ps(dp + r * sp + c, _mm512_setzero_ps());
    for (int64_t c = c1; c < blk.c1; c += kLanes) _mm512_storeu_ps(dp + r * sp + c, _mm512_setzero_ps());
    for (int64_t c = c0; c < c1; c += kLanes) {
      __m512 g = _mm512_loadu_ps(dp + r * sp + c);
      if (keep != nullptr) g = _mm512_mul_ps(_mm512_loadu_ps(keep + r * sp + c), g);
      const __m512 x = _mm512_sub_ps(g, dr);
      _mm512_storeu_ps(dp + r * sp + c, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(p + r * sp + c), x), sc));
    }
  }
}

// D_i = dout_i . out_i for every query i of head (b, h).
TVLAB_AVX512 void RowDotsOfHead(const FusedAttentionDesc& d, const float* out, const float* dout, int64_t b,
                                int64_t h, float* big_d) {
  for (int64_t i = 0; i < d.queries; ++i) {
    const int64_t row = d.QueryRow(b, h, i) * d.value_dim;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < d.value_dim; c += kLanes)
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(dout + row + c), _mm512_loadu_ps(out + row + c), acc);
    big_d[i] = _mm512_reduce_add_ps(acc);
  }
}

// One query block of head h against key/value head (b, g)'s panels: dq of
// its rows, and its terms of dk and dv into w.dk, w.dv.
void BackwardBlock(const FusedAttentionDesc& d, const float* q, const float* lse, const float* dout, float* dq,
                   int64_t b, int64_t h, int64_t i0, Scratch& w) {
  const int64_t hd = d.head_dim, sp = RoundUp(d.keys);
  const RowSteps ld(d);
  const Block blk = QueryBlock(d, b, i0);
  const int64_t row = d.QueryRow(b, h, i0);
  const float* qb = q + row * hd;      // (rows, hd), rows ld.q apart
  const float* dob = dout + row * hd;  // (rows, hd), rows ld.o apart
  float* dqb = dq + row * hd;          // (rows, hd), rows ld.q apart
  if (blk.key_begin >= blk.key_end) {  // no key visible to any row
    for (int64_t r = 0; r < blk.rows; ++r) std::fill(dqb + r * ld.q, dqb + r * ld.q + hd, 0.0f);
    return;
  }
  const RowKeys keys = KeysOfRows(d, b, blk, w);
  // p (rows, [c0, c1)) = exp(scale * q k^T - lse), 0 where hidden
  Scores(qb, ld.q, blk.rows, w.kt.data(), sp, hd, d.scale, keys, w.s.data(), sp);
  BackwardWeights(d, b, blk, lse + (b * d.heads + h) * d.queries + i0, w.s.data(), sp);
  const bool dropped = d.dropout > 0.0f;
  if (dropped) KeptWeights(d, b, h, blk, w.s.data(), sp, w);  // w.kept = p * keep
  // dv (keys, hd) += (p * keep)^T @ dout_block
  AddTo(hd, dropped ? w.kept.data() : w.s.data(), sp, blk.rows, dob, ld.o, blk.key_begin, blk.key_end, keys,
        w.dv.data());
  // dp (rows, [c0, c1)) = dout_block @ v^T, then ds in place
  Scores(dob, ld.o, blk.rows, w.vt.data(), sp, hd, 1.0f, keys, w.p.data(), sp);
  LogitGradients(blk, keys, w.s.data(), dropped ? w.keep.data() : nullptr, w.p.data(), sp, w.big_d.data() + i0,
                 d.scale);
  // dq_block (rows, hd) = ds @ k;  dk (keys, hd) += ds^T @ q_block
  Weighted(hd, w.p.data(), sp, blk.rows, w.kc.data(), keys, nullptr, dqb, ld.q);
  AddTo(hd, w.p.data(), sp, blk.rows, qb, ld.q, blk.key_begin, blk.key_end, keys, w.dk.data());
}

// Every query head of key/value head (b, g): dq of those heads, dk and dv
// of (b, g).
void BackwardGroup(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, const float* out,
                   const float* lse, const float* dout, float* dq, float* dk, float* dv, int64_t b, int64_t g,
                   Scratch& w) {
  const int64_t hd = d.head_dim, sp = RoundUp(d.keys);
  const RowSteps ld(d);
  const int64_t key0 = d.KeyRow(b, g, 0) * hd;
  PackTransposed(k + key0, ld.k, d.keys, hd, w.kt.data(), sp);  // (hd, sp)
  CopyRows(k + key0, ld.k, d.keys, hd, w.kc.data(), hd);        // (S, hd)
  PackTransposed(v + key0, ld.v, d.keys, hd, w.vt.data(), sp);  // (hd, sp)
  std::fill(w.dk.begin(), w.dk.begin() + d.keys * hd, 0.0f);
  std::fill(w.dv.begin(), w.dv.begin() + d.keys * hd, 0.0f);
  for (int64_t h = g * d.group_size(); h < (g + 1) * d.group_size(); ++h) {
    RowDotsOfHead(d, out, dout, b, h, w.big_d.data());
    for (int64_t i0 = 0; i0 < d.queries; i0 += kBlockRows) BackwardBlock(d, q, lse, dout, dq, b, h, i0, w);
  }
  CopyRows(w.dk.data(), hd, d.keys, hd, dk + key0, ld.k);
  CopyRows(w.dv.data(), hd, d.keys, hd, dv + key0, ld.v);
}

bool Parallel(const FusedAttentionDesc& d) {
  return d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
}

}  // namespace
}  // namespace tiled_avx512

bool TiledAttentionAvx512Computes(const FusedAttentionDesc& d) {
  static const bool available = CpuHasAvx512f();
  const bool plain = d.alibi_slopes.empty() && !d.has_bucket_bias() && d.logit_softcap == 0.0f &&
                     !d.has_sink() && d.precision == Precision::kFp32;
  const bool widths = d.head_dim == d.value_dim && (d.head_dim == 16 || d.head_dim == 32 || d.head_dim == 64);
  return available && plain && widths;
}

bool TiledAttentionAvx512Takes(const FusedAttentionDesc& d) {
  return TiledAttentionAvx512Computes(d) && d.keys * d.head_dim <= kTiledAvx512MaxPanel &&
         d.queries >= kTiledAvx512MinQueries;
}

bool TiledAttentionAvx512TakesBackward(const FusedAttentionDesc& d) {
  const int threads = tiled_avx512::Parallel(d) ? omp_get_max_threads() : 1;
  return TiledAttentionAvx512Takes(d) && d.batch * d.kv_heads >= threads;
}

void TiledAttentionForwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                                 float* out, float* lse) {
  d.CheckConsistent();
  TVLAB_CHECK(TiledAttentionAvx512Computes(d)) << "the AVX-512 tiled attention kernel does not compute this call";
  const int64_t tasks = d.batch * d.heads;
#pragma omp parallel if (tiled_avx512::Parallel(d))
  {
    tiled_avx512::Scratch& w = tiled_avx512::ScratchFor(d);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task)
      tiled_avx512::ForwardHead(d, q, k, v, out, lse, task / d.heads, task % d.heads, w);
  }
}

void TiledAttentionBackwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                                  const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                  float* dv) {
  d.CheckConsistent();
  TVLAB_CHECK(TiledAttentionAvx512Computes(d)) << "the AVX-512 tiled attention kernel does not compute this call";
  const int64_t tasks = d.batch * d.kv_heads;
#pragma omp parallel if (tiled_avx512::Parallel(d))
  {
    tiled_avx512::Scratch& w = tiled_avx512::ScratchFor(d);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task)
      tiled_avx512::BackwardGroup(d, q, k, v, out, lse, dout, dq, dk, dv, task / d.kv_heads, task % d.kv_heads, w);
  }
}

}  // namespace onednn
}  // namespace tvlab
