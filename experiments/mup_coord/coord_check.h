#ifndef TVLAB_EXPERIMENTS_MUP_COORD_COORD_CHECK_H_
#define TVLAB_EXPERIMENTS_MUP_COORD_COORD_CHECK_H_

// The µP coordinate check (Yang et al. 2021; the mup package's coord
// check): train a model a few steps at several widths and compare the size
// of its activations. Under µP every activation's root-mean-square stays
// the same as the width grows; under the standard parametrisation (the
// default init) with Adam, the update of a hidden matrix moves each output
// coordinate by about lr * width, so the residual stream grows with width.
//
// The model is the spec `base` (coord_check_base.pbtxt: a two-layer
// decoder on the GPL text, no dropout, no clipping, scale_embeddings
// false, so that the two parametrisations differ only in model.init) with
// model.d_model set to each width (heads fixed: the head size grows) and
// the caller's overrides. After `steps` AdamW steps at the spec's constant
// rate it runs one forward on the next training batch and records the RMS
// of each stack's input, each block's output and the logits.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

struct CoordPoint {
  std::string parametrisation;  // the model.init plugin: "default" (SP) or "mup"
  int64_t width = 0;            // model.d_model
  std::string activation;       // "decoder.input", "decoder.layers.0", ..., "logits"
  double rms = 0;
};

// One width: the RMS of each recorded activation after `steps` steps of the
// spec `base` with `overrides` (--set syntax) and model.d_model = width.
absl::StatusOr<std::vector<std::pair<std::string, double>>> ActivationRmsAfterTraining(
    const Experiment& base, const std::vector<std::string>& overrides, int64_t width, int64_t steps);

// Every width for model.init `init` ("default", or "mup" with
// base_width = widths.front() and readout_zero_init), in order; each RMS
// is the mean over seeds 0 .. seeds - 1 (as the mup package averages its
// coordinate checks over seeds: at width 64 one seed's RMS is off by a few
// percent).
absl::StatusOr<std::vector<CoordPoint>> RunCoordCheck(const Experiment& base, const std::string& init,
                                                      const std::vector<int64_t>& widths, int64_t steps,
                                                      int64_t seeds,
                                                      const std::vector<std::string>& overrides = {});

// The RMS of `activation` at `width` in `points` (0 if absent).
double RmsAt(const std::vector<CoordPoint>& points, const std::string& parametrisation, int64_t width,
             const std::string& activation);

// "parametrisation,width,activation,rms" rows with a header.
std::string CoordCheckCsv(const std::vector<CoordPoint>& points);

// An SVG: one panel per parametrisation, RMS (log scale) against width
// (log scale), one line per activation.
std::string CoordCheckSvg(const std::vector<CoordPoint>& points, int64_t steps);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_MUP_COORD_COORD_CHECK_H_
