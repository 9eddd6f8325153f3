#include "framework/model/model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/core/status_macros.h"
#include "framework/model/families.h"
#include "framework/spec/spec_loader.h"

namespace tvlab {
namespace {

template <typename Entry>
const Entry* Lookup(const Registry<Entry>& registry, const std::string& name) {
  return *registry.Get(name);  // validated before
}

template <typename Entry>
std::shared_ptr<google::protobuf::Message> Options(const Entry* entry,
                                                   const google::protobuf::Any& any,
                                                   const std::string& plugin,
                                                   const std::string& path) {
  return std::shared_ptr<google::protobuf::Message>(
      *UnpackOptions(any, *entry->default_options, plugin, path));
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
    const int64_t s = state->memory.dim(1), c = state->memory.dim(2);
    Tensor picked = Tensor::Empty({n, s, c});
    for (int64_t i = 0; i < n; ++i)
      std::copy(state->memory.value().data() + rows[i] * s * c,
                state->memory.value().data() + (rows[i] + 1) * s * c, picked.data() + i * s * c);
    state->memory = Var(picked);
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

absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Experiment& spec, int64_t vocab_size,
                                                  int64_t output_size) {
  const ModelSpec& m = spec.model();
  if (output_size == 0) output_size = vocab_size;
  const ModelDims dims = ModelDimsFromSpec(spec);
  const auto& a = m.attention();
  const auto* score = Lookup(AttentionScoreRegistry(), a.score());
  const auto* layout = Lookup(AttentionLayoutRegistry(), a.layout());
  const auto* ffn = Lookup(FfnRegistry(), m.ffn().plugin());
  const auto* norm = Lookup(NormalizationRegistry(), m.norm().plugin());
  const auto* placement = Lookup(NormPlacementRegistry(), m.norm().placement());
  const auto* position = Lookup(PositionEncodingRegistry(), m.position().plugin());

  auto score_options = Options(score, a.score_options(), a.score(), "model.attention.score_options");
  auto layout_options = Options(layout, a.layout_options(), a.layout(), "model.attention.layout_options");
  auto ffn_options = Options(ffn, m.ffn().options(), m.ffn().plugin(), "model.ffn.options");
  auto norm_options = Options(norm, m.norm().options(), m.norm().plugin(), "model.norm.options");
  auto placement_options = Options(placement, m.norm().placement_options(), m.norm().placement(),
                                   "model.norm.placement_options");
  auto position_options = Options(position, m.position().options(), m.position().plugin(),
                                  "model.position.options");

  PlacementArgs placement_args;
  placement_args.dims = dims;
  placement_args.make_norm = [norm, norm_options, dims] { return norm->create(*norm_options, dims); };
  std::shared_ptr<NormPlacement> placement_instance =
      placement->create(*placement_options, placement_args);

  BlockFactory factory;
  factory.make_layout = [=] { return layout->create(*layout_options, dims); };
  factory.make_score = [=] { return score->create(*score_options, dims); };
  factory.make_ffn = [=] { return ffn->create(*ffn_options, dims); };
  factory.make_norm = placement_args.make_norm;
  factory.placement = placement_instance.get();

  auto position_instance = position->create(*position_options, dims);
  std::unique_ptr<Model> model;
  switch (m.family()) {
    case ModelSpec::ENCODER_ONLY:
      model = MakeEncoderOnly(m, vocab_size, output_size, factory, std::move(position_instance));
      break;
    case ModelSpec::DECODER_ONLY:
      model = MakeDecoderOnly(m, vocab_size, factory, std::move(position_instance));
      break;
    case ModelSpec::ENCODER_DECODER:
      model = MakeEncoderDecoder(m, vocab_size, factory, std::move(position_instance));
      break;
    default:
      return absl::InvalidArgumentError("model.family is required");
  }
  InitializeParameters(*model, spec.seed());
  return model;
}

}  // namespace tvlab
