#include "framework/interfaces/position_encoding.h"

#include <vector>

#include "framework/autograd/ops.h"

namespace tvlab {
namespace {
const std::vector<int> kSwapTokensAndHeads = {0, 2, 1, 3};  // (B, T, H, x) <-> (B, H, T, x)
}  // namespace

Var PositionEncoding::RotateQueryTokenMajor(const Var& q, int64_t offset) const {
  return Permute(RotateQuery(Permute(q, kSwapTokensAndHeads), offset), kSwapTokensAndHeads);  // (B, T, H, hs)
}

Var PositionEncoding::RotateKeyTokenMajor(const Var& k, int64_t offset) const {
  return Permute(RotateKey(Permute(k, kSwapTokensAndHeads), offset), kSwapTokensAndHeads);  // (B, S, G, hs)
}

}  // namespace tvlab
