#ifndef TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_
#define TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_

// Writes tensors in the safetensors format (8-byte little-endian header
// length, a JSON header of {name: {dtype, shape, data_offsets}}, raw data),
// readable by the `safetensors` Python package and PyTorch. The file is
// written to a temporary name and renamed, so a crash never leaves a file
// that looks complete but is not.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "framework/autograd/var.h"

namespace tvlab {

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Var>>& tensors);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_
