#ifndef TVLAB_FRAMEWORK_INTERFACES_MODEL_DIMS_H_
#define TVLAB_FRAMEWORK_INTERFACES_MODEL_DIMS_H_

#include <cstdint>

namespace tvlab {

// The model-wide sizes every plugin is built and validated against.
struct ModelDims {
  int64_t d_model = 0;      // C
  int64_t num_heads = 0;    // H
  int64_t head_dim = 0;     // hs = C / H
  int64_t d_ff = 0;         // F; 0 = the FFN plugin's own rule
  int64_t num_layers = 0;   // L
  int64_t max_seq_len = 0;  // longest T the model will see
  float dropout = 0.0f;
  bool bias = true;
  bool causal = false;      // self-attention masks future positions
  // Layers of the causal decoder stack of an ENCODER_DECODER model, whose
  // encoder has num_layers; 0 for the one-stack families.
  int64_t decoder_layers = 0;
  // The attention logit scale when the init plugin's parametrisation sets
  // one (µP: ~1/hs, framework/interfaces/init.h); 0 = the score's own
  // (scaled_dot_product: 1/sqrt(hs)).
  float attention_scale = 0.0f;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_INTERFACES_MODEL_DIMS_H_
