#include "framework/spec/spec_defaults.h"

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model_spec.h"
#include "framework/schema/layer_overrides.h"
#include "framework/spec/old_spellings.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.pb.h"

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

// Sets every unset singular scalar to its (schema) default and recurses into
// singular messages (and the set member of each oneof). Any fields are left
// to ResolvePluginOptions, deprecated ones (old spellings) unset.
void FillDefaults(Message* m) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    // Deprecated fields are old spellings, resolved into new ones: never written.
    if (f->is_repeated() || IsAny(f) || f->options().deprecated()) continue;
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

// Each kind's default plugin where the spec names none.
void ResolvePluginNames(Experiment* spec) {
  for (const PluginKind& kind : PluginKinds()) {
    if (kind.default_plugin.empty() || !PluginNameIn(*spec, kind).empty()) continue;
    Message* parent = MutableParentIn(spec, kind);
    parent->GetReflection()->SetString(
        parent, parent->GetDescriptor()->FindFieldByName(kind.name_field), kind.default_plugin);
  }
}

// Every plugin's options Any holds its options type with defaults filled.
void ResolvePluginOptions(Experiment* spec) {
  for (const PluginKind& kind : PluginKinds()) {
    auto options = UnpackPluginOptions(*spec, kind);
    if (!options.ok()) continue;  // unknown plugin or wrong type: reported by validation
    FillDefaults(options->get());
    Message* parent = MutableParentIn(spec, kind);
    static_cast<google::protobuf::Any*>(parent->GetReflection()->MutableMessage(
        parent, parent->GetDescriptor()->FindFieldByName(kind.options_field)))
        ->PackFrom(**options);
  }
}

// For each plugin a layer override names other than the model's
// (model.layer_overrides[i].<part> with its name field set): its options, as
// the layer will see them, passed to `fill` and packed into the override, so
// that the resolved spec holds them whole. Options the override gives for
// the model's own plugin stay partial (they merge over the model's at each
// layer, so a later change of the model's reaches the layer too).
void ResolveOverrideOptions(
    Experiment* spec,
    const std::function<void(const PluginKind&, const std::string&, Message*)>& fill) {
  ModelSpec* model = spec->mutable_model();
  for (int i = 0; i < model->layer_overrides_size(); ++i) {
    LayerOverride* o = model->mutable_layer_overrides(i);
    Experiment merged = *spec;
    merged.mutable_model()->clear_layer_overrides();
    MergeLayerOverride(*o, merged.mutable_model());
    for (const PluginKind& kind : PluginKinds()) {
      if (kind.id == "task") continue;
      const std::string part = kind.parent_path.substr(kind.parent_path.rfind('.') + 1);  // "attention"
      const FieldDescriptor* part_field = o->GetDescriptor()->FindFieldByName(part);
      if (part_field == nullptr || !o->GetReflection()->HasField(*o, part_field)) continue;
      Message* parent = o->GetReflection()->MutableMessage(o, part_field);
      const Reflection* r = parent->GetReflection();
      const FieldDescriptor* name = parent->GetDescriptor()->FindFieldByName(kind.name_field);
      if (!r->HasField(*parent, name) || r->GetString(*parent, name) == PluginNameIn(*spec, kind)) continue;
      auto options = UnpackPluginOptions(merged, kind);
      if (!options.ok()) continue;  // reported by validation
      fill(kind, PluginNameIn(merged, kind), options->get());
      static_cast<google::protobuf::Any*>(
          r->MutableMessage(parent, parent->GetDescriptor()->FindFieldByName(kind.options_field)))
          ->PackFrom(**options);
    }
  }
}

}  // namespace

void ResolveAutomaticSizes(Experiment* spec) {
  PluginValidationArgs args;
  args.dims = ModelDimsFromSpec(spec->model());
  args.family = spec->model().family();
  args.spec = spec;
  for (const PluginKind& kind : PluginKinds()) {
    if (kind.id == "task") continue;
    auto options = UnpackPluginOptions(*spec, kind);
    if (!options.ok()) continue;  // validation has refused the spec already
    kind.resolve(PluginNameIn(*spec, kind), options->get(), &args);
    Message* parent = MutableParentIn(spec, kind);
    static_cast<google::protobuf::Any*>(parent->GetReflection()->MutableMessage(
        parent, parent->GetDescriptor()->FindFieldByName(kind.options_field)))
        ->PackFrom(**options);
  }
  ModelSpec* model = spec->mutable_model();
  if (model->d_ff() == 0 && args.dims.d_ff > 0) model->set_d_ff(static_cast<int32_t>(args.dims.d_ff));
  if (model->family() == ModelSpec::ENCODER_DECODER && model->num_decoder_layers() == 0)
    model->set_num_decoder_layers(model->num_layers());
  // A layer's plugins resolve their own sizes; model-wide sizes (d_ff) are
  // the model's, resolved above.
  ResolveOverrideOptions(spec, [&](const PluginKind& kind, const std::string& name, Message* options) {
    PluginValidationArgs layer_args;
    layer_args.dims = ModelDimsFromSpec(spec->model());
    layer_args.family = spec->model().family();
    kind.resolve(name, options, &layer_args);
  });
}

void ResolveDefaults(Experiment* spec) {
  ResolveOldOptimizerSpelling(spec);
  ResolveOldScheduleSpelling(spec);
  ResolvePluginNames(spec);
  FillDefaults(spec);
  ResolvePluginOptions(spec);
  ResolveOverrideOptions(spec, [](const PluginKind&, const std::string&, Message* options) {
    FillDefaults(options);
  });
}

}  // namespace tvlab
