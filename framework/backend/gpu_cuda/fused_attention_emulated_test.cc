// The CUDA fused attention kernels (fused_attention_device.cuh), compiled by
// the host compiler and run on the CPU against the reference backend. A
// small emulator stands in for the GPU: every thread of a block is a fiber
// on one OS thread (x86-64: a six-register stack switch, ~100x cheaper than
// swapcontext's signal-mask syscalls); __syncthreads is a block barrier and
// a warp shuffle exchanges through per-warp slots at a warp barrier, so the
// kernels run with CUDA's semantics for the built-ins they use. This checks the kernels' indexing, masks, online softmax, dropout and
// backward without a GPU; what it cannot check (nvcc's code generation, the
// launch configuration's limits, timing) is left to tools/gpu_check.sh on a
// real device, where backend_conformance_test runs the compiled kernels.
//
// Emulated launches mirror fused_attention_kernel.cu's grid sizes, shared
// memory sizes and 256-column windows (its host code is a few lines of
// arithmetic; the kernels are what this test is for). Shapes are smaller
// than the conformance suite's (the emulator runs a fiber per thread) but
// cover the same features: causal with offset, key padding with an empty
// row, ALiBi, GQA and MQA, T != S, dropout, and head sizes from 8 to 300
// (every kDimsPerLane, and windows past 256 columns).

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"

// --- The emulated CUDA built-ins --------------------------------------------
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define TVLAB_DYNAMIC_SHARED_FLOATS(name) float* name = ::emu::g_shared

struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace emu {

constexpr int kMaxThreads = 128;
constexpr size_t kStackBytes = 256 * 1024;

struct Barrier {
  int arrived = 0;
  int64_t generation = 0;
};

struct Fiber {
  void* sp = nullptr;  // saved stack pointer while switched out
  std::vector<char> stack;
  bool done = false;
};

}  // namespace emu

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define TVLAB_EMULATOR_AVAILABLE 1
// EmuSwitch(&from_sp, to_sp): pushes the callee-saved registers, saves the
// stack pointer in *from_sp, switches to to_sp and pops its registers (the
// System V ABI: everything else is caller-saved across this call).
extern "C" void EmuSwitch(void** from_sp, void* to_sp);
asm(R"(
  .text
  .globl EmuSwitch
  .type EmuSwitch, @function
EmuSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size EmuSwitch, .-EmuSwitch
)");
#else
// Elsewhere (another architecture, or AddressSanitizer, which cannot follow
// hand-made stack switches without annotations) the test skips, saying so.
#define TVLAB_EMULATOR_AVAILABLE 0
extern "C" inline void EmuSwitch(void**, void*) {}
#endif

namespace emu {

float* g_shared = nullptr;
size_t g_shared_bytes = 0;
int g_threads = 0;
Fiber g_fibers[kMaxThreads];
void* g_scheduler_sp = nullptr;
int g_current = 0;
int64_t g_progress = 0;  // barrier arrivals: a round without any is a deadlock
Barrier g_block_barrier;
Barrier g_warp_barriers[kMaxThreads / 32];
// Two slot sets per warp, alternating by barrier generation: a lane writes
// shuffle n + 2's value only after every lane passed shuffle n + 1's barrier,
// so after every lane read shuffle n's.
float g_warp_slots[kMaxThreads / 32][2][32];
const std::function<void()>* g_kernel = nullptr;

}  // namespace emu

EmuDim3 threadIdx, blockIdx;

