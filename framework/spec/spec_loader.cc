#include "framework/spec/spec_loader.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/backend/backend.h"
#include "framework/core/registry.h"
#include "framework/core/status_macros.h"
#include "framework/data/task.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/limits/size_limits.h"
#include "framework/spec/plugin_slots.h"
#include "framework/spec/text_format_errors.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"

namespace tvlab {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool IsAny(const FieldDescriptor* f) {
  return f->message_type() != nullptr &&
         f->message_type()->full_name() == google::protobuf::Any::descriptor()->full_name();
}

// Sets every unset singular scalar to its default and recurses into
// singular messages (and into the set member of each oneof). Any fields are
// left to ResolvePluginOptions.
void FillDefaults(Message* m) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || IsAny(f)) continue;
    if (f->real_containing_oneof() != nullptr) {
      if (f->message_type() != nullptr && r->HasField(*m, f)) FillDefaults(r->MutableMessage(m, f));
      continue;
    }
    if (f->message_type() != nullptr) {
      FillDefaults(r->MutableMessage(m, f));
      continue;
    }
    if (r->HasField(*m, f)) continue;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: r->SetInt32(m, f, r->GetInt32(*m, f)); break;
      case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(m, f, r->GetInt64(*m, f)); break;
      case FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(m, f, r->GetUInt32(*m, f)); break;
      case FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(m, f, r->GetUInt64(*m, f)); break;
      case FieldDescriptor::CPPTYPE_FLOAT: r->SetFloat(m, f, r->GetFloat(*m, f)); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(m, f, r->GetDouble(*m, f)); break;
      case FieldDescriptor::CPPTYPE_BOOL: r->SetBool(m, f, r->GetBool(*m, f)); break;
      case FieldDescriptor::CPPTYPE_STRING: r->SetString(m, f, r->GetString(*m, f)); break;
      case FieldDescriptor::CPPTYPE_ENUM: r->SetEnum(m, f, r->GetEnum(*m, f)); break;
      case FieldDescriptor::CPPTYPE_MESSAGE: break;
    }
  }
}

// A fresh mutable message of the options' concrete type.
std::unique_ptr<Message> NewOfType(const Descriptor* d) {
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(d)->New());
}

void ResolvePluginOptions(Experiment* spec) {
  for (const PluginSlot& slot : PluginSlots()) {
    Message* parent = MutableMessageAt(spec, slot.parent_path);
    const Reflection* r = parent->GetReflection();
    const Descriptor* d = parent->GetDescriptor();
    std::string name = r->GetString(*parent, d->FindFieldByName(slot.name_field));
    auto prototype = slot.prototype(name);
    if (!prototype.ok()) continue;  // reported by validation
    auto* any = static_cast<google::protobuf::Any*>(
        r->MutableMessage(parent, d->FindFieldByName(slot.options_field)));
    std::unique_ptr<Message> options = NewOfType((*prototype)->GetDescriptor());
    if (!any->type_url().empty()) {
      if (any->type_url() != absl::StrCat("type.googleapis.com/",
                                         (*prototype)->GetDescriptor()->full_name()) ||
          !any->UnpackTo(options.get())) {
        continue;  // reported by validation
      }
    }
    FillDefaults(options.get());
    any->PackFrom(*options);
  }
}

absl::Status BadValue(const std::string& path, const std::string& value, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--set ", path, "=", value, ": '", value, "' is not ", what));
}

