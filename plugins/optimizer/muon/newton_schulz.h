#ifndef TVLAB_PLUGINS_OPTIMIZER_MUON_NEWTON_SCHULZ_H_
#define TVLAB_PLUGINS_OPTIMIZER_MUON_NEWTON_SCHULZ_H_

// Muon's orthogonalisation (Jordan et al. 2024): the quintic Newton-Schulz
// iteration that maps a matrix G = U S V^T to about U S' V^T with S' in
// [0.7, 1.2], built from the backend's GEMM and elementwise kernels.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace tvlab {

// X <- G / (|G|_F + 1e-7), then `steps` times, with (a, b, c) =
// (3.4445, -4.7750, 2.0315):
//   rows <= cols:  A = X X^T,  B = b A + c A A,  X <- a X + B X
//   rows >  cols:  A = X^T X,  B = b A + c A A,  X <- a X + X B
// (the second is the first on X^T, transposed back). g: (rows, cols) on the
// current backend's device -> (rows, cols).
Tensor NewtonSchulz(const Tensor& g, int64_t rows, int64_t cols, int steps);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_OPTIMIZER_MUON_NEWTON_SCHULZ_H_
