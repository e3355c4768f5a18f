// model_type bart. BartForConditionalGeneration is strata's sequence-to-sequence task for bart
// (HF's AutoModelForSeq2SeqLM): labels are the targets, of their own length, and the decoder
// reads them shifted right. Denoising (HF's AutoModelForMaskedLM also maps bart to it) is the
// same task with the clean text as the targets.
#include "models/bart/bart_architecture.h"

#include "models/bart/bart_config.h"
#include "models/bart/bart_model.h"

namespace strata {

namespace {

void parse_bart(const ConfigFields& f, ModelConfig& c) {
  const BartConfig b = parse_bart_fields(f);
  c.hidden_size = f.positive_int_or("d_model", 1024);
  c.num_layers = b.encoder_layers;
  c.decoder_layers = b.decoder_layers;
  c.num_heads = b.encoder_heads;
  c.intermediate_size = b.encoder_ffn;
  c.max_position_embeddings = f.positive_int_or("max_position_embeddings", 1024);
  c.hidden_act = f.str_or("activation_function", "gelu");
  c.hidden_dropout = static_cast<float>(f.num_or("dropout", 0.1));
  c.attention_dropout = static_cast<float>(f.num_or("attention_dropout", 0.0));
  c.classifier_dropout = static_cast<float>(f.num_or("classifier_dropout", 0.0));
  c.initializer_range = f.num_or("init_std", 0.02);
  c.layer_norm_eps = 1e-5;  // nn.LayerNorm's default: BartConfig has no field for it
  c.type_vocab_size = 0;
  c.pad_token_id = f.int_or("pad_token_id", 1);
  if (c.pad_token_id < 0)
    fail(f.source(), ": BART needs a pad_token_id (the decoder's inputs are the labels shifted right, -100 "
         "replaced by it)");
}

template <typename T>
std::unique_ptr<Model<T>> make_bart(const ModelConfig& c) {
  return std::make_unique<BartModel<T>>(c);
}

}  // namespace

const Architecture kBartArchitecture{"bart",
                                     "Bart",
                                     "model.",
                                     {{Task::Base, "Model"},
                                      {Task::Seq2SeqLM, "ForConditionalGeneration"},
                                      {Task::SequenceClassification, "ForSequenceClassification"}},
                                     parse_bart,
                                     make_bart<float>,
                                     make_bart<double>,
                                     /*tensor_parallel=*/true};

}  // namespace strata
