#include "framework/model/model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/core/status_macros.h"
#include "framework/model/attention_options_spec.h"
#include "framework/model/families.h"
#include "framework/model/init_spec.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model_spec.h"
#include "framework/model/value_residual.h"
#include "framework/schema/layer_overrides.h"
#include "google/protobuf/util/message_differencer.h"

namespace tvlab {
namespace {

// The registry entry and unpacked options of the plugin `spec` names for the
// kind `id` of the kind table.
template <typename Entry>
struct Chosen {
  const Entry* entry = nullptr;
  std::shared_ptr<google::protobuf::Message> options;
};

template <typename Entry>
absl::StatusOr<Chosen<Entry>> Choose(const Experiment& spec, const char* id,
                                     const Registry<Entry>& registry) {
  const PluginKind& kind = PluginKindById(id);
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<google::protobuf::Message> options,
                         UnpackPluginOptions(spec, kind));
  TVLAB_ASSIGN_OR_RETURN(const Entry* entry, registry.Get(PluginNameIn(spec, kind)));
  return Chosen<Entry>{entry, std::move(options)};
}

}  // namespace

DecodeState Model::BeginDecoding(const Batch&, bool) const {
  TVLAB_CHECK(false) << "this model family does not generate";
  return {};
}

Var Model::DecodeStep(DecodeState*, const std::vector<int32_t>&, int64_t) const {
  TVLAB_CHECK(false) << "this model family does not generate";
  return Var();
}

void Model::SelectRows(DecodeState* state, const std::vector<int64_t>& rows) {
  for (KvCache& c : state->self_caches)
    if (c.length() > 0) c.SelectRows(rows);
  for (KvCache& c : state->cross_caches)
    if (c.length() > 0) c.SelectRows(rows);
  const int64_t n = static_cast<int64_t>(rows.size());
  if (state->memory.defined()) {
    state->memory = Var(GatherRows(state->memory.value(), rows));  // (n, S, C)
  }
  if (!state->source_lengths.empty()) {
    std::vector<int64_t> lengths;
    for (int64_t r : rows) lengths.push_back(state->source_lengths[r]);
    state->source_lengths = lengths;
  }
  if (!state->history.empty()) {
    std::vector<int32_t> history;
    for (int64_t r : rows)
      history.insert(history.end(), state->history.begin() + r * state->offset,
                     state->history.begin() + (r + 1) * state->offset);
    state->history = history;
  }
  state->batch = n;
}

namespace {

// The factory of one block, from the layer's spec (LayerExperiment). Its
// placement instance is kept in `placements` while the model is built.
// `init` sets the attention logit scale (Initializer::AttentionScale).
absl::StatusOr<BlockFactory> LayerFactory(const Experiment& layer_spec, const ModelSpec& model,
                                          StackRole stack,
                                          const Initializer& init,
                                          std::vector<std::shared_ptr<NormPlacement>>* placements) {
  ModelDims dims = ModelDimsFromSpec(layer_spec.model());
  dims.attention_scale = init.AttentionScale(dims.head_dim);
  TVLAB_ASSIGN_OR_RETURN(auto score, Choose(layer_spec, "attention_score", AttentionScoreRegistry()));
  TVLAB_ASSIGN_OR_RETURN(auto layout, Choose(layer_spec, "attention_layout", AttentionLayoutRegistry()));
  TVLAB_ASSIGN_OR_RETURN(auto norm, Choose(layer_spec, "normalization", NormalizationRegistry()));
  TVLAB_ASSIGN_OR_RETURN(auto placement, Choose(layer_spec, "placement", NormPlacementRegistry()));
  TVLAB_ASSIGN_OR_RETURN(auto ffn, Choose(layer_spec, "ffn", FfnRegistry()));
  PlacementArgs placement_args;
  placement_args.dims = dims;
  placement_args.make_norm = [norm, dims] { return norm.entry->create(*norm.options, dims); };
  placement_args.in_decoder_stack = stack == StackRole::kDecoder && dims.decoder_layers > 0;
  placements->push_back(placement.entry->create(*placement.options, placement_args));

  BlockFactory factory;
  factory.make_layout = [=] { return layout.entry->create(*layout.options, dims); };
  factory.make_score = [=] { return score.entry->create(*score.options, dims); };
  factory.make_ffn = [=] { return ffn.entry->create(*ffn.options, dims); };
  factory.make_norm = placement_args.make_norm;
  factory.placement = placements->back().get();
  factory.window = layer_spec.model().attention().window();
  const AttentionOptions attention_options = AttentionOptionsFromSpec(layer_spec.model().attention());
  if (attention_options.any())
    factory.make_attention_extras = [=] {
      return std::make_unique<AttentionExtras>(attention_options, dims);
    };
  if (!google::protobuf::util::MessageDifferencer::Equals(layer_spec.model().position(), model.position())) {
    TVLAB_ASSIGN_OR_RETURN(auto position, Choose(layer_spec, "position", PositionEncodingRegistry()));
    factory.make_position = [=] { return position.entry->create(*position.options, dims); };
  }
  return factory;
}

// train.activation_checkpointing BLOCK and SELECTIVE rerun each block in
// backward: a block must read nothing from another block (the value
// residual's first-layer values do) and emit no auxiliary output (the rerun
// would emit it again, and the first emission has no tape).
absl::Status CheckCheckpointable(const Experiment& spec, const Model& model) {
  const TrainSpec::ActivationCheckpointing setting = spec.train().activation_checkpointing();
  if (setting == TrainSpec::NONE) return absl::OkStatus();
  const std::string field = "train.activation_checkpointing " + TrainSpec::ActivationCheckpointing_Name(setting);
  if (spec.model().value_residual().enabled())
    return absl::InvalidArgumentError(
        field + " cannot recompute blocks that share the first layer's values "
        "(model.value_residual is on): turn one of them off");
  const std::vector<AuxiliaryDeclaration> auxiliary = model.DeclaredAuxiliaryOutputs();
  if (!auxiliary.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        field, " cannot recompute blocks whose modules emit auxiliary outputs (", auxiliary.front().name,
        auxiliary.size() > 1 ? ", ..." : "", "): set train.activation_checkpointing: NONE for this model"));
  return absl::OkStatus();
}

