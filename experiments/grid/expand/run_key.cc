#include "experiments/grid/expand/run_key.h"

#include <cstdio>
#include <memory>

#include "absl/strings/ascii.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/schema/spec_text.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/util/message_differencer.h"

namespace tvlab {

std::string Fnv1a64Hex(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ull;  // offset basis
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;  // FNV prime
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

namespace {

// Fields added to the schema after run keys existed. At their default they
// are left out of the key, so run directories trained before the field
// existed keep their keys (a grid does not train them again, --report_only
// finds them); set to anything else, they change the key like any field.
// Add a field here when you add one to experiment.proto.
void ClearLaterFieldsAtDefault(Experiment* spec) {
  if (spec->has_train()) {
    TrainSpec* train = spec->mutable_train();
    if (train->divergence_loss() == 0) train->clear_divergence_loss();
    if (!train->fail_on_divergence()) train->clear_fail_on_divergence();
    // step_capture (added after every committed study's runs): AUTO trains
    // the same numbers as before it existed.
    if (train->step_capture() == TrainSpec::CAPTURE_AUTO) train->clear_step_capture();
    // step_profile (added later still) only times the same step.
    if (!train->step_profile()) train->clear_step_profile();
  }
  if (spec->has_eval() && spec->eval().context_length() == 0) spec->mutable_eval()->clear_context_length();
  // eval.context_lengths is a list: empty (its default) it is not written.
  if (spec->has_eval() && spec->eval().decode_speed_tokens() == 0)
    spec->mutable_eval()->clear_decode_speed_tokens();
  if (spec->has_eval() && spec->eval().context_targets() == 0) spec->mutable_eval()->clear_context_targets();
  if (spec->has_runtime() && spec->runtime().attention() == "auto") spec->mutable_runtime()->clear_attention();
  if (spec->has_runtime() && spec->runtime().precision() == "fp32") spec->mutable_runtime()->clear_precision();
  // Task options: text tasks' `tokenizer` (bytes by default).
  const PluginKind& task = PluginKindById("task");
  auto options = UnpackPluginOptions(*spec, task);
  if (!options.ok()) return;
  const auto* tokenizer = (*options)->GetDescriptor()->FindFieldByName("tokenizer");
  const auto* reflection = (*options)->GetReflection();
  if (tokenizer == nullptr || !reflection->HasField(**options, tokenizer)) return;
  const google::protobuf::Message& value = reflection->GetMessage(**options, tokenizer);
  std::unique_ptr<google::protobuf::Message> defaults(value.New());
  if (!google::protobuf::util::MessageDifferencer::Equivalent(value, *defaults)) return;
  reflection->ClearField(options->get(), tokenizer);
  auto* any = static_cast<google::protobuf::Any*>(
      MutableParentIn(spec, task)->GetReflection()->MutableMessage(
          MutableParentIn(spec, task),
          MutableParentIn(spec, task)->GetDescriptor()->FindFieldByName(task.options_field)));
  any->PackFrom(**options);
}

// The adamw plugin as the old spelling train.optimizer.adamw (every field
// written, as resolution wrote it before optimizers were plugins), so runs
// trained before keep their keys. Only where the old spelling can say it:
// every group at lr_multiplier 1, bias and norm decayed alike, head and
// matrix decayed.
void OptimizerInTheOldSpelling(Experiment* spec) {
  OptimizerSpec* o = spec->mutable_train()->mutable_optimizer();
  const ParamGroups& g = o->groups();
  for (const ParamGroup* group : {&g.embedding(), &g.head(), &g.norm(), &g.bias(), &g.matrix()})
    if (group->lr_multiplier() != 1.0f) return;
  if (o->plugin() != "adamw" || g.bias().weight_decay() != g.norm().weight_decay() ||
      !g.head().weight_decay() || !g.matrix().weight_decay())
    return;
  auto options = UnpackPluginOptions(*spec, PluginKindById("optimizer"));
  if (!options.ok()) return;
  const google::protobuf::Message& from = **options;
  AdamWSpec old;
  for (const char* name : {"lr", "beta1", "beta2", "eps", "weight_decay"}) {
    const auto* field = from.GetDescriptor()->FindFieldByName(name);
    const auto* to = old.GetDescriptor()->FindFieldByName(name);
    old.GetReflection()->SetFloat(&old, to, from.GetReflection()->GetFloat(from, field));
  }
  old.set_decay_biases_and_norms(g.bias().weight_decay());
  old.set_decay_embeddings(g.embedding().weight_decay());
  o->Clear();
  *o->mutable_adamw() = old;
}

// The four schedules that were an enum as the old spelling, every field
// written (as resolution wrote them before schedules were plugins).
void ScheduleInTheOldSpelling(Experiment* spec) {
  LrSchedule* schedule = spec->mutable_train()->mutable_lr_schedule();
  const auto* kind = LrSchedule::Kind_descriptor()->FindValueByName(absl::AsciiStrToUpper(schedule->plugin()));
  if (kind == nullptr) return;  // wsd and later schedules keep the plugin form
  auto options = UnpackPluginOptions(*spec, PluginKindById("schedule"));
  if (!options.ok()) return;
  const google::protobuf::Message& from = **options;
  const auto* warmup = from.GetDescriptor()->FindFieldByName("warmup_steps");
  const auto* floor = from.GetDescriptor()->FindFieldByName("min_lr_ratio");
  const auto* d = LrSchedule::descriptor();
  const auto* r = schedule->GetReflection();
  const int32_t warmup_steps = warmup ? from.GetReflection()->GetInt32(from, warmup) : 0;
  const float min_lr_ratio = floor ? from.GetReflection()->GetFloat(from, floor) : 0.0f;
  schedule->Clear();
  r->SetEnumValue(schedule, d->FindFieldByName("kind"), kind->number());
  r->SetInt32(schedule, d->FindFieldByName("warmup_steps"), warmup_steps);
  r->SetFloat(schedule, d->FindFieldByName("min_lr_ratio"), min_lr_ratio);
}

// The text RunKey hashes.
std::string KeyedText(const Experiment& resolved) {
  Experiment unnamed = resolved;
  unnamed.clear_name();
  ClearLaterFieldsAtDefault(&unnamed);
  OptimizerInTheOldSpelling(&unnamed);
  ScheduleInTheOldSpelling(&unnamed);
  return SpecToText(unnamed);
}

}  // namespace

std::string RunKey(const Experiment& resolved) { return Fnv1a64Hex(KeyedText(resolved)); }

std::vector<std::string> OlderRunKeys(const Experiment& resolved) {
  if (!resolved.has_train() || resolved.train().z_loss() != 0) return {};
  Experiment before_z_loss = resolved;
  before_z_loss.mutable_train()->clear_z_loss();
  return {Fnv1a64Hex(KeyedText(before_z_loss))};
}

}  // namespace tvlab
