#ifndef TVLAB_FRAMEWORK_TRAIN_TRAIN_IN_TMPDIR_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAIN_IN_TMPDIR_H_

// Tests that train a whole experiment: the spec text is written to
// $TEST_TMPDIR/<name>.pbtxt, loaded as `bazel run //experiments:run` would
// load it, and trained into $TEST_TMPDIR/<name> with the progress lines
// discarded. Failures are test failures (gtest), not a crash.

#include <string>

namespace tvlab {

// The run directory ($TEST_TMPDIR/<name>).
std::string TrainInTmpDir(const std::string& name, const std::string& spec_text);

// A file's whole text ("" when it cannot be read).
std::string ReadWholeFile(const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAIN_IN_TMPDIR_H_