// Sets scalar `f` of `m` from text.
absl::Status SetScalar(Message* m, const FieldDescriptor* f, const std::string& path,
                       const std::string& value) {
  const Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(value, &v)) return BadValue(path, value, "an integer (int32)");
      r->SetInt32(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return BadValue(path, value, "an integer (int64)");
      r->SetInt64(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v;
      if (!absl::SimpleAtoi(value, &v)) return BadValue(path, value, "a non-negative integer");
      r->SetUInt32(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!absl::SimpleAtoi(value, &v)) return BadValue(path, value, "a non-negative integer");
      r->SetUInt64(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      float v;
      if (!absl::SimpleAtof(value, &v)) return BadValue(path, value, "a number");
      r->SetFloat(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v;
      if (!absl::SimpleAtod(value, &v)) return BadValue(path, value, "a number");
      r->SetDouble(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (!absl::SimpleAtob(value, &v)) return BadValue(path, value, "true or false");
      r->SetBool(m, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(m, f, value);
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* e = f->enum_type()->FindValueByName(value);
      if (e == nullptr) {
        std::vector<std::string> names;
        for (int i = 0; i < f->enum_type()->value_count(); ++i)
          names.push_back(f->enum_type()->value(i)->name());
        return BadValue(path, value, absl::StrCat("one of ", absl::StrJoin(names, ", ")));
      }
      r->SetEnum(m, f, e);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--set ", path, ": is a message; set one of its fields (", path, ".<field>=value)"));
}

std::string FieldList(const Descriptor* d) {
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  return absl::StrJoin(names, ", ");
}

// Walks `parts` from `m` and sets the scalar at the end. An Any on the way
// is unpacked (it must already hold options: ResolveDefaults fills them),
// modified and packed again.
absl::Status SetPath(Message* m, const std::vector<std::string>& parts, size_t at,
                     const std::string& path, const std::string& value) {
  const Descriptor* d = m->GetDescriptor();
  const FieldDescriptor* f = d->FindFieldByName(parts[at]);
  std::string so_far = absl::StrJoin(parts.begin(), parts.begin() + at + 1, ".");
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, ": ", d->full_name(),
                                                   " has no field '", parts[at],
                                                   "'; its fields: ", FieldList(d)));
  }
  if (f->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", path, ": ", so_far, " is a list; edit it in the spec file"));
  }
  if (at + 1 == parts.size()) return SetScalar(m, f, path, value);
  if (f->message_type() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, ": ", so_far,
                                                   " is a value, not a message"));
  }
  Message* child = m->GetReflection()->MutableMessage(m, f);
  if (!IsAny(f)) return SetPath(child, parts, at + 1, path, value);
  auto* any = static_cast<google::protobuf::Any*>(child);
  if (any->type_url().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", path, ": ", so_far, " holds no options yet (is the plugin name valid?)"));
  }
  std::string type = any->type_url().substr(any->type_url().rfind('/') + 1);
  const Descriptor* od =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  if (od == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, ": unknown options type ", type));
  }
  std::unique_ptr<Message> options = NewOfType(od);
  any->UnpackTo(options.get());
  TVLAB_RETURN_IF_ERROR(SetPath(options.get(), parts, at + 1, path, value));
  any->PackFrom(*options);
  return absl::OkStatus();
}

bool PassesThroughAny(const std::vector<std::string>& parts) {
  const Descriptor* d = Experiment::descriptor();
  for (size_t i = 0; i + 1 < parts.size() && d != nullptr; ++i) {
    const FieldDescriptor* f = d->FindFieldByName(parts[i]);
    if (f == nullptr || f->message_type() == nullptr) return false;
    if (IsAny(f)) return true;
    d = f->message_type();
  }
  return false;
}

class Problems {
 public:
  void Add(std::string message) { list_.push_back(std::move(message)); }
  void Add(const absl::Status& status) {
    if (!status.ok()) list_.emplace_back(status.message());
  }
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(list_, "\n"));
  }

 private:
  std::vector<std::string> list_;
};

std::string Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= n && out.size() < 12; ++i)
    if (n % i == 0) out.push_back(i);
  return absl::StrJoin(out, ", ");
}

void RequirePositive(Problems* p, const std::string& path, int64_t value, const std::string& fix) {
  if (value <= 0) p->Add(absl::StrCat(path, " must be > 0 (got ", value, "); ", fix));
}

