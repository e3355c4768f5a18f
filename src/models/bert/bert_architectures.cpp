// model_type bert, roberta and distilbert: their config.json fields and class names.
#include "models/bert/bert_architectures.h"

#include "models/bert/encoder_model.h"

namespace strata {

namespace {

void parse_bert(const ConfigFields& f, ModelConfig& c) {
  const bool roberta = c.model_type == "roberta";
  c.max_position_embeddings = f.required_int("max_position_embeddings");
  c.hidden_size = f.required_int("hidden_size");
  c.num_layers = f.required_int("num_hidden_layers");
  c.num_heads = f.required_int("num_attention_heads");
  c.intermediate_size = f.required_int("intermediate_size");
  c.hidden_act = f.str_or("hidden_act", "gelu");
  c.hidden_dropout = static_cast<float>(f.num_or("hidden_dropout_prob", 0.1));
  c.attention_dropout = static_cast<float>(f.num_or("attention_probs_dropout_prob", 0.1));
  c.classifier_dropout = static_cast<float>(f.num_or("classifier_dropout", c.hidden_dropout));
  c.type_vocab_size = f.int_or("type_vocab_size", 2);
  c.layer_norm_eps = f.num_or("layer_norm_eps", 1e-12);
  c.pad_token_id = f.int_or("pad_token_id", roberta ? 1 : 0);
  const std::string pe = f.str_or("position_embedding_type", "absolute");
  if (pe != "absolute") fail(f.source(), ": position_embedding_type '", pe, "' is not supported (only 'absolute')");
  if (f.bool_or("is_decoder", false) || f.bool_or("add_cross_attention", false))
    fail(f.source(), ": decoder / cross-attention configurations are not supported (is_decoder must be false)");
  if (c.type_vocab_size < 1) fail(f.source(), ": field 'type_vocab_size' must be >= 1");
  if (roberta) {
    if (c.max_position_embeddings <= c.pad_token_id + 1)
      fail(f.source(), ": max_position_embeddings must exceed pad_token_id + 1 for RoBERTa position ids");
    c.position_offset = c.pad_token_id + 1;
  }
}

void parse_distilbert(const ConfigFields& f, ModelConfig& c) {
  c.max_position_embeddings = f.required_int("max_position_embeddings");
  c.hidden_size = f.required_int("dim");
  c.num_layers = f.required_int("n_layers");
  c.num_heads = f.required_int("n_heads");
  c.intermediate_size = f.required_int("hidden_dim");
  c.hidden_act = f.str_or("activation", "gelu");
  c.hidden_dropout = static_cast<float>(f.num_or("dropout", 0.1));
  c.attention_dropout = static_cast<float>(f.num_or("attention_dropout", 0.1));
  c.classifier_dropout = static_cast<float>(f.num_or("seq_classif_dropout", 0.2));
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-12;  // hard-coded in HF's DistilBERT
  c.pad_token_id = f.int_or("pad_token_id", 0);
  if (f.bool_or("sinusoidal_pos_embds", false))
    fail(f.source(), ": sinusoidal_pos_embds = true is not supported (learned position embeddings only)");
}

template <typename T>
std::unique_ptr<Model<T>> make_encoder(const ModelConfig& c) {
  return std::make_unique<EncoderModel<T>>(c);
}

const std::vector<std::pair<Task, const char*>> kEncoderClasses = {
    {Task::Base, "Model"},
    {Task::SequenceClassification, "ForSequenceClassification"},
    {Task::MaskedLM, "ForMaskedLM"},
    {Task::TokenClassification, "ForTokenClassification"},
    {Task::QuestionAnswering, "ForQuestionAnswering"},
};

}  // namespace

const Architecture kBertArchitecture{"bert",         "Bert",       "bert.",          kEncoderClasses,
                                     parse_bert,     make_encoder<float>, make_encoder<double>, /*tensor_parallel=*/true};
const Architecture kRobertaArchitecture{"roberta",   "Roberta",    "roberta.",       kEncoderClasses,
                                        parse_bert,  make_encoder<float>, make_encoder<double>, /*tensor_parallel=*/true};
const Architecture kDistilBertArchitecture{"distilbert",     "DistilBert", "distilbert.", kEncoderClasses,
                                           parse_distilbert, make_encoder<float>, make_encoder<double>, /*tensor_parallel=*/true};

}  // namespace strata
