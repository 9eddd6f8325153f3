#include "framework/backend/cpu_onednn/tiled_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/tiled_attention_rows.h"
#include "framework/backend/cpu_onednn/tiled_logit_terms.h"
#include "framework/core/check.h"
#include "oneapi/dnnl/dnnl.h"

namespace tvlab {
namespace {

using tiled_rows::DotRow;
using tiled_rows::ExpShiftedSum;
using tiled_rows::LogitGradient;
using tiled_rows::MultiplyRows;
using tiled_rows::RowMax;
using tiled_rows::ScaleRow;
using tiled_rows::SubtractDistanceBias;

// Tile sizes: larger tiles amortise sgemm's packing (head sizes are small);
// 128 x 256 was ~10% faster than 64 x 128 at T 4096 (bench/README.md). Up
// to kShortQueries queries a tile has 64 rows: a causal mask then hides
// less of each tile's products (64 rows x 256 keys cut the GPT config's
// attention, T 256, by 6-7%; level at T 1024; bench/README.md, "The GEMM
// bound of the GPT step").
constexpr int64_t kQueryTile = 128;
constexpr int64_t kShortQueryTile = 64;
constexpr int64_t kShortQueries = 1024;
constexpr int64_t kKeyTile = 256;

int64_t QueryTileRows(const FusedAttentionDesc& d) {
  return d.queries <= kShortQueries ? kShortQueryTile : kQueryTile;
}

// Below this many multiply-adds the kernel runs on one thread (the
// backend's GEMM threshold).
constexpr int64_t kParallelMacs = int64_t{1} << 22;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Row-major C (m, n) = alpha * op(A) op(B) + beta * C (oneDNN's BLAS-like
// sgemm; single-threaded inside our parallel region).
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k,
                                          alpha, a, lda, b, ldb, beta, c, ldc);
  TVLAB_CHECK(status == dnnl_success) << "dnnl_sgemm failed: " << static_cast<int>(status);
}

// Dropout factors of weights [first, first + n) in the (B, H, T, S) order of
// Backend::DropoutMask: 0 or 1 / (1 - p).
void KeepFactors(const FusedAttentionDesc& d, int64_t first, int64_t n,
                 std::vector<uint32_t>& words, float* keep) {
  DropoutFactors(*d.dropout_stream, d.dropout, first, n, keep, words);
}

// The visible keys of one row of a tile: columns [first, first + count).
struct VisibleSpan {
  int64_t first = 0, count = 0;
};

// Biases (ALiBi, then a bucketed bias), soft-caps and masks the score tile
// `s` (rows x cols, leading dim kKeyTile) of queries [i0, i0 + rows) against
// keys [j0, j0 + cols) of (b, h). Returns per row the span of visible keys in the tile (one
// interval: the causal and key-padding masks hide a suffix of the keys, a
// window and documents also a prefix). With `cap_slope` (same layout as s), the soft-cap's
// derivative per visible key.
void BiasAndMask(const FusedAttentionDesc& d, const TiledDistanceBias& bias, int64_t b,
                 int64_t h, int64_t i0, int64_t j0, int64_t rows, int64_t cols, float* s,
                 VisibleSpan* visible, float* cap_slope = nullptr) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * kKeyTile;
    const int64_t first = std::clamp<int64_t>(d.VisibleBegin(b, i0 + r) - j0, 0, cols);
    const int64_t end = std::clamp<int64_t>(d.VisibleEnd(b, i0 + r) - j0, first, cols);
    visible[r] = {first, end - first};
    if (!d.alibi_slopes.empty())
      SubtractDistanceBias(row + first, end - first, static_cast<float>(d.alibi_slopes[h]),
                           d.alibi_offset + i0 + r - j0 - first);
    if (bias.active()) bias.AddToRow(row + first, end - first, h, i0 + r, j0 + first);
    if (d.logit_softcap > 0.0f)
      SoftCapRow(row + first, end - first, d.logit_softcap,
                 cap_slope ? cap_slope + r * kKeyTile + first : nullptr);
    std::fill(row, row + first, kNegInf);
    std::fill(row + end, row + cols, kNegInf);
  }
}