// What the position plugin needs inside attention, the layout must provide
// (framework/interfaces/capabilities.h).
void CheckCapabilities(const Experiment& spec, Problems* problems) {
  const std::string& position = spec.model().position().plugin();
  const std::string& layout = spec.model().attention().layout();
  uint32_t needs = 0, provides = 0;
  for (const PluginSlot& slot : PluginSlots()) {
    if (slot.kind == "position encoding") needs = slot.capabilities(position);
    if (slot.kind == "attention layout") provides = slot.capabilities(layout);
  }
  struct Requirement {
    uint32_t need, provide;
    const char* what;
  };
  for (const Requirement& r : {Requirement{kRotatesQueriesAndKeys, kAppliesRotaryPositions,
                                           "rotates queries and keys inside attention"},
                               Requirement{kAddsLogitBias, kAppliesLogitBias,
                                           "adds a bias to attention logits"}}) {
    if ((needs & r.need) && !(provides & r.provide)) {
      problems->Add(absl::StrCat("model.position.plugin: '", position, "' ", r.what,
                                 ", but attention layout '", layout,
                                 "' does not declare that it applies it, so the positions would be "
                                 "silently lost; choose another layout or position plugin"));
    }
  }
}

void ValidatePlugins(const Experiment& spec, const ModelDims& dims, Problems* problems) {
  Experiment copy = spec;  // MutableMessageAt needs a mutable message
  for (const PluginSlot& slot : PluginSlots()) {
    const Message* parent = MutableMessageAt(&copy, slot.parent_path);
    const Reflection* r = parent->GetReflection();
    const Descriptor* d = parent->GetDescriptor();
    const std::string field_path = absl::StrCat(slot.parent_path, ".", slot.name_field);
    const std::string options_path = absl::StrCat(slot.parent_path, ".", slot.options_field);
    std::string name = r->GetString(*parent, d->FindFieldByName(slot.name_field));
    auto prototype = slot.prototype(name);
    if (!prototype.ok()) {
      problems->Add(absl::StrCat(field_path, ": ", prototype.status().message()));
      continue;
    }
    const auto& any = static_cast<const google::protobuf::Any&>(
        r->GetMessage(*parent, d->FindFieldByName(slot.options_field)));
    auto options = UnpackOptions(any, **prototype, name, options_path);
    if (!options.ok()) {
      problems->Add(options.status());
      continue;
    }
    absl::Status valid = slot.validate(name, **options, dims);
    if (!valid.ok()) problems->Add(absl::StrCat(options_path, " (", name, "): ", valid.message()));
  }
  CheckCapabilities(spec, problems);
}

// Every string field named "path" under `task` is a file; a relative one is
// resolved against the spec file's directory.
void ResolvePaths(Message* m, const std::string& base) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || !r->HasField(*m, f)) continue;
    if (f->message_type() != nullptr && !IsAny(f)) {
      ResolvePaths(r->MutableMessage(m, f), base);
    } else if (f->name() == "path" && f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      std::string value = r->GetString(*m, f);
      if (!value.empty() && value[0] != '/') r->SetString(m, f, base + value);
    }
  }
}

}  // namespace

void ResolveTaskPaths(Experiment* spec, const std::string& spec_path) {
  size_t slash = spec_path.find_last_of('/');
  std::string base = slash == std::string::npos ? "" : spec_path.substr(0, slash + 1);
  if (!base.empty()) ResolvePaths(spec->mutable_task(), base);
}

absl::StatusOr<Experiment> ParseSpecText(const std::string& text, const std::string& filename) {
  Experiment spec;
  TVLAB_RETURN_IF_ERROR(ParseTextProto(text, filename, &spec));
  return spec;
}

absl::StatusOr<Experiment> ParseSpecFile(const std::string& path) {
  std::string text;
  TVLAB_RETURN_IF_ERROR(ReadTextFile(path, "spec file", &text));
  return ParseSpecText(text, path);
}

