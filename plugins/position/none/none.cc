// No position encoding: every hook is the identity. Without positions
// self-attention is permutation-equivariant, so an encoder cannot tell which
// slot it is filling (seed lesson 000: sorting fails, token accuracy ~0.30).
//
// Example config (configs/sort_digits_no_position.pbtxt):
//   position { plugin: "none" }

#include "framework/interfaces/position_encoding.h"
#include "plugins/position/none/none.pb.h"

namespace tvlab {
namespace {

class NoPosition : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kFusablePosition;
  static std::unique_ptr<PositionEncoding> Create(const NoPositionOptions&, const ModelDims&) {
    return std::make_unique<NoPosition>();
  }

  // No logit bias: the fused attention kernel may run (attend.h).
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
  bool LeavesQueriesAndKeysAlone() const override { return true; }
};

TVLAB_REGISTER_POSITION_ENCODING("none", NoPosition, NoPositionOptions);

}  // namespace
}  // namespace tvlab