namespace emu {

void Yield() { EmuSwitch(&g_fibers[g_current].sp, g_scheduler_sp); }

void Wait(Barrier& barrier, int count) {
  const int64_t generation = barrier.generation;
  ++g_progress;
  if (++barrier.arrived == count) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  while (barrier.generation == generation) Yield();
}

void FiberMain() {
  (*g_kernel)();
  g_fibers[g_current].done = true;
  Yield();  // never resumed
}

// Runs `kernel` for blocks [0, grid) of `threads` threads with `shared_floats`
// floats of dynamic shared memory (NaN-filled: a read before a write shows).
bool Launch(int64_t grid, int threads, size_t shared_floats, const std::function<void()>& kernel,
            std::string* error) {
  g_threads = threads;
  g_kernel = &kernel;
  std::vector<float> shared(shared_floats);
  g_shared_bytes = shared_floats * sizeof(float);
  for (int64_t block = 0; block < grid; ++block) {
    std::fill(shared.begin(), shared.end(), std::nanf(""));
    g_shared = shared.data();
    blockIdx.x = static_cast<unsigned>(block);
    g_block_barrier = Barrier();
    for (Barrier& b : g_warp_barriers) b = Barrier();
    for (int t = 0; t < threads; ++t) {
      Fiber& f = g_fibers[t];
      f.stack.resize(kStackBytes);
      f.done = false;
      // A fresh stack that EmuSwitch "returns" into FiberMain from: six
      // zero registers, FiberMain's address, a dummy return address; the top
      // is 16-byte aligned so FiberMain starts with the ABI's alignment.
      uintptr_t top = reinterpret_cast<uintptr_t>(f.stack.data() + f.stack.size());
      top &= ~uintptr_t{15};
      void** sp = reinterpret_cast<void**>(top) - 8;
      for (int r = 0; r < 6; ++r) sp[r] = nullptr;
      sp[6] = reinterpret_cast<void*>(&FiberMain);
      sp[7] = nullptr;
      f.sp = sp;
    }
    for (;;) {
      bool all_done = true, any_finished = false;
      const int64_t progress = g_progress;
      for (int t = 0; t < threads; ++t) {
        if (g_fibers[t].done) continue;
        g_current = t;
        threadIdx.x = static_cast<unsigned>(t);
        EmuSwitch(&g_scheduler_sp, g_fibers[t].sp);
        any_finished |= g_fibers[t].done;
        all_done &= g_fibers[t].done;
      }
      if (all_done) break;
      if (!any_finished && g_progress == progress) {
        *error = "deadlock in block " + std::to_string(block);
        return false;
      }
    }
  }
  return true;
}

}  // namespace emu

inline void __syncthreads() { emu::Wait(emu::g_block_barrier, emu::g_threads); }

inline float __shfl_sync(unsigned /*mask*/, float value, int source_lane) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu::Barrier& barrier = emu::g_warp_barriers[warp];
  float* slots = emu::g_warp_slots[warp][barrier.generation & 1];
  slots[lane] = value;
  emu::Wait(barrier, 32);
  return slots[source_lane & 31];
}

inline float __shfl_xor_sync(unsigned mask, float value, int lane_mask) {
  return __shfl_sync(mask, value, static_cast<int>(threadIdx.x % 32) ^ lane_mask);
}

inline void __syncwarp() { emu::Wait(emu::g_warp_barriers[threadIdx.x / 32], 32); }

// --- Emulated WMMA (for fused_attention_tensor_core.cuh) ----------------------
// A fragment holds its whole 16 x 16 tile in every lane (the real layout is
// opaque to the kernels, so any layout computes the same products); a store
// writes each lane's share of it. Each
// *_sync call first waits for the warp's 32 lanes, as CUDA's do, and checks
// CUDA's requirements on its operands: a tile pointer 256-bit aligned (here:
// its offset in shared memory a multiple of 32 bytes) and a leading
// dimension that is a multiple of 16 bytes. A violation is recorded in
// g_wmma_error (the test asserts it stays empty), since a real GPU would
// give wrong results or fault there.
#include "framework/backend/precision.h"

namespace emu {

std::string g_wmma_error;

struct bf16 {
  uint16_t bits;
};
inline bf16 ToBf16(float x) { return bf16{tvlab::Bf16Bits(x)}; }
inline float ToFloat(bf16 x) { return tvlab::Bf16ToFloat(x.bits); }
inline float ToFloat(float x) { return x; }

namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator has the 16x16x16 shape only");
  float v[16][16];  // the tile, row by row
};

template <typename T>
void EnterAndCheck(const T* p, unsigned ldm, const char* what) {
  __syncwarp();
  const ptrdiff_t offset = reinterpret_cast<const char*>(p) - reinterpret_cast<const char*>(g_shared);
  std::string error;
  if (offset < 0 || static_cast<size_t>(offset) >= g_shared_bytes)
    error = "a tile outside shared memory";
  else if (offset % 32 != 0)
    error = "a tile pointer not 256-bit aligned (offset " + std::to_string(offset) + ")";
  else if ((ldm * sizeof(T)) % 16 != 0)
    error = "a leading dimension of " + std::to_string(ldm) + " elements, not a multiple of 16 bytes";
  if (!error.empty() && g_wmma_error.empty()) g_wmma_error = std::string(what) + ": " + error;
}

