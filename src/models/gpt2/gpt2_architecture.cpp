// model_type gpt2: its config.json fields (GPT2Config names and defaults) and class names.
#include "models/gpt2/gpt2_architecture.h"

#include "models/gpt2/gpt2_model.h"

namespace strata {

namespace {

void parse_gpt2(const ConfigFields& f, ModelConfig& c) {
  c.max_position_embeddings = f.positive_int_or("n_positions", 1024);
  c.hidden_size = f.positive_int_or("n_embd", 768);
  c.num_layers = f.positive_int_or("n_layer", 12);
  c.num_heads = f.positive_int_or("n_head", 12);
  c.intermediate_size = f.positive_int_or("n_inner", 4 * c.hidden_size);  // null: 4 * n_embd
  c.hidden_act = f.str_or("activation_function", "gelu_new");
  c.hidden_dropout = static_cast<float>(f.num_or("resid_pdrop", 0.1));
  c.embedding_dropout = static_cast<float>(f.num_or("embd_pdrop", 0.1));
  c.attention_dropout = static_cast<float>(f.num_or("attn_pdrop", 0.1));
  // GPT2ForTokenClassification: classifier_dropout if set, else 0.1 (GPT2Config has no hidden_dropout).
  c.classifier_dropout = static_cast<float>(f.num_or("classifier_dropout", 0.1));
  c.layer_norm_eps = f.num_or("layer_norm_epsilon", 1e-5);
  c.type_vocab_size = 0;
  c.pad_token_id = f.int_or("pad_token_id", -1);  // GPT-2 has none unless config.json sets one
  c.scale_attn_weights = f.bool_or("scale_attn_weights", true);
  if (f.bool_or("add_cross_attention", false))
    fail(f.source(), ": add_cross_attention = true is not supported (GPT-2 with cross-attention is an encoder-decoder "
         "component; strata trains the decoder-only GPT-2). Set it to false");
  if (f.bool_or("scale_attn_by_inverse_layer_idx", false))
    fail(f.source(), ": scale_attn_by_inverse_layer_idx = true is not supported; set it to false");
  if (f.bool_or("reorder_and_upcast_attn", false))
    fail(f.source(), ": reorder_and_upcast_attn = true is not supported; set it to false");
}

template <typename T>
std::unique_ptr<Model<T>> make_gpt2(const ModelConfig& c) {
  return std::make_unique<Gpt2Model<T>>(c);
}

}  // namespace

const Architecture kGpt2Architecture{"gpt2",
                                     "GPT2",
                                     "transformer.",
                                     {{Task::Base, "Model"},
                                      {Task::CausalLM, "LMHeadModel"},
                                      {Task::SequenceClassification, "ForSequenceClassification"},
                                      {Task::TokenClassification, "ForTokenClassification"}},
                                     parse_gpt2,
                                     make_gpt2<float>,
                                     make_gpt2<double>,
                                     /*tensor_parallel=*/true};

}  // namespace strata
