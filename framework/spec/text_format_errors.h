#ifndef TVLAB_FRAMEWORK_SPEC_TEXT_FORMAT_ERRORS_H_
#define TVLAB_FRAMEWORK_SPEC_TEXT_FORMAT_ERRORS_H_

// Parsing of protobuf text format with errors a user can act on:
// "<filename>:<line>:<col>: <what>", 1-based, every error at once, and for a
// misspelt field the closest existing name. Shared by experiment specs and
// grid specs so both read the same.

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace tvlab {

// Parses `text` into `message` (cleared first). On failure returns
// InvalidArgument with one "<filename>:<line>:<col>: ..." line per error.
absl::Status ParseTextProto(const std::string& text, const std::string& filename,
                            google::protobuf::Message* message);

// Reads `path` whole. NotFound reads "cannot read <what> '<path>': <reason>;
// ..." and says relative paths resolve against the command's directory; a
// path that is not a regular file of at most 64 MiB is refused as
// CheckTextFile (framework/data/text_file.h) says.
absl::Status ReadTextFile(const std::string& path, const std::string& what, std::string* text);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_TEXT_FORMAT_ERRORS_H_
