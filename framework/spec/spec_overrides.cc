#include "framework/spec/spec_overrides.h"

#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/core/status_macros.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/spec/spec_defaults.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

bool IsAny(const FieldDescriptor* f) {
  return f->message_type() != nullptr &&
         f->message_type()->full_name() == google::protobuf::Any::descriptor()->full_name();
}

std::string FieldList(const Descriptor* d) {
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  return absl::StrJoin(names, ", ");
}

// What a text value of `f` must look like, for error messages.
std::string Expected(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return "an integer (int32)";
    case FieldDescriptor::CPPTYPE_INT64: return "an integer (int64)";
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: return "a non-negative integer";
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE: return "a number";
    case FieldDescriptor::CPPTYPE_BOOL: return "true or false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      std::vector<std::string> names;
      for (int i = 0; i < f->enum_type()->value_count(); ++i)
        names.push_back(f->enum_type()->value(i)->name());
      return absl::StrCat("one of ", absl::StrJoin(names, ", "));
    }
    default: return "a value of this field";
  }
}

// Sets scalar `f` of `m` from `value` with protobuf's text-format parser
// (strings are taken verbatim).
absl::Status SetScalar(Message* m, const FieldDescriptor* f, const std::string& path,
                       const std::string& value) {
  if (f->message_type() != nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", path, ": is a message; set one of its fields (", path, ".<field>=value)"));
  const std::string text = f->cpp_type() == FieldDescriptor::CPPTYPE_STRING
                               ? absl::StrCat("\"", absl::CEscape(value), "\"")
                               : value;
  const bool is_string = f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  if ((value.empty() && !is_string) ||
      !google::protobuf::TextFormat::ParseFieldValueFromString(text, f, m))
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, "=", value, ": '", value,
                                                   "' is not ", Expected(f)));
  return absl::OkStatus();
}

// "layer_overrides[2]" -> ("layer_overrides", 2); a part without an index
// gets -1, a malformed index -2.
std::pair<std::string, int> SplitIndex(const std::string& part) {
  const size_t open = part.find('[');
  if (open == std::string::npos) return {part, -1};
  int index = -2;
  if (part.back() == ']' && open + 2 < part.size() &&
      absl::SimpleAtoi(part.substr(open + 1, part.size() - open - 2), &index) && index >= 0)
    return {part.substr(0, open), index};
  return {part.substr(0, open), -2};
}

// The element `index` of the repeated message field `f` of `m`; one past the
// end appends a new element (so --set can add a layer override).
absl::StatusOr<Message*> Element(Message* m, const FieldDescriptor* f, int index, const std::string& path,
                                 const std::string& so_far) {
  const int size = m->GetReflection()->FieldSize(*m, f);
  if (f->message_type() == nullptr || index < 0 || index > size)
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", path, ": ", so_far, " is a list of ", size, "; ",
        f->message_type() == nullptr ? "edit it in the spec file"
                                     : absl::StrCat("name an element as ", f->name(), "[i] with i in 0..", size,
                                                    " (", size, " appends one)")));
  if (index == size) return m->GetReflection()->AddMessage(m, f);
  return m->GetReflection()->MutableRepeatedMessage(m, f, index);
}

