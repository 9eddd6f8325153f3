#include "framework/backend/cpu_onednn/onednn_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "framework/backend/cpu_onednn/tiled_attention.h"
#include "framework/backend/precision.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Below this many multiply-adds a GEMM runs on one thread: waking OpenMP
// workers costs more than they save (measured on the sort model: 2 threads
// were 1.6x slower than 1 without this; bench/README.md).
constexpr int64_t kParallelGemmMacs = int64_t{1} << 22;
// Likewise for elementwise, normalization and softmax kernels and the loops
// of this file, in elements (the GPT benchmark's (B, T, C) activations are
// 2^20; the sort model's largest are 2^17 and stay on one thread).
constexpr int64_t kParallelElements = int64_t{1} << 20;
// AdamW runs per parameter tensor; its loop is cheap per element, so it is
// threaded from a smaller size (a d 256 x d_ff 1024 weight is 2^18).
constexpr int64_t kParallelOptimizerElements = int64_t{1} << 16;

// oneDNN's eltwise algorithm and (alpha, beta) for each UnaryOp.
struct EltwiseAlgo {
  dnnl::algorithm algorithm;
  float alpha = 0.0f, beta = 0.0f;
};

EltwiseAlgo ToEltwise(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu: return {dnnl::algorithm::eltwise_relu};
    case UnaryOp::kGeluErf: return {dnnl::algorithm::eltwise_gelu_erf};
    case UnaryOp::kGeluTanh: return {dnnl::algorithm::eltwise_gelu_tanh};
    case UnaryOp::kSilu: return {dnnl::algorithm::eltwise_swish, 1.0f};
    case UnaryOp::kSigmoid: return {dnnl::algorithm::eltwise_logistic};
    case UnaryOp::kTanh: return {dnnl::algorithm::eltwise_tanh};
    case UnaryOp::kExp: return {dnnl::algorithm::eltwise_exp};
    case UnaryOp::kLog: return {dnnl::algorithm::eltwise_log};
    case UnaryOp::kSqrt: return {dnnl::algorithm::eltwise_sqrt};
    case UnaryOp::kSquare: return {dnnl::algorithm::eltwise_square};
  }
  return {dnnl::algorithm::eltwise_relu};
}

