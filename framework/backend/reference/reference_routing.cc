// ReferenceBackend's mixture-of-experts routing kernels (kernels.def,
// "Mixture-of-experts routing"): top-k over a row, expert slots, dispatch
// and the gated combine, with their backwards. Plain loops in the order the
// table's contracts are written in.

#include <algorithm>
#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::TopKRows(const float* x, int64_t rows, int64_t cols, int64_t k,
                                float* values, int32_t* indices) {
  std::vector<bool> taken(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    std::fill(taken.begin(), taken.end(), false);
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;  // first untaken index with the largest value
      for (int64_t c = 0; c < cols; ++c)
        if (!taken[c] && (best < 0 || xr[c] > xr[best])) best = c;
      taken[best] = true;
      values[r * k + j] = xr[best];
      indices[r * k + j] = static_cast<int32_t>(best);
    }
  }
}

void ReferenceBackend::TopKRowsBackward(const float* dvalues, const int32_t* indices,
                                        int64_t rows, int64_t cols, int64_t k, float* dx) {
  std::fill(dx, dx + rows * cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) dx[r * cols + indices[r * k + j]] = dvalues[r * k + j];
}

void ReferenceBackend::RouteToExpertSlots(const int32_t* experts, int64_t tokens, int64_t k,
                                          int64_t num_experts, int64_t capacity, int32_t* slots,
                                          int32_t* slot_assignments, float* demand) {
  std::vector<int64_t> taken(num_experts, 0);
  std::fill(slot_assignments, slot_assignments + num_experts * capacity, -1);
  for (int64_t j = 0; j < k; ++j) {  // choice-major priority
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t a = t * k + j, e = experts[a];
      if (taken[e] < capacity) {
        const int64_t slot = e * capacity + taken[e];
        slots[a] = static_cast<int32_t>(slot);
        slot_assignments[slot] = static_cast<int32_t>(a);
      } else {
        slots[a] = -1;
      }
      ++taken[e];
    }
  }
  for (int64_t e = 0; e < num_experts; ++e) demand[e] = static_cast<float>(taken[e]);
}

void ReferenceBackend::DispatchToSlots(const float* x, int64_t cols,
                                       const int32_t* slot_assignments, int64_t num_slots,
                                       int64_t k, float* out) {
  for (int64_t s = 0; s < num_slots; ++s) {
    const int64_t a = slot_assignments[s];
    for (int64_t c = 0; c < cols; ++c) out[s * cols + c] = a < 0 ? 0.0f : x[(a / k) * cols + c];
  }
}

void ReferenceBackend::DispatchToSlotsBackward(const float* dout, int64_t cols,
                                               const int32_t* slots, int64_t tokens, int64_t k,
                                               float* dx) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < cols; ++c) {
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t s = slots[t * k + j];
        if (s >= 0) sum += dout[s * cols + c];
      }
      dx[t * cols + c] = sum;
    }
  }
}

void ReferenceBackend::CombineFromSlots(const float* expert_out, int64_t cols,
                                        const int32_t* slots, const float* gates, int64_t tokens,
                                        int64_t k, float* y) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < cols; ++c) {
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t s = slots[t * k + j];
        if (s >= 0) sum += gates[t * k + j] * expert_out[s * cols + c];
      }
      y[t * cols + c] = sum;
    }
  }
}

void ReferenceBackend::CombineFromSlotsBackward(const float* expert_out, int64_t cols,
                                                const int32_t* slots,
                                                const int32_t* slot_assignments,
                                                int64_t num_slots, const float* gates,
                                                int64_t tokens, int64_t k, const float* dy,
                                                float* d_expert_out, float* d_gates) {
  for (int64_t s = 0; s < num_slots; ++s) {
    const int64_t a = slot_assignments[s];
    for (int64_t c = 0; c < cols; ++c)
      d_expert_out[s * cols + c] = a < 0 ? 0.0f : gates[a] * dy[(a / k) * cols + c];
  }
  for (int64_t a = 0; a < tokens * k; ++a) {
    const int64_t s = slots[a];
    float dot = 0.0f;
    if (s >= 0)
      for (int64_t c = 0; c < cols; ++c) dot += dy[(a / k) * cols + c] * expert_out[s * cols + c];
    d_gates[a] = dot;
  }
}

}  // namespace tvlab