template <typename Use, typename T, typename L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  EnterAndCheck(p, ldm, "load_matrix_sync");
  constexpr bool row = std::is_same<L, row_major>::value;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) f.v[i][j] = ToFloat(row ? p[i * ldm + j] : p[j * ldm + i]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p,
                             unsigned ldm, layout_t layout) {
  EnterAndCheck(p, ldm, "load_matrix_sync");
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      f.v[i][j] = layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i];
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f,
                              unsigned ldm, layout_t layout) {
  EnterAndCheck(p, ldm, "store_matrix_sync");
  // Each lane writes its share only (8 of the 256 elements), as on a GPU: a
  // lane that reads the tile without a __syncwarp after the store can see
  // what the other lanes have not written yet.
  const int lane = threadIdx.x % 32;
  for (int e = lane; e < 256; e += 32) {
    const int i = e / 16, j = e % 16;
    (layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.v[i][j];
  }
}

template <typename Use, typename T, typename L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float x) {
  for (auto& row : f.v)
    for (float& e : row) e = x;
}

// d = a b + c, fp32 accumulation (products of bf16 values are exact in fp32).
template <typename La, typename Lb>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
              const fragment<matrix_a, 16, 16, 16, bf16, La>& a,
              const fragment<matrix_b, 16, 16, 16, bf16, Lb>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  __syncwarp();
  float out[16][16];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float sum = c.v[i][j];
      for (int kk = 0; kk < 16; ++kk) sum += a.v[i][kk] * b.v[kk][j];
      out[i][j] = sum;
    }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) d.v[i][j] = out[i][j];
}

}  // namespace wmma
}  // namespace emu

#define TVLAB_EMULATED_TENSOR_CORES 1
#define TVLAB_DYNAMIC_SHARED_BYTES(name) \
  unsigned char* name = reinterpret_cast<unsigned char*>(::emu::g_shared)

// --- The kernels under test ---------------------------------------------------
#include "framework/backend/gpu_cuda/fused_attention_device.cuh"
#include "framework/backend/gpu_cuda/fused_attention_tensor_core.cuh"

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace {

using cuda::FusedAttentionParams;
namespace fused = cuda::fused;

std::vector<float> Random(int64_t n, uint64_t salt) {
  RngStream rng(1234, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -2.0f + 4.0f * rng.Uniform(i);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      failures += got[i] != want[i];
      continue;
    }
    const bool close = std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i]));
    EXPECT_TRUE(close) << what << " at " << i << ": " << got[i] << " vs " << want[i];
    failures += !close;
  }
}

int DimsPerLane(int64_t cols) { return cols <= 32 ? 1 : cols <= 64 ? 2 : cols <= 128 ? 4 : 8; }

// The params gpu_cuda_attention.cc builds, with host pointers for the tables.
FusedAttentionParams Params(const FusedAttentionDesc& d, std::vector<int32_t>* lengths) {
  FusedAttentionParams p;
  p.batch = d.batch, p.heads = d.heads, p.kv_heads = d.kv_heads;
  p.queries = d.queries, p.keys = d.keys, p.head_dim = d.head_dim, p.value_dim = d.value_dim;
  p.scale = d.scale;
  p.causal = d.mask.causal, p.causal_offset = d.mask.causal_offset;
  p.alibi_offset = d.alibi_offset;
  if (!d.alibi_slopes.empty()) p.alibi_slopes = d.alibi_slopes.data();
  lengths->assign(d.mask.key_lengths.begin(), d.mask.key_lengths.end());
  if (!lengths->empty()) p.key_lengths = lengths->data();
  if (d.dropout > 0.0f) {
    p.dropout = true;
    p.dropout_threshold = cuda::DropoutThreshold(d.dropout);
    p.keep_scale = 1.0f / (1.0f - d.dropout);
    p.stream = cuda::MakePhiloxStream(*d.dropout_stream);
  }
  return p;
}

template <int kDims>
void RunForward(const FusedAttentionParams& p, const float* q, const float* k, const float* v,
                float* out, float* lse, std::string* error) {
  const int64_t grid = p.batch * p.heads * ((p.queries + fused::kRowsPerBlock - 1) / fused::kRowsPerBlock);
  const size_t floats = fused::kRowsPerBlock * p.head_dim + fused::kTile * (p.head_dim + 1) +
                        fused::kTile * p.value_dim;
  for (int col0 = 0; col0 == 0 || col0 < p.value_dim; col0 += 32 * kDims) {
    const std::function<void()> kernel = [&] {
      fused::ForwardKernel<kDims>(p, q, k, v, out, lse, col0);
    };
    if (!emu::Launch(grid, fused::kThreads, floats, kernel, error)) return;
  }
}