absl::Status ApplyOverride(Experiment* spec, const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set '", assignment, "': expected field.path=value, e.g. --set model.num_heads=8"));
  }
  std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  // Changing a plugin's name drops options that belonged to the old plugin.
  for (const PluginSlot& slot : PluginSlots()) {
    if (path != absl::StrCat(slot.parent_path, ".", slot.name_field)) continue;
    Message* parent = MutableMessageAt(spec, slot.parent_path);
    const Reflection* r = parent->GetReflection();
    const Descriptor* d = parent->GetDescriptor();
    if (r->GetString(*parent, d->FindFieldByName(slot.name_field)) != value)
      r->ClearField(parent, d->FindFieldByName(slot.options_field));
  }
  if (PassesThroughAny(parts)) ResolveDefaults(spec);
  return SetPath(spec, parts, 0, path, value);
}

void ResolveDefaults(Experiment* spec) {
  FillDefaults(spec);
  if (spec->train().optimizer().optimizer_case() == OptimizerSpec::OPTIMIZER_NOT_SET) {
    spec->mutable_train()->mutable_optimizer()->mutable_adamw();
  }
  FillDefaults(spec);
  ResolvePluginOptions(spec);
}

ModelDims ModelDimsFromSpec(const Experiment& spec) {
  const ModelSpec& m = spec.model();
  ModelDims d;
  d.d_model = m.d_model();
  d.num_heads = m.num_heads();
  d.head_dim = m.num_heads() > 0 ? m.d_model() / m.num_heads() : 0;
  d.d_ff = m.d_ff();
  d.num_layers = m.num_layers();
  d.max_seq_len = m.max_seq_len();
  d.dropout = m.dropout();
  d.bias = m.bias();
  d.causal = m.family() == ModelSpec::DECODER_ONLY;
  return d;
}

