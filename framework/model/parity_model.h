#ifndef TVLAB_FRAMEWORK_MODEL_PARITY_MODEL_H_
#define TVLAB_FRAMEWORK_MODEL_PARITY_MODEL_H_

// The shared part of the model-level parity dumps (value_residual,
// memory_tokens, multi_token: <option>_parity_dump.cc beside their
// <option>_parity.py): a whole small model built from spec text, with
// parameters no initialiser would give, and its parameters and gradients
// written in the tensor-line format (framework/testing/tensor_dump.h).

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/model/model.h"

namespace tvlab {

// `spec_text` written to `out_path`.spec.pbtxt and loaded as the run binary
// loads a spec, built with `vocab` tokens, every parameter then drawn
// U(-1, 1) (salts 100, 101, ... in NamedParameters order), so no parameter
// sits at its init.
absl::StatusOr<std::unique_ptr<Model>> RandomParityModel(const std::string& spec_text,
                                                         const std::string& out_path, int64_t vocab);

// "param/<name>" and "grad/<name>" lines for every parameter (a zero
// gradient for a parameter the loss did not reach).
void WriteParametersAndGradients(std::ostream& out, const Model& model);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_PARITY_MODEL_H_
