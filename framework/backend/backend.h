#ifndef TVLAB_FRAMEWORK_BACKEND_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_BACKEND_H_

// The kernels the framework needs, behind one interface. `reference` is plain
// loops and is the oracle every other backend is tested against
// (backend_conformance_test.cc). All pointers are to contiguous row-major
// buffers on the backend's device() (Tensor::ptr(), DeviceInts::ptr()) that
// do not alias unless stated; host code never dereferences them.
//
// No silent fallback: a backend declares the kernels it implements
// (Implements); validation refuses a backend that lacks one the framework
// needs, naming it (MissingKernels). A kernel that is not implemented stops
// the process if it is called anyway.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/backend/attention_mask.h"
#include "framework/backend/fused_attention.h"
#include "framework/backend/precision.h"
#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

// C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i] for i in [0, batch).
// op(A) is (m, k): A is stored (m, k), or (k, m) when trans_a.
// op(B) is (k, n): B is stored (k, n), or (n, k) when trans_b.
// Batch strides are in elements; a stride of 0 broadcasts that operand.
// `precision` (precision.h): the operands are rounded to bf16 or TF32 and
// multiplied with fp32 accumulation into the fp32 C; a backend is called
// only with a precision it declares (SupportsPrecision).
struct GemmDesc {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
  Precision precision = Precision::kFp32;
};

// Stops the process unless `d` is a GemmBias description: alpha 1, beta 0,
// and c contiguous (batch, m, n). Internal callers only (autograd's Linear).
void CheckGemmBiasDesc(const GemmDesc& d);

enum class UnaryOp {
  kRelu,
  kGeluErf,   // x * Phi(x), exact
  kGeluTanh,  // tanh approximation
  kSilu,      // x * sigmoid(x)
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kSquare,
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // 1-based, for bias correction
};

// One parameter tensor's buffers (n elements each) for Backend::AdamWMany,
// with the weight decay that applies to it (0 for biases and norms, say).
struct AdamWTensor {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t n;
  float weight_decay;
};

