#include "experiments/mup_coord/coord_check.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/autograd/ops.h"
#include "framework/core/status_macros.h"
#include "framework/model/activation_recorder.h"
#include "framework/model/init_spec.h"
#include "framework/model/model.h"
#include "framework/runtime/apply_runtime.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/gradients.h"
#include "framework/train/optimizer_spec.h"

namespace tvlab {

absl::StatusOr<std::vector<std::pair<std::string, double>>> ActivationRmsAfterTraining(
    const Experiment& base, const std::vector<std::string>& overrides, int64_t width, int64_t steps) {
  std::vector<std::string> all = overrides;
  all.push_back(absl::StrCat("model.d_model=", width));
  std::shared_ptr<const Task> task;
  TVLAB_ASSIGN_OR_RETURN(Experiment spec, ResolveExperiment(base, all, "coord_check", "coord_check", &task));
  TVLAB_RETURN_IF_ERROR(ApplyRuntime(spec.runtime()));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, BuildModel(spec, task->vocab_size(), HeadOutputs(*task)));
  const auto params = model->NamedParameters();
  TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Initializer> init, BuildInitializer(spec));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer,
                         BuildOptimizer(spec.train().optimizer(), params, LrScaleOf(init)));
  const int64_t batch_size = spec.train().batch_size();
  for (int64_t step = 0; step < steps; ++step) {
    ZeroGrads(params);
    const Batch batch = task->TrainBatch(spec.seed(), step, batch_size);
    const Var logits = model->Forward(batch, ForwardContext{true, spec.seed(), step});  // (B, T, V)
    Backward(CrossEntropy(Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}), batch.targets,
                          kIgnoreTarget, 0.0f));
    optimizer->Step(optimizer->lr());  // a constant rate: the check is about the parametrisation
  }
  ActivationRecorder recorder;
  const Batch batch = task->TrainBatch(spec.seed(), steps, batch_size);
  recorder.Record("logits", model->Forward(batch, ForwardContext{}).value());  // (B, T, V)
  return recorder.rms();
}

absl::StatusOr<std::vector<CoordPoint>> RunCoordCheck(const Experiment& base, const std::string& init,
                                                      const std::vector<int64_t>& widths, int64_t steps,
                                                      int64_t seeds, const std::vector<std::string>& overrides) {
  if (widths.empty() || seeds < 1)
    return absl::InvalidArgumentError("the coordinate check needs at least one width and one seed");
  std::vector<std::string> all = overrides;
  all.push_back("model.init.plugin=" + init);
  if (init == "mup") {
    all.push_back(absl::StrCat("model.init.options.base_width=", widths.front()));
    all.push_back("model.init.options.readout_zero_init=true");
  }
  std::vector<CoordPoint> points;
  for (int64_t width : widths) {
    const size_t first = points.size();
    for (int64_t seed = 0; seed < seeds; ++seed) {
      std::vector<std::string> seeded = all;
      seeded.push_back(absl::StrCat("seed=", seed));
      TVLAB_ASSIGN_OR_RETURN(auto rms, ActivationRmsAfterTraining(base, seeded, width, steps));
      for (size_t i = 0; i < rms.size(); ++i) {
        if (seed == 0) points.push_back({init, width, rms[i].first, 0.0});
        points[first + i].rms += rms[i].second / static_cast<double>(seeds);
      }
    }
  }
  return points;
}

double RmsAt(const std::vector<CoordPoint>& points, const std::string& parametrisation, int64_t width,
             const std::string& activation) {
  for (const CoordPoint& p : points)
    if (p.parametrisation == parametrisation && p.width == width && p.activation == activation) return p.rms;
  return 0.0;
}

std::string CoordCheckCsv(const std::vector<CoordPoint>& points) {
  std::string csv = "parametrisation,width,activation,rms\n";
  for (const CoordPoint& p : points)
    absl::StrAppend(&csv, p.parametrisation, ",", p.width, ",", p.activation, ",", absl::StrFormat("%.6g", p.rms),
                    "\n");
  return csv;
}

}  // namespace tvlab
