#ifndef TVLAB_FRAMEWORK_ATTENTION_HEADS_H_
#define TVLAB_FRAMEWORK_ATTENTION_HEADS_H_

// Splitting a model-width activation into attention heads and back.
// Head h owns the channels [h * hs, (h + 1) * hs) of the width.

#include <cstdint>

#include "framework/autograd/var.h"

namespace tvlab {

// x (B, T, H * hs) -> (B, H, T, hs). REQUIRES: heads divides x.dim(2).
Var SplitHeads(const Var& x, int64_t heads);
// x (B, H, T, hs) -> (B, T, H * hs).
Var MergeHeads(const Var& x);
// The same without the permutes, every token's heads side by side (a view):
// x (B, T, H * hs) -> (B, T, H, hs), and (B, T, H, hs) -> (B, T, H * hs)
// (AttendTokenMajor, attend.h).
Var SplitTokenHeads(const Var& x, int64_t heads);
Var MergeTokenHeads(const Var& x);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_HEADS_H_
