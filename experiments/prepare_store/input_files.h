#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_INPUT_FILES_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_INPUT_FILES_H_

// prepare's inputs: the files and directories on its command line turned
// into a list of files, each with how its documents are read.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tvlab {

struct InputFile {
  std::string path;
  int64_t bytes = 0;        // size on disk
  bool jsonl = false;       // JSON Lines (name ends .jsonl or .jsonl.gz), else plain text
  bool gzip = false;        // name ends .gz
};

// Each argument is a regular file (taken whatever its name) or a directory
// (searched recursively; a file in it is taken when its name ends with one
// of `dir_extensions`, optionally followed by .gz, e.g. "txt", "jsonl"),
// in argument order, each directory's files sorted by path. Anything else
// (missing, a device such as /dev/zero, a FIFO) is an error naming it; so is
// an argument that yields no file.
absl::StatusOr<std::vector<InputFile>> ExpandInputs(const std::vector<std::string>& arguments,
                                                    const std::vector<std::string>& dir_extensions);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_INPUT_FILES_H_
