// The registry singletons, one per plugin kind. Function-local and never
// destroyed, so static registrars in any translation unit can use them.

#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"

namespace tvlab {

// Each kind's name in messages and its plugins' folder (one sub-folder per
// plugin, named as the plugin; the kind table reads the folder from here).
#define TVLAB_DEFINE_REGISTRY(Fn, Entry, kind, folder)         \
  Registry<Entry>& Fn() {                                      \
    static auto* registry = new Registry<Entry>(kind, folder); \
    return *registry;                                          \
  }

TVLAB_DEFINE_REGISTRY(AttentionScoreRegistry, AttentionScoreEntry, "attention score",
                      "plugins/score")
TVLAB_DEFINE_REGISTRY(AttentionLayoutRegistry, AttentionLayoutEntry, "attention layout",
                      "plugins/attention")
TVLAB_DEFINE_REGISTRY(PositionEncodingRegistry, PositionEncodingEntry, "position encoding",
                      "plugins/position")
TVLAB_DEFINE_REGISTRY(NormalizationRegistry, NormalizationEntry, "normalization", "plugins/norm")
TVLAB_DEFINE_REGISTRY(NormPlacementRegistry, NormPlacementEntry, "norm placement",
                      "plugins/placement")
TVLAB_DEFINE_REGISTRY(FfnRegistry, FfnEntry, "ffn", "plugins/ffn")

#undef TVLAB_DEFINE_REGISTRY

}  // namespace tvlab