// Leading dimensions of q (and dq), k (dk), v (dv) and out (dout): a head's
// rows lie one row apart head-major, H or G rows apart token-major
// (FusedAttentionDesc::token_major); sgemm takes either. lse and the
// dropout order are head-major either way.
struct RowStrides {
  explicit RowStrides(const FusedAttentionDesc& d)
      : q(d.QueryRowStep() * d.head_dim),
        k(d.KeyRowStep() * d.head_dim),
        v(d.KeyRowStep() * d.value_dim),
        o(d.QueryRowStep() * d.value_dim) {}
  int64_t q, k, v, o;
};

struct Tiles {
  // (kQueryTile, kKeyTile) tiles, the largest query tile: scores or
  // weights, dp, dropout, soft-cap slope
  std::vector<float> s, p, keep, cap_slope;
  std::vector<float> m, l;        // running max and sum per query row
  std::vector<VisibleSpan> visible;
  std::vector<uint32_t> words;
  Tiles()
      : s(kQueryTile * kKeyTile),
        p(kQueryTile * kKeyTile),
        keep(kQueryTile * kKeyTile),
        cap_slope(kQueryTile * kKeyTile),
        m(kQueryTile),
        l(kQueryTile),
        visible(kQueryTile) {}
};

// This thread's tiles, kept from call to call: each call's 0.5 MiB of
// fresh buffers cost page faults and zeroing (4% of the GPT config's
// attention backward). Every tile is written before it is read.
Tiles& ThreadTiles() {
  thread_local Tiles tiles;
  return tiles;
}

// One query tile of (b, h): out rows and lse.
void ForwardTile(const FusedAttentionDesc& d, const TiledDistanceBias& bias, const float* q,
                 const float* k, const float* v, float* out, float* lse, int64_t b, int64_t h,
                 int64_t i0, Tiles& t) {
  const int64_t rows = std::min(QueryTileRows(d), d.queries - i0);
  const int64_t hs = d.head_dim, hv = d.value_dim;
  const RowStrides ld(d);
  const int64_t row0 = (b * d.heads + h) * d.queries + i0;  // first (b, h, i) row of lse
  const int64_t g = h / d.group_size();
  const float* qt = q + d.QueryRow(b, h, i0) * hs;          // (rows, hs), rows ld.q apart
  const float* kg = k + d.KeyRow(b, g, 0) * hs;             // (S, hs), rows ld.k apart
  const float* vg = v + d.KeyRow(b, g, 0) * hv;             // (S, hv), rows ld.v apart
  float* o = out + d.QueryRow(b, h, i0) * hv;               // (rows, hv), rows ld.o apart
  for (int64_t r = 0; r < rows; ++r) std::fill(o + r * ld.o, o + r * ld.o + hv, 0.0f);
  // The running max and sum start at the sink's entry (exp(sink - sink) = 1).
  std::fill(t.m.begin(), t.m.end(), d.has_sink() ? d.sink_logits[h] : kNegInf);
  std::fill(t.l.begin(), t.l.end(), d.has_sink() ? 1.0f : 0.0f);
  // The first row sees the earliest key, the last row the latest: the key
  // tiles outside (a window's band: O(T * W) work) are skipped.
  const int64_t key_begin = d.VisibleBegin(b, i0);
  const int64_t key_end = d.VisibleEnd(b, i0 + rows - 1);
  for (int64_t j0 = key_begin; j0 < key_end; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, key_end - j0);
    // s (rows, cols) = scale * q_tile @ k_tile^T
    Sgemm(false, true, rows, cols, hs, d.scale, qt, ld.q, kg + j0 * ld.k, ld.k, 0.0f,
          t.s.data(), kKeyTile);
    BiasAndMask(d, bias, b, h, i0, j0, rows, cols, t.s.data(), t.visible.data());
    for (int64_t r = 0; r < rows; ++r) {
      float* row = t.s.data() + r * kKeyTile;
      const int64_t first = t.visible[r].first, n = t.visible[r].count;
      if (n == 0) {
        std::fill(row, row + cols, 0.0f);
        continue;
      }
      float* span = row + first;  // the visible keys [j0 + first, j0 + first + n)
      const float m_new = std::max(t.m[r], RowMax(span, n));
      const float correction = t.m[r] == kNegInf ? 0.0f : std::exp(t.m[r] - m_new);
      const float sum = ExpShiftedSum(span, n, m_new);  // span[:n] = exp(s - m_new)
      std::fill(row, span, 0.0f);
      std::fill(span + n, row + cols, 0.0f);
      t.l[r] = t.l[r] * correction + sum;
      t.m[r] = m_new;
      if (correction != 1.0f) ScaleRow(o + r * ld.o, hv, correction);
      if (d.dropout > 0.0f) {
        KeepFactors(d, (row0 + r) * d.keys + j0 + first, n, t.words, t.keep.data());
        MultiplyRows(span, t.keep.data(), n);
      }
    }
    // o (rows, hv) += p (rows, cols) @ v_tile (cols, hv)
    Sgemm(false, false, rows, hv, cols, 1.0f, t.s.data(), kKeyTile, vg + j0 * ld.v, ld.v, 1.0f,
          o, ld.o);
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (t.l[r] == 0.0f) {  // no visible key and no sink: zero output
      std::fill(o + r * ld.o, o + r * ld.o + hv, 0.0f);
      lse[row0 + r] = kNegInf;
      continue;
    }
    ScaleRow(o + r * ld.o, hv, 1.0f / t.l[r]);
    lse[row0 + r] = t.m[r] + std::log(t.l[r]);
  }
}

