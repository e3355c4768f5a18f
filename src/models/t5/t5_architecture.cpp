// model_type t5. T5ForConditionalGeneration is strata's sequence-to-sequence task for t5 (HF's
// AutoModelForSeq2SeqLM): labels are the targets, of their own length, and the decoder reads them
// shifted right. The task models keep the base model's names at the top level (shared.weight,
// encoder.*, decoder.*), so the base prefix is empty and T5Model's checkpoints load into either.
#include "models/t5/t5_architecture.h"

#include <climits>

#include "models/t5/t5_config.h"
#include "models/t5/t5_model.h"

namespace strata {

namespace {

void parse_t5(const ConfigFields& f, ModelConfig& c) {
  const T5Config t = parse_t5_fields(f);
  c.hidden_size = t.d_model;
  c.num_layers = t.num_layers;
  c.decoder_layers = t.num_decoder_layers;
  c.num_heads = t.num_heads;
  c.head_width = t.d_kv;  // num_heads * d_kv need not be d_model
  c.intermediate_size = t.d_ff;
  // Relative positions only: no table limits the length (HF's n_positions is not enforced either).
  c.max_position_embeddings = INT_MAX;
  c.hidden_act = t.activation;
  c.hidden_dropout = t.dropout_rate;
  c.attention_dropout = t.dropout_rate;
  c.classifier_dropout = static_cast<float>(f.num_or("classifier_dropout", 0.0));
  c.initializer_range = t.initializer_factor;  // the shared table's std (HF: factor * 1.0)
  c.layer_norm_eps = t.layer_norm_epsilon;
  c.type_vocab_size = 0;
  c.pad_token_id = f.int_or("pad_token_id", 0);
  if (c.pad_token_id < 0)
    fail(f.source(), ": T5 needs a pad_token_id (the decoder's inputs are the labels shifted right, -100 "
         "replaced by it)");
}

template <typename T>
std::unique_ptr<Model<T>> make_t5(const ModelConfig& c) {
  return std::make_unique<T5Model<T>>(c);
}

}  // namespace

const Architecture kT5Architecture{"t5",
                                   "T5",
                                   "",
                                   {{Task::Base, "Model"}, {Task::Seq2SeqLM, "ForConditionalGeneration"}},
                                   parse_t5,
                                   make_t5<float>,
                                   make_t5<double>,
                                   /*tensor_parallel=*/true};

}  // namespace strata
