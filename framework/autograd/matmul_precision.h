#ifndef TVLAB_FRAMEWORK_AUTOGRAD_MATMUL_PRECISION_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_MATMUL_PRECISION_H_

// The process-wide precision of MatMul's GEMMs (runtime.precision, set once
// per run by RunExperiment and by the binaries that build a model). MatMul
// copies it into each GemmDesc it issues, forward and backward (the backward
// GEMMs use the precision the forward ran with), so a backend receives the
// precision with each call and never holds it as state. GEMMs outside MatMul
// (the fused attention's tiles) stay fp32. Not thread-safe: set it before
// building or running a model.

#include "framework/backend/precision.h"

namespace tvlab {

void SetMatMulPrecision(Precision precision);
Precision CurrentMatMulPrecision();

// Sets the precision for a scope (tests).
class ScopedMatMulPrecision {
 public:
  explicit ScopedMatMulPrecision(Precision precision);
  ~ScopedMatMulPrecision();

 private:
  Precision previous_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_MATMUL_PRECISION_H_
