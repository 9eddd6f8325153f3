#include "plugins/placement/deepnorm/deepnet_constants.h"

#include <cmath>

namespace tvlab {

DeepnetConstants DeepnetConstantsFor(int64_t num_layers, int64_t decoder_layers, bool in_decoder_stack) {
  const double n = static_cast<double>(num_layers);
  const double m = static_cast<double>(decoder_layers);
  if (m == 0) return {std::pow(2.0 * n, 0.25), std::pow(8.0 * n, -0.25)};
  if (in_decoder_stack) return {std::pow(3.0 * m, 0.25), std::pow(12.0 * m, -0.25)};
  const double depth = std::pow(n, 4.0) * m;
  return {0.81 * std::pow(depth, 1.0 / 16.0), 0.87 * std::pow(depth, -1.0 / 16.0)};
}

}  // namespace tvlab
