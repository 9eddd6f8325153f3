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
#include "framework/io/file_system.h"
#include "framework/train/safetensors_parse.h"

namespace tvlab {

// Writes through the atomic writer (framework/io/atomic_file.h): `path` is
// the old file or the complete new one, never a part.
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Var>>& tensors,
                              FileSystem* fs = DefaultFileSystem());

// Reads every tensor of a safetensors file (F32 only). The header is not
// trusted: on failure returns a Status (never aborts) whose message names the
// file and, where there is one, the tensor, for
//   * a path that is not a regular file (a directory, /dev/zero, a FIFO),
//   * a file shorter than 8 bytes, a header longer than the file or than
//     kMaxSafetensorsHeaderBytes, a header that is not a JSON object,
//   * an entry without dtype/shape/data_offsets, a dtype other than F32,
//   * a dimension that is not a non-negative integer, an element count that
//     overflows or exceeds the data,
//   * data_offsets that are not integers, lie outside the data, disagree with
//     the shape, overlap, or leave bytes of the data unclaimed,
//   * a NaN or infinite value.
absl::StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path);

// Copies `tensors` into `params` by name, strictly (as PyTorch's
// load_state_dict(strict=True)): a missing, unexpected or mis-shaped tensor is
// an error naming it; nothing is modified unless everything matches.
absl::Status AssignByName(const std::map<std::string, Tensor>& tensors,
                          const std::vector<std::pair<std::string, Var>>& params,
                          const std::string& source);

// The checks of AssignByName alone; modifies nothing.
absl::Status CheckMatches(const std::map<std::string, Tensor>& tensors,
                          const std::vector<std::pair<std::string, Var>>& params,
                          const std::string& source);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_H_
