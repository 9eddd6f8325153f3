#include "framework/interfaces/position_encoding.h"

#include <vector>

#include "framework/autograd/ops.h"

namespace tvlab {
namespace {
// (B, T, H, x) <-> (B, H, T, x)
std::vector<int> SwapTokensAndHeads() { return {0, 2, 1, 3}; }
}  // namespace

Var PositionEncoding::RotateQueryTokenMajor(const Var& q, int64_t offset) const {
  const Var head_major = RotateQuery(Permute(q, SwapTokensAndHeads()), offset);  // (B, H, T, hs)
  return Permute(head_major, SwapTokensAndHeads());                               // (B, T, H, hs)
}

Var PositionEncoding::RotateKeyTokenMajor(const Var& k, int64_t offset) const {
  const Var head_major = RotateKey(Permute(k, SwapTokensAndHeads()), offset);  // (B, G, S, hs)
  return Permute(head_major, SwapTokensAndHeads());                             // (B, S, G, hs)
}

}  // namespace tvlab
