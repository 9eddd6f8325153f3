// parity_dump kind=optimizer: `steps` steps of an optimizer plugin over five
// parameters, one of each role, with seeded gradients, on the reference
// backend:
//   parity_dump kind=optimizer plugin=adamw options='weight_decay: 0.1'
//               steps=10 multipliers=1,0.5,1,2,1 decay=1,1,0,0,1 out=...
// multipliers and decay list the groups embedding, head, norm, bias, matrix
// (lr_multiplier, weight_decay 0/1). Every step runs at the options' lr.
// Writes role/<name> (one value: 0 embedding .. 4 matrix), param/<name>
// (the start, U(-1, 1)), and for each step s (1-based) grad/<s>/<name>
// (U(-1, 1)) and after/<s>/<name> (the parameters after it).

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/backend/backend_registry.h"
#include "framework/interfaces/optimizer.h"
#include "framework/testing/parity_dump.h"
#include "framework/testing/plugin_test_util.h"

namespace tvlab {
namespace {

absl::StatusOr<std::vector<float>> FiveNumbers(const ParityArgs& args, const std::string& key) {
  std::vector<float> values;
  for (absl::string_view part : absl::StrSplit(args.count(key) ? args.at(key) : "1,1,1,1,1", ',')) {
    float v = 0;
    if (!absl::SimpleAtof(part, &v)) return absl::InvalidArgumentError(key + " must be 5 comma-separated numbers");
    values.push_back(v);
  }
  if (values.size() != 5) return absl::InvalidArgumentError(key + " must list the 5 groups");
  return values;
}

}  // namespace

absl::Status DumpOptimizer(const ParityArgs& args, std::ostream& out) {
  ScopedBackend reference("reference");
  auto steps = IntegerArg(args, "steps");
  auto multipliers = FiveNumbers(args, "multipliers");
  auto decay = FiveNumbers(args, "decay");
  if (!steps.ok()) return steps.status();
  if (!multipliers.ok()) return multipliers.status();
  if (!decay.ok()) return decay.status();
  const std::vector<std::pair<std::string, Shape>> shapes = {{"embedding.weight", {5, 8}},
                                                             {"head.weight", {3, 8}},
                                                             {"layers.0.norm.weight", {8}},
                                                             {"layers.0.ffn.w_1.bias", {6}},
                                                             {"layers.0.ffn.w_1.weight", {6, 8}}};
  OptimizerArgs optimizer_args;
  uint64_t salt = 100;
  for (const auto& [name, shape] : shapes) {
    Var param(RandomTensor(shape, salt++), /*requires_grad=*/true);
    const ParamRole role = RoleOfParameter(name, param.rank());
    const int group = static_cast<int>(role);  // embedding, head, norm, bias, matrix
    optimizer_args.params.push_back({name, param, role, (*multipliers)[group], (*decay)[group] != 0});
    WriteTensor(out, "role/" + name, Tensor::Scalar(static_cast<float>(group)));
    WriteTensor(out, "param/" + name, param.value());
  }
  auto optimizer = BuildPlugin(OptimizerRegistry(), args.at("plugin"), args.at("options"), optimizer_args);
  if (!optimizer.ok()) return optimizer.status();
  for (int64_t s = 1; s <= *steps; ++s) {
    for (OptimizerParam& p : optimizer_args.params) {
      p.param.mutable_grad() = RandomTensor(p.param.shape(), 1000 * s + salt++);
      WriteTensor(out, absl::StrCat("grad/", s, "/", p.name), p.param.grad());
    }
    (*optimizer)->Step((*optimizer)->lr());
    for (const OptimizerParam& p : optimizer_args.params)
      WriteTensor(out, absl::StrCat("after/", s, "/", p.name), p.param.value());
  }
  return absl::OkStatus();
}

}  // namespace tvlab