// Right-aligns `shape` to `rank` dims with leading 1s.
Shape Align(const Shape& shape, size_t rank) {
  Shape out(rank - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// If `small` (aligned) equals `big` on a suffix and is 1 before it, returns
// the suffix length in elements; else -1. E.g. bias (C) vs (B, T, C) -> C.
int64_t TrailingBlock(const Shape& small, const Shape& big) {
  size_t first = 0;
  while (first < small.size() && small[first] == 1) ++first;
  for (size_t i = first; i < small.size(); ++i)
    if (small[i] != big[i]) return -1;
  int64_t block = 1;
  for (size_t i = first; i < small.size(); ++i) block *= small[i];
  return block;
}

// out = f(a, b) where one operand repeats a trailing block (na or nb
// elements; a scalar is a block of 1) over the other. Threaded above
// kParallelElements; every element is computed the same way either way.
template <typename F>
void BinaryLoop(F f, const float* a, int64_t na, const float* b, int64_t nb, float* out,
                int64_t n) {
  const bool parallel = n >= kParallelElements;
  if (na == n && nb == n) {
#pragma omp parallel for simd if (parallel : parallel) schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (na == n && nb == 1) {
    const float s = b[0];
#pragma omp parallel for simd if (parallel : parallel) schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
  } else if (nb == n && na == 1) {
    const float s = a[0];
#pragma omp parallel for simd if (parallel : parallel) schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = f(s, b[i]);
  } else if (na == n) {  // e.g. (B, T, C) + bias (C)
#pragma omp parallel for if (parallel : parallel) schedule(static)
    for (int64_t i = 0; i < n; i += nb)
      for (int64_t j = 0; j < nb; ++j) out[i + j] = f(a[i + j], b[j]);
  } else {
#pragma omp parallel for if (parallel : parallel) schedule(static)
    for (int64_t i = 0; i < n; i += na)
      for (int64_t j = 0; j < na; ++j) out[i + j] = f(a[j], b[i + j]);
  }
}

bool OnOnednnEltwiseBackward(UnaryOp op) {
  return op == UnaryOp::kGeluErf || op == UnaryOp::kGeluTanh || op == UnaryOp::kSilu ||
         op == UnaryOp::kRelu;
}

}  // namespace

OnednnBackend::OnednnBackend() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

// Limits OpenMP (and so oneDNN) to one thread in a scope.
class SingleThreaded {
 public:
  explicit SingleThreaded(bool enable) : previous_(enable ? omp_get_max_threads() : 0) {
    if (previous_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreaded() {
    if (previous_ > 1) omp_set_num_threads(previous_);
  }

 private:
  int previous_;
};

namespace {

// Whether oneDNN creates a bf16 x bf16 -> f32 matmul on this CPU (it needs
// at least AVX512_CORE; AVX512_BF16 or AMX run it natively). Asked once.
bool OnednnRunsBf16Matmul() {
  static const bool runs = [] {
    try {
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      memory::desc a({1, 16, 16}, dt::bf16, tag::abc), b({1, 16, 16}, dt::bf16, tag::abc),
          c({1, 16, 16}, dt::f32, tag::abc);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return runs;
}

// The elements an operand of `batch` matrices of `size` elements spans at
// `stride` (0: one matrix shared by the batch).
int64_t OperandSpan(int64_t batch, int64_t stride, int64_t size) {
  return stride == 0 || batch == 0 ? size : (batch - 1) * stride + size;
}

// dst[i] = the bf16 bits of src[i] (precision.h: nearest, ties to even), into
// a buffer that grows only.
void ToBf16(const float* src, int64_t n, std::vector<uint16_t>* dst) {
  if (static_cast<int64_t>(dst->size()) < n) dst->resize(n);
  uint16_t* out = dst->data();
  const bool parallel = n >= kParallelElements;
#pragma omp parallel for simd if (parallel : parallel) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = Bf16Bits(src[i]);
}

}  // namespace

bool OnednnBackend::SupportsPrecision(Precision precision) const {
  switch (precision) {
    case Precision::kFp32: return true;
    case Precision::kBf16: return OnednnRunsBf16Matmul();
    case Precision::kTf32: return false;
  }
  return false;
}

std::string OnednnBackend::PrecisionNote(Precision precision) const {
  if (precision == Precision::kTf32)
    return "TF32 is a format of NVIDIA tensor cores; oneDNN has no TF32 matmul on CPUs";
  if (precision == Precision::kBf16 && !OnednnRunsBf16Matmul())
    return "oneDNN could not create a bf16 matmul on this CPU: it needs at least the "
           "AVX512_CORE instruction set (AVX512_BF16 or AMX run bf16 natively)";
  return "";
}

void OnednnBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  Matmul(d, a, b, /*bias=*/nullptr, c);
}

// The bias is the matmul primitive's own argument: added as the products are
// written, not in a second pass over c.
void OnednnBackend::GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                             float* c) {
  CheckGemmBiasDesc(d);
  Matmul(d, a, b, bias, c);
}

void OnednnBackend::Matmul(const GemmDesc& d, const float* a, const float* b, const float* bias,
                           float* c) {
  TVLAB_CHECK(SupportsPrecision(d.precision))
      << "cpu_onednn Gemm called with precision " << PrecisionName(d.precision)
      << " (validation should have refused it)";
  SingleThreaded small(d.batch * d.m * d.n * d.k < kParallelGemmMacs);
  const bool bf16 = d.precision == Precision::kBf16;
  const dt in_type = bf16 ? dt::bf16 : dt::f32;
  GemmKey key{d.batch, d.m, d.n, d.k, d.trans_a, d.trans_b, d.stride_a, d.stride_b,
              d.stride_c, d.alpha, d.beta, static_cast<int>(d.precision), bias != nullptr};
  // A as (batch|1, m, k) with strides that express the transpose.
  memory::dims a_dims = {d.stride_a == 0 ? 1 : d.batch, d.m, d.k};
  memory::dims a_strides = {d.stride_a, d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1};
  memory::dims b_dims = {d.stride_b == 0 ? 1 : d.batch, d.k, d.n};
  memory::dims b_strides = {d.stride_b, d.trans_b ? 1 : d.n, d.trans_b ? d.k : 1};
  memory::dims c_dims = {d.batch, d.m, d.n};
  memory::dims c_strides = {d.stride_c == 0 ? d.m * d.n : d.stride_c, d.n, 1};
  if (a_dims[0] == 1) a_strides[0] = d.m * d.k;
  if (b_dims[0] == 1) b_strides[0] = d.k * d.n;
  memory::desc a_md(a_dims, in_type, a_strides), b_md(b_dims, in_type, b_strides),
      c_md(c_dims, dt::f32, c_strides);
  memory::desc bias_md({1, 1, d.n}, dt::f32, memory::dims{d.n, d.n, 1});  // (n), every row
  auto it = matmuls_.find(key);
  if (it == matmuls_.end()) {
    dnnl::primitive_attr attr;
    if (d.alpha != 1.0f) attr.set_output_scales(0, {d.alpha});
    if (d.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(d.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md),
        attr, engine_);
    it = matmuls_.emplace(key, dnnl::matmul(pd)).first;
  }
  void* a_data = const_cast<float*>(a);
  void* b_data = const_cast<float*>(b);
  if (bf16) {  // (same layout and strides, 2-byte elements)
    ToBf16(a, OperandSpan(d.batch, d.stride_a, d.m * d.k), &a16_);
    ToBf16(b, OperandSpan(d.batch, d.stride_b, d.k * d.n), &b16_);
    a_data = a16_.data();
    b_data = b16_.data();
  }
  memory am(a_md, engine_, a_data), bm(b_md, engine_, b_data), cm(c_md, engine_, c);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_md, engine_, const_cast<float*>(bias)));
  it->second.execute(stream_, args);
  stream_.wait();
}

void OnednnBackend::Unary(UnaryOp op, const float* x, float* y, int64_t n) {
  if (n == 0) return;
  SingleThreaded small(n < kParallelElements);
  EltwiseKey key{static_cast<int>(op), n};
  memory::desc md({n}, dt::f32, tag::a);
  auto it = eltwise_.find(key);
  if (it == eltwise_.end()) {
    EltwiseAlgo algo = ToEltwise(op);
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algo.algorithm, md,
                                     algo.alpha, algo.beta);
    it = eltwise_.emplace(key, dnnl::eltwise_forward({desc, engine_})).first;
  }
  memory xm(md, engine_, const_cast<float*>(x)), ym(md, engine_, y);
  it->second.execute(stream_, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
  stream_.wait();
}

void OnednnBackend::UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy,
                                  float* dx, int64_t n) {
  if (n == 0 || !OnOnednnEltwiseBackward(op))
    return ReferenceBackend::UnaryBackward(op, x, y, dy, dx, n);
  SingleThreaded small(n < kParallelElements);
  EltwiseKey key{static_cast<int>(op), n};
  memory::desc md({n}, dt::f32, tag::a);
  auto it = eltwise_backward_.find(key);
  if (it == eltwise_backward_.end()) {
    EltwiseAlgo algo = ToEltwise(op);
    dnnl::eltwise_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, algo.algorithm, md, algo.alpha, algo.beta}, engine_);
    dnnl::eltwise_backward::desc desc(algo.algorithm, md, md, algo.alpha, algo.beta);
    it = eltwise_backward_.emplace(key, dnnl::eltwise_backward({desc, engine_, hint})).first;
  }
  // These algorithms differentiate from the input x (y is not needed).
  memory xm(md, engine_, const_cast<float*>(x)), dym(md, engine_, const_cast<float*>(dy)),
      dxm(md, engine_, dx);
  it->second.execute(stream_, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_SRC, dxm}});
  stream_.wait();
}

