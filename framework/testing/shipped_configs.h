#ifndef TVLAB_FRAMEWORK_TESTING_SHIPPED_CONFIGS_H_
#define TVLAB_FRAMEWORK_TESTING_SHIPPED_CONFIGS_H_

// The experiment configs tvlab ships (configs/*.pbtxt, the //configs:all
// glob, in the test's runfiles), for tests that hold every one of them to a
// property, so a new config is checked without being listed anywhere.

#include <string>
#include <vector>

namespace tvlab {

// Paths of configs/*.pbtxt in the runfiles, sorted. Configs that need
// SentencePiece are left out where it is unavailable (AddressSanitizer
// builds: framework/data/sentencepiece_tokenizer.h), and so are configs
// whose data, named on a line "# prepared outside Bazel: PATH", is missing
// (tests never have the Debian corpus store); each named on stdout.
std::vector<std::string> ShippedConfigs();

// The directory they are in.
std::string ShippedConfigDir();

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_SHIPPED_CONFIGS_H_