template <int kDims>
void RunBackwardQuery(const FusedAttentionParams& p, const float* q, const float* k,
                      const float* v, const float* lse, const float* dout, const float* row_dot,
                      float* dq, std::string* error) {
  const int64_t grid = p.batch * p.heads * ((p.queries + fused::kRowsPerBlock - 1) / fused::kRowsPerBlock);
  const size_t floats = fused::kRowsPerBlock * (p.head_dim + p.value_dim) +
                        fused::kTile * (p.head_dim + 1) + fused::kTile * (p.value_dim + 1);
  for (int col0 = 0; col0 < p.head_dim; col0 += 32 * kDims) {
    const std::function<void()> kernel = [&] {
      fused::BackwardQueryKernel<kDims>(p, q, k, v, lse, dout, row_dot, dq, col0);
    };
    if (!emu::Launch(grid, fused::kThreads, floats, kernel, error)) return;
  }
}

template <int kDims>
void RunBackwardKeyValue(const FusedAttentionParams& p, const float* q, const float* k,
                         const float* v, const float* lse, const float* dout,
                         const float* row_dot, float* dk, float* dv, std::string* error) {
  const int64_t grid = p.batch * p.kv_heads * ((p.keys + fused::kRowsPerBlock - 1) / fused::kRowsPerBlock);
  const size_t floats = fused::kRowsPerBlock * (p.head_dim + p.value_dim) +
                        fused::kTile * (p.head_dim + 1) + fused::kTile * (p.value_dim + 1) +
                        2 * fused::kTile;
  for (int col0 = 0; col0 < std::max(p.head_dim, p.value_dim); col0 += 32 * kDims) {
    const std::function<void()> kernel = [&] {
      fused::BackwardKeyValueKernel<kDims>(p, q, k, v, lse, dout, row_dot, dk, dv, col0);
    };
    if (!emu::Launch(grid, fused::kThreads, floats, kernel, error)) return;
  }
}

#define TVLAB_DISPATCH_DIMS(cols, fn, ...)        \
  switch (DimsPerLane(cols)) {                    \
    case 1: fn<1>(__VA_ARGS__); break;            \
    case 2: fn<2>(__VA_ARGS__); break;            \
    case 4: fn<4>(__VA_ARGS__); break;            \
    default: fn<8>(__VA_ARGS__); break;           \
  }

struct Case {
  std::string name;
  FusedAttentionDesc d;
};

std::vector<Case> Cases() {
  auto base = [](int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs, int64_t hv) {
    FusedAttentionDesc d;
    d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s;
    d.head_dim = hs, d.value_dim = hv, d.scale = 1.0f / std::sqrt(static_cast<float>(hs));
    return d;
  };
  std::vector<Case> cases;
  FusedAttentionDesc d = base(1, 2, 2, 37, 37, 16, 16);
  d.mask = CausalMask(0);
  cases.push_back({"mha causal", d});
  d = base(2, 4, 2, 20, 70, 16, 8);
  d.mask = KeyPaddingMask({70, 41});
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 3;
  cases.push_back({"gqa padding alibi", d});
  d = base(1, 4, 1, 1, 70, 8, 8);
  d.mask = CausalMask(69);
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  d.alibi_offset = 69;
  cases.push_back({"mqa decode one query", d});
  d = base(2, 2, 1, 40, 40, 8, 12);
  d.mask = CausalMask(0);
  d.mask.key_lengths = {0, 25};  // row 0 sees no key
  d.scale = 1.0f;
  cases.push_back({"causal padding empty row", d});
  d = base(2, 2, 2, 40, 40, 8, 8);
  d.mask = CausalMask(0);
  d.dropout = 0.2f;
  d.dropout_stream = RngStream(3, RngPurpose::kDropout, 17);
  cases.push_back({"dropout", d});
  d = base(1, 2, 1, 20, 33, 128, 64);
  d.mask = CausalMask(13);  // a KV cache of 13 tokens, 20 new queries
  cases.push_back({"head sizes 128 and 64, cache offset", d});
  d = base(1, 2, 2, 18, 35, 264, 300);
  cases.push_back({"head sizes past 256 (two windows)", d});
  d = base(1, 4, 2, 150, 150, 64, 64);  // several 64-row tiles, a partial last one
  d.mask = CausalMask(0);
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(5, RngPurpose::kDropout, 2);
  cases.push_back({"gqa causal dropout, three tiles", d});
  return cases;
}

