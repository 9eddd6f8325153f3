#ifndef TVLAB_FRAMEWORK_TESTING_PARITY_DUMP_H_
#define TVLAB_FRAMEWORK_TESTING_PARITY_DUMP_H_

// The parts of the parity dump tool (parity_dump.cc: usage and the
// single-module kinds; parity_dump_attention.cc: attention layers).

#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/core/registry.h"
#include "framework/tensor/tensor.h"
#include "framework/testing/tensor_dump.h"  // WriteTensor, for the dumps
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"

namespace tvlab {

// key=value arguments of the command line.
using ParityArgs = std::map<std::string, std::string>;

// args[key] as an integer; InvalidArgument naming the key otherwise.
absl::StatusOr<int64_t> IntegerArg(const ParityArgs& args, const std::string& key);

// The plugin `name` of `registry`, with options parsed from `options_text`
// (text format of its options message), validated with `args`.
template <typename Entry, typename Args>
auto BuildPlugin(const Registry<Entry>& registry, const std::string& name,
                 const std::string& options_text, const Args& args)
    -> absl::StatusOr<decltype((*registry.Get(name))->create(
        *(*registry.Get(name))->default_options, args))> {
  auto entry = registry.Get(name);
  if (!entry.ok()) return entry.status();
  std::unique_ptr<google::protobuf::Message> options((*entry)->default_options->New());
  if (!google::protobuf::TextFormat::ParseFromString(options_text, options.get()))
    return absl::InvalidArgumentError("cannot parse " + name + "'s options '" + options_text + "'");
  absl::Status valid = (*entry)->validate(*options, args);
  if (!valid.ok()) return valid;
  return (*entry)->create(*options, args);
}

// kind=attention: one attention layer (layout, score, position) forward and
// backward on the reference backend; writes its tensors to `out`
// (parity_dump.cc's usage lists the arguments and names).
absl::Status DumpAttention(const ParityArgs& args, std::ostream& out);

// kind=placement: one residual wrapper of a placement plugin around a
// linear sublayer (parity_dump_placement.cc has the arguments and names).
absl::Status DumpPlacement(const ParityArgs& args, std::ostream& out);

// kind=optimizer: steps of an optimizer plugin over one parameter of each
// role (parity_dump_optimizer.cc has the arguments and names).
absl::Status DumpOptimizer(const ParityArgs& args, std::ostream& out);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_PARITY_DUMP_H_
