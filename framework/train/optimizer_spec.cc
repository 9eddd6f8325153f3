#include "framework/train/optimizer_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {
namespace {

struct NamedGroup {
  ParamRole role;
  const char* field;
};
constexpr NamedGroup kGroups[] = {{ParamRole::kEmbedding, "embedding"},
                                  {ParamRole::kHead, "head"},
                                  {ParamRole::kNorm, "norm"},
                                  {ParamRole::kBias, "bias"},
                                  {ParamRole::kMatrix, "matrix"}};

// The plugin's options unpacked (empty Any = its defaults); errors name the
// field path.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> OptionsOf(const OptimizerSpec& spec) {
  const PluginKind& kind = PluginKindById("optimizer");
  auto prototype = kind.prototype(spec.plugin());
  if (!prototype.ok())
    return absl::Status(prototype.status().code(),
                        absl::StrCat(kind.name_path(), ": ", prototype.status().message()));
  return UnpackOptions(spec.options(), **prototype, spec.plugin(), kind.options_path());
}

}  // namespace

const ParamGroup& GroupOf(const ParamGroups& groups, ParamRole role) {
  switch (role) {
    case ParamRole::kEmbedding: return groups.embedding();
    case ParamRole::kHead: return groups.head();
    case ParamRole::kNorm: return groups.norm();
    case ParamRole::kBias: return groups.bias();
    case ParamRole::kMatrix: return groups.matrix();
  }
  return groups.matrix();
}

void ValidateOptimizerSpec(const OptimizerSpec& spec, Problems* p) {
  if (spec.has_adamw()) {
    p->Add(absl::StrCat("train.optimizer.adamw is the old spelling of plugin \"adamw\" and cannot be "
                        "combined with train.optimizer.plugin \"", spec.plugin(), "\"; give that plugin's "
                        "settings in train.optimizer.options, or drop plugin to use adamw"));
  }
  for (const NamedGroup& g : kGroups) {
    const float m = GroupOf(spec.groups(), g.role).lr_multiplier();
    if (!(m >= 0.0f && std::isfinite(m)))
      p->Add(absl::StrCat("train.optimizer.groups.", g.field, ".lr_multiplier must be a finite number >= 0 (got ",
                          m, "); 1 trains the group at the scheduled rate, 0 freezes it"));
  }
  auto options = OptionsOf(spec);
  if (!options.ok()) {
    p->Add(options.status());
    return;
  }
  const PluginKind& kind = PluginKindById("optimizer");
  absl::Status valid = kind.validate(spec.plugin(), **options, PluginValidationArgs{});
  if (!valid.ok()) p->Add(absl::StrCat(kind.options_path(), " (", spec.plugin(), "): ", valid.message()));
}

LrScale LrScaleOf(std::shared_ptr<const Initializer> init) {
  return [init](const std::string& name, const Shape& shape) {
    return init->LrMultiplier(InitParam{name, shape, RoleOfParameter(name, static_cast<int64_t>(shape.size())),
                                        Init()});
  };
}

std::vector<OptimizerParam> OptimizerParams(const ParamGroups& groups,
                                            const std::vector<std::pair<std::string, Var>>& params,
                                            const LrScale& lr_scale) {
  std::vector<OptimizerParam> out;
  for (const auto& [name, var] : params) {
    const ParamRole role = RoleOfParameter(name, var.rank());
    const ParamGroup& group = GroupOf(groups, role);
    const float scale = lr_scale ? lr_scale(name, var.shape()) : 1.0f;
    out.push_back({name, var, role, group.lr_multiplier() * scale, group.weight_decay()});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Optimizer>> BuildOptimizer(
    const OptimizerSpec& spec, const std::vector<std::pair<std::string, Var>>& params,
    const LrScale& lr_scale) {
  auto options = OptionsOf(spec);
  if (!options.ok()) return options.status();
  auto entry = OptimizerRegistry().Get(spec.plugin());
  if (!entry.ok()) return entry.status();
  OptimizerArgs args;
  args.params = OptimizerParams(spec.groups(), params, lr_scale);
  return (*entry)->create(**options, args);
}

}  // namespace tvlab
