#include "framework/attention/kv_cache.h"

#include <algorithm>

#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {

void KvCache::Claim(Use use) {
  TVLAB_CHECK(use_ == Use::kUnused || use_ == use)
      << "a KvCache serves self-attention or cross-attention, not both";
  use_ = use;
}

namespace {

// Drops all but the last keep_last tokens of `value` (keep_last > 0),
// counting them in `dropped`.
void KeepLastTokens(int64_t keep_last, Tensor* value, int token_dim, int64_t* dropped) {
  const int64_t held = value->dim(token_dim);
  if (keep_last <= 0 || held <= keep_last) return;
  *value = Slice(Var(*value), token_dim, held - keep_last, keep_last).value();  // a copy
  *dropped += held - keep_last;
}

}  // namespace

Var KvCache::Append(const std::string& name, const Var& fresh, int token_dim, int64_t keep_last) {
  Claim(Use::kSelf);
  if (token_dim < 0) token_dim += static_cast<int>(fresh.rank());
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    Entry& entry = entries_[name] = Entry{fresh.value(), token_dim};
    KeepLastTokens(keep_last, &entry.value, token_dim, &entry.dropped);
    return fresh;
  }
  Entry& entry = it->second;
  TVLAB_CHECK_EQ(entry.token_dim, token_dim);
  TVLAB_CHECK_EQ(entry.value.rank(), fresh.rank());
  for (int d = 0; d < fresh.rank(); ++d)
    TVLAB_CHECK(d == token_dim || entry.value.dim(d) == fresh.dim(d))
        << "cache entry '" << name << "' is " << ShapeToString(entry.value.shape())
        << ", new tokens are " << ShapeToString(fresh.shape());
  Var all = Concat({Var(entry.value), fresh}, token_dim);  // old tokens, then new
  entry.value = all.value();
  KeepLastTokens(keep_last, &entry.value, token_dim, &entry.dropped);
  return all;
}

Var KvCache::Source(const std::string& name, int token_dim,
                    const std::function<Var()>& compute) {
  Claim(Use::kCross);
  auto it = entries_.find(name);
  if (it != entries_.end()) return Var(it->second.value);
  Var state = compute();
  if (token_dim < 0) token_dim += static_cast<int>(state.rank());
  entries_[name] = Entry{state.value(), token_dim};
  return state;
}

void KvCache::SetState(const std::string& name, const Tensor& state, int64_t new_tokens) {
  Claim(Use::kSelf);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    entries_[name] = Entry{state, /*token_dim=*/-1, /*dropped=*/0, new_tokens};
    return;
  }
  Entry& entry = it->second;
  TVLAB_CHECK(entry.state_tokens >= 0) << "cache entry '" << name << "' holds tokens, not a state";
  TVLAB_CHECK(entry.value.shape() == state.shape())
      << "state '" << name << "' is " << ShapeToString(entry.value.shape()) << ", new state is "
      << ShapeToString(state.shape());
  entry.value = state;
  entry.state_tokens += new_tokens;
}

const Tensor* KvCache::State(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  TVLAB_CHECK(it->second.state_tokens >= 0) << "cache entry '" << name << "' holds tokens, not a state";
  return &it->second.value;
}

int64_t KvCache::Length(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return 0;
  if (it->second.state_tokens >= 0) return it->second.state_tokens;
  return it->second.value.dim(it->second.token_dim);
}

int64_t KvCache::Seen(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return 0;
  if (it->second.state_tokens >= 0) return it->second.state_tokens;
  return it->second.dropped + it->second.value.dim(it->second.token_dim);
}

int64_t KvCache::length() const {
  return entries_.empty() ? 0 : Length(entries_.begin()->first);
}

std::vector<std::string> KvCache::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

const Tensor& KvCache::Get(const std::string& name) const {
  auto it = entries_.find(name);
  TVLAB_CHECK(it != entries_.end()) << "no cache entry '" << name << "'";
  return it->second.value;
}

int KvCache::TokenDim(const std::string& name) const {
  auto it = entries_.find(name);
  TVLAB_CHECK(it != entries_.end()) << "no cache entry '" << name << "'";
  return it->second.token_dim;
}

int64_t KvCache::NumElements() const {
  int64_t n = 0;
  for (const auto& [name, entry] : entries_) n += entry.value.numel();
  return n;
}

void KvCache::SelectRows(const std::vector<int64_t>& rows) {
  for (auto& [name, entry] : entries_) {
    entry.value = GatherRows(entry.value, rows);  // (B, ...) -> (rows, ...)
  }
}

void KvCache::Clear() {
  entries_.clear();
  use_ = Use::kUnused;
}

}  // namespace tvlab
