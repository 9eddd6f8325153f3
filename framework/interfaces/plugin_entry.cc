#include "framework/interfaces/plugin_entry.h"

#include "absl/strings/str_cat.h"

namespace tvlab {

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> UnpackOptions(
    const google::protobuf::Any& any, const google::protobuf::Message& prototype,
    const std::string& plugin, const std::string& field_path) {
  std::unique_ptr<google::protobuf::Message> options(prototype.New());
  if (any.type_url().empty()) return options;
  const std::string want = prototype.GetDescriptor()->full_name();
  std::string got = any.type_url().substr(any.type_url().rfind('/') + 1);
  if (got != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_path, ": plugin '", plugin, "' takes options of type ", want, ", but ", got,
        " was given; write ", field_path, " { [type.googleapis.com/", want,
        "] { ... } } or leave it out for the defaults"));
  }
  if (!any.UnpackTo(options.get())) {
    return absl::InvalidArgumentError(
        absl::StrCat(field_path, ": could not decode ", want, " options"));
  }
  return options;
}

}  // namespace tvlab
