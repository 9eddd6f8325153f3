#ifndef TVLAB_FRAMEWORK_SCHEMA_SPEC_TEXT_H_
#define TVLAB_FRAMEWORK_SCHEMA_SPEC_TEXT_H_

#include <string>

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Text format of a spec with plugin options expanded
// ([type.googleapis.com/...] { ... }), as written to spec.resolved.pbtxt.
std::string SpecToText(const Experiment& spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SCHEMA_SPEC_TEXT_H_
