// model_type albert: its config.json fields (AlbertConfig's defaults where a field is absent)
// and class names.
#include "models/albert/albert_architecture.h"

#include "models/albert/albert_model.h"

namespace strata {

namespace {

void parse_albert(const ConfigFields& f, ModelConfig& c) {
  c.max_position_embeddings = f.positive_int_or("max_position_embeddings", 512);
  c.hidden_size = f.required_int("hidden_size");
  c.embedding_size = f.positive_int_or("embedding_size", 128);
  c.num_layers = f.required_int("num_hidden_layers");
  c.num_hidden_groups = f.positive_int_or("num_hidden_groups", 1);
  c.inner_group_num = f.positive_int_or("inner_group_num", 1);
  c.num_heads = f.required_int("num_attention_heads");
  c.intermediate_size = f.required_int("intermediate_size");
  c.hidden_act = f.str_or("hidden_act", "gelu_new");
  c.hidden_dropout = static_cast<float>(f.num_or("hidden_dropout_prob", 0.0));
  c.attention_dropout = static_cast<float>(f.num_or("attention_probs_dropout_prob", 0.0));
  // AlbertConfig's default is 0.1; an explicit null makes the token-classification head fall
  // back to hidden_dropout_prob (the other heads would fail in HF).
  const bool null_classifier_dropout = c.raw.contains("classifier_dropout_prob") && c.raw["classifier_dropout_prob"].is_null();
  c.classifier_dropout =
      null_classifier_dropout ? c.hidden_dropout : static_cast<float>(f.num_or("classifier_dropout_prob", 0.1));
  c.type_vocab_size = f.positive_int_or("type_vocab_size", 2);
  c.layer_norm_eps = f.num_or("layer_norm_eps", 1e-12);
  c.pad_token_id = f.int_or("pad_token_id", 0);
  const std::string pe = f.str_or("position_embedding_type", "absolute");
  if (pe != "absolute") fail(f.source(), ": position_embedding_type '", pe, "' is not supported (only 'absolute')");
  if (c.num_layers % c.num_hidden_groups != 0)
    fail(f.source(), ": num_hidden_layers (", c.num_layers, ") is not divisible by num_hidden_groups (",
         c.num_hidden_groups, "); ALBERT shares each group over num_hidden_layers / num_hidden_groups consecutive "
         "layers, so it must be a whole number");
}

template <typename T>
std::unique_ptr<Model<T>> make_albert(const ModelConfig& c) {
  return std::make_unique<AlbertModel<T>>(c);
}

}  // namespace

const Architecture kAlbertArchitecture{"albert",
                                       "Albert",
                                       "albert.",
                                       {
                                           {Task::Base, "Model"},
                                           {Task::SequenceClassification, "ForSequenceClassification"},
                                           {Task::MaskedLM, "ForMaskedLM"},
                                           {Task::TokenClassification, "ForTokenClassification"},
                                           {Task::QuestionAnswering, "ForQuestionAnswering"},
                                           {Task::PreTraining, "ForPreTraining"},
                                       },
                                       parse_albert,
                                       make_albert<float>,
                                       make_albert<double>};

}  // namespace strata
