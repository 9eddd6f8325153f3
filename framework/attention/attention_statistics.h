#ifndef TVLAB_FRAMEWORK_ATTENTION_ATTENTION_STATISTICS_H_
#define TVLAB_FRAMEWORK_ATTENTION_ATTENTION_STATISTICS_H_

// Attention statistics of the forwards run in a scope on this thread: per
// attention sublayer (its module path), the mean entropy of the attention
// weights over the query rows, and the largest attention logit (after the
// position bias and soft-cap, over the keys each query sees). Training
// probes read them (framework/train/probes.h; Wortsman et al. 2023's
// attention-logit growth).
//
// The fused kernel never forms the (T, S) logits or weights, so while a
// scope is open Attend takes the whole unfused composition (as it does for
// an AttentionProbe) and records there. The probes therefore run their own
// forward, without gradients, beside the training step: the training
// forward keeps its kernel and its numbers. Outside a scope nothing is
// recorded and Attend is exactly what it is without this header.
//
// Statistics are reduced on the device; two scalars per sublayer come back.
// Thread-safety: one scope per thread at a time (a thread-local scope).

#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tvlab {

class AttentionStatistics {
 public:
  struct Layer {
    std::string path;        // the attention module's path ("decoder.layers.0.attention")
    double entropy = 0;      // mean over (B, H, T) rows of -sum_s w log w, in nats
    double max_logit = 0;    // max over (B, H, T, S) of the visible logits
  };
  AttentionStatistics();   // installs itself as this thread's scope
  ~AttentionStatistics();  // uninstalls (restoring an enclosing one)
  AttentionStatistics(const AttentionStatistics&) = delete;
  AttentionStatistics& operator=(const AttentionStatistics&) = delete;

  // This thread's scope, or null outside any.
  static AttentionStatistics* Current();
  // Records one call: logits (B, H, T, S) with -inf at masked keys, and
  // their weights (B, H, T, S). A later call of the same path replaces it.
  void Record(const std::string& path, const Tensor& logits, const Tensor& weights);
  // In the order first recorded.
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  AttentionStatistics* enclosing_;
  std::vector<Layer> layers_;
};

// The largest element of `x` (on any device): one argmax kernel, then the
// index and that one value copied back. REQUIRES: x contiguous, non-empty.
double DeviceMax(const Tensor& x);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_ATTENTION_STATISTICS_H_
