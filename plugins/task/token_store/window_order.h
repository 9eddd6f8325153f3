#ifndef TVLAB_PLUGINS_TASK_TOKEN_STORE_WINDOW_ORDER_H_
#define TVLAB_PLUGINS_TASK_TOKEN_STORE_WINDOW_ORDER_H_

// The order training visits a split's windows: sample s (s = step * batch +
// row, counted over the whole run) is window Shuffled(seed, s / n, n,
// s % n) of n. Each epoch is a permutation of all n windows, a different
// one per (seed, epoch), computed in O(1) memory and time from its inputs
// alone: a run resumed at any step, and every rank of a data-parallel run
// (which takes its rows of the same global batch), read exactly the
// windows one uninterrupted process reads. Nothing repeats within an epoch.

#include <cstdint>

namespace tvlab {

// A bijection of [0, n) chosen by (seed, epoch), applied to `index`: a
// 4-round Feistel network on the smallest even number of bits covering n,
// cycle-walked back into [0, n). REQUIRES: 0 <= index < n.
uint64_t ShuffledIndex(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t index);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_TASK_TOKEN_STORE_WINDOW_ORDER_H_
