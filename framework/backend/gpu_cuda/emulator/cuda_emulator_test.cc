// The CPU emulator of CUDA (cuda_emulator.h) against CUDA's documented
// semantics: thread and block indices, barriers, shuffles, launch limits,
// tracked device memory and cuBLAS's column-major GEMM. gpu_cuda's tests
// trust it to behave as a GPU would wherever these kernels can tell.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace {

using cuda_emulator::Launcher;

#define TVLAB_NEED_EMULATOR() \
  if (!cuda_emulator::Available()) GTEST_SKIP() << "the emulator's fibers need x86-64"

// Every thread writes its global linear index at its place.
__global__ void IndexKernel(int* out) {
  const int block = blockIdx.x + gridDim.x * blockIdx.y;
  const int thread = threadIdx.x + blockDim.x * threadIdx.y;
  out[block * blockDim.x * blockDim.y + thread] = block * 1000 + thread;
}

TEST(CudaEmulator, EveryThreadOfEveryBlockRunsWithItsIndices) {
  TVLAB_NEED_EMULATOR();
  const dim3 grid(3, 2), block(32, 4);
  std::vector<int> out(6 * 128, -1);
  Launcher(grid, block, 0, nullptr, IndexKernel)(out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  for (int b = 0; b < 6; ++b)
    for (int t = 0; t < 128; ++t) EXPECT_EQ(out[b * 128 + t], b * 1000 + t);
}

// A block sum through shared memory and a barrier, then a warp butterfly.
__global__ void BlockSumKernel(const float* x, float* out) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) out[blockIdx.x] = v;
  }
}

