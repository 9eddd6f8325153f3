#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ROUTING_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ROUTING_KERNELS_H_

// Launchers of the mixture-of-experts routing kernels (kernels.def,
// "Mixture-of-experts routing"; contracts there). They return the CUDA error
// code of their launches (0 = success). No atomics: every output element is
// written by one thread, sums in the reference's order.

#include <cstdint>

namespace tvlab {

int LaunchTopKRows(const float* x, int64_t rows, int64_t cols, int64_t k, float* values,
                   int32_t* indices);
int LaunchTopKRowsBackward(const float* dvalues, const int32_t* indices, int64_t rows,
                           int64_t cols, int64_t k, float* dx);
int LaunchRouteToExpertSlots(const int32_t* experts, int64_t tokens, int64_t k,
                             int64_t num_experts, int64_t capacity, int32_t* slots,
                             int32_t* slot_assignments, float* demand);
int LaunchDispatchToSlots(const float* x, int64_t cols, const int32_t* slot_assignments,
                          int64_t num_slots, int64_t k, float* out);
int LaunchDispatchToSlotsBackward(const float* dout, int64_t cols, const int32_t* slots,
                                  int64_t tokens, int64_t k, float* dx);
int LaunchCombineFromSlots(const float* expert_out, int64_t cols, const int32_t* slots,
                           const float* gates, int64_t tokens, int64_t k, float* y);
int LaunchCombineFromSlotsBackward(const float* expert_out, int64_t cols, const int32_t* slots,
                                   const int32_t* slot_assignments, int64_t num_slots,
                                   const float* gates, int64_t tokens, int64_t k, const float* dy,
                                   float* d_expert_out, float* d_gates);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ROUTING_KERNELS_H_
