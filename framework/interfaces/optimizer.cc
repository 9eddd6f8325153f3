#include "framework/interfaces/optimizer.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace tvlab {

const char* ParamRoleName(ParamRole role) {
  switch (role) {
    case ParamRole::kEmbedding: return "embedding";
    case ParamRole::kHead: return "head";
    case ParamRole::kNorm: return "norm";
    case ParamRole::kBias: return "bias";
    case ParamRole::kMatrix: return "matrix";
  }
  return "matrix";
}

ParamRole RoleOfParameter(const std::string& name, int64_t rank) {
  if (rank < 2) return absl::StrContains(name, "norm") ? ParamRole::kNorm : ParamRole::kBias;
  if (absl::StrContains(name, "embedding") || absl::StartsWith(name, "position."))
    return ParamRole::kEmbedding;
  if (absl::StartsWith(name, "head.")) return ParamRole::kHead;
  return ParamRole::kMatrix;
}

std::vector<float> DistinctLrMultipliers(const std::vector<OptimizerParam>& params) {
  std::vector<float> multipliers;
  for (const OptimizerParam& p : params)
    if (std::find(multipliers.begin(), multipliers.end(), p.lr_multiplier) == multipliers.end())
      multipliers.push_back(p.lr_multiplier);
  return multipliers;
}

int64_t OptimizerStateBytes(const Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& [name, state] : optimizer.StateTensors())
    bytes += state.value().numel() * static_cast<int64_t>(sizeof(float));
  return bytes;
}

Registry<OptimizerEntry>& OptimizerRegistry() {
  static auto* registry = new Registry<OptimizerEntry>("optimizer", "plugins/optimizer");
  return *registry;
}

}  // namespace tvlab
