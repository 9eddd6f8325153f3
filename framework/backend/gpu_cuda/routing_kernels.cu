// Mixture-of-experts routing on the GPU: top-k per row (one thread per row:
// k and the expert count are small), expert slots (one thread per expert,
// scanning the assignments in priority order, so the slot order is the
// reference's without atomics or a sort), dispatch, combine and their
// backwards (grid-stride over output elements, each written by one thread).

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/routing_kernels.h"

namespace tvlab {
namespace {

using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;

// Selection by repeated scans: the j-th pick is the first index with the
// largest value below the (j-1)-th pick in (value desc, index asc) order.
__global__ void TopKRowsKernel(const float* x, int64_t rows, int64_t cols, int64_t k,
                               float* values, int32_t* indices) {
  for (int64_t r = GlobalIndex(); r < rows; r += GridStride()) {
    const float* xr = x + r * cols;
    float last_value = 0.0f;
    int64_t last_index = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t c = 0; c < cols; ++c) {
        const bool after_last = last_index < 0 || xr[c] < last_value ||
                                (xr[c] == last_value && c > last_index);
        if (after_last && (best < 0 || xr[c] > xr[best])) best = c;
      }
      last_value = xr[best], last_index = best;
      values[r * k + j] = xr[best];
      indices[r * k + j] = static_cast<int32_t>(best);
    }
  }
}

__global__ void TopKRowsBackwardKernel(const float* dvalues, const int32_t* indices,
                                       int64_t rows, int64_t cols, int64_t k, float* dx) {
  for (int64_t r = GlobalIndex(); r < rows; r += GridStride()) {
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = 0.0f;
    for (int64_t j = 0; j < k; ++j) dx[r * cols + indices[r * k + j]] = dvalues[r * k + j];
  }
}

__global__ void RouteToExpertSlotsKernel(const int32_t* experts, int64_t tokens, int64_t k,
                                         int64_t num_experts, int64_t capacity, int32_t* slots,
                                         int32_t* slot_assignments, float* demand) {
  for (int64_t e = GlobalIndex(); e < num_experts; e += GridStride()) {
    int64_t taken = 0;
    for (int64_t j = 0; j < k; ++j) {  // choice-major priority
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t a = t * k + j;
        if (experts[a] != e) continue;
        if (taken < capacity) {
          slots[a] = static_cast<int32_t>(e * capacity + taken);
          slot_assignments[e * capacity + taken] = static_cast<int32_t>(a);
        } else {
          slots[a] = -1;
        }
        ++taken;
      }
    }
    for (int64_t s = taken; s < capacity; ++s) slot_assignments[e * capacity + s] = -1;
    demand[e] = static_cast<float>(taken);
  }
}

__global__ void DispatchToSlotsKernel(const float* x, int64_t cols,
                                      const int32_t* slot_assignments, int64_t num_slots,
                                      int64_t k, float* out) {
  for (int64_t i = GlobalIndex(); i < num_slots * cols; i += GridStride()) {
    const int64_t a = slot_assignments[i / cols];
    out[i] = a < 0 ? 0.0f : x[(a / k) * cols + i % cols];
  }
}

__global__ void DispatchToSlotsBackwardKernel(const float* dout, int64_t cols,
                                              const int32_t* slots, int64_t tokens, int64_t k,
                                              float* dx) {
  for (int64_t i = GlobalIndex(); i < tokens * cols; i += GridStride()) {
    const int64_t t = i / cols, c = i % cols;
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = slots[t * k + j];
      if (s >= 0) sum += dout[s * cols + c];
    }
    dx[i] = sum;
  }
}

__global__ void CombineFromSlotsKernel(const float* expert_out, int64_t cols,
                                       const int32_t* slots, const float* gates, int64_t tokens,
                                       int64_t k, float* y) {
  for (int64_t i = GlobalIndex(); i < tokens * cols; i += GridStride()) {
    const int64_t t = i / cols, c = i % cols;
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = slots[t * k + j];
      if (s >= 0) sum += gates[t * k + j] * expert_out[s * cols + c];
    }
    y[i] = sum;
  }
}

__global__ void CombineSlotGradientKernel(int64_t cols, const int32_t* slot_assignments,
                                          int64_t num_slots, const float* gates, int64_t k,
                                          const float* dy, float* d_expert_out) {
  for (int64_t i = GlobalIndex(); i < num_slots * cols; i += GridStride()) {
    const int64_t a = slot_assignments[i / cols];
    d_expert_out[i] = a < 0 ? 0.0f : gates[a] * dy[(a / k) * cols + i % cols];
  }
}

