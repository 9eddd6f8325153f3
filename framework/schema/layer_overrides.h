#ifndef TVLAB_FRAMEWORK_SCHEMA_LAYER_OVERRIDES_H_
#define TVLAB_FRAMEWORK_SCHEMA_LAYER_OVERRIDES_H_

// Per-layer patterns (ModelSpec.layer_overrides): the spec one layer of a
// stack is built from. Everything per layer (building, validation,
// automatic sizes, the memory estimate, spec.resolved.pbtxt) asks
// LayerExperiment for the layer's spec and reads model.attention,
// model.position, model.norm and model.ffn from it, so a field added to
// those messages is overridable per layer without code here knowing it.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The stacks of a model: encoder-only has an encoder, decoder-only a
// decoder, encoder-decoder both.
enum class StackRole { kEncoder, kDecoder };
std::vector<StackRole> StacksOf(const ModelSpec& model);
// "encoder" / "decoder".
const char* StackName(StackRole stack);
// Layers of `stack` (num_layers, or num_decoder_layers of an
// encoder-decoder's decoder when > 0).
int64_t LayersOf(const ModelSpec& model, StackRole stack);

// Whether `o` names layer `layer` of `stack` (`num_layers` layers). An
// invalid override (validation reports it) names no layer.
bool OverrideApplies(const LayerOverride& o, StackRole stack, int64_t layer, int64_t num_layers);

// Indices into model.layer_overrides of the overrides naming that layer,
// in order.
std::vector<int> OverridesOf(const ModelSpec& model, StackRole stack, int64_t layer);

// `spec` with each override naming the layer merged over model.attention,
// model.position, model.norm and model.ffn (in order), and
// model.layer_overrides cleared. Without overrides: `spec` less nothing.
Experiment LayerExperiment(const Experiment& spec, StackRole stack, int64_t layer);

// Merges one override's messages over `model`'s. A plugin named by the
// override that differs from the model's replaces the model's options (by
// the override's own, or none = the plugin's defaults); options of the same
// plugin merge field by field.
void MergeLayerOverride(const LayerOverride& o, ModelSpec* model);

// "decoder layer 3"
std::string LayerName(StackRole stack, int64_t layer);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SCHEMA_LAYER_OVERRIDES_H_
