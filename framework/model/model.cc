#include "framework/model/model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/core/status_macros.h"
#include "framework/model/attention_core.h"
#include "framework/model/encoder_stack.h"
#include "framework/spec/spec_loader.h"

namespace tvlab {
namespace {

// Encoder-only: bidirectional self-attention over the whole input, a linear
// head per position (token tagging, e.g. sorting).
class EncoderOnlyModel : public Model {
 public:
  EncoderOnlyModel(const ModelSpec& spec, int64_t vocab, const BlockFactory& factory,
                   std::unique_ptr<PositionEncoding> position)
      : d_model_(spec.d_model()), scale_embeddings_(spec.scale_embeddings()) {
    embedding_ = AddChild("embedding", std::make_unique<nn::Embedding>(vocab, spec.d_model()));
    position_ = AddChild("position", std::move(position));
    encoder_ = AddChild("encoder",
                        std::make_unique<EncoderStack>(factory, spec.num_layers(), spec.dropout()));
    head_ = AddChild("head", std::make_unique<nn::Linear>(spec.d_model(), vocab));
  }

  Var Forward(const Batch& batch, const ForwardContext& ctx,
              const AttentionProbe* probe) const override {
    Var x = embedding_->Forward(batch.inputs, batch.batch, batch.length);  // (B, T, C)
    if (scale_embeddings_) x = Scale(x, std::sqrt(static_cast<float>(d_model_)));
    x = position_->AddToEmbeddings(x, 0);
    Tensor mask;  // bidirectional: only padding is hidden
    if (!batch.lengths.empty()) mask = KeyPaddingMaskBias(batch.lengths, batch.length, batch.length, Tensor());
    Var h = encoder_->Forward(x, mask, position_, ctx, probe);  // (B, T, C)
    return head_->Forward(h);                                   // (B, T, V)
  }

  int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const override {
    return encoder_->KvCacheBytesPerToken(bytes_per_element);
  }

 private:
  int64_t d_model_;
  bool scale_embeddings_;
  nn::Embedding* embedding_;
  PositionEncoding* position_;
  EncoderStack* encoder_;
  nn::Linear* head_;
};

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

absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Experiment& spec, int64_t vocab_size) {
  const ModelSpec& m = spec.model();
  if (m.family() != ModelSpec::ENCODER_ONLY) {
    return absl::UnimplementedError(absl::StrCat(
        "model.family ", ModelSpec::Family_Name(m.family()), " is not available yet"));
  }
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

  auto model = std::make_unique<EncoderOnlyModel>(m, vocab_size, factory,
                                                  position->create(*position_options, dims));
  InitializeParameters(*model, spec.seed());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace tvlab
