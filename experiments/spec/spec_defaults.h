#ifndef TVLAB_EXPERIMENTS_SPEC_SPEC_DEFAULTS_H_
#define TVLAB_EXPERIMENTS_SPEC_SPEC_DEFAULTS_H_

// Writing every default into a spec, so a run records what it used.

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Writes every default explicitly: plugin names left out get their kind's
// default from the kind table (framework/interfaces/plugin_kinds.h), then
// scalars, the default optimizer, and each plugin's options message with
// its own defaults. Idempotent; leaves unknown plugins to validation.
void ResolveDefaults(Experiment* spec);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_SPEC_SPEC_DEFAULTS_H_
