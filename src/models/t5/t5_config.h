// What a T5 config.json has beyond the fields every architecture shares (ModelConfig), with
// T5Config's names and defaults (transformers' configuration_t5.py): the per-head width d_kv,
// the decoder's depth, the relative-position buckets, the feed-forward kind and how the LM head
// relates to the shared embedding. Parsed from ModelConfig::raw; ModelConfig's hidden_size,
// num_layers, num_heads and intermediate_size hold d_model, the encoder's num_layers, num_heads
// and d_ff.
#pragma once
#include <string>

#include "kernels/ops.h"
#include "models/config.h"
#include "models/config_fields.h"

namespace strata {

struct T5Config {
  int d_model = 512, d_kv = 64, d_ff = 2048, num_heads = 8;
  int num_layers = 6, num_decoder_layers = 6;
  int relative_attention_num_buckets = 32, relative_attention_max_distance = 128;
  float dropout_rate = 0.1f;
  double layer_norm_epsilon = 1e-6;
  double initializer_factor = 1.0;
  // feed_forward_proj "ACT" or "gated-ACT": the activation's HF name and whether wi_0's
  // activation is gated by wi_1 ("gated-gelu" means gelu_new, as HF maps it).
  std::string feed_forward_proj = "relu";
  std::string activation = "relu";
  bool gated = false;
  // The original T5 ties the LM head to the shared embedding and scales the decoder's output by
  // d_model^-0.5 before it; T5 v1.1, flan-t5 and mT5 (tie_word_embeddings false) have an
  // lm_head.weight of their own and no scaling. transformers 5 writes the scaling as
  // scale_decoder_outputs (and tie_word_embeddings true whatever the weights); strata reads it
  // first, then tie_word_embeddings, and builds a separate LM head exactly when there is no scaling.
  bool scale_decoder_outputs = true;
  int decoder_start_token_id = 0;  // T5: the pad token
  int eos_token_id = 1;
};

// T5Config's names and defaults; errors name the file and the field.
T5Config parse_t5_fields(const ConfigFields& f);
T5Config t5_config(const ModelConfig& c);  // from c.raw

}  // namespace strata
