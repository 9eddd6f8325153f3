// cpu_onednn's mixture-of-experts routing kernels: the reference's loops
// with rows (tokens, slots) split over OpenMP threads above
// kParallelElements. Each output row is written by one thread and summed in
// the reference's order, so results equal the reference's bitwise at any
// thread count. RouteToExpertSlots stays the reference's: its slot order is
// a sequential scan by definition, and it touches N * k ints, not N * C
// floats.

#include <omp.h>

#include <algorithm>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {

using onednn::kParallelElements;

void OnednnBackend::TopKRows(const float* x, int64_t rows, int64_t cols, int64_t k,
                             float* values, int32_t* indices) {
#pragma omp parallel for if (rows * cols * k >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) ReferenceBackend::TopKRows(x + r * cols, 1, cols, k,
                                                                values + r * k, indices + r * k);
}

void OnednnBackend::TopKRowsBackward(const float* dvalues, const int32_t* indices, int64_t rows,
                                     int64_t cols, int64_t k, float* dx) {
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(dx + r * cols, dx + (r + 1) * cols, 0.0f);
    for (int64_t j = 0; j < k; ++j) dx[r * cols + indices[r * k + j]] = dvalues[r * k + j];
  }
}

void OnednnBackend::DispatchToSlots(const float* x, int64_t cols, const int32_t* slot_assignments,
                                    int64_t num_slots, int64_t k, float* out) {
#pragma omp parallel for if (num_slots * cols >= kParallelElements) schedule(static)
  for (int64_t s = 0; s < num_slots; ++s) {
    const int64_t a = slot_assignments[s];
    float* row = out + s * cols;
    if (a < 0) {
      std::fill(row, row + cols, 0.0f);
    } else {
      std::copy(x + (a / k) * cols, x + (a / k + 1) * cols, row);
    }
  }
}

void OnednnBackend::DispatchToSlotsBackward(const float* dout, int64_t cols, const int32_t* slots,
                                            int64_t tokens, int64_t k, float* dx) {
#pragma omp parallel for if (tokens * cols * k >= kParallelElements) schedule(static)
  for (int64_t t = 0; t < tokens; ++t)
    ReferenceBackend::DispatchToSlotsBackward(dout, cols, slots + t * k, 1, k, dx + t * cols);
}

void OnednnBackend::CombineFromSlots(const float* expert_out, int64_t cols, const int32_t* slots,
                                     const float* gates, int64_t tokens, int64_t k, float* y) {
#pragma omp parallel for if (tokens * cols * k >= kParallelElements) schedule(static)
  for (int64_t t = 0; t < tokens; ++t)
    ReferenceBackend::CombineFromSlots(expert_out, cols, slots + t * k, gates + t * k, 1, k,
                                       y + t * cols);
}

void OnednnBackend::CombineFromSlotsBackward(const float* expert_out, int64_t cols,
                                             const int32_t* slots,
                                             const int32_t* slot_assignments, int64_t num_slots,
                                             const float* gates, int64_t tokens, int64_t k,
                                             const float* dy, float* d_expert_out,
                                             float* d_gates) {
  const bool threaded = (num_slots + tokens * k) * cols >= kParallelElements;
#pragma omp parallel for if (threaded) schedule(static)
  for (int64_t s = 0; s < num_slots; ++s) {
    const int64_t a = slot_assignments[s];
    for (int64_t c = 0; c < cols; ++c)
      d_expert_out[s * cols + c] = a < 0 ? 0.0f : gates[a] * dy[(a / k) * cols + c];
  }
#pragma omp parallel for if (threaded) schedule(static)
  for (int64_t a = 0; a < tokens * k; ++a) {
    const int64_t s = slots[a];
    const float* dyr = dy + (a / k) * cols;
    float dot = 0.0f;
    if (s >= 0)
      for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * expert_out[s * cols + c];
    d_gates[a] = dot;
  }
}

}  // namespace tvlab
