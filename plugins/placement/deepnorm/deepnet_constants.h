#ifndef TVLAB_PLUGINS_PLACEMENT_DEEPNORM_DEEPNET_CONSTANTS_H_
#define TVLAB_PLUGINS_PLACEMENT_DEEPNORM_DEEPNET_CONSTANTS_H_

// DeepNet's alpha and beta (Wang et al. 2022, "DeepNet: Scaling
// Transformers to 1,000 Layers", arXiv 2203.00555, table 1), the one place
// both the deepnorm placement (alpha on the residual; beta as its
// scale_init gain) and the deepnorm init plugin (beta as the Xavier gain)
// read them. N encoder layers, M decoder layers (torchscale's
// encoder_layers / decoder_layers, the same constants):
//   one stack (decoder-only or encoder-only, N = model.num_layers):
//                                    alpha = (2N)^(1/4),          beta = (8N)^(-1/4)
//   encoder-decoder, encoder stack:  alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16)
//   encoder-decoder, decoder stack:  alpha = (3M)^(1/4),          beta = (12M)^(-1/4)
// Registers nothing: linking it adds no plugin.

#include <cstdint>

namespace tvlab {

struct DeepnetConstants {
  double alpha = 1.0;
  double beta = 1.0;
};

// The constants of one stack: `num_layers` = N (model.num_layers),
// `decoder_layers` = M (model.num_decoder_layers of an ENCODER_DECODER
// model; 0 for the one-stack families), `in_decoder_stack` whether the stack
// is that decoder. REQUIRES: num_layers > 0.
DeepnetConstants DeepnetConstantsFor(int64_t num_layers, int64_t decoder_layers, bool in_decoder_stack);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_PLACEMENT_DEEPNORM_DEEPNET_CONSTANTS_H_
