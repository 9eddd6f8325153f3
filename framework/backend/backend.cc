#include "framework/backend/backend.h"

#include <cstdlib>

#include "framework/core/check.h"
#include "framework/core/registry.h"

namespace tvlab {
namespace {

using BackendFactory = std::unique_ptr<Backend> (*)();

Registry<BackendFactory>& Backends() {
  static auto* registry = new Registry<BackendFactory>("backend");
  return *registry;
}

struct Active {
  std::unique_ptr<Backend> backend;
};

Active& ActiveBackend() {
  static auto* active = new Active();
  return *active;
}

}  // namespace

const char* KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kGemm: return "Gemm";
    case Kernel::kUnary: return "Unary";
    case Kernel::kUnaryBackward: return "UnaryBackward";
    case Kernel::kBinary: return "Binary";
    case Kernel::kReduceSumTo: return "ReduceSumTo";
    case Kernel::kSoftmax: return "Softmax";
    case Kernel::kSoftmaxBackward: return "SoftmaxBackward";
    case Kernel::kAttentionMaskBias: return "AttentionMaskBias";
    case Kernel::kRotaryTables: return "RotaryTables";
    case Kernel::kSinusoidalTable: return "SinusoidalTable";
    case Kernel::kAlibiBias: return "AlibiBias";
    case Kernel::kNormalize: return "Normalize";
    case Kernel::kNormalizeBackward: return "NormalizeBackward";
    case Kernel::kPermute: return "Permute";
    case Kernel::kCopy2D: return "Copy2D";
    case Kernel::kGather: return "Gather";
    case Kernel::kScatterAdd: return "ScatterAdd";
    case Kernel::kCrossEntropy: return "CrossEntropy";
    case Kernel::kCrossEntropyBackward: return "CrossEntropyBackward";
    case Kernel::kArgMaxRows: return "ArgMaxRows";
    case Kernel::kDropoutMask: return "DropoutMask";
    case Kernel::kSumSquares: return "SumSquares";
    case Kernel::kAdamW: return "AdamW";
    case Kernel::kFusedAttention: return "FusedAttention";
    case Kernel::kFusedAttentionBackward: return "FusedAttentionBackward";
    case Kernel::kNumKernels: break;
  }
  return "?";
}

bool KernelIsOptional(Kernel kernel) {
  return kernel == Kernel::kFusedAttention || kernel == Kernel::kFusedAttentionBackward;
}

std::vector<std::string> MissingKernels(const Backend& backend) {
  std::vector<std::string> missing;
  for (int k = 0; k < static_cast<int>(Kernel::kNumKernels); ++k)
    if (!KernelIsOptional(static_cast<Kernel>(k)) && !backend.Implements(static_cast<Kernel>(k)))
      missing.push_back(KernelName(static_cast<Kernel>(k)));
  return missing;
}

std::vector<std::string> CompleteBackends() {
  std::vector<std::string> complete;
  for (const std::string& name : RegisteredBackends()) {
    auto made = MakeBackend(name);
    if (made.ok() && MissingKernels(**made).empty()) complete.push_back(name);
  }
  return complete;
}

std::vector<std::string> SupportedPrecisionNames(const Backend& backend) {
  std::vector<std::string> names;
  for (Precision p : AllPrecisions())
    if (backend.SupportsPrecision(p)) names.push_back(PrecisionName(p));
  return names;
}

void Backend::Missing(Kernel kernel) const {
  TVLAB_CHECK(false) << "backend " << name() << " does not implement kernel "
                     << KernelName(kernel) << " (validation should have refused it)";
  std::abort();
}

void CheckGemmBiasDesc(const GemmDesc& d) {
  TVLAB_CHECK(d.alpha == 1.0f && d.beta == 0.0f && (d.batch == 1 || d.stride_c == d.m * d.n))
      << "GemmBias takes alpha 1, beta 0 and a contiguous c (alpha " << d.alpha << ", beta "
      << d.beta << ", stride_c " << d.stride_c << " for " << d.m << " x " << d.n << ")";
}

void Backend::AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h) {
  for (const AdamWTensor& t : tensors) {
    AdamWHyper own = h;
    own.weight_decay = t.weight_decay;
    AdamW(t.param, t.grad, t.m, t.v, t.n, own);
  }
}

