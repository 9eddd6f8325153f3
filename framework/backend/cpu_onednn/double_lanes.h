#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DOUBLE_LANES_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DOUBLE_LANES_H_

// Eight double partial sums of float rows (lane l takes the columns l,
// l + 8, ...), for the loops that sum a row in double in a fixed order
// (RMSNorm, LayerNorm's backward, the gradient norm) and are built for
// several widths (isa_clones.h). DoubleLanes<true> holds them as one vector
// of eight, DoubleLanes<false> as two of four: GCC 12's AVX2 build kept a
// vector of eight doubles on the stack (2.6-5.3x slower; bench/README.md),
// and its AVX-512 build runs the vector of eight fastest (the halves cost
// 9-24% there). Both make the same additions on the same lanes, so the same bits:
// run DoubleLanes<true> in the AVX-512 build and <false> in the others
// (RunIsaCloneByWidth, isa_clones.h).

#include <cstdint>

#include "framework/core/isa_clones.h"

// Every function here is always inlined into a build's loop, so no vector
// crosses a call and GCC's note that a 32-byte vector's ABI differs
// without AVX (the baseline build) does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tvlab {
namespace onednn {

typedef float DoubleLanesF4 __attribute__((vector_size(16)));
typedef float DoubleLanesF8 __attribute__((vector_size(32)));
typedef double DoubleLanesD4 __attribute__((vector_size(32)));
typedef double DoubleLanesD8 __attribute__((vector_size(64)));

template <bool kOneVector>
struct DoubleLanes;

template <>
struct DoubleLanes<true> {
  DoubleLanesD8 v = {};

  // lanes += p[l]^2 for the eight floats at p (exact in double).
  TVLAB_CLONED_LOOP void AddSquaresOf(const float* p) {
    DoubleLanesF8 a;
    __builtin_memcpy(&a, p, sizeof a);
    const DoubleLanesD8 d = __builtin_convertvector(a, DoubleLanesD8);
    v += d * d;
  }
  // lanes += a (widened).
  TVLAB_CLONED_LOOP void Add(const DoubleLanesF8& a) { v += __builtin_convertvector(a, DoubleLanesD8); }
  // lanes += a * b, each widened first (exact: 24 x 24 bits).
  TVLAB_CLONED_LOOP void AddProduct(const DoubleLanesF8& a, const DoubleLanesF8& b) {
    v += __builtin_convertvector(a, DoubleLanesD8) * __builtin_convertvector(b, DoubleLanesD8);
  }
  TVLAB_CLONED_LOOP void operator+=(const DoubleLanes& o) { v += o.v; }
  TVLAB_CLONED_LOOP double Lane(int l) const { return v[l]; }
};

template <>
struct DoubleLanes<false> {
  DoubleLanesD4 half[2] = {};  // lanes 0-3 and 4-7

  // Each half from its own four floats (a load GCC folds into the
  // conversion; from one vector of eight, 22% slower in the AVX2 build).
  TVLAB_CLONED_LOOP void AddSquaresOf(const float* p) {
    for (int h = 0; h < 2; ++h) {
      DoubleLanesF4 a;
      __builtin_memcpy(&a, p + 4 * h, sizeof a);
      const DoubleLanesD4 d = __builtin_convertvector(a, DoubleLanesD4);
      half[h] += d * d;
    }
  }
  TVLAB_CLONED_LOOP void Add(const DoubleLanesF8& a) {
    half[0] += __builtin_convertvector(__builtin_shufflevector(a, a, 0, 1, 2, 3), DoubleLanesD4);
    half[1] += __builtin_convertvector(__builtin_shufflevector(a, a, 4, 5, 6, 7), DoubleLanesD4);
  }
  TVLAB_CLONED_LOOP void AddProduct(const DoubleLanesF8& a, const DoubleLanesF8& b) {
    half[0] += __builtin_convertvector(__builtin_shufflevector(a, a, 0, 1, 2, 3), DoubleLanesD4) *
               __builtin_convertvector(__builtin_shufflevector(b, b, 0, 1, 2, 3), DoubleLanesD4);
    half[1] += __builtin_convertvector(__builtin_shufflevector(a, a, 4, 5, 6, 7), DoubleLanesD4) *
               __builtin_convertvector(__builtin_shufflevector(b, b, 4, 5, 6, 7), DoubleLanesD4);
  }
  TVLAB_CLONED_LOOP void operator+=(const DoubleLanes& o) { half[0] += o.half[0], half[1] += o.half[1]; }
  TVLAB_CLONED_LOOP double Lane(int l) const { return half[l / 4][l % 4]; }
};

// The lanes' sum as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)).
template <bool kOneVector>
TVLAB_CLONED_LOOP double TreeSum(const DoubleLanes<kOneVector>& s) {
  return ((s.Lane(0) + s.Lane(1)) + (s.Lane(2) + s.Lane(3))) + ((s.Lane(4) + s.Lane(5)) + (s.Lane(6) + s.Lane(7)));
}

}  // namespace onednn
}  // namespace tvlab

#pragma GCC diagnostic pop

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DOUBLE_LANES_H_
