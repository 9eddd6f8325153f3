#ifndef TVLAB_FRAMEWORK_BACKEND_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_BACKEND_H_

// The kernels the framework needs, behind one interface. Every kernel is
// declared once, in kernels.def (its signature, kind and contract); this
// header expands that table into the Kernel enum and Backend's virtual
// functions. `reference` is plain loops and is the oracle every other
// backend is tested against (backend_conformance_test.cc).
//
// No silent fallback: a backend's descriptor (describe_backend.h) says
// which kernels its class implements, derived from the class itself at
// compile time; validation refuses a backend that lacks a required one,
// naming it. A kernel that is not implemented stops the process if it is
// called anyway.
//
// Capability questions (which kernels, which precisions, which device, is
// the device here) are answered by descriptors, without constructing a
// backend; backend_registry.h has them and the choice of the active backend.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/backend/attention_mask.h"
#include "framework/backend/fused_attention.h"
#include "framework/backend/gated_linear_scan.h"
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
// only with a precision its descriptor declares.
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

// Stops the process unless `d` is a GemmAndColumnSums description: A
// transposed, batch 1, alpha 1, beta 0. Internal callers only (autograd's
// Linear).
void CheckGemmAndColumnSumsDesc(const GemmDesc& d);

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

// SgdMany's step: rate, momentum (0 = plain SGD), Nesterov's correction.
struct SgdHyper {
  float lr, momentum;
  bool nesterov;
};

// LionMany's step: rate and the two interpolation factors.
struct LionHyper {
  float lr, beta1, beta2;
};

// One elementwise kernel call in a Backend::PointwiseChain, over the chain's
// n elements (every buffer holds n floats):
//   kBinary        out = a op b, as Binary(op, a, {n}, b, {n}, out, {n})
//   kRelu          out = relu(a), as Unary(kRelu, a, out, n)
//   kReluBackward  out = dx from x = a, y = b, dy = c, as
//                  UnaryBackward(kRelu, a, b, c, out, n)
//   kDropoutMask   out = the mask, as DropoutMask(*stream, p, out, n); with
//                  `kept` set, also bit e % 8 of kept[e / 8] = 1 where the
//                  mask keeps element e, else 0 (n / 8 bytes, rounded up)
//   kKeptMask      out = bit e of kept ? 1 / (1 - p) : 0: the factors of the
//                  mask a kDropoutMask step wrote to `kept` earlier, bit for
//                  bit
// `kept` and kKeptMask only where KeepsMaskBits() (step capture asks).
// A `scratch` step's out is read by no one after the chain (step capture
// proved it: chain_scratch.h): the chain's later steps still read the
// values it wrote there, but a backend may keep them in scratch of its own
// (cpu_onednn: one tile in L1) and leave out's memory untouched. Writing
// out anyway, as the composed Backend::PointwiseChain does, is also right.
struct PointwiseStep {
  enum class Kind { kBinary, kRelu, kReluBackward, kDropoutMask, kKeptMask };
  Kind kind = Kind::kBinary;
  BinaryOp op = BinaryOp::kAdd;  // kBinary
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  float* out = nullptr;
  std::optional<RngStream> stream;  // kDropoutMask
  float p = 0.0f;                   // kDropoutMask, kKeptMask
  uint8_t* kept = nullptr;          // kDropoutMask (optional), kKeptMask
  bool scratch = false;
};

// Every kernel of kernels.def, in its order.
enum class Kernel {
#define TVLAB_KERNEL(name, kind, parameters, arguments) k##name,
#include "framework/backend/kernels.def"
};
constexpr int kKernelCount = 0
#define TVLAB_KERNEL(name, kind, parameters, arguments) +1
#include "framework/backend/kernels.def"
    ;
// Every kernel, in kernels.def's order.
std::array<Kernel, kKernelCount> AllKernels();
// "Gemm", "FusedAttention", ...: the name in kernels.def.
const char* KernelName(Kernel kernel);

// kernels.def's kinds: Required kernels make a backend complete; an Optional
// one has an equivalent composition of required kernels that the framework
// uses when a backend lacks it (the unfused attention path); a Composed one
// has a default body in Backend built from other kernels.
enum class KernelKind { kRequired, kOptional, kComposed };
KernelKind KernelKindOf(Kernel kernel);

// Each kernel's function type, for declaring it by name
// (TVLAB_OVERRIDE_KERNEL) without spelling its parameters again.
namespace kernel_signature {
#define TVLAB_KERNEL(name, kind, parameters, arguments) using name = void parameters;
#include "framework/backend/kernels.def"
}  // namespace kernel_signature

// Declares, inside a backend class, that it implements kernel `name` (e.g.
// TVLAB_OVERRIDE_KERNEL(Gemm);) with kernels.def's signature; the .cc
// defines it with the same parameters. The class's descriptor finds the
// kernels it declares this way (describe_backend.h). Put it in a public
// section. (No `override` keyword: C++ does not allow it on a declaration
// through a function type; the signature cannot drift from the base's,
// since both come from kernels.def.)
#define TVLAB_OVERRIDE_KERNEL(name) ::tvlab::kernel_signature::name name

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // The name it is registered under (runtime.backend).
  virtual std::string name() const = 0;
  // Where this backend's buffers live; SetBackend makes it CurrentDevice().
  virtual Device device() const { return Device::kCpu; }
  // Whether PointwiseChain takes a kDropoutMask step's `kept` bits and
  // kKeptMask steps (PointwiseStep). Step capture keeps a forward mask's
  // bits for the backward only where it does, and draws the mask again
  // elsewhere (chain_scratch.h).
  virtual bool KeepsMaskBits() const { return false; }
  // Whether its FusedAttention runs `d` with token_major set (q, k, v and
  // out with every token's heads side by side, fused_attention.h) at least
  // as fast as the path "auto" would take otherwise (the unfused
  // composition, or the fused kernel between head permutes) and in less
  // memory: Attend then takes it for a layout that can hand over its
  // projections so (AttendTokenMajor, attend.h), whatever runtime.attention
  // says short of "unfused". cpu_onednn's AVX-512 short kernel (faster) and
  // its tiled kernels (the sgemm one as fast, 13% less memory on the GPT
  // config; the AVX-512 one also reads them where they lie) do; a
  // backend that answers false is never given token_major.
  virtual bool PrefersTokenMajorFusedAttention(const FusedAttentionDesc& /*d*/) const { return false; }
  // The accelerator's model name (a GPU's, e.g. "NVIDIA H200"), which a
  // run's MFU looks its peak up by (framework/perf/peak.h); empty for host
  // backends, whose CPU the OS names.
  virtual std::string device_model() const { return ""; }

  // The kernels of kernels.def. A body that a backend does not override
  // stops the process naming the backend and the kernel (validation should
  // have refused it); a Composed kernel's body computes it from others.
#define TVLAB_KERNEL(name, kind, parameters, arguments) \
  virtual ::tvlab::kernel_signature::name name;
#include "framework/backend/kernels.def"

 protected:
  // Counts every construction (BackendsConstructed, backend_registry.h).
  Backend();
  [[noreturn]] void Missing(Kernel kernel) const;
};

}  // namespace tvlab

#include "framework/backend/backend_registry.h"  // choosing and describing backends

#endif  // TVLAB_FRAMEWORK_BACKEND_BACKEND_H_
