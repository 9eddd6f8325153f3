#include "framework/spec/old_spellings.h"

#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "framework/interfaces/plugin_kinds.h"
#include "google/protobuf/message.h"

namespace tvlab {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Copies each scalar field set in `from` onto the field of the same name
// and type in `to` (fields `to` lacks are left).
void CopySetFieldsByName(const Message& from, Message* to) {
  const auto* from_r = from.GetReflection();
  const auto* to_r = to->GetReflection();
  for (int i = 0; i < from.GetDescriptor()->field_count(); ++i) {
    const FieldDescriptor* f = from.GetDescriptor()->field(i);
    const FieldDescriptor* t = to->GetDescriptor()->FindFieldByName(f->name());
    if (t == nullptr || t->cpp_type() != f->cpp_type() || t->is_repeated() || !from_r->HasField(from, f)) continue;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_FLOAT: to_r->SetFloat(to, t, from_r->GetFloat(from, f)); break;
      case FieldDescriptor::CPPTYPE_BOOL: to_r->SetBool(to, t, from_r->GetBool(from, f)); break;
      case FieldDescriptor::CPPTYPE_INT32: to_r->SetInt32(to, t, from_r->GetInt32(from, f)); break;
      default: break;  // the old messages have floats, bools and int32s only
    }
  }
}

// The schedule's old fields, by reflection (their accessors are deprecated).
const FieldDescriptor* OldScheduleField(const char* name) {
  return LrSchedule::descriptor()->FindFieldByName(name);
}

}  // namespace

void ResolveOldOptimizerSpelling(Experiment* spec) {
  if (!spec->train().optimizer().has_adamw()) return;
  OptimizerSpec* optimizer = spec->mutable_train()->mutable_optimizer();
  if (!optimizer->plugin().empty() && optimizer->plugin() != "adamw") return;
  const PluginKind& kind = PluginKindById("optimizer");
  if (!kind.prototype("adamw").ok()) return;
  optimizer->set_plugin("adamw");
  auto options = UnpackPluginOptions(*spec, kind);
  if (!options.ok()) return;  // options of another type
  const AdamWSpec old = optimizer->adamw();
  CopySetFieldsByName(old, options->get());
  optimizer->mutable_options()->PackFrom(**options);
  ParamGroups* groups = optimizer->mutable_groups();
  if (old.has_decay_biases_and_norms()) {
    groups->mutable_bias()->set_weight_decay(old.decay_biases_and_norms());
    groups->mutable_norm()->set_weight_decay(old.decay_biases_and_norms());
  }
  if (old.has_decay_embeddings()) groups->mutable_embedding()->set_weight_decay(old.decay_embeddings());
  optimizer->clear_adamw();
}

void ResolveOldScheduleSpelling(Experiment* spec) {
  if (!spec->train().has_lr_schedule()) return;
  LrSchedule* schedule = spec->mutable_train()->mutable_lr_schedule();
  const auto* r = schedule->GetReflection();
  const FieldDescriptor* kind_field = OldScheduleField("kind");
  if (!r->HasField(*schedule, kind_field) && !r->HasField(*schedule, OldScheduleField("warmup_steps")) &&
      !r->HasField(*schedule, OldScheduleField("min_lr_ratio")))
    return;
  std::string name = schedule->plugin().empty() ? "constant" : schedule->plugin();
  if (r->HasField(*schedule, kind_field))
    name = absl::AsciiStrToLower(kind_field->enum_type()->FindValueByNumber(r->GetEnumValue(*schedule, kind_field))->name());
  const PluginKind& kind = PluginKindById("schedule");
  auto prototype = kind.prototype(name);
  if (!prototype.ok()) return;
  std::unique_ptr<Message> options((*prototype)->New());
  if (!schedule->plugin().empty()) {
    auto previous = UnpackPluginOptions(*spec, kind);
    if (previous.ok()) CopySetFieldsByName(**previous, options.get());
  }
  CopySetFieldsByName(*schedule, options.get());  // warmup_steps, min_lr_ratio where set
  for (const char* old : {"kind", "warmup_steps", "min_lr_ratio"}) r->ClearField(schedule, OldScheduleField(old));
  schedule->set_plugin(name);
  schedule->mutable_options()->PackFrom(*options);
}

}  // namespace tvlab
