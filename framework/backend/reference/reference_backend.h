#ifndef TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_

// Plain loops, written for clarity, not speed: the oracle that every other
// backend is tested against. It implements every kernel of kernels.def, in
// the files of this folder by what they do (reference_gemm.cc,
// reference_elementwise.cc, ...; Composed kernels keep Backend's bodies).
// Faster backends derive from it and override the kernels they accelerate.
// Every precision: bf16 and tf32 round the GEMM operands (precision.h).
// reference_backend_test.cc checks it against written definitions.

#include "framework/backend/backend.h"

namespace tvlab {

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
#include "framework/backend/implement_every_kernel.inc"
};

// Every precision (the reference rounds operands as precision.h defines).
PrecisionSupport EveryPrecision(Precision precision);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_REFERENCE_REFERENCE_BACKEND_H_
