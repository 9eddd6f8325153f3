#ifndef TVLAB_EMULATED_MMA_H_
#define TVLAB_EMULATED_MMA_H_

// CUDA's WMMA API (nvcuda::wmma) on the CPU emulator (../cuda_emulator.h),
// the 16 x 16 x 16 bf16 shape with fp32 accumulation that
// fused_attention_tensor_core.cuh uses.
//
// A fragment holds its whole tile in every lane (the real layout is opaque
// to kernels, so any layout computes the same products); a store writes
// only each lane's share of it, as on a GPU, so a lane that reads a stored
// tile without a __syncwarp can see what other lanes have not written yet.
// Each *_sync call first waits for the warp's lanes, as CUDA's do, and
// checks CUDA's requirements on its operands: a tile pointer 256-bit
// aligned and a leading dimension that is a multiple of 16 bytes. A
// violation is recorded (cuda_emulator::WmmaError(); tests assert it stays
// empty), since a real GPU would give wrong results or fault there.

#include <cstdint>
#include <string>
#include <type_traits>

#include "framework/backend/gpu_cuda/emulator/cuda_emulator.h"
#include "framework/backend/gpu_cuda/emulator/include/cuda_bf16.h"

namespace cuda_emulator {
// The first WMMA misuse since the last ClearWmmaError ("" if none).
const std::string& WmmaError();
void ClearWmmaError();
void RecordWmmaError(const std::string& error);
}  // namespace cuda_emulator

namespace nvcuda {
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

namespace internal {
inline float ToFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
inline float ToFloat(float x) { return x; }

template <typename T>
void EnterAndCheck(const T* p, unsigned ldm, const char* what) {
  __syncwarp();
  std::string error;
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    error = "a tile pointer not 256-bit aligned (address " +
            std::to_string(reinterpret_cast<uintptr_t>(p)) + ")";
  else if ((ldm * sizeof(T)) % 16 != 0)
    error =
        "a leading dimension of " + std::to_string(ldm) + " elements, not a multiple of 16 bytes";
  if (!error.empty()) cuda_emulator::RecordWmmaError(std::string(what) + ": " + error);
}
}  // namespace internal

template <typename Use, typename T, typename L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  internal::EnterAndCheck(p, ldm, "load_matrix_sync");
  constexpr bool row = std::is_same<L, row_major>::value;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      f.v[i][j] = internal::ToFloat(row ? p[i * ldm + j] : p[j * ldm + i]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p,
                             unsigned ldm, layout_t layout) {
  internal::EnterAndCheck(p, ldm, "load_matrix_sync");
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      f.v[i][j] = layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i];
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f,
                              unsigned ldm, layout_t layout) {
  internal::EnterAndCheck(p, ldm, "store_matrix_sync");
  for (int e = cuda_emulator::LaneId(); e < 256; e += 32) {
    const int i = e / 16, j = e % 16;
    (layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.v[i][j];
  }
}

template <typename Use, typename T, typename L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float x) {
  for (auto& row : f.v)
    for (float& e : row) e = x;
}

// d = a b + c with fp32 accumulation (products of bf16 values are exact in
// fp32).
template <typename La, typename Lb>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
              const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, La>& a,
              const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, Lb>& b,
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
}  // namespace nvcuda

#endif  // TVLAB_EMULATED_MMA_H_