// Every kernel of the interface, for declarations and messages.
enum class Kernel {
  kGemm,
  kUnary,
  kUnaryBackward,
  kBinary,
  kReduceSumTo,
  kSoftmax,
  kSoftmaxBackward,
  kAttentionMaskBias,
  kRotaryTables,
  kSinusoidalTable,
  kAlibiBias,
  kNormalize,
  kNormalizeBackward,
  kPermute,
  kCopy2D,
  kGather,
  kScatterAdd,
  kCrossEntropy,
  kCrossEntropyBackward,
  kArgMaxRows,
  kDropoutMask,
  kSumSquares,
  kAdamW,
  // Optional: the attention kit composes the same result from the kernels
  // above when a backend lacks these (see KernelIsOptional).
  kFusedAttention,
  kFusedAttentionBackward,
  kNumKernels,
};
const char* KernelName(Kernel kernel);
// Kernels a backend may leave out without being incomplete: an equivalent
// composition of required kernels exists (the unfused attention path).
bool KernelIsOptional(Kernel kernel);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Where this backend's buffers live; SetBackend makes it CurrentDevice().
  virtual Device device() const { return Device::kCpu; }
  virtual bool Implements(Kernel kernel) const = 0;
  // The GEMM precisions this backend runs (GemmDesc::precision); fp32 is
  // always one. Validation refuses a runtime.precision it does not declare.
  virtual bool SupportsPrecision(Precision precision) const {
    return precision == Precision::kFp32;
  }
  // Why `precision` is not supported here, for the validation message (e.g.
  // the CPU feature it lacks); empty when there is nothing more to say.
  virtual std::string PrecisionNote(Precision) const { return ""; }

  virtual void Gemm(const GemmDesc& d, const float* a, const float* b, float* c);
  // c (batch, m, n) = op(a) op(b) + bias, bias (n) added to every row: the
  // GEMM of a Linear layer with its bias as the epilogue (alpha 1, beta 0,
  // contiguous c). This default runs Gemm, then Binary(kAdd) over c;
  // cpu_onednn fuses the bias into its matmul primitive (one pass over c).
  virtual void GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                        float* c);

  // y = f(x), n elements. x and y may alias.
  virtual void Unary(UnaryOp op, const float* x, float* y, int64_t n);
  // dx = dy * f'(x), given x and y = f(x).
  virtual void UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy,
                             float* dx, int64_t n);

  // out = a op b with NumPy broadcasting. Shapes are right-aligned; out_shape
  // is the broadcast shape.
  virtual void Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                      const Shape& b_shape, float* out, const Shape& out_shape);
  // out = x summed over the dimensions in which out_shape broadcasts to
  // x_shape (the backward of broadcasting).
  virtual void ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                           const Shape& out_shape);

  // Row-wise softmax over the last dimension. A row that is all -inf (every
  // key masked) yields zeros, not NaN.
  virtual void Softmax(const float* x, float* y, int64_t rows, int64_t cols);
  // dx = y * (dy - sum(dy * y)) per row.
  virtual void SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                               int64_t cols);

  // The additive bias of `mask` (attention_mask.h) for T queries and S keys:
  // out is (R, 1, T, S) with R = mask.key_lengths.size(), or 1 when empty;
  // 0 keeps a key, -inf hides it. The unfused attention path adds it to the
  // logits (broadcast over heads) before the softmax.
  virtual void AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s,
                                 float* out);

  // Position encodings' tables, computed where the tensors live (angles in
  // double: positions reach thousands and float angles would drift).
  // RoPE: cos/sin (T, D/2) of (offset + p) * base^(-2i / D).
  virtual void RotaryTables(int64_t offset, int64_t t, int64_t d, double base, float* cos,
                            float* sin);
  // Sinusoidal (T, C), C even: [p, 2i] = sin((offset + p) / base^(2i / C)),
  // [p, 2i + 1] = cos(the same).
  virtual void SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base, float* out);
  // ALiBi (1, H, T, S): [h, i, j] = -slopes[h] * |q_offset + i - j|; slopes
  // (H of them) are kernel arguments, not device data.
  virtual void AlibiBias(const std::vector<double>& slopes, int64_t q_offset, int64_t t,
                         int64_t s, float* out);

  // y = (x - mean) * rstd * gamma + beta over the last dimension; gamma and
  // beta may be null (no affine / no bias). mean and rstd (rows) are saved
  // for the backward. With subtract_mean = false this is RMSNorm (mean is
  // written as 0 and rstd = 1/sqrt(mean(x^2) + eps)).
  virtual void Normalize(const float* x, const float* gamma, const float* beta, float* y,
                         float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                         bool subtract_mean);
  // dx from dy; dgamma and dbeta (if non-null) are accumulated (+=).
  virtual void NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, float* dx, float* dgamma,
                                 float* dbeta, int64_t rows, int64_t cols,
                                 bool subtract_mean);

  // y = x permuted: y.shape[i] = shape[perm[i]].
  virtual void Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                       float* y);
  // rows x cols block copy: dst[r * dst_stride + c] = src[r * src_stride + c]
  // (slicing and concatenation; cudaMemcpy2D's shape). Strides in elements.
  virtual void Copy2D(const float* src, int64_t src_stride, float* dst, int64_t dst_stride,
                      int64_t rows, int64_t cols);

  // out[i, :] = table[ids[i], :]; ids are in range (callers validate).
  virtual void Gather(const float* table, int64_t cols, const int32_t* ids, int64_t n,
                      float* out);
  // d_table[ids[i], :] += d_out[i, :].
  virtual void ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                          float* d_table);

  // Per-row cross-entropy with optional label smoothing; rows whose target is
  // ignore_index get loss 0. probs (rows, cols) is saved for the backward.
  // mean_loss (one float) = the sum of the row losses (in double) divided by
  // the number of counted rows (at least 1).
  virtual void CrossEntropy(const float* logits, const int32_t* targets, int64_t rows,
                            int64_t cols, int32_t ignore_index, float label_smoothing,
                            float* loss, float* probs, float* mean_loss);
  // dlogits = dloss[0] / counted * (probs - smoothed one-hot), zero rows for
  // ignore_index; dloss is the (device) gradient of mean_loss.
  virtual void CrossEntropyBackward(const float* probs, const int32_t* targets, int64_t rows,
                                    int64_t cols, int32_t ignore_index, float label_smoothing,
                                    const float* dloss, float* dlogits);
  // out[r] = the first index of the largest value of row r (accuracy counts,
  // greedy decoding).
  virtual void ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out);

  // Inverted-dropout mask: mask[i] = 0 with probability p, else 1 / (1 - p).
  // A pure function of `stream` (Philox; every backend draws the same mask):
  // 32-bit word w = stream.Words(i / 2) decides element i by its 16-bit half
  // (i % 2): dropped when that half < round(p * 65536).
  virtual void DropoutMask(const RngStream& stream, float p, float* mask, int64_t n);
  // acc[0] += sum of x[i]^2 in double, in index order (global gradient norm).
  virtual void SumSquares(const float* x, int64_t n, double* acc);

  // Decoupled weight decay Adam (Loshchilov & Hutter), as torch.optim.AdamW.
  virtual void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                     const AdamWHyper& h);
  // AdamW over every parameter tensor in one call (as torch's fused AdamW):
  // each tensor's own weight_decay replaces h.weight_decay. By default AdamW
  // once per tensor; cpu_onednn makes one threaded pass over all of them.
  // Results equal AdamW's per tensor.
  virtual void AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h);

  // Attention without a (T, S) buffer (fused_attention.h has the math and
  // layouts): out (B, H, T, hs_v) and the per-row log-sum-exp lse (B, H, T),
  // -inf for a row that sees no key (its out row is 0).
  virtual void FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                              const float* v, float* out, float* lse);
  // Gradients from dout (B, H, T, hs_v), recomputing the weights from lse:
  // dq (B, H, T, hs), dk (B, G, S, hs), dv (B, G, S, hs_v), all overwritten.
  virtual void FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                      const float* k, const float* v, const float* out,
                                      const float* lse, const float* dout, float* dq,
                                      float* dk, float* dv);

 protected:
  // The body of every kernel a backend does not override: stops the process
  // naming the backend and the kernel (validation should have refused it).
  [[noreturn]] void Missing(Kernel kernel) const;
};

