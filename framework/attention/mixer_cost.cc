#include "framework/attention/mixer_cost.h"

#include <algorithm>

#include "framework/core/check.h"

namespace tvlab {
namespace {

// Sum over the chunks of a sequence of `seq_len` positions of
// per_chunk(n, first), divided by seq_len: FLOPs per position of one head.
template <typename PerChunk>
double PerPosition(int64_t seq_len, int64_t chunk, PerChunk per_chunk) {
  TVLAB_CHECK(chunk > 0) << "chunk " << chunk;
  if (seq_len <= 0) return 0.0;
  double total = 0;
  for (int64_t start = 0; start < seq_len; start += chunk) {
    const double n = static_cast<double>(std::min(chunk, seq_len - start));
    total += per_chunk(n, start == 0);
  }
  return total / static_cast<double>(seq_len);
}

}  // namespace

double GatedLinearChunkedFlopsPerToken(const MixerShape& s, int64_t seq_len) {
  const double dk = static_cast<double>(s.key_dim), dv = static_cast<double>(s.value_dim);
  const double per_head = PerPosition(seq_len, s.chunk, [&](double n, bool first) {
    double f = 2 * n * n * dk      // Q K^T (n, n)
               + 2 * n * n * dv    // (n, n) x V
               + 2 * n * dk * dv;  // K^T V: the state's update (dk, dv)
    if (!first) f += 2 * n * dk * dv;  // Q S: the carried state's read
    return f;
  });
  return static_cast<double>(s.heads) * per_head;
}

double DeltaRuleChunkedFlopsPerToken(const MixerShape& s, int64_t seq_len) {
  const double dk = static_cast<double>(s.key_dim), dv = static_cast<double>(s.value_dim);
  const double per_head = PerPosition(seq_len, s.chunk, [&](double n, bool first) {
    double f = 2 * n * n * dk             // K K^T: A (n, n)
               + 2 * n * n * (n - 1)      // (I + A)^{-1}: n - 1 rank-1 updates of (n, n)
               + 2 * n * n * dv           // U = T V
               + 2 * n * n * dk           // Q K^T (n, n)
               + 2 * n * n * dv           // (n, n) x U
               + 2 * n * dk * dv;         // K^T U: the state's update
    if (!first) f += 2 * n * n * dk       // W = T K
                     + 2 * n * dk * dv    // W S
                     + 2 * n * dk * dv;   // Q S: the carried state's read
    return f;
  });
  return static_cast<double>(s.heads) * per_head;
}

}  // namespace tvlab
