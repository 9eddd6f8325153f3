#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_

// The key of a grid's run: the name of its run directory
// (<output_dir>/runs/<key>), so that a finished run is found again after the
// grid is extended, reordered, relabelled or moved to another folder.

#include <string>
#include <vector>

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// 16 hex digits of a 64-bit FNV-1a hash of SpecToText(spec) with `name`
// cleared: stable across runs and machines for a given protobuf version,
// sensitive to every resolved field including the seed, and blind to the
// experiment's display name. Fields added to the schema after keys existed
// are left out while at their defaults (run_key.cc lists them), so adding a
// field does not orphan every finished run directory.
std::string RunKey(const Experiment& resolved);
// Keys that earlier binaries gave the same run, newest first, to find run
// directories trained before a key change that no default-clearing could
// undo: train.z_loss (TrainSpec 14) went into the key at its default 0 when
// it was added, so runs trained before it (glu_variants, moe_vs_dense) are
// keyed without it and runs trained after (gqa, prepost_ln, ...) with it.
// Empty when the spec has no such earlier key.
std::vector<std::string> OlderRunKeys(const Experiment& resolved);
// The hash RunKey uses: FNV-1a, 64 bits, as 16 lower-case hex digits.
std::string Fnv1a64Hex(const std::string& bytes);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_