// ds (rows, cols) of queries i0.. x keys j0.. of head h into t.p (dp on entry). With a
// bucketed bias ds is first made unscaled (the bias's gradient, into dtable), then scaled.
void TileLogitGradient(const FusedAttentionDesc& d, const TiledDistanceBias& bias, int64_t h,
                       int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* big_d,
                       bool dropped, float* dtable, Tiles& t) {
  for (int64_t r = 0; r < rows; ++r)
    LogitGradient(t.s.data() + r * kKeyTile, dropped ? t.keep.data() + r * kKeyTile : nullptr,
                  t.p.data() + r * kKeyTile, cols, big_d[r], bias.active() ? 1.0f : d.scale);
  if (d.logit_softcap > 0.0f)  // ds of the uncapped logits: times the cap's slope
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first = r * kKeyTile + t.visible[r].first;  // ds is 0 outside
      MultiplyRows(t.p.data() + first, t.cap_slope.data() + first, t.visible[r].count);
    }
  if (!bias.active()) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* ds = t.p.data() + r * kKeyTile + t.visible[r].first;
    bias.AccumulateRow(ds, t.visible[r].count, h, i0 + r, j0 + t.visible[r].first, dtable);
    ScaleRow(ds, t.visible[r].count, d.scale);
  }
}

// Every query head of key/value head (b, g), for the keys [key_begin,
// key_end) (a multiple of kKeyTile apart, or to S): dk and dv of those keys
// of the shared key/value head, and their contribution to dq of the query
// heads, written into `dq_out` laid out as dq (the caller sums the
// contributions of a group's key ranges when it splits them); with a
// bucketed bias, adds its table gradient into `dtable` (num_buckets, H).
void BackwardGroup(const FusedAttentionDesc& d, const TiledDistanceBias& bias, const float* q,
                   const float* k, const float* v, const float* out, const float* lse,
                   const float* dout, float* dq_out, float* dk, float* dv, float* dtable,
                   int64_t b, int64_t g, int64_t key_begin, int64_t key_end, Tiles& t) {
  const int64_t hs = d.head_dim, hv = d.value_dim;
  const RowStrides ld(d);
  const float* kg = k + d.KeyRow(b, g, 0) * hs;  // (S, hs), rows ld.k apart
  const float* vg = v + d.KeyRow(b, g, 0) * hv;  // (S, hv), rows ld.v apart
  float* dkg = dk + d.KeyRow(b, g, 0) * hs;      // as kg
  float* dvg = dv + d.KeyRow(b, g, 0) * hv;      // as vg
  for (int64_t j = key_begin; j < key_end; ++j) {
    std::fill(dkg + j * ld.k, dkg + j * ld.k + hs, 0.0f);
    std::fill(dvg + j * ld.v, dvg + j * ld.v + hv, 0.0f);
  }
  std::vector<float> big_d(d.queries);  // D_i = dout_i . out_i
  const int64_t tile_rows = QueryTileRows(d);
  for (int64_t h = g * d.group_size(); h < (g + 1) * d.group_size(); ++h) {
    const int64_t head_row0 = (b * d.heads + h) * d.queries;  // of lse
    for (int64_t i = 0; i < d.queries; ++i) {
      const int64_t row = d.QueryRow(b, h, i);  // of q, out, dout, dq
      std::fill(dq_out + row * hs, dq_out + (row + 1) * hs, 0.0f);
      big_d[i] = DotRow(dout + row * hv, out + row * hv, hv);
    }
    for (int64_t i0 = 0; i0 < d.queries; i0 += tile_rows) {
      const int64_t rows = std::min(tile_rows, d.queries - i0);
      const int64_t row0 = head_row0 + i0;
      const int64_t q_row = d.QueryRow(b, h, i0);
      const float* qt = q + q_row * hs;      // (rows, hs), rows ld.q apart
      const float* dot = dout + q_row * hv;  // (rows, hv), rows ld.o apart
      float* dqt = dq_out + q_row * hs;      // (rows, hs), rows ld.q apart
      const int64_t visible_begin = std::max(key_begin, d.VisibleBegin(b, i0));  // a window's band
      const int64_t visible_end = std::min(key_end, d.VisibleEnd(b, i0 + rows - 1));
      for (int64_t j0 = visible_begin; j0 < visible_end; j0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, visible_end - j0);
        // p (rows, cols) = exp(scale * q k^T + bias - lse), 0 where hidden
        Sgemm(false, true, rows, cols, hs, d.scale, qt, ld.q, kg + j0 * ld.k, ld.k, 0.0f,
              t.s.data(), kKeyTile);
        BiasAndMask(d, bias, b, h, i0, j0, rows, cols, t.s.data(), t.visible.data(),
                    t.cap_slope.data());
        const bool dropped = d.dropout > 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
          float* row = t.s.data() + r * kKeyTile;
          const int64_t first = t.visible[r].first;
          const int64_t n = lse[row0 + r] == kNegInf ? 0 : t.visible[r].count;
          if (n > 0) ExpShiftedSum(row + first, n, lse[row0 + r]);
          std::fill(row, row + first, 0.0f);
          std::fill(row + first + n, row + cols, 0.0f);
          if (dropped) {  // t.p = p * keep: the weights the forward used
            float* pd = t.p.data() + r * kKeyTile;
            float* keep = t.keep.data() + r * kKeyTile;
            std::copy(row, row + cols, pd);
            std::fill(keep, keep + cols, 0.0f);
            if (n > 0) KeepFactors(d, (row0 + r) * d.keys + j0 + first, n, t.words, keep + first);
            MultiplyRows(pd, keep, cols);
          }
        }
        // dv_tile (cols, hv) += weights^T (cols, rows) @ dout_tile (rows, hv)
        Sgemm(true, false, cols, hv, rows, 1.0f, dropped ? t.p.data() : t.s.data(), kKeyTile,
              dot, ld.o, 1.0f, dvg + j0 * ld.v, ld.v);
        // dp (rows, cols) = dout_tile @ v_tile^T, reusing t.p
        Sgemm(false, true, rows, cols, hv, 1.0f, dot, ld.o, vg + j0 * ld.v, ld.v, 0.0f,
              t.p.data(), kKeyTile);
        TileLogitGradient(d, bias, h, i0, j0, rows, cols, big_d.data() + i0, dropped, dtable, t);
        // dq_tile (rows, hs) += ds (rows, cols) @ k_tile (cols, hs)
        Sgemm(false, false, rows, hs, cols, 1.0f, t.p.data(), kKeyTile, kg + j0 * ld.k, ld.k,
              1.0f, dqt, ld.q);
        // dk_tile (cols, hs) += ds^T (cols, rows) @ q_tile (rows, hs)
        Sgemm(true, false, cols, hs, rows, 1.0f, t.p.data(), kKeyTile, qt, ld.q, 1.0f,
              dkg + j0 * ld.k, ld.k);
      }
    }
  }
}

}  // namespace

void TiledAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                           const float* v, float* out, float* lse) {
  d.CheckConsistent();
  const TiledDistanceBias bias(d);
  const int64_t tile_rows = QueryTileRows(d);
  const int64_t query_tiles = (d.queries + tile_rows - 1) / tile_rows;
  const int64_t tasks = d.batch * d.heads * query_tiles;
  const bool parallel =
      d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
#pragma omp parallel if (parallel)
  {
    Tiles& tiles = ThreadTiles();
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / query_tiles, tile = task % query_tiles;
      ForwardTile(d, bias, q, k, v, out, lse, bh / d.heads, bh % d.heads, tile * tile_rows, tiles);
    }
  }
}

void TiledAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                            const float* v, const float* out, const float* lse,
                            const float* dout, float* dq, float* dk, float* dv,
                            float* dbias_table) {
  d.CheckConsistent();
  TVLAB_CHECK(!d.has_bucket_bias() || dbias_table != nullptr) << "a bucket bias needs dbias_table";
  const TiledDistanceBias bias(d);
  const bool parallel =
      d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
  const int64_t groups = d.batch * d.kv_heads;
  // With fewer key/value heads than threads (batch 1 with MQA, say) each
  // group's keys are split into ranges of whole key tiles, one task each;
  // a range's dq contribution goes to its own buffer and the ranges are
  // summed in a fixed order afterwards (same result for the same thread
  // count). Otherwise one task per group, straight into dq.
  const int64_t key_tiles = (d.keys + kKeyTile - 1) / kKeyTile;
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  const int64_t splits =
      groups >= threads ? 1 : std::max<int64_t>(1, std::min(key_tiles, (threads + groups - 1) / groups));
  const int64_t tiles_per_split = (key_tiles + splits - 1) / splits;
  const int64_t dq_size = d.batch * d.heads * d.queries * d.head_dim;
  std::vector<float> dq_parts(static_cast<size_t>((splits - 1) * dq_size));  // (splits - 1) x dq
  // One bucket-table gradient per task, summed in task order afterwards.
  const int64_t table_size = static_cast<int64_t>(d.bucket_bias.table.size());
  std::vector<float> dtable_parts(static_cast<size_t>(groups * splits * table_size));
#pragma omp parallel if (parallel)
  {
    Tiles& tiles = ThreadTiles();
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < groups * splits; ++task) {
      const int64_t group = task / splits, split = task % splits;
      const int64_t key_begin = std::min(d.keys, split * tiles_per_split * kKeyTile);
      const int64_t key_end = std::min(d.keys, (split + 1) * tiles_per_split * kKeyTile);
      float* dq_out = split == 0 ? dq : dq_parts.data() + (split - 1) * dq_size;
      BackwardGroup(d, bias, q, k, v, out, lse, dout, dq_out, dk, dv,
                    dtable_parts.data() + task * table_size, group / d.kv_heads,
                    group % d.kv_heads, key_begin, key_end, tiles);
    }
  }
  for (int64_t split = 1; split < splits; ++split) {
    const float* part = dq_parts.data() + (split - 1) * dq_size;
    for (int64_t i = 0; i < dq_size; ++i) dq[i] += part[i];
  }
  if (bias.active()) SumTables(dtable_parts, groups * splits, table_size, dbias_table);
}

}  // namespace tvlab