TEST(FusedAttentionEmulated, KernelsMatchTheReferenceBackend) {
  if (!TVLAB_EMULATOR_AVAILABLE)
    GTEST_SKIP() << "the fiber emulator needs x86-64 without AddressSanitizer";
  auto ref = std::move(*MakeBackend("reference"));
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const FusedAttentionDesc& d = c.d;
    const int64_t nq = d.batch * d.heads * d.queries * d.head_dim;
    const int64_t nk = d.batch * d.kv_heads * d.keys * d.head_dim;
    const int64_t nv = d.batch * d.kv_heads * d.keys * d.value_dim;
    const int64_t no = d.batch * d.heads * d.queries * d.value_dim;
    const int64_t rows = d.batch * d.heads * d.queries;
    const std::vector<float> q = Random(nq, 1), k = Random(nk, 2), v = Random(nv, 3),
                             dout = Random(no, 4);
    std::vector<float> out(no), lse(rows), dq(nq), dk(nk), dv(nv);
    ref->FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    ref->FusedAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(),
                                dout.data(), dq.data(), dk.data(), dv.data());

    std::vector<int32_t> lengths;
    const FusedAttentionParams p = Params(d, &lengths);
    std::string error;
    // Garbage in the outputs: the kernels must overwrite every element.
    std::vector<float> g_out(no, 7.0f), g_lse(rows, 7.0f), g_dq(nq, 7.0f), g_dk(nk, 7.0f),
        g_dv(nv, 7.0f), row_dot(rows, 7.0f);
    TVLAB_DISPATCH_DIMS(d.value_dim, RunForward, p, q.data(), k.data(), v.data(), g_out.data(),
                        g_lse.data(), &error);
    ASSERT_EQ(error, "");
    ExpectClose(g_out, out, 1e-5f, c.name + ": out");
    ExpectClose(g_lse, lse, 1e-5f, c.name + ": lse");

    // Backward from the reference's out and lse, as in the conformance suite.
    const std::function<void()> row_dot_kernel = [&] {
      fused::RowDotKernel(dout.data(), out.data(), rows, d.value_dim, row_dot.data());
    };
    ASSERT_TRUE(emu::Launch((rows + fused::kWarps - 1) / fused::kWarps, fused::kThreads, 0,
                            row_dot_kernel, &error))
        << error;
    TVLAB_DISPATCH_DIMS(d.head_dim, RunBackwardQuery, p, q.data(), k.data(), v.data(),
                        lse.data(), dout.data(), row_dot.data(), g_dq.data(), &error);
    ASSERT_EQ(error, "");
    TVLAB_DISPATCH_DIMS(std::max(d.head_dim, d.value_dim), RunBackwardKeyValue, p, q.data(),
                        k.data(), v.data(), lse.data(), dout.data(), row_dot.data(),
                        g_dk.data(), g_dv.data(), &error);
    ASSERT_EQ(error, "");
    ExpectClose(g_dq, dq, 2e-5f, c.name + ": dq");
    ExpectClose(g_dk, dk, 2e-5f, c.name + ": dk");
    ExpectClose(g_dv, dv, 2e-5f, c.name + ": dv");
  }
}

// --- The tensor-core kernels (runtime.precision bf16) -------------------------

template <typename Kernel>
void RunTensorCore(const Kernel& kernel, cuda::tc::TcKernel which, int64_t grid,
                   const FusedAttentionParams& p, std::string* error) {
  const cuda::tc::SharedLayout layout(cuda::tc::Pad16(p.head_dim), cuda::tc::Pad16(p.value_dim),
                                      which);
  const std::function<void()> fn = kernel;
  emu::Launch(grid, cuda::tc::kThreads, static_cast<size_t>(layout.bytes + 3) / 4, fn, error);
}

