#include "framework/spec/text_format_errors.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/core/registry.h"
#include "framework/data/text_file.h"
#include "framework/interfaces/task.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string filename) : filename_(std::move(filename)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(filename_, ":", line + 1, ":", column + 1, ": ", message,
                                   Hint(message)));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
    AddError(line, column, message);
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  // For 'Message type "tvlab.X" has no field named "y"': the closest field.
  static std::string Hint(const std::string& message) {
    const std::string marker = "has no field named \"";
    size_t at = message.find(marker);
    size_t type_start = message.find('"');
    if (at == std::string::npos || type_start == std::string::npos) return "";
    size_t type_end = message.find('"', type_start + 1);
    std::string type = message.substr(type_start + 1, type_end - type_start - 1);
    std::string field = message.substr(at + marker.size());
    field = field.substr(0, field.find('"'));
    const google::protobuf::Descriptor* d =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    if (d == nullptr) return "";
    std::vector<std::string> names;
    std::string best;
    int best_distance = 1 << 30;
    for (int i = 0; i < d->field_count(); ++i) {
      names.push_back(d->field(i)->name());
      int dist = EditDistance(field, d->field(i)->name());
      if (dist < best_distance) best_distance = dist, best = d->field(i)->name();
    }
    std::string hint = absl::StrCat(" (fields of ", type, ": ", absl::StrJoin(names, ", "), ")");
    if (best_distance <= 3) hint = absl::StrCat(" (did you mean \"", best, "\"?)", hint);
    return absl::StrCat(hint, TasksWithField(type, field));
  }
  // For a field of another task's options (document_mask in text_lm's):
  // which tasks have it, so the fix is to use one of them or drop the field.
  // Only when `type` is a task's options.
  static std::string TasksWithField(const std::string& type, const std::string& field) {
    std::vector<std::string> tasks;
    bool task_options = false;
    for (const std::string& name : TaskRegistry().Names()) {
      const google::protobuf::Descriptor* options =
          (*TaskRegistry().Get(name))->default_options->GetDescriptor();
      if (options->full_name() == type) {
        task_options = true;
      } else if (options->FindFieldByName(field) != nullptr) {
        tasks.push_back(name);
      }
    }
    if (!task_options || tasks.empty()) return "";
    return absl::StrCat("; \"", field, "\" is an option of task ", absl::StrJoin(tasks, ", "),
                        ": use that task or remove the field");
  }

  std::string filename_;
  std::vector<std::string> errors_;
};

}  // namespace

absl::Status ParseTextProto(const std::string& text, const std::string& filename,
                            google::protobuf::Message* message) {
  message->Clear();
  CollectErrors errors(filename);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(text, message)) return absl::OkStatus();
  std::vector<std::string> list = errors.errors();
  if (list.empty()) list.push_back(absl::StrCat(filename, ": could not parse the file"));
  return absl::InvalidArgumentError(absl::StrJoin(list, "\n"));
}

absl::Status ReadTextFile(const std::string& path, const std::string& what, std::string* text) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "': ", std::strerror(errno),
                                            "; check the path (relative paths are resolved "
                                            "against the directory you ran the command from)"));
  }
  // Never read a device (/dev/zero never ends) or a huge file as text.
  if (absl::Status checked = CheckTextFile(path, what); !checked.ok()) return checked;
  std::stringstream s;
  s << in.rdbuf();
  *text = s.str();
  return absl::OkStatus();
}

}  // namespace tvlab
