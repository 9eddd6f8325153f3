#include "framework/schema/spec_text.h"

#include "framework/schema/layer_overrides.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace tvlab {
namespace {

// One layer's attention, position, norm and FFN where they differ from the
// model's, on one line ("" when none does).
std::string LayerDifferences(const ModelSpec& model, const ModelSpec& layer) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  printer.SetSingleLineMode(true);
  using google::protobuf::util::MessageDifferencer;
  std::string out;
  auto add = [&](const char* name, const google::protobuf::Message& base, const google::protobuf::Message& mine) {
    if (MessageDifferencer::Equals(base, mine)) return;
    std::string text;
    printer.PrintToString(mine, &text);
    out += std::string(" ") + name + " { " + text + "}";
  };
  add("attention", model.attention(), layer.attention());
  add("position", model.position(), layer.position());
  add("norm", model.norm(), layer.norm());
  add("ffn", model.ffn(), layer.ffn());
  return out;
}

// Comment lines showing what model.layer_overrides made of each layer
// (comments: reading the spec back, the overrides are what counts).
std::string PerLayerComment(const Experiment& spec) {
  if (spec.model().layer_overrides_size() == 0) return "";
  std::string out = "# Per-layer result of model.layer_overrides (what differs from model.*):\n";
  for (StackRole stack : StacksOf(spec.model())) {
    for (int64_t layer = 0; layer < LayersOf(spec.model(), stack); ++layer) {
      const std::string differences =
          LayerDifferences(spec.model(), LayerExperiment(spec, stack, layer).model());
      out += "#   " + LayerName(stack, layer) + ":" + (differences.empty() ? " as the model" : differences) + "\n";
    }
  }
  return out;
}

}  // namespace

std::string SpecToText(const Experiment& spec) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  printer.PrintToString(spec, &out);
  return out + PerLayerComment(spec);
}

}  // namespace tvlab
