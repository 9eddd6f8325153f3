#include "framework/attention/attention_statistics.h"

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace {
thread_local AttentionStatistics* current = nullptr;
}  // namespace

AttentionStatistics::AttentionStatistics() : enclosing_(current) { current = this; }
AttentionStatistics::~AttentionStatistics() { current = enclosing_; }

AttentionStatistics* AttentionStatistics::Current() { return current; }

void AttentionStatistics::Record(const std::string& path, const Tensor& logits, const Tensor& weights) {
  NoGradGuard no_grad;
  const int64_t rows = weights.numel() / weights.dim(-1);  // B * H * T
  // -sum w log w: masked keys have w = 0 and add 0 (the 1e-30 keeps log finite).
  const Var w(weights);                                                       // (B, H, T, S)
  const Var plogp = Mul(w, Log(AddScalar(w, 1e-30f)));                        // (B, H, T, S)
  const double entropy = -static_cast<double>(Sum(plogp).value().item()) / static_cast<double>(rows);
  Layer layer{path, entropy, DeviceMax(logits)};
  for (Layer& l : layers_)
    if (l.path == path) {
      l = layer;
      return;
    }
  layers_.push_back(layer);
}

double DeviceMax(const Tensor& x) {
  TVLAB_CHECK(x.is_contiguous() && x.numel() > 0) << "DeviceMax of a strided or empty tensor";
  DeviceInts index = DeviceInts::Empty(1, x.device());
  CurrentBackend().ArgMaxRows(x.ptr(), 1, x.numel(), index.ptr());  // the whole tensor as one row
  const int32_t at = index.ToVector()[0];
  float value = 0;
  AllocatorFor(x.device()).memory().CopyToHost(x.ptr() + at, &value, sizeof(float));
  return value;
}

}  // namespace tvlab