absl::Status ValidateExperiment(const Experiment& spec) {
  Problems p;
  if (spec.name().empty()) p.Add("name must not be empty; e.g. name: \"sort_digits\"");
  const ModelSpec& m = spec.model();
  if (m.family() == ModelSpec::FAMILY_UNSPECIFIED) {
    p.Add("model.family is required; set model { family: ENCODER_ONLY } (or DECODER_ONLY, "
          "ENCODER_DECODER)");
  }
  if (m.pooling() != ModelSpec::NONE && m.family() != ModelSpec::ENCODER_ONLY)
    p.Add("model.pooling applies to ENCODER_ONLY classifiers; remove it for this family");
  if (m.num_decoder_layers() < 0 ||
      (m.num_decoder_layers() > 0 && m.family() != ModelSpec::ENCODER_DECODER))
    p.Add(absl::StrCat("model.num_decoder_layers (", m.num_decoder_layers(),
                       ") is for ENCODER_DECODER models, >= 0 (0 = num_layers)"));
  RequirePositive(&p, "model.d_model", m.d_model(), "the width of the model, e.g. 64");
  RequirePositive(&p, "model.num_layers", m.num_layers(), "e.g. 2");
  RequirePositive(&p, "model.num_heads", m.num_heads(), "e.g. 4");
  if (m.d_model() > 0 && m.num_heads() > 0 && m.d_model() % m.num_heads() != 0) {
    p.Add(absl::StrCat("model.num_heads: d_model (", m.d_model(),
                       ") must be divisible by num_heads (", m.num_heads(),
                       "); divisors of d_model: ", Divisors(m.d_model())));
  }
  if (m.d_ff() < 0) p.Add(absl::StrCat("model.d_ff must be >= 0 (got ", m.d_ff(), "); 0 lets the FFN plugin choose"));
  if (!(m.dropout() >= 0.0f && m.dropout() < 1.0f))
    p.Add(absl::StrCat("model.dropout must be in [0, 1) (got ", m.dropout(), ")"));
  if (m.max_seq_len() < 0)
    p.Add(absl::StrCat("model.max_seq_len must be >= 0 (got ", m.max_seq_len(), "); 0 = the task's length"));

  const std::string task = TaskName(spec);
  int64_t task_length = 0;  // the task's longest sequence, once it validates
  if (task.empty()) {
    p.Add(absl::StrCat("task is required; e.g. task { sort_digits { } } (known tasks: ",
                       absl::StrJoin(TaskRegistry().Names(), ", "), ")"));
  } else {
    auto entry = TaskRegistry().Get(task);
    if (!entry.ok()) {
      p.Add(absl::StrCat("task.", task, ": ", entry.status().message()));
    } else if (m.family() != ModelSpec::FAMILY_UNSPECIFIED && !TaskFitsFamily((*entry)->kind, m.family())) {
      p.Add(absl::StrCat("task.", task, " needs a ", FamiliesFor((*entry)->kind), " model, but model.family is ",
                         ModelSpec::Family_Name(m.family())));
    } else {
      absl::Status task_ok = (*entry)->validate(spec);
      p.Add(task_ok);
      if (task_ok.ok()) task_length = (*entry)->create(spec)->max_length();
      if (task_ok.ok() && m.max_seq_len() > 0) {
        int64_t needed = task_length;
        if (m.max_seq_len() < needed)
          p.Add(absl::StrCat("model.max_seq_len (", m.max_seq_len(), ") is shorter than the task's sequences (",
                             needed, "); raise it or set 0"));
      }
    }
  }

  const TrainSpec& t = spec.train();
  RequirePositive(&p, "train.steps", t.steps(), "the number of optimizer steps, e.g. 1001");
  RequirePositive(&p, "train.batch_size", t.batch_size(), "e.g. 64");
  RequirePositive(&p, "train.log_every", t.log_every(), "e.g. 100");
  RequirePositive(&p, "train.grad_accumulation", t.grad_accumulation(), "1 = no accumulation");
  if (t.clip_grad_norm() < 0)
    p.Add(absl::StrCat("train.clip_grad_norm must be >= 0 (got ", t.clip_grad_norm(), "); 0 turns clipping off"));
  if (!(t.label_smoothing() >= 0 && t.label_smoothing() < 1))
    p.Add(absl::StrCat("train.label_smoothing must be in [0, 1) (got ", t.label_smoothing(), ")"));
  if (t.eval_every() < 0) p.Add(absl::StrCat("train.eval_every must be >= 0 (got ", t.eval_every(), ")"));
  if (t.checkpoint_every() < 0)
    p.Add(absl::StrCat("train.checkpoint_every must be >= 0 (got ", t.checkpoint_every(), ")"));
  const LrSchedule& schedule = t.lr_schedule();
  if (schedule.warmup_steps() < 0)
    p.Add(absl::StrCat("train.lr_schedule.warmup_steps must be >= 0 (got ", schedule.warmup_steps(), ")"));
  if (schedule.kind() == LrSchedule::INVERSE_SQRT && schedule.warmup_steps() == 0)
    p.Add("train.lr_schedule.warmup_steps must be > 0 for INVERSE_SQRT (it sets where the rate peaks), e.g. 4000");
  if (!(schedule.min_lr_ratio() >= 0 && schedule.min_lr_ratio() <= 1))
    p.Add(absl::StrCat("train.lr_schedule.min_lr_ratio must be in [0, 1] (got ", schedule.min_lr_ratio(), ")"));
  if (t.optimizer().has_adamw()) {
    const AdamWSpec& a = t.optimizer().adamw();
    if (!(a.lr() > 0.0f)) p.Add(absl::StrCat("train.optimizer.adamw.lr must be > 0 (got ", a.lr(), "), e.g. 1e-3"));
    if (!(a.beta1() >= 0.0f && a.beta1() < 1.0f))
      p.Add(absl::StrCat("train.optimizer.adamw.beta1 must be in [0, 1) (got ", a.beta1(), ")"));
    if (!(a.beta2() >= 0.0f && a.beta2() < 1.0f))
      p.Add(absl::StrCat("train.optimizer.adamw.beta2 must be in [0, 1) (got ", a.beta2(), ")"));
    if (!(a.eps() > 0.0f)) p.Add(absl::StrCat("train.optimizer.adamw.eps must be > 0 (got ", a.eps(), ")"));
    if (!(a.weight_decay() >= 0.0f))
      p.Add(absl::StrCat("train.optimizer.adamw.weight_decay must be >= 0 (got ", a.weight_decay(), ")"));
  }
  RequirePositive(&p, "eval.examples", spec.eval().examples(), "e.g. 1000");
  RequirePositive(&p, "eval.batch_size", spec.eval().batch_size(), "e.g. 250");
  if (spec.eval().decode_examples() < 0)
    p.Add(absl::StrCat("eval.decode_examples must be >= 0 (got ", spec.eval().decode_examples(), "); 0 skips generation"));
  const DecodingSpec& decoding = spec.eval().decoding();
  RequirePositive(&p, "eval.decoding.max_new_tokens", decoding.max_new_tokens(), "e.g. 64");
  RequirePositive(&p, "eval.decoding.beam_size", decoding.beam_size(), "e.g. 4 (1 = greedy)");
  if (!(decoding.temperature() > 0))
    p.Add(absl::StrCat("eval.decoding.temperature must be > 0 (got ", decoding.temperature(),
                       "); use method GREEDY for argmax decoding"));
  if (decoding.top_k() < 0)
    p.Add(absl::StrCat("eval.decoding.top_k must be >= 0 (got ", decoding.top_k(), "); 0 keeps every token"));
  if (decoding.length_penalty() < 0)
    p.Add(absl::StrCat("eval.decoding.length_penalty must be >= 0 (got ", decoding.length_penalty(), ")"));
  auto backend = MakeBackend(spec.runtime().backend());
  if (!backend.ok()) p.Add(absl::StrCat("runtime.backend: ", backend.status().message()));
  RequirePositive(&p, "runtime.threads", spec.runtime().threads(), "e.g. 1");

  bool dims_ok = m.d_model() > 0 && m.num_heads() > 0 && m.d_model() % m.num_heads() == 0 &&
                 m.num_layers() > 0;
  if (dims_ok) {
    ModelDims dims = ModelDimsFromSpec(spec);
    // Plugins see the sequence length the model will be built for.
    if (dims.max_seq_len == 0 && task_length > 0) dims.max_seq_len = task_length;
    ValidatePlugins(spec, dims, &p);
  }
  p.Add(CheckSizeLimits(spec));  // upper bounds and the memory estimate
  return p.ToStatus();
}

