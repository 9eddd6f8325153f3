// The registry singletons, one per plugin kind. Function-local and never
// destroyed, so static registrars in any translation unit can use them.

#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/ffn.h"
#include "framework/interfaces/norm_placement.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/position_encoding.h"

namespace tvlab {

#define TVLAB_DEFINE_REGISTRY(Fn, Entry, kind) \
  Registry<Entry>& Fn() {                      \
    static auto* registry = new Registry<Entry>(kind); \
    return *registry;                          \
  }

TVLAB_DEFINE_REGISTRY(AttentionScoreRegistry, AttentionScoreEntry, "attention score")
TVLAB_DEFINE_REGISTRY(AttentionLayoutRegistry, AttentionLayoutEntry, "attention layout")
TVLAB_DEFINE_REGISTRY(PositionEncodingRegistry, PositionEncodingEntry, "position encoding")
TVLAB_DEFINE_REGISTRY(NormalizationRegistry, NormalizationEntry, "normalization")
TVLAB_DEFINE_REGISTRY(NormPlacementRegistry, NormPlacementEntry, "norm placement")
TVLAB_DEFINE_REGISTRY(FfnRegistry, FfnEntry, "ffn")

#undef TVLAB_DEFINE_REGISTRY

}  // namespace tvlab