// One thread per assignment: the dot product in column order, as the reference.
__global__ void CombineGateGradientKernel(const float* expert_out, int64_t cols,
                                          const int32_t* slots, int64_t assignments, int64_t k,
                                          const float* dy, float* d_gates) {
  for (int64_t a = GlobalIndex(); a < assignments; a += GridStride()) {
    const int64_t s = slots[a];
    float dot = 0.0f;
    if (s >= 0)
      for (int64_t c = 0; c < cols; ++c) dot += dy[(a / k) * cols + c] * expert_out[s * cols + c];
    d_gates[a] = dot;
  }
}

}  // namespace

int LaunchTopKRows(const float* x, int64_t rows, int64_t cols, int64_t k, float* values,
                   int32_t* indices) {
  if (rows <= 0 || k <= 0) return 0;
  TVLAB_LAUNCH(GridFor(rows), kThreads, 0, 0, TopKRowsKernel)(x, rows, cols, k, values, indices);
  return static_cast<int>(cudaGetLastError());
}

int LaunchTopKRowsBackward(const float* dvalues, const int32_t* indices, int64_t rows,
                           int64_t cols, int64_t k, float* dx) {
  if (rows <= 0) return 0;
  TVLAB_LAUNCH(GridFor(rows), kThreads, 0, 0, TopKRowsBackwardKernel)(dvalues, indices, rows,
                                                                       cols, k, dx);
  return static_cast<int>(cudaGetLastError());
}

int LaunchRouteToExpertSlots(const int32_t* experts, int64_t tokens, int64_t k,
                             int64_t num_experts, int64_t capacity, int32_t* slots,
                             int32_t* slot_assignments, float* demand) {
  if (num_experts <= 0) return 0;
  TVLAB_LAUNCH(GridFor(num_experts, 32), 32, 0, 0, RouteToExpertSlotsKernel)(
      experts, tokens, k, num_experts, capacity, slots, slot_assignments, demand);
  return static_cast<int>(cudaGetLastError());
}

int LaunchDispatchToSlots(const float* x, int64_t cols, const int32_t* slot_assignments,
                          int64_t num_slots, int64_t k, float* out) {
  if (num_slots <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(GridFor(num_slots * cols), kThreads, 0, 0, DispatchToSlotsKernel)(
      x, cols, slot_assignments, num_slots, k, out);
  return static_cast<int>(cudaGetLastError());
}

int LaunchDispatchToSlotsBackward(const float* dout, int64_t cols, const int32_t* slots,
                                  int64_t tokens, int64_t k, float* dx) {
  if (tokens <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(GridFor(tokens * cols), kThreads, 0, 0, DispatchToSlotsBackwardKernel)(
      dout, cols, slots, tokens, k, dx);
  return static_cast<int>(cudaGetLastError());
}

int LaunchCombineFromSlots(const float* expert_out, int64_t cols, const int32_t* slots,
                           const float* gates, int64_t tokens, int64_t k, float* y) {
  if (tokens <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(GridFor(tokens * cols), kThreads, 0, 0, CombineFromSlotsKernel)(
      expert_out, cols, slots, gates, tokens, k, y);
  return static_cast<int>(cudaGetLastError());
}

int LaunchCombineFromSlotsBackward(const float* expert_out, int64_t cols, const int32_t* slots,
                                   const int32_t* slot_assignments, int64_t num_slots,
                                   const float* gates, int64_t tokens, int64_t k, const float* dy,
                                   float* d_expert_out, float* d_gates) {
  if (num_slots > 0 && cols > 0) {
    TVLAB_LAUNCH(GridFor(num_slots * cols), kThreads, 0, 0, CombineSlotGradientKernel)(
        cols, slot_assignments, num_slots, gates, k, dy, d_expert_out);
    const int err = static_cast<int>(cudaGetLastError());
    if (err != 0) return err;
  }
  if (tokens * k <= 0) return 0;
  TVLAB_LAUNCH(GridFor(tokens * k), kThreads, 0, 0, CombineGateGradientKernel)(
      expert_out, cols, slots, tokens * k, k, dy, d_gates);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
