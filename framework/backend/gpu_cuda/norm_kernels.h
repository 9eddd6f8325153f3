#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_NORM_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_NORM_KERNELS_H_

// Launchers of LayerNorm / RMSNorm forward and backward (Backend::Normalize,
// NormalizeBackward), x (rows, cols) normalised over cols. Statistics are in
// fp32, two passes over the row (mean, then the mean squared deviation), so
// no cancellation of E[x^2] - E[x]^2. They return the CUDA error code of
// their launches (0 = success).

#include <cstddef>
#include <cstdint>

namespace tvlab {

// y = (x - mean) * rstd * gamma + beta; gamma, beta may be null. mean, rstd
// (rows) are written; subtract_mean = false is RMSNorm (mean written as 0).
int LaunchNormalize(const float* x, const float* gamma, const float* beta, float* y,
                    float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                    bool subtract_mean);

// dx overwritten (with addend + dx when addend is not null: NormalizeBackwardAdd);
// dgamma, dbeta (may be null) accumulated (+=) through
// per-chunk column partials in `scratch` (NormalizeBackwardScratchBytes) and
// a second pass that adds them in a fixed order: deterministic.
size_t NormalizeBackwardScratchBytes(int64_t rows, int64_t cols);
int LaunchNormalizeBackward(const float* x, const float* gamma, const float* mean,
                            const float* rstd, const float* dy, const float* addend, float* dx,
                            float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                            bool subtract_mean, void* scratch);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_NORM_KERNELS_H_
