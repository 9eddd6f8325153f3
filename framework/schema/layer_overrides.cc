#include "framework/schema/layer_overrides.h"

#include <memory>

#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tvlab {
namespace {

using google::protobuf::Any;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool IsAny(const FieldDescriptor* f) {
  return f->message_type() != nullptr && f->message_type()->full_name() == Any::descriptor()->full_name();
}

// The plugin-name field an options Any belongs to: "x_options" -> "x",
// "options" -> "plugin"; nullptr when there is none.
const FieldDescriptor* NameFieldOf(const FieldDescriptor* options) {
  const std::string& name = options->name();
  const std::string suffix = "_options";
  std::string plugin = "plugin";
  if (name != "options") {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return nullptr;
    plugin = name.substr(0, name.size() - suffix.size());
  }
  const FieldDescriptor* f = options->containing_type()->FindFieldByName(plugin);
  return f != nullptr && f->cpp_type() == FieldDescriptor::CPPTYPE_STRING ? f : nullptr;
}

// Options of one plugin merged field by field (both Anys hold the same type,
// which is linked in); false when they cannot be.
bool MergeSameOptions(const Any& over, Any* base) {
  if (over.type_url() != base->type_url()) return false;
  std::string type_name;
  if (!Any::ParseAnyTypeUrl(base->type_url(), &type_name)) return false;
  const Descriptor* type = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
  if (type == nullptr) return false;
  const Message* prototype = google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
  std::unique_ptr<Message> merged(prototype->New()), top(prototype->New());
  if (!base->UnpackTo(merged.get()) || !over.UnpackTo(top.get())) return false;
  merged->MergeFrom(*top);
  base->PackFrom(*merged);
  return true;
}

// The fields `over` sets replace `base`'s; plugin options follow their
// plugin name (layer_overrides.h).
void MergePartial(const Message& over, Message* base) {
  const Descriptor* d = over.GetDescriptor();
  const Reflection* ro = over.GetReflection();
  const Reflection* rb = base->GetReflection();
  std::unique_ptr<Message> before(base->New());  // plugin names as they were
  before->CopyFrom(*base);
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (IsAny(f)) {
      const FieldDescriptor* name = NameFieldOf(f);
      const bool renamed = name != nullptr && ro->HasField(over, name) &&
                           ro->GetString(over, name) != rb->GetString(*before, name);
      if (renamed && !ro->HasField(over, f)) rb->ClearField(base, f);
      if (!ro->HasField(over, f)) continue;
      auto* base_any = static_cast<Any*>(rb->MutableMessage(base, f));
      const auto& over_any = static_cast<const Any&>(ro->GetMessage(over, f));
      if (renamed || !MergeSameOptions(over_any, base_any)) base_any->CopyFrom(over_any);
      continue;
    }
    if (f->is_repeated()) {  // a list set here replaces the model's
      if (ro->FieldSize(over, f) == 0) continue;
      std::unique_ptr<Message> only(over.New());
      only->CopyFrom(over);
      for (int j = 0; j < d->field_count(); ++j)
        if (j != i) only->GetReflection()->ClearField(only.get(), d->field(j));
      rb->ClearField(base, f);
      base->MergeFrom(*only);
      continue;
    }
    if (!ro->HasField(over, f)) continue;
    if (f->message_type() != nullptr) {
      MergePartial(ro->GetMessage(over, f), rb->MutableMessage(base, f));
      continue;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: rb->SetInt32(base, f, ro->GetInt32(over, f)); break;
      case FieldDescriptor::CPPTYPE_INT64: rb->SetInt64(base, f, ro->GetInt64(over, f)); break;
      case FieldDescriptor::CPPTYPE_UINT32: rb->SetUInt32(base, f, ro->GetUInt32(over, f)); break;
      case FieldDescriptor::CPPTYPE_UINT64: rb->SetUInt64(base, f, ro->GetUInt64(over, f)); break;
      case FieldDescriptor::CPPTYPE_FLOAT: rb->SetFloat(base, f, ro->GetFloat(over, f)); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: rb->SetDouble(base, f, ro->GetDouble(over, f)); break;
      case FieldDescriptor::CPPTYPE_BOOL: rb->SetBool(base, f, ro->GetBool(over, f)); break;
      case FieldDescriptor::CPPTYPE_STRING: rb->SetString(base, f, ro->GetString(over, f)); break;
      case FieldDescriptor::CPPTYPE_ENUM: rb->SetEnum(base, f, ro->GetEnum(over, f)); break;
      case FieldDescriptor::CPPTYPE_MESSAGE: break;
    }
  }
}

}  // namespace

std::vector<StackRole> StacksOf(const ModelSpec& model) {
  switch (model.family()) {
    case ModelSpec::ENCODER_ONLY: return {StackRole::kEncoder};
    case ModelSpec::DECODER_ONLY: return {StackRole::kDecoder};
    case ModelSpec::ENCODER_DECODER: return {StackRole::kEncoder, StackRole::kDecoder};
    default: return {};
  }
}

const char* StackName(StackRole stack) { return stack == StackRole::kEncoder ? "encoder" : "decoder"; }

int64_t LayersOf(const ModelSpec& model, StackRole stack) {
  if (model.family() == ModelSpec::ENCODER_DECODER && stack == StackRole::kDecoder &&
      model.num_decoder_layers() > 0)
    return model.num_decoder_layers();
  return model.num_layers();
}

bool OverrideApplies(const LayerOverride& o, StackRole stack, int64_t layer, int64_t num_layers) {
  if (o.stack() == LayerOverride::ENCODER && stack != StackRole::kEncoder) return false;
  if (o.stack() == LayerOverride::DECODER && stack != StackRole::kDecoder) return false;
  if (o.layers_size() > 0 && o.has_pattern()) return false;
  for (int32_t named : o.layers())
    if (named == layer || (named < 0 && named + num_layers == layer)) return true;
  if (o.pattern().empty() || o.letter().size() != 1) return false;
  return o.pattern()[static_cast<size_t>(layer) % o.pattern().size()] == o.letter()[0];
}

std::vector<int> OverridesOf(const ModelSpec& model, StackRole stack, int64_t layer) {
  std::vector<int> out;
  const int64_t n = LayersOf(model, stack);
  for (int i = 0; i < model.layer_overrides_size(); ++i)
    if (OverrideApplies(model.layer_overrides(i), stack, layer, n)) out.push_back(i);
  return out;
}

void MergeLayerOverride(const LayerOverride& o, ModelSpec* model) {
  if (o.has_attention()) MergePartial(o.attention(), model->mutable_attention());
  if (o.has_position()) MergePartial(o.position(), model->mutable_position());
  if (o.has_norm()) MergePartial(o.norm(), model->mutable_norm());
  if (o.has_ffn()) MergePartial(o.ffn(), model->mutable_ffn());
}

Experiment LayerExperiment(const Experiment& spec, StackRole stack, int64_t layer) {
  Experiment out = spec;
  ModelSpec* model = out.mutable_model();
  for (int i : OverridesOf(spec.model(), stack, layer)) MergeLayerOverride(spec.model().layer_overrides(i), model);
  model->clear_layer_overrides();
  return out;
}

std::string LayerName(StackRole stack, int64_t layer) {
  return std::string(StackName(stack)) + " layer " + std::to_string(layer);
}

}  // namespace tvlab