void OnednnBackend::Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                           const Shape& b_shape, float* out, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  int64_t n = NumElements(out_shape);
  int64_t na = TrailingBlock(Align(a_shape, rank), out_shape);
  int64_t nb = TrailingBlock(Align(b_shape, rank), out_shape);
  bool fast = na > 0 && nb > 0 && (na == n || nb == n) && n % std::min(na, nb) == 0;
  if (!fast) return ReferenceBackend::Binary(op, a, a_shape, b, b_shape, out, out_shape);
  switch (op) {
    case BinaryOp::kAdd: return BinaryLoop([](float x, float y) { return x + y; }, a, na, b, nb, out, n);
    case BinaryOp::kSub: return BinaryLoop([](float x, float y) { return x - y; }, a, na, b, nb, out, n);
    case BinaryOp::kMul: return BinaryLoop([](float x, float y) { return x * y; }, a, na, b, nb, out, n);
    case BinaryOp::kDiv: return BinaryLoop([](float x, float y) { return x / y; }, a, na, b, nb, out, n);
  }
}

void OnednnBackend::ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                                const Shape& out_shape) {
  int64_t n = NumElements(x_shape);
  int64_t block = TrailingBlock(Align(out_shape, x_shape.size()), x_shape);
  if (block <= 0) return ReferenceBackend::ReduceSumTo(x, x_shape, out, out_shape);
  // Sum over leading dims: out[j] = sum_i x[i * block + j], each thread
  // taking one column chunk (each column sums in the same order either way).
  // One thread keeps one chunk: a row-by-row sweep, which the prefetcher
  // follows (64-column chunks made the GPT step's bias gradients 3x slower).
  const int threads = n >= kParallelElements ? omp_get_max_threads() : 1;
  const int64_t chunk = (block + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j0 = 0; j0 < block; j0 += chunk) {
    const int64_t j1 = std::min(block, j0 + chunk);
    for (int64_t j = j0; j < j1; ++j) out[j] = 0.0f;
    for (int64_t i = 0; i < n; i += block)
      for (int64_t j = j0; j < j1; ++j) out[j] += x[i + j];
  }
}

void OnednnBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  // oneDNN's softmax returns NaN for all-masked rows; tvlab defines them as 0.
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    if (max == -std::numeric_limits<float>::infinity()) {
      for (int64_t c = 0; c < cols; ++c) yr[c] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum += (yr[c] = std::exp(xr[c] - max));
    float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
}

void OnednnBackend::SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                                    int64_t cols) {
  // dx = y * (dy - sum(dy * y)) per row, the dot in double as the reference.
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(yr[c]) * dyr[c];
    const float d = static_cast<float>(dot);
    float* dxr = dx + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - d);
  }
}

void OnednnBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                              float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                              bool subtract_mean) {
  // oneDNN 2.6 has no RMSNorm; that case stays on the reference loops.
  if (!subtract_mean || rows == 0) {
    return ReferenceBackend::Normalize(x, gamma, beta, y, mean, rstd, rows, cols, eps,
                                       subtract_mean);
  }
  SingleThreaded small(rows * cols < kParallelElements);
  NormKey key{rows, cols, eps, gamma != nullptr, beta != nullptr};
  memory::desc data_md({rows, cols}, dt::f32, tag::ab);
  memory::desc stat_md({rows}, dt::f32, tag::a);
  memory::desc param_md({cols}, dt::f32, tag::a);
  auto it = norms_.find(key);
  if (it == norms_.end()) {
    auto flags = dnnl::normalization_flags::none;
    if (gamma) flags |= dnnl::normalization_flags::use_scale;
    if (beta) flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_training, data_md,
                                                 stat_md, eps, flags);
    it = norms_.emplace(key, dnnl::layer_normalization_forward({desc, engine_})).first;
  }
  std::vector<float> variance(rows);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(data_md, engine_, const_cast<float*>(x))},
      {DNNL_ARG_DST, memory(data_md, engine_, y)},
      {DNNL_ARG_MEAN, memory(stat_md, engine_, mean)},
      {DNNL_ARG_VARIANCE, memory(stat_md, engine_, variance.data())}};
  if (gamma) args.emplace(DNNL_ARG_SCALE, memory(param_md, engine_, const_cast<float*>(gamma)));
  if (beta) args.emplace(DNNL_ARG_SHIFT, memory(param_md, engine_, const_cast<float*>(beta)));
  it->second.execute(stream_, args);
  stream_.wait();
  for (int64_t r = 0; r < rows; ++r) rstd[r] = 1.0f / std::sqrt(variance[r] + eps);
}

void OnednnBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                      const float* rstd, const float* dy, float* dx,
                                      float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                      bool subtract_mean) {
  // The reference's math (LayerNorm, or RMSNorm without subtract_mean):
  //   xhat = (x - mean) * rstd; g = dy * gamma
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
  // with rows split over threads; dgamma/dbeta are summed per thread and the
  // partial sums added in thread order.
  const int threads = rows * cols >= kParallelElements ? omp_get_max_threads() : 1;
  std::vector<float> partial_g(dgamma ? threads * cols : 0, 0.0f);
  std::vector<float> partial_b(dbeta ? threads * cols : 0, 0.0f);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    float* pg = dgamma ? partial_g.data() + t * cols : nullptr;
    float* pb = dbeta ? partial_b.data() + t * cols : nullptr;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      const float mu = mean[r], rs = rstd[r];
      double mean_g = 0.0, mean_gx = 0.0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - mu) * rs;
        const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
        mean_g += g;
        mean_gx += static_cast<double>(g) * xhat;
      }
      if (pg) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) pg[c] += dyr[c] * ((xr[c] - mu) * rs);
      }
      if (pb) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) pb[c] += dyr[c];
      }
      const float mg = subtract_mean ? static_cast<float>(mean_g / cols) : 0.0f;
      const float mgx = static_cast<float>(mean_gx / cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - mu) * rs;
        const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
        dxr[c] = rs * (g - mg - xhat * mgx);
      }
    }
  }
  for (int t = 0; t < threads; ++t) {
    for (int64_t c = 0; c < cols; ++c) {
      if (dgamma) dgamma[c] += partial_g[t * cols + c];
      if (dbeta) dbeta[c] += partial_b[t * cols + c];
    }
  }
}

void OnednnBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                            float* y) {
  const int rank = static_cast<int>(shape.size());
  if (rank == 0 || perm[rank - 1] != rank - 1) {
    return ReferenceBackend::Permute(x, shape, perm, y);
  }
  // The last dimension stays last: copy contiguous rows of it.
  const int64_t row = shape[rank - 1];
  Shape in_strides = ContiguousStrides(shape);
  Shape out_shape(rank - 1);
  for (int i = 0; i < rank - 1; ++i) out_shape[i] = shape[perm[i]];
  const int64_t rows = NumElements(out_shape);
  // Each output row's source offset from its own index, so rows can be
  // split over threads.
#pragma omp parallel for if (rows * row >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = 0, rest = r;
    for (int d = rank - 2; d >= 0; --d) {
      src += (rest % out_shape[d]) * in_strides[perm[d]];
      rest /= out_shape[d];
    }
    std::copy(x + src, x + src + row, y + r * row);
  }
}

namespace {

// The reference's AdamW arithmetic over elements [0, n) of one tensor; the
// per-step constants come from AdamWConstants, so every caller (one tensor,
// or a chunk of one in AdamWMany) computes the same values.
struct AdamWConstants {
  float step_size, bc2_sqrt, decay, beta1, beta2, eps;
};

AdamWConstants ConstantsFor(const AdamWHyper& h, float weight_decay) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
  return {static_cast<float>(h.lr / bc1), static_cast<float>(std::sqrt(bc2)),
          1.0f - h.lr * weight_decay, h.beta1, h.beta2, h.eps};
}

inline void AdamWRange(const AdamWConstants& k, float* param, const float* grad, float* m,
                       float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    param[i] *= k.decay;
    m[i] = k.beta1 * m[i] + (1.0f - k.beta1) * grad[i];
    v[i] = k.beta2 * v[i] + (1.0f - k.beta2) * grad[i] * grad[i];
    const float denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
    param[i] -= k.step_size * m[i] / denom;
  }
}

// AdamWMany's unit of work: elements [begin, begin + n) of tensor `tensor`.
struct AdamWChunk {
  size_t tensor;
  int64_t begin, n;
};
constexpr int64_t kAdamWChunkElements = int64_t{1} << 14;

}  // namespace

void OnednnBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                          const AdamWHyper& h) {
  AdamWMany({{param, grad, m, v, n, h.weight_decay}}, h);
}

// Every tensor cut into chunks of 2^14 elements, and one OpenMP loop over the
// chunks of all of them: small tensors (biases, norms) no longer run alone,
// and one parallel region serves the whole step.
void OnednnBackend::AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h) {
  std::vector<AdamWConstants> constants;
  std::vector<AdamWChunk> chunks;
  int64_t total = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    constants.push_back(ConstantsFor(h, tensors[t].weight_decay));
    for (int64_t b = 0; b < tensors[t].n; b += kAdamWChunkElements)
      chunks.push_back({t, b, std::min(kAdamWChunkElements, tensors[t].n - b)});
    total += tensors[t].n;
  }
  const int64_t count = static_cast<int64_t>(chunks.size());
#pragma omp parallel for if (total >= kParallelOptimizerElements) schedule(static)
  for (int64_t c = 0; c < count; ++c) {
    const AdamWChunk& k = chunks[c];
    const AdamWTensor& t = tensors[k.tensor];
    AdamWRange(constants[k.tensor], t.param + k.begin, t.grad + k.begin, t.m + k.begin,
               t.v + k.begin, k.n);
  }
}

namespace {
std::unique_ptr<Backend> MakeOnednn() { return std::make_unique<OnednnBackend>(); }
const bool kRegistered = RegisterBackend("cpu_onednn", &MakeOnednn);
}  // namespace

void OnednnBackend::FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                                   const float* v, float* out, float* lse) {
  TiledAttentionForward(d, q, k, v, out, lse);
}

void OnednnBackend::FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                           const float* k, const float* v, const float* out,
                                           const float* lse, const float* dout, float* dq,
                                           float* dk, float* dv) {
  TiledAttentionBackward(d, q, k, v, out, lse, dout, dq, dk, dv);
}

}  // namespace tvlab