absl::StatusOr<Experiment> ResolveExperiment(Experiment spec,
                                             const std::vector<std::string>& overrides,
                                             const std::string& source,
                                             const std::string& default_name) {
  for (const std::string& o : overrides) TVLAB_RETURN_IF_ERROR(ApplyOverride(&spec, o));
  if (spec.name().empty()) spec.set_name(default_name);
  ResolveDefaults(&spec);
  absl::Status valid = ValidateExperiment(spec);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": invalid spec:\n  ", absl::StrJoin(absl::StrSplit(valid.message(), '\n'), "\n  ")));
  }
  // Record the sequence length the model is built for.
  if (spec.model().max_seq_len() == 0) {
    auto entry = TaskRegistry().Get(TaskName(spec));
    spec.mutable_model()->set_max_seq_len(static_cast<int32_t>((*entry)->create(spec)->max_length()));
  }
  return spec;
}

absl::StatusOr<Experiment> LoadExperiment(const std::string& path,
                                          const std::vector<std::string>& overrides) {
  TVLAB_ASSIGN_OR_RETURN(Experiment spec, ParseSpecFile(path));
  ResolveTaskPaths(&spec, path);
  std::string stem = path.substr(path.find_last_of('/') + 1);
  return ResolveExperiment(std::move(spec), overrides, path, stem.substr(0, stem.find('.')));
}

std::string SpecToText(const Experiment& spec) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  printer.PrintToString(spec, &out);
  return out;
}

}  // namespace tvlab