TEST(CudaEmulator, SharedMemoryBarriersAndShufflesReduceABlock) {
  TVLAB_NEED_EMULATOR();
  const int blocks = 3, threads = 256;
  std::vector<float> x(blocks * threads), out(blocks, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  Launcher(blocks, threads, 0, nullptr, BlockSumKernel)(x.data(), out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  for (int b = 0; b < blocks; ++b) {
    float want = 0.0f;
    for (int t = 0; t < threads; ++t) want += x[b * threads + t];
    EXPECT_EQ(out[b], want) << "block " << b;
  }
}

// __shfl_sync from lane 3 of each 16-lane segment, and __shfl_down_sync.
__global__ void ShuffleKernel(int* broadcast, int* down) {
  const int lane = threadIdx.x % 32;
  broadcast[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10, 3, 16);
  down[threadIdx.x] = __shfl_down_sync(0xffffffffu, lane, 4u);
}

TEST(CudaEmulator, ShufflesFollowCudasLaneRules) {
  TVLAB_NEED_EMULATOR();
  std::vector<int> broadcast(64), down(64);
  Launcher(1, 64, 0, nullptr, ShuffleKernel)(broadcast.data(), down.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(broadcast[t], (lane < 16 ? 3 : 19) * 10) << t;
    EXPECT_EQ(down[t], lane + 4 < 32 ? lane + 4 : lane) << t;  // past the warp: its own value
  }
}

// Threads past `n` return before the barrier the others wait at.
__global__ void EarlyExitKernel(float* x, int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  __syncthreads();
  x[threadIdx.x] = 1.0f;
}

TEST(CudaEmulator, ABarrierSomeThreadsNeverReachIsReportedAsADeadlock) {
  TVLAB_NEED_EMULATOR();
  std::vector<float> x(64);
  Launcher(1, 64, 0, nullptr, EarlyExitKernel)(x.data(), 40);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(cuda_emulator::LastFailure().find("deadlock in block 0: 40 of 64 threads"),
            std::string::npos)
      << cuda_emulator::LastFailure();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error is returned once";
  Launcher(1, 64, 0, nullptr, EarlyExitKernel)(x.data(), 64);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Thread 0 publishes its block's number, which every thread then reads:
// without the barrier that is a race.
__global__ void PublishKernel(float* out, bool barrier) {
  __shared__ float value;
  if (threadIdx.x == 0) value = static_cast<float>(blockIdx.x + 1);
  if (barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

TEST(CudaEmulator, TheReversedScheduleExposesAMissingBarrier) {
  TVLAB_NEED_EMULATOR();
  for (bool barrier : {true, false}) {
    std::vector<float> forward(64), reversed(64);
    Launcher(2, 32, 0, nullptr, PublishKernel)(forward.data(), barrier);
    cuda_emulator::SetReversedSchedule(true);
    Launcher(2, 32, 0, nullptr, PublishKernel)(reversed.data(), barrier);
    cuda_emulator::SetReversedSchedule(false);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(forward[i], i / 32 + 1) << "thread 0 runs first";
    if (barrier)
      EXPECT_EQ(reversed, forward);
    else  // threads 31..1 of each block read before thread 0 writes
      EXPECT_NE(reversed, forward);
  }
}

// Records the first dynamic shared float and fills the buffer.
__global__ void SharedKernel(float* first, int floats) {
  TVLAB_DYNAMIC_SHARED_FLOATS(smem);
  if (threadIdx.x == 0) first[blockIdx.x] = smem[0];
  __syncthreads();
  for (int i = threadIdx.x; i < floats; i += blockDim.x) smem[i] = 1.0f;
}

TEST(CudaEmulator, DynamicSharedMemoryIsFreshPerBlockAndLimitedAsOnAnH200) {
  TVLAB_NEED_EMULATOR();
  std::vector<float> first(2, 0.0f);
  Launcher(2, 32, 1024, nullptr, SharedKernel)(first.data(), 256);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  EXPECT_TRUE(std::isnan(first[0]));
  EXPECT_TRUE(std::isnan(first[1])) << "the second block must not see the first's values";

  const size_t big = 100 * 1024;  // above the default 48 KiB
  Launcher(1, 32, big, nullptr, SharedKernel)(first.data(), 4);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_NE(cuda_emulator::LastFailure().find("cudaFuncSetAttribute"), std::string::npos);
  ASSERT_EQ(cudaFuncSetAttribute(SharedKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(big)),
            cudaSuccess);
  Launcher(1, 32, big, nullptr, SharedKernel)(first.data(), 4);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << cuda_emulator::LastFailure();
  int optin = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
            cudaSuccess);
  EXPECT_EQ(optin, 232448);
  EXPECT_EQ(
      cudaFuncSetAttribute(SharedKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1),
      cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST(CudaEmulator, LaunchesPastCudasLimitsFail) {
  TVLAB_NEED_EMULATOR();
  std::vector<int> out(4096);
  Launcher(1, 2048, 0, nullptr, IndexKernel)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  Launcher(dim3(1, 70000), 32, 0, nullptr, IndexKernel)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  Launcher(0, 32, 0, nullptr, IndexKernel)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

TEST(CudaEmulator, DeviceMemoryIsTrackedAndStartsAsGarbage) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 40), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_TRUE(std::isnan(static_cast<float*>(p)[0]));
  std::vector<float> host(20, 2.0f);
  EXPECT_EQ(cudaMemcpy(p, host.data(), 40, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, host.data(), 44, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "one float past the allocation";
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 10, 8, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue)
      << "a host pointer as the device source";
  EXPECT_EQ(cudaMemcpy2D(p, 16, host.data(), 8, 8, 3, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy2D(p, 16, host.data(), 8, 8, 4, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  cudaGetLastError();
  const int64_t live = cuda_emulator::LiveAllocations();
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidDevicePointer);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cuda_emulator::LiveAllocations(), live - 1);
  cudaGetLastError();
}

// Column-major C = alpha op(A) op(B) + beta C, by definition.
std::vector<float> Definition(bool ta, bool tb, int m, int n, int k, float alpha,
                              const std::vector<float>& a, int lda, const std::vector<float>& b,
                              int ldb, float beta, std::vector<float> c, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0.0;
      for (int p = 0; p < k; ++p)
        sum +=
            double{ta ? a[p + i * lda] : a[i + p * lda]} * (tb ? b[j + p * ldb] : b[p + j * ldb]);
      c[i + j * ldc] = static_cast<float>(alpha * sum + beta * c[i + j * ldc]);
    }
  return c;
}

float* Upload(const std::vector<float>& v) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, v.size() * sizeof(float)), cudaSuccess);
  cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
  return static_cast<float*>(p);
}

TEST(CudaEmulator, CublasSgemmIsColumnMajorWithLeadingDimensionsAndStrides) {
  cublasHandle_t handle;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const int m = 5, n = 3, k = 4, batch = 2;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int lda = (ta ? k : m) + 1, ldb = (tb ? n : k) + 2, ldc = m + 3;
      const int sa = lda * (ta ? m : k), sb = ldb * (tb ? k : n), sc = ldc * n;
      std::vector<float> a(batch * sa), b(batch * sb), c(batch * sc);
      for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.7f * i);
      for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.3f * i);
      for (size_t i = 0; i < c.size(); ++i) c[i] = 0.1f * i;
      float *da = Upload(a), *db = Upload(b), *dc = Upload(c);
      const float alpha = 0.5f, beta = 2.0f;
      ASSERT_EQ(cublasSgemmStridedBatched(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, da, lda,
                                          sa, db, ldb, sb, &beta, dc, ldc, sc, batch),
                CUBLAS_STATUS_SUCCESS);
      std::vector<float> got(c.size());
      cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
      for (int i = 0; i < batch; ++i) {
        const auto want =
            Definition(ta, tb, m, n, k, alpha,
                       std::vector<float>(a.begin() + i * sa, a.begin() + (i + 1) * sa), lda,
                       std::vector<float>(b.begin() + i * sb, b.begin() + (i + 1) * sb), ldb, beta,
                       std::vector<float>(c.begin() + i * sc, c.begin() + (i + 1) * sc), ldc);
        for (int e = 0; e < sc; ++e)
          EXPECT_NEAR(got[i * sc + e], want[e], 1e-5f) << ta << tb << " batch " << i << " at " << e;
      }
      // A leading dimension below the stored rows is refused, as by cuBLAS.
      EXPECT_EQ(cublasSgemmStridedBatched(
                    handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                    &alpha, da, (ta ? k : m) - 1, sa, db, ldb, sb, &beta, dc, ldc, sc, batch),
                CUBLAS_STATUS_INVALID_VALUE);
      // A batch stride that runs past B's allocation is caught.
      EXPECT_EQ(cublasSgemmStridedBatched(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, da, lda,
                                          sa, db, ldb, sb + ldb, &beta, dc, ldc, sc, batch),
                CUBLAS_STATUS_EXECUTION_FAILED);
      for (float* p : {da, db, dc}) cudaFree(p);
    }
  cublasDestroy(handle);
}

TEST(CudaEmulator, CublasBetaZeroDoesNotReadC) {
  cublasHandle_t handle;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  float *da = Upload({1, 2}), *db = Upload({3, 4});
  void* dc = nullptr;
  ASSERT_EQ(cudaMalloc(&dc, sizeof(float)), cudaSuccess);  // NaN until written
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, da, 1, 2,
                                      db, 2, 2, &beta, static_cast<float*>(dc), 1, 1, 1),
            CUBLAS_STATUS_SUCCESS);
  float c = 0.0f;
  cudaMemcpy(&c, dc, sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(c, 11.0f);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), dc}) cudaFree(p);
  cublasDestroy(handle);
}

}  // namespace
