// KvCache on its own: appending along the token dimension, computing a
// cross-attention source once, sizes, beam-search row selection, and that a
// cache serves one kind of attention only. (Every layout's use of it is in
// the attention conformance suite.)

#include "framework/attention/kv_cache.h"

#include "framework/autograd/ops.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// (B = 2, G = 1, n tokens, hs = 2) with value 100 * row + 10 * token + dim.
Tensor Tokens(int64_t first, int64_t n) {
  Tensor t = Tensor::Zeros({2, 1, n, 2});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t d = 0; d < 2; ++d) t.data()[(b * n + i) * 2 + d] = 100 * b + 10 * (first + i) + d;
  return t;
}

TEST(KvCache, AppendsNewTokensAfterTheCachedOnes) {
  KvCache cache;
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(cache.Append("k", Var(Tokens(0, 2)), 2).value().ToVector(), Tokens(0, 2).ToVector());
  Var all = cache.Append("k", Var(Tokens(2, 1)), 2);
  EXPECT_EQ(all.value().ToVector(), Tokens(0, 3).ToVector());
  EXPECT_EQ(cache.Get("k").ToVector(), Tokens(0, 3).ToVector());
  EXPECT_EQ(cache.Length("k"), 3);
  EXPECT_EQ(cache.Length("v"), 0);
  EXPECT_EQ(cache.TokenDim("k"), 2);
  EXPECT_EQ(cache.use(), KvCache::Use::kSelf);
  cache.Append("v", Var(Tokens(0, 3)), -2);  // negative dims count from the end
  EXPECT_EQ(cache.TokenDim("v"), 2);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_EQ(cache.NumElements(), 2 * (2 * 1 * 3 * 2));
  EXPECT_EQ(cache.Bytes(2), 2 * cache.NumElements());
  EXPECT_EQ(cache.Names(), (std::vector<std::string>{"k", "v"}));
}

// A sliding window (keep_last = W): every call returns all held and new
// tokens, then the entry keeps its last W; Seen counts every token.
TEST(KvCache, AWindowKeepsOnlyTheLastTokens) {
  KvCache cache;
  EXPECT_EQ(cache.Append("k", Var(Tokens(0, 4)), 2, /*keep_last=*/3).value().ToVector(),
            Tokens(0, 4).ToVector());  // a prefill longer than the window
  EXPECT_EQ(cache.Get("k").ToVector(), Tokens(1, 3).ToVector());
  EXPECT_EQ(cache.Length("k"), 3);
  EXPECT_EQ(cache.Seen("k"), 4);
  Var all = cache.Append("k", Var(Tokens(4, 1)), 2, 3);
  EXPECT_EQ(all.value().ToVector(), Tokens(1, 4).ToVector());  // held, then new
  EXPECT_EQ(cache.Get("k").ToVector(), Tokens(2, 3).ToVector());
  EXPECT_EQ(cache.Seen("k"), 5);
  EXPECT_EQ(cache.Bytes(4), 4 * (2 * 1 * 3 * 2));  // bounded by the window
  cache.Append("k", Var(Tokens(5, 1)), 2);  // no window: keeps everything
  EXPECT_EQ(cache.Length("k"), 4);
  EXPECT_EQ(cache.Seen("k"), 6);
  EXPECT_EQ(cache.Seen("v"), 0);
}

TEST(KvCache, GradientsReachOnlyTheNewTokens) {
  KvCache cache;
  cache.Append("k", Var(Tokens(0, 2)), 2);
  Var fresh(Tokens(2, 1), /*requires_grad=*/true);
  Var all = cache.Append("k", fresh, 2);  // (2, 1, 3, 2)
  Backward(Sum(all));
  EXPECT_EQ(fresh.grad().ToVector(), std::vector<float>(4, 1.0f));
}

TEST(KvCache, ComputesACrossAttentionSourceOnce) {
  KvCache cache;
  int calls = 0;
  auto compute = [&] {
    ++calls;
    return Var(Tokens(0, 4));
  };
  EXPECT_EQ(cache.Source("k", 2, compute).value().ToVector(), Tokens(0, 4).ToVector());
  EXPECT_EQ(cache.Source("k", 2, compute).value().ToVector(), Tokens(0, 4).ToVector());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.length(), 4);
  EXPECT_EQ(cache.use(), KvCache::Use::kCross);
}

TEST(KvCache, SelectRowsReordersAndRepeatsBatchRows) {
  KvCache cache;
  cache.Append("k", Var(Tokens(0, 3)), 2);
  cache.SelectRows({1, 1, 0});
  const Tensor& k = cache.Get("k");  // (3, 1, 3, 2)
  ASSERT_EQ(k.shape(), (Shape{3, 1, 3, 2}));
  std::vector<float> rows = Tokens(0, 3).ToVector();  // row 0 then row 1, 6 numbers each
  std::vector<float> want(rows.begin() + 6, rows.end());
  want.insert(want.end(), rows.begin() + 6, rows.end());
  want.insert(want.end(), rows.begin(), rows.begin() + 6);
  EXPECT_EQ(k.ToVector(), want);
  // Decoding continues on the selected rows.
  Tensor next = Tensor::Zeros({3, 1, 1, 2});
  EXPECT_EQ(cache.Append("k", Var(next), 2).shape(), (Shape{3, 1, 4, 2}));
}

TEST(KvCache, ClearStartsANewSequence) {
  KvCache cache;
  cache.Append("k", Var(Tokens(0, 3)), 2);
  cache.Clear();
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(cache.NumElements(), 0);
  EXPECT_EQ(cache.use(), KvCache::Use::kUnused);
  cache.Source("k", 2, [] { return Var(Tokens(0, 1)); });  // may now serve cross-attention
  EXPECT_EQ(cache.use(), KvCache::Use::kCross);
}

TEST(KvCacheDeathTest, ServesOneKindOfAttentionOnly) {
  KvCache cache;
  cache.Append("k", Var(Tokens(0, 1)), 2);
  EXPECT_DEATH(cache.Source("k", 2, [] { return Var(Tokens(0, 1)); }), "not both");
}

TEST(KvCacheDeathTest, NewTokensMustMatchTheCachedShape) {
  KvCache cache;
  cache.Append("k", Var(Tokens(0, 1)), 2);
  EXPECT_DEATH(cache.Append("k", Var(Tensor::Zeros({2, 3, 1, 2})), 2), "new tokens are");
}

}  // namespace
}  // namespace tvlab
