#include "plugins/task/token_store/window_order.h"

namespace tvlab {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t ShuffledIndex(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t index) {
  int half_bits = 1;
  while ((uint64_t{1} << (2 * half_bits)) < n) ++half_bits;
  const uint64_t mask = (uint64_t{1} << half_bits) - 1;
  const uint64_t key = Mix(Mix(seed) ^ epoch);
  uint64_t x = index;
  do {  // cycle-walking: at most a few steps, since the domain is < 4n
    uint64_t left = x >> half_bits, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t next = left ^ (Mix(key ^ (round << 56) ^ right) & mask);
      left = right;
      right = next;
    }
    x = (left << half_bits) | right;
  } while (x >= n);
  return x;
}

}  // namespace tvlab