// The required kernels `backend` does not implement, by name (empty when
// complete).
std::vector<std::string> MissingKernels(const Backend& backend);
// The usable backends that implement every kernel.
std::vector<std::string> CompleteBackends();
// The names of the precisions `backend` supports, fp32 first.
std::vector<std::string> SupportedPrecisionNames(const Backend& backend);

// The active backend: the one dispatch point for the device choice. Defaults
// to "cpu_onednn" when linked in, else "reference".
Backend& CurrentBackend();
// Selects a registered backend by name; NotFound lists the registered ones.
absl::Status SetBackend(const std::string& name);
std::vector<std::string> RegisteredBackends();
// The registered backends whose device is present here (e.g. gpu_cuda only
// on a machine with a GPU). Tests run over these and skip the others,
// saying so.
std::vector<std::string> UsableBackends();
// The usable backends whose buffers are host memory (cpu_onednn, reference).
// The plugin conformance suites compare these kernel by kernel; device
// backends run every plugin at model level instead
// (tests/simulated_device_test.cc) and every op in autograd/ops_test.cc.
std::vector<std::string> HostBackends();
// Creates a fresh instance of a registered backend (tests compare two).
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name);

// Registers a backend factory under `name` (static registration).
bool RegisterBackend(const std::string& name, std::unique_ptr<Backend> (*factory)());

// Switches the active backend for a scope (tests).
class ScopedBackend {
 public:
  explicit ScopedBackend(const std::string& name);
  ~ScopedBackend();

 private:
  std::string previous_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_BACKEND_H_
