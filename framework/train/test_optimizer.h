#ifndef TVLAB_FRAMEWORK_TRAIN_TEST_OPTIMIZER_H_
#define TVLAB_FRAMEWORK_TRAIN_TEST_OPTIMIZER_H_

// For the train package's tests: the adamw optimizer plugin with its
// default options and groups over `params` (its library links the plugin).

#include <memory>

#include "framework/core/check.h"
#include "framework/train/checkpoint.h"
#include "framework/train/optimizer_spec.h"

namespace tvlab {

inline std::unique_ptr<Optimizer> MakeAdamW(const NamedVars& params) {
  OptimizerSpec spec;
  spec.set_plugin("adamw");
  auto made = BuildOptimizer(spec, params);
  TVLAB_CHECK(made.ok()) << made.status().message();
  return std::move(*made);
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TEST_OPTIMIZER_H_
