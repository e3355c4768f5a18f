// Incremental decoding for text generation: feed each row's tokens, get each row's next-token
// logits. An architecture with a key/value cache gives its own (Model::new_cached_decoder;
// GPT-2: models/gpt2/gpt2_decoder.h), which does O(T) work per new token. The recompute decoder
// runs the whole prefix through Model::infer at every step, O(T^2) per token: it is the
// reference the cached decoders are tested against, and what `use_cache = false` runs.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/model.h"

namespace strata {

template <typename T>
class CausalDecoder {
 public:
  virtual ~CausalDecoder() = default;
  // Starts B empty rows that will hold at most `capacity` positions each (at most the model's
  // max_position_embeddings).
  virtual void reset(int B, int capacity) = 0;
  // Appends n tokens to every row (ids[B*n], row after row, in host memory) and returns the
  // logits of each row's last position [B, V] in host memory (the sampler and beam search read
  // them there; on a GPU one copy per step), valid until the next call. Ids outside the
  // vocabulary, or more positions than the capacity, are errors.
  virtual const T* append(const int32_t* ids, int n) = 0;
  // Row i takes the state of old row rows[i] (rows[B], each in 0..B-1, repeats allowed): what
  // beam search does after each step, when a beam continues from another's prefix. Every piece
  // of per-row state moves (tokens, key/value caches; an encoder-decoder's cross-attention keys
  // too). B and length() stay; logits an earlier append returned are left as they were.
  virtual void reorder(const std::vector<int32_t>& rows) = 0;
  virtual int length() const = 0;  // positions per row so far
};

// A decoder over `model` (which must outlive it and be a causal LM): its cached decoder when
// use_cache and the architecture has one, else the recompute decoder.
template <typename T>
std::unique_ptr<CausalDecoder<T>> make_causal_decoder(const Model<T>& model, bool use_cache);

// A decoder over an encoder-decoder `model` (Task::Seq2SeqLM) for one source sequence (its
// token ids, unpadded): every row reads the source through the encoder and decodes its own
// ids. The caller feeds decoder_start_token_id first. The architecture's cached decoder when
// use_cache and it has one (Model::new_cached_seq2seq_decoder), else the recompute decoder
// (the encoder and the whole prefix at every step).
template <typename T>
std::unique_ptr<CausalDecoder<T>> make_seq2seq_decoder(const Model<T>& model, std::vector<int32_t> source,
                                                     bool use_cache);

// Checks a decoder's input: positions against the capacity, ids against the vocabulary.
// `who` names the decoder in the message.
void check_decoder_input(const char* who, const int32_t* ids, int B, int n, int length, int capacity, int vocab_size);
// Checks reorder's rows: B of them, each a row index.
void check_reorder_rows(const char* who, const std::vector<int32_t>& rows, int B);

}  // namespace strata
