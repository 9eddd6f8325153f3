#include "framework/attention/heads.h"

#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {

Var SplitTokenHeads(const Var& x, int64_t heads) {
  const int64_t b = x.dim(0), t = x.dim(1), width = x.dim(2);
  TVLAB_CHECK(width % heads == 0) << width << " not divisible by " << heads;
  return Reshape(x, {b, t, heads, width / heads});  // (B, T, H, hs)
}

Var MergeTokenHeads(const Var& x) {
  return Reshape(x, {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)});  // (B, T, H*hs)
}

Var SplitHeads(const Var& x, int64_t heads) {
  return Permute(SplitTokenHeads(x, heads), {0, 2, 1, 3});  // (B, H, T, hs)
}

Var MergeHeads(const Var& x) {
  return MergeTokenHeads(Permute(x, {0, 2, 1, 3}));  // (B, T, H*hs)
}

}  // namespace tvlab
