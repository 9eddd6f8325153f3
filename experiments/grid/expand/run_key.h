#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_

// The key of a grid's run: the name of its run directory
// (<output_dir>/runs/<key>), so that a finished run is found again after the
// grid is extended, reordered, relabelled or moved to another folder.

#include <string>

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// 16 hex digits of a 64-bit FNV-1a hash of SpecToText(spec) with `name`
// cleared: stable across runs and machines for a given protobuf version,
// sensitive to every resolved field including the seed, and blind to the
// experiment's display name. Fields added to the schema after keys existed
// are left out while at their defaults (run_key.cc lists them), so adding a
// field does not orphan every finished run directory.
std::string RunKey(const Experiment& resolved);
// The hash RunKey uses: FNV-1a, 64 bits, as 16 lower-case hex digits.
std::string Fnv1a64Hex(const std::string& bytes);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_RUN_KEY_H_
