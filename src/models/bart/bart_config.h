// What a BART config.json has beyond the fields every architecture shares (ModelConfig): the
// encoder's and the decoder's own depth, heads and FFN width, activation_dropout,
// scale_embedding and the special token ids the model reads. Parsed from ModelConfig::raw, so
// ModelConfig keeps no encoder-decoder fields; ModelConfig's hidden_size, num_layers, num_heads
// and intermediate_size hold the encoder's (what the memory estimate and `strata info` print).
#pragma once
#include "models/config.h"
#include "models/config_fields.h"

namespace strata {

struct BartConfig {
  int encoder_layers = 12, decoder_layers = 12;
  int encoder_heads = 16, decoder_heads = 16;
  int encoder_ffn = 4096, decoder_ffn = 4096;
  float activation_dropout = 0;
  bool scale_embedding = false;  // multiply token embeddings by sqrt(d_model)
  int eos_token_id = 2;          // sequence classification pools each row's last eos
  int decoder_start_token_id = 2;
};

// BartConfig's names and defaults (transformers' configuration_bart.py); errors name the file.
BartConfig parse_bart_fields(const ConfigFields& f);
BartConfig bart_config(const ModelConfig& c);  // from c.raw

}  // namespace strata
