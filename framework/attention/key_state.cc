#include "framework/attention/key_state.h"

#include "framework/core/check.h"

namespace tvlab {

Var CachedKeyState(KvCache* cache, bool cross_attention, int64_t position_offset,
                   const std::string& name, int token_dim, const std::function<Var()>& compute,
                   int64_t window) {
  if (cache == nullptr) return compute();
  if (cross_attention) return cache->Source(name, token_dim, compute);
  TVLAB_CHECK_EQ(position_offset, cache->Seen(name))
      << "self-attention with a KV cache: position_offset must equal the tokens cached ";
  return cache->Append(name, compute(), token_dim, window);
}

Var KeyState(const AttentionInput& in, const std::string& name, int token_dim,
             const std::function<Var()>& compute) {
  return CachedKeyState(in.cache, in.memory.defined(), in.position_offset, name, token_dim,
                        compute, in.mask.window);
}

const PositionEncoding* SelfAttentionPosition(const AttentionInput& in) {
  return in.memory.defined() ? nullptr : in.position;
}

}  // namespace tvlab