// Kernels a backend does not override.
void Backend::Gemm(const GemmDesc&, const float*, const float*, float*) { Missing(Kernel::kGemm); }
void Backend::GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                       float* c) {
  CheckGemmBiasDesc(d);
  Gemm(d, a, b, c);
  const Shape rows_n = {d.batch * d.m, d.n};
  Binary(BinaryOp::kAdd, c, rows_n, bias, {d.n}, c, rows_n);  // (rows, n) + (n)
}
void Backend::Unary(UnaryOp, const float*, float*, int64_t) { Missing(Kernel::kUnary); }
void Backend::UnaryBackward(UnaryOp, const float*, const float*, const float*, float*, int64_t) {
  Missing(Kernel::kUnaryBackward);
}
void Backend::Binary(BinaryOp, const float*, const Shape&, const float*, const Shape&, float*,
                     const Shape&) {
  Missing(Kernel::kBinary);
}
void Backend::ReduceSumTo(const float*, const Shape&, float*, const Shape&) {
  Missing(Kernel::kReduceSumTo);
}
void Backend::Softmax(const float*, float*, int64_t, int64_t) { Missing(Kernel::kSoftmax); }
void Backend::SoftmaxBackward(const float*, const float*, float*, int64_t, int64_t) {
  Missing(Kernel::kSoftmaxBackward);
}
void Backend::AttentionMaskBias(const AttentionMask&, int64_t, int64_t, float*) {
  Missing(Kernel::kAttentionMaskBias);
}
void Backend::RotaryTables(int64_t, int64_t, int64_t, double, float*, float*) {
  Missing(Kernel::kRotaryTables);
}
void Backend::SinusoidalTable(int64_t, int64_t, int64_t, double, float*) {
  Missing(Kernel::kSinusoidalTable);
}
void Backend::AlibiBias(const std::vector<double>&, int64_t, int64_t, int64_t, float*) {
  Missing(Kernel::kAlibiBias);
}
void Backend::Normalize(const float*, const float*, const float*, float*, float*, float*, int64_t,
                        int64_t, float, bool) {
  Missing(Kernel::kNormalize);
}
void Backend::NormalizeBackward(const float*, const float*, const float*, const float*,
                                const float*, float*, float*, float*, int64_t, int64_t, bool) {
  Missing(Kernel::kNormalizeBackward);
}
void Backend::Permute(const float*, const Shape&, const std::vector<int>&, float*) {
  Missing(Kernel::kPermute);
}
void Backend::Copy2D(const float*, int64_t, float*, int64_t, int64_t, int64_t) {
  Missing(Kernel::kCopy2D);
}
void Backend::Gather(const float*, int64_t, const int32_t*, int64_t, float*) {
  Missing(Kernel::kGather);
}
void Backend::ScatterAdd(const float*, int64_t, const int32_t*, int64_t, float*) {
  Missing(Kernel::kScatterAdd);
}
void Backend::CrossEntropy(const float*, const int32_t*, int64_t, int64_t, int32_t, float, float*,
                           float*, float*) {
  Missing(Kernel::kCrossEntropy);
}
void Backend::CrossEntropyBackward(const float*, const int32_t*, int64_t, int64_t, int32_t, float,
                                   const float*, float*) {
  Missing(Kernel::kCrossEntropyBackward);
}
void Backend::ArgMaxRows(const float*, int64_t, int64_t, int32_t*) { Missing(Kernel::kArgMaxRows); }
void Backend::DropoutMask(const RngStream&, float, float*, int64_t) {
  Missing(Kernel::kDropoutMask);
}
void Backend::SumSquares(const float*, int64_t, double*) { Missing(Kernel::kSumSquares); }
void Backend::AdamW(float*, const float*, float*, float*, int64_t, const AdamWHyper&) {
  Missing(Kernel::kAdamW);
}
void Backend::FusedAttention(const FusedAttentionDesc&, const float*, const float*, const float*,
                             float*, float*) {
  Missing(Kernel::kFusedAttention);
}
void Backend::FusedAttentionBackward(const FusedAttentionDesc&, const float*, const float*,
                                     const float*, const float*, const float*, const float*,
                                     float*, float*, float*) {
  Missing(Kernel::kFusedAttentionBackward);
}

bool RegisterBackend(const std::string& name, BackendFactory factory) {
  return Backends().Register(name, factory);
}

std::vector<std::string> RegisteredBackends() { return Backends().Names(); }

std::vector<std::string> UsableBackends() {
  std::vector<std::string> usable;
  for (const std::string& name : RegisteredBackends())
    if (MakeBackend(name).ok()) usable.push_back(name);
  return usable;
}

std::vector<std::string> HostBackends() {
  std::vector<std::string> host;
  for (const std::string& name : RegisteredBackends()) {
    auto made = MakeBackend(name);
    if (made.ok() && (*made)->device() == Device::kCpu) host.push_back(name);
  }
  return host;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name) {
  auto entry = Backends().Get(name);
  if (!entry.ok()) return entry.status();
  std::unique_ptr<Backend> backend = (**entry)();
  // A factory returns null when its device is missing (e.g. no GPU).
  if (backend == nullptr)
    return absl::FailedPreconditionError("backend '" + name + "' has no usable device here");
  return backend;
}

absl::Status SetBackend(const std::string& name) {
  auto made = MakeBackend(name);
  if (!made.ok()) return made.status();
  ActiveBackend().backend = std::move(*made);
  SetCurrentDevice(ActiveBackend().backend->device());
  return absl::OkStatus();
}

Backend& CurrentBackend() {
  Active& active = ActiveBackend();
  if (!active.backend) {
    std::string preferred = Backends().Contains("cpu_onednn") ? "cpu_onednn" : "reference";
    absl::Status status = SetBackend(preferred);
    TVLAB_CHECK(status.ok()) << status.message();
  }
  return *active.backend;
}

ScopedBackend::ScopedBackend(const std::string& name) : previous_(CurrentBackend().name()) {
  absl::Status status = SetBackend(name);
  TVLAB_CHECK(status.ok()) << status.message();
}

ScopedBackend::~ScopedBackend() { (void)SetBackend(previous_); }

}  // namespace tvlab
