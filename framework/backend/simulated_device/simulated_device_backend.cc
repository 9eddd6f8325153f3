#include "framework/backend/simulated_device/simulated_device_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "framework/core/check.h"

namespace tvlab {
namespace {

// A device pointer -> the host address behind it. Null stays null (optional
// arguments); a host pointer passed to a device kernel is a bug and stops.
template <typename T>
T* Host(T* device_ptr) {
  if (device_ptr == nullptr) return nullptr;
  TVLAB_CHECK(IsSimulatedDevicePointer(device_ptr))
      << "a host pointer was passed to a simulated_device kernel; device kernels take "
         "Tensor::ptr() / DeviceInts::ptr() of tensors on the device";
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(device_ptr) & ~kSimulatedDeviceTag);
}

class SimulatedDeviceMemory : public DeviceMemory {
 public:
  Device device() const override { return Device::kSimulated; }
  void* Allocate(size_t bytes) override {
    void* host = std::aligned_alloc(64, bytes);
    if (host == nullptr) return nullptr;
    TVLAB_CHECK(!IsSimulatedDevicePointer(host)) << "host address already has bit 62 set";
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(host);
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(host) | kSimulatedDeviceTag);
  }
  void Free(void* ptr, size_t) override {
    void* host = Host(ptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      TVLAB_CHECK(live_.erase(host) == 1) << "free of a block the simulated device did not allocate";
    }
    std::free(host);
  }
  void CopyToHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(dst, Host(src), bytes);
  }
  void CopyFromHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(Host(dst), src, bytes);
  }
  void CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memmove(Host(dst), Host(src), bytes);
  }
  void Fill(float* dst, int64_t n, float value) override {
    float* h = Host(dst);
    std::fill(h, h + n, value);
  }

 private:
  // The host addresses of live blocks (which also keeps them visible to
  // LeakSanitizer: the handed-out pointers do not point at them).
  std::mutex mu_;
  std::unordered_set<void*> live_;
};

std::unique_ptr<Backend> MakeSimulatedDevice() { return std::make_unique<SimulatedDeviceBackend>(); }

const bool memory_registered = RegisterDeviceMemory(std::make_unique<SimulatedDeviceMemory>());
const bool registered = RegisterBackend("simulated_device", &MakeSimulatedDevice);

}  // namespace

void SimulatedDeviceBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  ref_.Gemm(d, Host(a), Host(b), Host(c));
}
void SimulatedDeviceBackend::Unary(UnaryOp op, const float* x, float* y, int64_t n) {
  ref_.Unary(op, Host(x), Host(y), n);
}
void SimulatedDeviceBackend::UnaryBackward(UnaryOp op, const float* x, const float* y,
                                           const float* dy, float* dx, int64_t n) {
  ref_.UnaryBackward(op, Host(x), Host(y), Host(dy), Host(dx), n);
}
void SimulatedDeviceBackend::Binary(BinaryOp op, const float* a, const Shape& a_shape,
                                    const float* b, const Shape& b_shape, float* out,
                                    const Shape& out_shape) {
  ref_.Binary(op, Host(a), a_shape, Host(b), b_shape, Host(out), out_shape);
}
void SimulatedDeviceBackend::ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                                         const Shape& out_shape) {
  ref_.ReduceSumTo(Host(x), x_shape, Host(out), out_shape);
}
void SimulatedDeviceBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  ref_.Softmax(Host(x), Host(y), rows, cols);
}
void SimulatedDeviceBackend::SoftmaxBackward(const float* y, const float* dy, float* dx,
                                             int64_t rows, int64_t cols) {
  ref_.SoftmaxBackward(Host(y), Host(dy), Host(dx), rows, cols);
}
void SimulatedDeviceBackend::AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s,
                                               float* out) {
  ref_.AttentionMaskBias(mask, t, s, Host(out));
}
void SimulatedDeviceBackend::RotaryTables(int64_t offset, int64_t t, int64_t d, double base,
                                          float* cos, float* sin) {
  ref_.RotaryTables(offset, t, d, base, Host(cos), Host(sin));
}
void SimulatedDeviceBackend::SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base,
                                             float* out) {
  ref_.SinusoidalTable(offset, t, c, base, Host(out));
}
void SimulatedDeviceBackend::AlibiBias(const std::vector<double>& slopes, int64_t q_offset,
                                       int64_t t, int64_t s, float* out) {
  ref_.AlibiBias(slopes, q_offset, t, s, Host(out));
}
void SimulatedDeviceBackend::Normalize(const float* x, const float* gamma, const float* beta,
                                       float* y, float* mean, float* rstd, int64_t rows,
                                       int64_t cols, float eps, bool subtract_mean) {
  ref_.Normalize(Host(x), Host(gamma), Host(beta), Host(y), Host(mean), Host(rstd),
                              rows, cols, eps, subtract_mean);
}
void SimulatedDeviceBackend::NormalizeBackward(const float* x, const float* gamma,
                                               const float* mean, const float* rstd,
                                               const float* dy, float* dx, float* dgamma,
                                               float* dbeta, int64_t rows, int64_t cols,
                                               bool subtract_mean) {
  ref_.NormalizeBackward(Host(x), Host(gamma), Host(mean), Host(rstd), Host(dy),
                                      Host(dx), Host(dgamma), Host(dbeta), rows, cols,
                                      subtract_mean);
}
void SimulatedDeviceBackend::Permute(const float* x, const Shape& shape,
                                     const std::vector<int>& perm, float* y) {
  ref_.Permute(Host(x), shape, perm, Host(y));
}
void SimulatedDeviceBackend::Copy2D(const float* src, int64_t src_stride, float* dst,
                                    int64_t dst_stride, int64_t rows, int64_t cols) {
  ref_.Copy2D(Host(src), src_stride, Host(dst), dst_stride, rows, cols);
}
void SimulatedDeviceBackend::Gather(const float* table, int64_t cols, const int32_t* ids,
                                    int64_t n, float* out) {
  ref_.Gather(Host(table), cols, Host(ids), n, Host(out));
}
void SimulatedDeviceBackend::ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids,
                                        int64_t n, float* d_table) {
  ref_.ScatterAdd(Host(d_out), cols, Host(ids), n, Host(d_table));
}
void SimulatedDeviceBackend::CrossEntropy(const float* logits, const int32_t* targets,
                                          int64_t rows, int64_t cols, int32_t ignore_index,
                                          float label_smoothing, float* loss, float* probs,
                                          float* mean_loss) {
  ref_.CrossEntropy(Host(logits), Host(targets), rows, cols, ignore_index,
                                 label_smoothing, Host(loss), Host(probs), Host(mean_loss));
}
void SimulatedDeviceBackend::CrossEntropyBackward(const float* probs, const int32_t* targets,
                                                  int64_t rows, int64_t cols,
                                                  int32_t ignore_index, float label_smoothing,
                                                  const float* dloss, float* dlogits) {
  ref_.CrossEntropyBackward(Host(probs), Host(targets), rows, cols, ignore_index,
                                         label_smoothing, Host(dloss), Host(dlogits));
}
void SimulatedDeviceBackend::ArgMaxRows(const float* x, int64_t rows, int64_t cols,
                                        int32_t* out) {
  ref_.ArgMaxRows(Host(x), rows, cols, Host(out));
}
void SimulatedDeviceBackend::DropoutMask(const RngStream& stream, float p, float* mask,
                                         int64_t n) {
  ref_.DropoutMask(stream, p, Host(mask), n);
}
void SimulatedDeviceBackend::SumSquares(const float* x, int64_t n, double* acc) {
  ref_.SumSquares(Host(x), n, Host(acc));
}
void SimulatedDeviceBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                                   const AdamWHyper& h) {
  ref_.AdamW(Host(param), Host(grad), Host(m), Host(v), n, h);
}
void SimulatedDeviceBackend::FusedAttention(const FusedAttentionDesc& d, const float* q,
                                            const float* k, const float* v, float* out,
                                            float* lse) {
  ref_.FusedAttention(d, Host(q), Host(k), Host(v), Host(out), Host(lse));
}
void SimulatedDeviceBackend::FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                                    const float* k, const float* v,
                                                    const float* out, const float* lse,
                                                    const float* dout, float* dq, float* dk,
                                                    float* dv) {
  ref_.FusedAttentionBackward(d, Host(q), Host(k), Host(v), Host(out), Host(lse), Host(dout),
                              Host(dq), Host(dk), Host(dv));
}

}  // namespace tvlab