// Walks `parts` from `m` and sets the scalar at the end. An Any on the way
// is unpacked (ResolveDefaults made it hold its plugin's options type),
// changed and packed again. A list of messages is entered by index
// (model.layer_overrides[0].attention.window).
absl::Status SetPath(Message* m, const std::vector<std::string>& parts, size_t at,
                     const std::string& path, const std::string& value) {
  const Descriptor* d = m->GetDescriptor();
  const auto [name, index] = SplitIndex(parts[at]);
  const FieldDescriptor* f = d->FindFieldByName(name);
  const std::string so_far = absl::StrJoin(parts.begin(), parts.begin() + at + 1, ".");
  if (f == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, ": ", d->full_name(),
                                                   " has no field '", name,
                                                   "'; its fields: ", FieldList(d)));
  if (index != -1 && !f->is_repeated())
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", path, ": ", so_far, " is not a list; write ", name, " without [i]"));
  if (f->is_repeated()) {
    if (at + 1 == parts.size() || f->message_type() == nullptr)
      return Element(m, f, -1, path, so_far).status();
    TVLAB_ASSIGN_OR_RETURN(Message* element, Element(m, f, index, path, so_far));
    return SetPath(element, parts, at + 1, path, value);
  }
  if (at + 1 == parts.size()) return SetScalar(m, f, path, value);
  if (f->message_type() == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", path, ": ", so_far, " is a value, not a message"));
  Message* child = m->GetReflection()->MutableMessage(m, f);
  if (!IsAny(f)) return SetPath(child, parts, at + 1, path, value);
  auto* any = static_cast<google::protobuf::Any*>(child);
  const Descriptor* options_type = nullptr;
  std::string type_name;
  if (google::protobuf::Any::ParseAnyTypeUrl(any->type_url(), &type_name))
    options_type = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
  if (options_type == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", path, ": ", so_far, " holds no options yet (is the plugin name valid?)"));
  std::unique_ptr<Message> options(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(options_type)->New());
  any->UnpackTo(options.get());
  TVLAB_RETURN_IF_ERROR(SetPath(options.get(), parts, at + 1, path, value));
  any->PackFrom(*options);
  return absl::OkStatus();
}

bool PassesThroughAny(const std::vector<std::string>& parts) {
  const Descriptor* d = Experiment::descriptor();
  for (size_t i = 0; i + 1 < parts.size() && d != nullptr; ++i) {
    const FieldDescriptor* f = d->FindFieldByName(SplitIndex(parts[i]).first);
    if (f == nullptr || f->message_type() == nullptr) return false;
    if (IsAny(f)) return true;
    d = f->message_type();
  }
  return false;
}

// --set model.layer_overrides[i].<part>.<name field>=other drops the
// options the override held for its previous plugin, as for the model's.
void ClearOptionsOfRenamedOverride(Experiment* spec, const std::string& path, const std::string& value) {
  const std::string prefix = "model.layer_overrides[";
  const size_t close = path.find("].");
  if (path.rfind(prefix, 0) != 0 || close == std::string::npos) return;
  int index = 0;
  if (!absl::SimpleAtoi(path.substr(prefix.size(), close - prefix.size()), &index) || index < 0 ||
      index >= spec->model().layer_overrides_size())
    return;
  const std::string model_path = "model." + path.substr(close + 2);  // model.attention.layout
  for (const PluginKind& kind : PluginKinds()) {
    if (model_path != kind.name_path()) continue;
    LayerOverride* o = spec->mutable_model()->mutable_layer_overrides(index);
    const std::string part = kind.parent_path.substr(kind.parent_path.rfind('.') + 1);
    Message* parent = o->GetReflection()->MutableMessage(o, o->GetDescriptor()->FindFieldByName(part));
    const FieldDescriptor* name = parent->GetDescriptor()->FindFieldByName(kind.name_field);
    if (parent->GetReflection()->GetString(*parent, name) == value) continue;
    parent->GetReflection()->ClearField(parent, parent->GetDescriptor()->FindFieldByName(kind.options_field));
  }
}

}  // namespace

absl::Status ApplyOverride(Experiment* spec, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "--set '", assignment, "': expected field.path=value, e.g. --set model.num_heads=8"));
  const std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  // Changing a plugin's name drops options that belonged to the old plugin.
  for (const PluginKind& kind : PluginKinds()) {
    if (path != kind.name_path() || PluginNameIn(*spec, kind) == value) continue;
    Message* parent = MutableParentIn(spec, kind);
    parent->GetReflection()->ClearField(
        parent, parent->GetDescriptor()->FindFieldByName(kind.options_field));
  }
  ClearOptionsOfRenamedOverride(spec, path, value);
  if (PassesThroughAny(parts)) ResolveDefaults(spec);
  return SetPath(spec, parts, 0, path, value);
}

}  // namespace tvlab
