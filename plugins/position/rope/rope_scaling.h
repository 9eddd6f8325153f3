#ifndef TVLAB_PLUGINS_POSITION_ROPE_ROPE_SCALING_H_
#define TVLAB_PLUGINS_POSITION_ROPE_ROPE_SCALING_H_

// RoPE's frequency scaling (RopeScaling in rope.proto): the per-pair angular
// frequencies theta_i (radians per position) of a d-wide rotated part, as
// stretched by linear interpolation, the NTK-aware base, YaRN or Llama 3.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "framework/interfaces/model_dims.h"
#include "plugins/position/rope/rope.pb.h"

namespace tvlab {

// The coordinates of a D-wide vector that rotary_fraction turns: the largest
// even number <= fraction * D.
int64_t RotatedDims(int64_t d, float fraction);

// Checks options.scaling.* (field paths in the messages) for a head whose
// rotated part is `rotated_dims` wide.
absl::Status ValidateRopeScaling(const RopeScaling& scaling, int64_t rotated_dims);

// Replaces the automatic zeros: original_max_positions (-> model.max_seq_len)
// and attention_factor (-> 0.1 ln(factor) + 1) where the method uses them.
void ResolveRopeScaling(RopeScaling* scaling, const ModelDims& dims);

// theta_i, i = 0 .. d/2 - 1, for a resolved `scaling` (method not NONE).
std::vector<double> ScaledFrequencies(const RopeScaling& scaling, double base, int64_t d);

// The factor q and k are multiplied by: YaRN's attention_factor, else 1.
double YarnAttentionFactor(const RopeScaling& scaling);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_POSITION_ROPE_ROPE_SCALING_H_
