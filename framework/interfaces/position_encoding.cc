#include "framework/interfaces/position_encoding.h"

#include <vector>

#include "framework/autograd/ops.h"

namespace tvlab {
namespace {
// (B, T, H, x) <-> (B, H, T, x)
std::vector<int> SwapTokensAndHeads() { return {0, 2, 1, 3}; }
}  // namespace

Var PositionEncoding::RotateQueryTokenMajor(const Var& q, int64_t offset) const {
  return Permute(RotateQuery(Permute(q, SwapTokensAndHeads()), offset), SwapTokensAndHeads());  // (B, T, H, hs)
}

Var PositionEncoding::RotateKeyTokenMajor(const Var& k, int64_t offset) const {
  return Permute(RotateKey(Permute(k, SwapTokensAndHeads()), offset), SwapTokensAndHeads());  // (B, S, G, hs)
}

}  // namespace tvlab
