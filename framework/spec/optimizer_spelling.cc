#include "framework/spec/optimizer_spelling.h"

#include "framework/interfaces/plugin_kinds.h"
#include "google/protobuf/message.h"

namespace tvlab {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Copies each scalar field set in `from` onto the field of the same name
// and type in `to` (fields `to` lacks are left: the decay switches are
// groups now).
void CopySetFieldsByName(const Message& from, Message* to) {
  const auto* from_r = from.GetReflection();
  const auto* to_r = to->GetReflection();
  for (int i = 0; i < from.GetDescriptor()->field_count(); ++i) {
    const FieldDescriptor* f = from.GetDescriptor()->field(i);
    const FieldDescriptor* t = to->GetDescriptor()->FindFieldByName(f->name());
    if (t == nullptr || t->cpp_type() != f->cpp_type() || !from_r->HasField(from, f)) continue;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_FLOAT: to_r->SetFloat(to, t, from_r->GetFloat(from, f)); break;
      case FieldDescriptor::CPPTYPE_BOOL: to_r->SetBool(to, t, from_r->GetBool(from, f)); break;
      default: break;  // AdamWSpec has floats and bools only
    }
  }
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

}  // namespace tvlab
