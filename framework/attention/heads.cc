#include "framework/attention/heads.h"

#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {

Var SplitHeads(const Var& x, int64_t heads) {
  const int64_t b = x.dim(0), t = x.dim(1), width = x.dim(2);
  TVLAB_CHECK(width % heads == 0) << width << " not divisible by " << heads;
  Var split = Reshape(x, {b, t, heads, width / heads});  // (B, T, H, hs)
  return Permute(split, {0, 2, 1, 3});                   // (B, H, T, hs)
}

Var MergeHeads(const Var& x) {
  const int64_t b = x.dim(0), h = x.dim(1), t = x.dim(2), hs = x.dim(3);
  Var merged = Permute(x, {0, 2, 1, 3});   // (B, T, H, hs)
  return Reshape(merged, {b, t, h * hs});  // (B, T, H*hs)
}

}  // namespace tvlab
