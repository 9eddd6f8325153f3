#include "framework/data/load_task.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {
namespace {

bool IsPathField(const google::protobuf::FieldDescriptor* f) {
  const std::string& n = f->name();
  return f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING &&
         (n == "path" || (n.size() > 5 && n.compare(n.size() - 5, 5, "_path") == 0));
}

// Rewrites relative "path" / "*_path" string fields of `m` (recursively,
// repeated messages included: a mixture's sources) as base + path.
void ResolvePaths(google::protobuf::Message* m, const std::string& base) {
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->is_repeated() && f->message_type() != nullptr) {
      for (int j = 0; j < r->FieldSize(*m, f); ++j) ResolvePaths(r->MutableRepeatedMessage(m, f, j), base);
      continue;
    }
    if (f->is_repeated() || !r->HasField(*m, f)) continue;
    if (f->message_type() != nullptr) {
      ResolvePaths(r->MutableMessage(m, f), base);
    } else if (IsPathField(f)) {
      std::string value = r->GetString(*m, f);
      if (!value.empty() && value[0] != '/') r->SetString(m, f, base + value);
    }
  }
}

// A file-backed task holds a finite number of held-out examples: asking for
// more is an error rather than a silent cap.
absl::Status CheckEvalFits(const Task& task, const std::string& name, const EvalSpec& eval) {
  const int64_t available = task.NumEvalExamples(eval.examples());
  if (available < eval.examples())
    return absl::InvalidArgumentError(absl::StrCat(
        "eval.examples: ", eval.examples(), " evaluation examples requested, but task '", name, "' holds only ", available,
        " held-out examples; set eval.examples to at most ", available));
  if ((TaskKindRowOf(task.kind()).evaluations & kEvaluateGeneration) &&
      task.NumEvalExamples(eval.decode_examples()) < eval.decode_examples())
    return absl::InvalidArgumentError(absl::StrCat(
        "eval.decode_examples: ", eval.decode_examples(), " examples to decode requested, but task '", name, "' holds only ", available,
        " held-out examples; set eval.decode_examples to at most ", available));
  return absl::OkStatus();
}

// The field path of the first attention layout in `spec` that is a recurrent
// mixer (docs/mixers.md), or "" when no layer has one.
std::string RecurrentMixerField(const Experiment& spec) {
  const PluginKind& layouts = PluginKindById("attention_layout");
  const std::vector<std::string> names = layouts.names();
  auto is_mixer = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end() &&
           (layouts.capabilities(name) & kRecurrentMixer);
  };
  if (is_mixer(PluginNameIn(spec, layouts))) return layouts.name_path();
  const auto& overrides = spec.model().layer_overrides();
  for (int i = 0; i < overrides.size(); ++i) {
    if (is_mixer(overrides[i].attention().layout()))
      return absl::StrCat("model.layer_overrides[", i, "].attention.layout");
  }
  return "";
}

}  // namespace

void ResolveTaskPaths(Experiment* spec, const std::string& spec_path) {
  const size_t slash = spec_path.find_last_of('/');
  const std::string base = slash == std::string::npos ? "" : spec_path.substr(0, slash + 1);
  if (base.empty() || !spec->task().has_options()) return;
  auto options = UnpackPluginOptions(*spec, PluginKindById("task"));
  if (!options.ok()) return;
  ResolvePaths(options->get(), base);
  spec->mutable_task()->mutable_options()->PackFrom(**options);
}

bool PointTokenizerAt(Experiment* spec, const std::string& model_path) {
  if (!spec->task().has_options()) return false;
  auto options = UnpackPluginOptions(*spec, PluginKindById("task"));
  if (!options.ok()) return false;
  google::protobuf::Message* m = options->get();
  const google::protobuf::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName("tokenizer");
  if (f == nullptr || f->message_type() == nullptr || f->message_type()->full_name() != "tvlab.TokenizerOptions")
    return false;
  google::protobuf::Message* tokenizer = m->GetReflection()->MutableMessage(m, f);
  const google::protobuf::FieldDescriptor* path = tokenizer->GetDescriptor()->FindFieldByName("model_path");
  tokenizer->GetReflection()->SetString(tokenizer, path, model_path);
  spec->mutable_task()->mutable_options()->PackFrom(*m);
  return true;
}

absl::StatusOr<std::shared_ptr<const Task>> LoadTask(const Experiment& spec) {
  const PluginKind& kind = PluginKindById("task");
  const std::string name = spec.task().plugin();
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.plugin is required; e.g. task { plugin: \"sort_digits\" } (registered tasks: ",
        absl::StrJoin(kind.names(), ", "), ")"));
  }
  auto entry = TaskRegistry().Get(name);
  if (!entry.ok()) return absl::NotFoundError(absl::StrCat("task.plugin: ", entry.status().message()));
  const ModelSpec::Family family = spec.model().family();
  if (family != ModelSpec::FAMILY_UNSPECIFIED && !TaskFitsFamily((*entry)->kind, family)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.plugin: '", name, "' is a ", TaskKindName((*entry)->kind), " task and needs a ",
        FamiliesFor((*entry)->kind), " model, but model.family is ", ModelSpec::Family_Name(family)));
  }
  if (TaskKindRowOf((*entry)->kind).labels_sequences && spec.model().pooling() == ModelSpec::NONE) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task.plugin: '", name, "' labels whole sequences: set model.pooling to MEAN or FIRST_TOKEN"));
  }
  auto options = UnpackPluginOptions(spec, kind);
  if (!options.ok()) return options.status();
  TaskArgs args;
  args.family = family;
  absl::Status valid = (*entry)->validate(**options, args);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat("task (", name, "): ", valid.message()));
  auto created = (*entry)->create(**options, args);
  if (!created.ok())
    return absl::Status(created.status().code(), absl::StrCat("task (", name, "): ", created.status().message()));
  std::shared_ptr<const Task> task(*std::move(created));
  if (spec.eval().context_length() > 0) {
    // A task that evaluates at its own length only stays as it is:
    // ValidateEvalContext (framework/model/model_spec.h) refuses the spec.
    auto at = task->EvaluatedAt(spec.eval().context_length());
    if (!at.ok()) return absl::Status(at.status().code(), absl::StrCat("task (", name, "): ", at.status().message()));
    if (*at != nullptr) task = *std::move(at);
  }
  if (absl::Status s = CheckEvalFits(*task, name, spec.eval()); !s.ok()) return s;
  if (task->packs_documents() && spec.model().memory_tokens().count() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.memory_tokens.count (", spec.model().memory_tokens().count(), "): task '", name,
        "' packs documents into rows, and a query would see the memory tokens and its own "
        "document, which is no one interval of keys; turn the task's document mask off "
        "(token_store: document_mask: false) or set model.memory_tokens.count to 0"));
  }
  if (const std::string mixer = RecurrentMixerField(spec); task->packs_documents() && !mixer.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        mixer, " is a recurrent mixer (docs/mixers.md), but task '", name,
        "' packs documents into rows with a document mask; a mixer carries one state along the whole "
        "row and cannot reset it at each document start yet; turn the task's document mask off "
        "(token_store: document_mask: false) or use a softmax layout (mha, gqa, ...)"));
  }
  return task;
}

}  // namespace tvlab