// The tensor-core kernels against the reference on the same inputs rounded
// to bf16 (what the kernels stage). The remaining difference is the bf16
// rounding of the weights and of dS before their products (relative 2^-9
// each), hence the tolerances; a wrong mask, tile bound, rescale or dropout
// index is off by far more.
TEST(FusedAttentionEmulated, TensorCoreKernelsMatchTheReferenceOnBf16Inputs) {
  if (!TVLAB_EMULATOR_AVAILABLE)
    GTEST_SKIP() << "the fiber emulator needs x86-64 without AddressSanitizer";
  namespace tc = cuda::tc;
  auto ref = std::move(*MakeBackend("reference"));
  int ran = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const FusedAttentionDesc& d = c.d;
    std::vector<int32_t> lengths;
    FusedAttentionParams p = Params(d, &lengths);
    p.bf16 = true;
    if (!tc::TensorCoreFits(p)) continue;  // the fp32 kernels run (the test above)
    ++ran;
    const int64_t nq = d.batch * d.heads * d.queries * d.head_dim;
    const int64_t nk = d.batch * d.kv_heads * d.keys * d.head_dim;
    const int64_t nv = d.batch * d.kv_heads * d.keys * d.value_dim;
    const int64_t no = d.batch * d.heads * d.queries * d.value_dim;
    const int64_t rows = d.batch * d.heads * d.queries;
    std::vector<float> q = Random(nq, 1), k = Random(nk, 2), v = Random(nv, 3),
                       dout = Random(no, 4);
    for (std::vector<float>* x : {&q, &k, &v, &dout})
      for (float& e : *x) e = RoundToBf16(e);
    std::vector<float> out(no), lse(rows), dq(nq), dk(nk), dv(nv);
    ref->FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    ref->FusedAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(),
                                dout.data(), dq.data(), dk.data(), dv.data());

    std::string error;
    emu::g_wmma_error.clear();
    std::vector<float> g_out(no, 7.0f), g_lse(rows, 7.0f), g_dq(nq, 7.0f), g_dk(nk, 7.0f),
        g_dv(nv, 7.0f), row_dot(rows, 7.0f);
    const int64_t q_blocks = d.batch * d.heads * ((d.queries + tc::kBlockRows - 1) / tc::kBlockRows);
    const int64_t k_blocks = d.batch * d.kv_heads * ((d.keys + tc::kBlockRows - 1) / tc::kBlockRows);
    const bool narrow = tc::TemplateDim(p) == 64;
    auto forward = [&] {
      if (narrow) tc::ForwardKernel<64>(p, q.data(), k.data(), v.data(), g_out.data(), g_lse.data());
      else tc::ForwardKernel<128>(p, q.data(), k.data(), v.data(), g_out.data(), g_lse.data());
    };
    RunTensorCore(forward, tc::TcKernel::kForward, q_blocks, p, &error);
    ASSERT_EQ(error, "");
    ExpectClose(g_out, out, 1e-2f, c.name + ": out");
    ExpectClose(g_lse, lse, 1e-4f, c.name + ": lse");

    const std::function<void()> row_dot_kernel = [&] {
      fused::RowDotKernel(dout.data(), out.data(), rows, d.value_dim, row_dot.data());
    };
    ASSERT_TRUE(emu::Launch((rows + fused::kWarps - 1) / fused::kWarps, fused::kThreads, 0,
                            row_dot_kernel, &error))
        << error;
    auto backward_query = [&] {
      if (narrow)
        tc::BackwardQueryKernel<64>(p, q.data(), k.data(), v.data(), lse.data(), dout.data(),
                                    row_dot.data(), g_dq.data());
      else
        tc::BackwardQueryKernel<128>(p, q.data(), k.data(), v.data(), lse.data(), dout.data(),
                                     row_dot.data(), g_dq.data());
    };
    auto backward_key_value = [&] {
      if (narrow)
        tc::BackwardKeyValueKernel<64>(p, q.data(), k.data(), v.data(), lse.data(), dout.data(),
                                       row_dot.data(), g_dk.data(), g_dv.data());
      else
        tc::BackwardKeyValueKernel<128>(p, q.data(), k.data(), v.data(), lse.data(),
                                        dout.data(), row_dot.data(), g_dk.data(), g_dv.data());
    };
    RunTensorCore(backward_query, tc::TcKernel::kQuery, q_blocks, p, &error);
    ASSERT_EQ(error, "");
    RunTensorCore(backward_key_value, tc::TcKernel::kKeyValue, k_blocks, p, &error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(emu::g_wmma_error, "");
    ExpectClose(g_dq, dq, 2e-2f, c.name + ": dq");
    ExpectClose(g_dk, dk, 2e-2f, c.name + ": dk");
    ExpectClose(g_dv, dv, 2e-2f, c.name + ": dv");
  }
  EXPECT_EQ(ran, 7) << "every case but the one with head sizes past 128";
}

}  // namespace
}  // namespace tvlab
