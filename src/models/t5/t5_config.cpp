#include "models/t5/t5_config.h"

namespace strata {

namespace {
// "relu", "gelu", "gated-gelu", "gated-silu", ...: HF splits at '-' and takes "gated" as the
// only prefix (T5Config.validate_architecture).
void parse_feed_forward_proj(const ConfigFields& f, T5Config& t) {
  const std::string& p = t.feed_forward_proj;
  const size_t dash = p.find('-');
  t.gated = dash != std::string::npos;
  t.activation = t.gated ? p.substr(dash + 1) : p;
  if (t.gated && (p.substr(0, dash) != "gated" || t.activation.find('-') != std::string::npos))
    fail(f.source(), ": feed_forward_proj '", p, "' is not 'ACT' or 'gated-ACT' (e.g. 'relu', 'gated-gelu')");
  if (p == "gated-gelu") t.activation = "gelu_new";  // HF's backward-compatible mapping (T5 v1.1)
  kernels::Activation act;
  if (!kernels::parse_activation(t.activation.c_str(), &act))
    fail(f.source(), ": feed_forward_proj '", p, "': activation '", t.activation,
         "' is not supported; expected relu, gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, swish or tanh, "
         "optionally as 'gated-ACT'");
}
}  // namespace

T5Config parse_t5_fields(const ConfigFields& f) {
  T5Config t;
  t.d_model = f.positive_int_or("d_model", 512);
  t.d_kv = f.positive_int_or("d_kv", 64);
  t.d_ff = f.positive_int_or("d_ff", 2048);
  t.num_heads = f.positive_int_or("num_heads", 8);
  t.num_layers = f.positive_int_or("num_layers", 6);
  t.num_decoder_layers = f.positive_int_or("num_decoder_layers", t.num_layers);
  t.relative_attention_num_buckets = f.positive_int_or("relative_attention_num_buckets", 32);
  t.relative_attention_max_distance = f.positive_int_or("relative_attention_max_distance", 128);
  t.dropout_rate = static_cast<float>(f.num_or("dropout_rate", 0.1));
  t.layer_norm_epsilon = f.num_or("layer_norm_epsilon", 1e-6);
  t.initializer_factor = f.num_or("initializer_factor", 1.0);
  t.feed_forward_proj = f.str_or("feed_forward_proj", "relu");
  parse_feed_forward_proj(f, t);
  t.scale_decoder_outputs =
      f.has("scale_decoder_outputs") ? f.bool_or("scale_decoder_outputs", true) : f.bool_or("tie_word_embeddings", true);
  const int vocab = f.required_int("vocab_size");
  const int pad = f.int_or("pad_token_id", 0);
  t.decoder_start_token_id = f.int_or("decoder_start_token_id", pad);
  t.eos_token_id = f.int_or("eos_token_id", 1);
  if (t.decoder_start_token_id < 0 || t.decoder_start_token_id >= vocab)
    fail(f.source(), ": decoder_start_token_id ", t.decoder_start_token_id, " is outside the vocabulary [0, ", vocab,
         ")");
  // The buckets: half exact, half logarithmic up to max_distance; the encoder's (bidirectional)
  // split them once more by direction, so each half needs one exact bucket and a range to spread over.
  if (t.relative_attention_num_buckets < 4)
    fail(f.source(), ": relative_attention_num_buckets ", t.relative_attention_num_buckets, " must be at least 4");
  if (t.relative_attention_max_distance <= t.relative_attention_num_buckets / 2)
    fail(f.source(), ": relative_attention_max_distance ", t.relative_attention_max_distance,
         " must exceed half of relative_attention_num_buckets (", t.relative_attention_num_buckets, ")");
  return t;
}

T5Config t5_config(const ModelConfig& c) {
  const std::string src = "config.json";
  return parse_t5_fields(ConfigFields(c.raw, src, c.model_type));
}

}  // namespace strata
