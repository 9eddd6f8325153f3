#ifndef TVLAB_EXPERIMENTS_HF_HF_CONFIG_CHECKS_H_
#define TVLAB_EXPERIMENTS_HF_HF_CONFIG_CHECKS_H_

// An HF directory's config.json, read and checked against what tvlab's own
// export of the spec writes (hf_import.h): JSON parsing, the `architectures`
// class, each compared key's type and value. Apart from the tensors so that
// tools/fuzz.sh can fuzz it with a few source files.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/hf/hf_architecture.h"
#include "google/protobuf/struct.pb.h"

namespace tvlab {

// `text` as a JSON object; InvalidArgument naming `what` otherwise.
absl::StatusOr<google::protobuf::Struct> ParseJson(const std::string& text, const std::string& what);
absl::StatusOr<google::protobuf::Struct> ReadJson(const std::string& path);

// Every key of arch.config marked `compared` that `config` has must equal
// `ours` (the spec's export): the error names the key, both values and the
// spec field to change, or the key's wrong JSON type. rope_theta is read at
// the top (transformers 4) or in rope_parameters (5); a scaled rope_type is
// refused.
absl::Status CheckConfig(const std::string& hf_dir, const google::protobuf::Struct& config,
                         const google::protobuf::Struct& ours, const HfArchitecture& arch, int64_t d_model);

// config.json's `architectures` (when present) must list arch.class_name.
absl::Status CheckArchitectures(const std::string& hf_dir, const google::protobuf::Struct& config,
                                const HfArchitecture& arch);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_CONFIG_CHECKS_H_
