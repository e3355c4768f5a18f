#include "models/bart/bart_config.h"

namespace strata {

BartConfig parse_bart_fields(const ConfigFields& f) {
  BartConfig b;
  b.encoder_layers = f.positive_int_or("encoder_layers", 12);
  b.decoder_layers = f.positive_int_or("decoder_layers", 12);
  b.encoder_heads = f.positive_int_or("encoder_attention_heads", 16);
  b.decoder_heads = f.positive_int_or("decoder_attention_heads", 16);
  b.encoder_ffn = f.positive_int_or("encoder_ffn_dim", 4096);
  b.decoder_ffn = f.positive_int_or("decoder_ffn_dim", 4096);
  b.activation_dropout = static_cast<float>(f.num_or("activation_dropout", 0.0));
  b.scale_embedding = f.bool_or("scale_embedding", false);
  b.eos_token_id = f.int_or("eos_token_id", 2);
  b.decoder_start_token_id = f.int_or("decoder_start_token_id", 2);
  const int d_model = f.positive_int_or("d_model", 1024);
  if (d_model % b.decoder_heads != 0)
    fail(f.source(), ": d_model ", d_model, " is not divisible by decoder_attention_heads ", b.decoder_heads);
  const int vocab = f.required_int("vocab_size");
  if (b.decoder_start_token_id < 0 || b.decoder_start_token_id >= vocab)
    fail(f.source(), ": decoder_start_token_id ", b.decoder_start_token_id, " is outside the vocabulary [0, ", vocab,
         ")");
  // HF's layerdrop skips whole layers at random in training; strata runs every layer
  if (f.num_or("encoder_layerdrop", 0.0) != 0 || f.num_or("decoder_layerdrop", 0.0) != 0)
    fail(f.source(), ": encoder_layerdrop / decoder_layerdrop > 0 is not supported; set them to 0");
  return b;
}

BartConfig bart_config(const ModelConfig& c) {
  const std::string src = "config.json";
  return parse_bart_fields(ConfigFields(c.raw, src, c.model_type));
}

}  // namespace strata
