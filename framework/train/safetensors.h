#ifndef TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_
#define TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_

// Writes tensors in the safetensors format (8-byte little-endian header
// length, a JSON header of {name: {dtype, shape, data_offsets}}, raw data),
// readable by the `safetensors` Python package and PyTorch. The file is
// written to a temporary name and renamed, so a crash never leaves a file
// that looks complete but is not.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/autograd/var.h"

namespace tvlab {

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Var>>& tensors);

// Reads every tensor of a safetensors file (F32 only). A truncated file, a
// malformed header, an unsupported dtype or offsets outside the data are
// errors that name the file and the tensor.
absl::StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path);

// Copies `tensors` into `params` by name, strictly (as PyTorch's
// load_state_dict(strict=True)): a missing, unexpected or mis-shaped tensor is
// an error naming it; nothing is modified unless everything matches.
absl::Status AssignByName(const std::map<std::string, Tensor>& tensors,
                          const std::vector<std::pair<std::string, Var>>& params,
                          const std::string& source);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_
