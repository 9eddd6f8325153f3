#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_RUNGS_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_RUNGS_H_

// The rungs of a grid's size ladder (grid.proto's Ladder): from the dial or
// the explicit list to the sizes each variant is trained at. Pure functions
// of the spec (no experiment is built), so the grid fuzzer runs them too;
// the crossing with the variants is ladder.h.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/schema/grid.pb.h"

namespace tvlab {

// The number of rungs, from the list lengths alone (for max_runs).
inline int LadderRungCount(const Ladder& ladder) {
  return ladder.has_dial() ? ladder.dial().depths_size() : ladder.rung_size();
}

// The ladder's own fields, before any variant is seen: exactly one of dial
// and rung, at least 2 rungs, depths >= 1 and strictly increasing (dial),
// d_model and num_layers >= 1 and never shrinking with at least one growing
// (rungs), aspect_ratio >= 1, head_dim and ffn_multiplier >= 0, num_heads
// and d_ff >= 0, a target_loss > 0 and finite, 0 < confidence < 1, and at
// most two `compare` labels, distinct. Errors name the field path
// ("ladder.rung[2].d_model") and the fix.
absl::Status CheckLadder(const Ladder& ladder);

// The result column ("depth" for a dial, "rung" for explicit rungs) and each
// rung's value in it ("4"; "L2-d64"), in rung order.
std::string LadderColumn(const Ladder& ladder);
std::vector<std::string> LadderRungNames(const Ladder& ladder);

// The sizes of rung `index` for a variant whose own model.num_heads is
// `variant_heads`; 0 in num_heads or d_ff: the variant keeps its own.
struct RungSize {
  int64_t d_model = 0, num_layers = 0, num_heads = 0, d_ff = 0;
};
// REQUIRES: CheckLadder(ladder).ok(), 0 <= index < LadderRungCount.
// Errors: a d_model that the heads do not divide (an explicit rung against
// the variant's or its own num_heads, naming "ladder.rung[i]" and
// `variant`), a dial with head_dim 0 and a variant without num_heads, a
// size past 2^20.
absl::StatusOr<RungSize> LadderRungSize(const Ladder& ladder, int index, int64_t variant_heads,
                                        const std::string& variant);

// "model.d_model=64", "model.num_layers=2", then num_heads and d_ff when set.
std::vector<std::string> RungOverrides(const RungSize& size);

// The fields the ladder sets on every cell (model.d_model, model.num_layers,
// and model.num_heads / model.d_ff when the dial or a rung sets them): no
// axis, zip, ablation row or `set` may set them too.
std::vector<std::string> LadderFields(const Ladder& ladder);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_RUNGS_H_