BlockCheckpointing BlockCheckpointingOf(const TrainSpec& train) {
  switch (train.activation_checkpointing()) {
    case TrainSpec::BLOCK: return BlockCheckpointing::kBlock;
    case TrainSpec::SELECTIVE: return BlockCheckpointing::kSelective;
    default: return BlockCheckpointing::kNone;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Experiment& spec, int64_t vocab_size,
                                                  int64_t output_size) {
  const ModelSpec& m = spec.model();
  if (output_size == 0) output_size = vocab_size;
  std::vector<std::shared_ptr<NormPlacement>> placements;  // alive while blocks are made
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Initializer> init, BuildInitializer(spec));
  StackFactories stacks;
  stacks.head_input_scale = init->HeadInputScale();
  stacks.checkpoint_blocks = BlockCheckpointingOf(spec.train());
  for (StackRole stack : StacksOf(m)) {
    std::vector<BlockFactory>* layers = stack == StackRole::kEncoder ? &stacks.encoder : &stacks.decoder;
    for (int64_t layer = 0; layer < LayersOf(m, stack); ++layer) {
      TVLAB_ASSIGN_OR_RETURN(BlockFactory factory,
                             LayerFactory(LayerExperiment(spec, stack, layer), m, stack, *init, &placements));
      if (m.value_residual().enabled()) {  // value_residual.h
        const bool first = layer == 0;
        const float lambda_init = m.value_residual().lambda_init();
        factory.make_value_residual = [=] { return std::make_unique<ValueResidual>(first, lambda_init); };
      }
      layers->push_back(std::move(factory));
    }
  }
  TVLAB_ASSIGN_OR_RETURN(auto position, Choose(spec, "position", PositionEncodingRegistry()));
  auto position_instance = position.entry->create(*position.options, ModelDimsFromSpec(m));
  std::unique_ptr<Model> model;
  switch (m.family()) {
    case ModelSpec::ENCODER_ONLY:
      model = MakeEncoderOnly(m, vocab_size, output_size, stacks, std::move(position_instance));
      break;
    case ModelSpec::DECODER_ONLY:
      model = MakeDecoderOnly(m, vocab_size, stacks, std::move(position_instance));
      break;
    case ModelSpec::ENCODER_DECODER:
      model = MakeEncoderDecoder(m, vocab_size, stacks, std::move(position_instance));
      break;
    default:
      return absl::InvalidArgumentError("model.family is required");
  }
  InitializeWith(*model, spec.seed(), *init);
  TVLAB_RETURN_IF_ERROR(CheckCheckpointable(spec, *model));
  return model;
}

}  // namespace tvlab
