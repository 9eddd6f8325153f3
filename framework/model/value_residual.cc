#include "framework/model/value_residual.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/schema/layer_overrides.h"
#include "google/protobuf/util/message_differencer.h"

namespace tvlab {

ValueResidual::ValueResidual(bool first_layer, float lambda_init) {
  if (!first_layer) lambda_ = AddParameter("lambda", {1}, Init::Constant(lambda_init));
}

Var ValueResidual::Mix(const Var& v, ValueResidualState* state) const {
  if (!lambda_.defined()) {
    state->first = v;  // (B, G, S_new, hs)
    return v;
  }
  TVLAB_CHECK(state->first.defined() && state->first.shape() == v.shape())
      << "the value residual needs the first layer's values of the same shape";
  return Add(v, Mul(lambda_, Sub(state->first, v)));  // (B, G, S_new, hs)
}

namespace {

std::string FixHint() {
  return "use layout mha, gqa or mqa in every layer, or remove model.value_residual";
}

}  // namespace

void ValidateValueResidual(const Experiment& spec, Problems* problems) {
  const ValueResidualSpec& vr = spec.model().value_residual();
  if (!vr.enabled()) return;
  if (!std::isfinite(vr.lambda_init()))
    problems->Add(absl::StrCat("model.value_residual.lambda_init must be finite (got ",
                               vr.lambda_init(), "), e.g. 0.5"));
  const PluginKind& layouts = PluginKindById("attention_layout");
  for (StackRole stack : StacksOf(spec.model())) {
    const AttentionSpec first = LayerExperiment(spec, stack, 0).model().attention();
    for (int64_t layer = 0; layer < LayersOf(spec.model(), stack); ++layer) {
      const Experiment layer_spec = LayerExperiment(spec, stack, layer);
      const AttentionSpec& attention = layer_spec.model().attention();
      const std::string layout = PluginNameIn(layer_spec, layouts);
      if (!(layouts.capabilities(layout) & kAttendsOnceWithNewValues)) {
        problems->Add(absl::StrCat(
            "model.value_residual.enabled: ", LayerName(stack, layer), " has attention layout '",
            layout, "', which does not attend once over the new tokens' values (MLA caches a "
            "latent, differential attends twice), so its values cannot be mixed; ", FixHint()));
        return;
      }
      using google::protobuf::util::MessageDifferencer;
      if (attention.layout() != first.layout() ||
          !MessageDifferencer::Equals(attention.layout_options(), first.layout_options())) {
        problems->Add(absl::StrCat(
            "model.value_residual.enabled: ", LayerName(stack, layer), " overrides the attention "
            "layout or its options (model.layer_overrides), so its values need not have the first "
            "layer's shape; give every layer of the stack one layout, or remove "
            "model.value_residual"));
        return;
      }
    }
  }
}

}  // namespace tvlab
