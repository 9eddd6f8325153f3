#include "framework/limits/optimizer_state_estimate.h"

#include <memory>
#include <string>

#include "framework/interfaces/optimizer.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {

double OptimizerStateFloatsPerParameter(const OptimizerSpec& spec) {
  constexpr double kAdamW = 2.0;
  constexpr int64_t kProbe = 16;
  const std::string name = spec.plugin().empty() ? "adamw" : spec.plugin();
  const PluginKind& kind = PluginKindById("optimizer");
  auto prototype = kind.prototype(name);
  auto entry = OptimizerRegistry().Get(name);
  if (!prototype.ok() || !entry.ok()) return kAdamW;  // validation refuses the spec
  auto options = UnpackOptions(spec.options(), **prototype, name, kind.options_path());
  if (!options.ok() || !(*entry)->validate(**options, OptimizerArgs{}).ok()) return kAdamW;
  OptimizerArgs args;
  args.params.push_back({"probe.weight", Var(Tensor::Zeros({kProbe, kProbe}), true), ParamRole::kMatrix});  // (16, 16)
  args.params.push_back({"probe.norm.weight", Var(Tensor::Zeros({kProbe}), true), ParamRole::kNorm});    // (16)
  const std::unique_ptr<Optimizer> probe = (*entry)->create(**options, args);
  const double floats = static_cast<double>(OptimizerStateBytes(*probe)) / sizeof(float);
  return floats / static_cast<double>(kProbe * kProbe + kProbe);
}

}  // namespace tvlab
