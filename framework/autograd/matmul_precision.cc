#include "framework/autograd/matmul_precision.h"

namespace tvlab {
namespace {

Precision& Setting() {
  static Precision precision = Precision::kFp32;
  return precision;
}

}  // namespace

void SetMatMulPrecision(Precision precision) { Setting() = precision; }
Precision CurrentMatMulPrecision() { return Setting(); }

ScopedMatMulPrecision::ScopedMatMulPrecision(Precision precision)
    : previous_(CurrentMatMulPrecision()) {
  SetMatMulPrecision(precision);
}
ScopedMatMulPrecision::~ScopedMatMulPrecision() { SetMatMulPrecision(previous_); }

}  // namespace tvlab
