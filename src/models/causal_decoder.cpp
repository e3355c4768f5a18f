#include "models/causal_decoder.h"

#include <vector>

#include "kernels/ops.h"
#include "util/error.h"

namespace strata {

namespace {

// Keeps every row's ids and runs Model::infer over all of them at each step. With a source
// (an encoder-decoder), every row reads it through the encoder and the ids are the decoder's.
template <typename T>
class RecomputeDecoder final : public CausalDecoder<T> {
 public:
  explicit RecomputeDecoder(const Model<T>& m, std::vector<int32_t> source = {})
      : m_(m), state_(m.new_state()), source_(std::move(source)) {}

  void reset(int B, int capacity) override {
    STRATA_CHECK(B > 0 && capacity > 0 && capacity <= m_.config().max_position_embeddings,
                 "[recompute decoder] capacity ", capacity, " must be in 1..", m_.config().max_position_embeddings,
                 " (max_position_embeddings) with B = ", B, " > 0");
    rows_.assign(static_cast<size_t>(B), {});
    capacity_ = capacity;
  }

  const T* append(const int32_t* ids, int n) override {
    const int B = static_cast<int>(rows_.size()), V = m_.config().vocab_size;
    check_decoder_input("recompute decoder", ids, B, n, length(), capacity_, V);
    for (int b = 0; b < B; ++b) rows_[b].insert(rows_[b].end(), ids + static_cast<size_t>(b) * n, ids + (b + 1) * n);
    Batch batch;
    batch.B = B;
    std::vector<int32_t>& ids_in = source_.empty() ? batch.input_ids : batch.decoder_input_ids;
    for (const auto& r : rows_) ids_in.insert(ids_in.end(), r.begin(), r.end());
    if (source_.empty()) {
      batch.T = length();
    } else {
      batch.T = static_cast<int>(source_.size());
      batch.Td = length();
      for (int b = 0; b < B; ++b) batch.input_ids.insert(batch.input_ids.end(), source_.begin(), source_.end());
    }
    batch.attention_mask.assign(batch.input_ids.size(), 1);
    batch.token_type_ids.assign(batch.input_ids.size(), 0);
    m_.infer(batch, *state_);
    // [B*L, V], L the decoded length: the head's outputs, over the whole vocabulary also when the
    // model is tensor-parallel (infer returns a rank's columns then)
    const T* all = m_.head_outputs(batch, *state_).at(0).data;
    const size_t L = static_cast<size_t>(length());
    logits_.resize(static_cast<size_t>(B) * V);
    kernels::copy_rows(all + (L - 1) * V, L * V, logits_.data(), V, B, V);  // each row's last position
    return host_view(logits_.data(), logits_.size(), host_logits_);
  }

  void reorder(const std::vector<int32_t>& rows) override {
    check_reorder_rows("recompute decoder", rows, static_cast<int>(rows_.size()));
    std::vector<std::vector<int32_t>> moved(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) moved[i] = rows_[rows[i]];
    rows_ = std::move(moved);
  }

  int length() const override { return rows_.empty() ? 0 : static_cast<int>(rows_[0].size()); }

 private:
  const Model<T>& m_;
  std::unique_ptr<ModelState> state_;
  std::vector<int32_t> source_;  // empty: a decoder-only model
  std::vector<std::vector<int32_t>> rows_;
  int capacity_ = 0;
  Buffer<T> logits_;
  std::vector<T> host_logits_;  // on a GPU
};

}  // namespace

void check_decoder_input(const char* who, const int32_t* ids, int B, int n, int length, int capacity, int vocab_size) {
  STRATA_CHECK(B > 0, "[", who, "] append before reset");
  STRATA_CHECK(n > 0 && length + n <= capacity, "[", who, "] appending ", n, " positions to ", length,
               " exceeds the capacity of ", capacity, " positions per row");
  for (size_t i = 0; i < static_cast<size_t>(B) * n; ++i)
    STRATA_CHECK(ids[i] >= 0 && ids[i] < vocab_size, "[", who, "] token id ", ids[i],
                 " is outside the model's vocabulary (vocab_size ", vocab_size, ")");
}

void check_reorder_rows(const char* who, const std::vector<int32_t>& rows, int B) {
  STRATA_CHECK(B > 0, "[", who, "] reorder before reset");
  STRATA_CHECK(rows.size() == static_cast<size_t>(B), "[", who, "] reorder needs one source row per row: ", B,
               ", got ", rows.size());
  for (int32_t r : rows) STRATA_CHECK(r >= 0 && r < B, "[", who, "] reorder: row ", r, " is not in 0..", B - 1);
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> make_causal_decoder(const Model<T>& model, bool use_cache) {
  const ModelConfig& c = model.config();
  STRATA_CHECK(c.task == Task::CausalLM, "a ", c.architecture(), " is not a causal language model: it cannot generate");
  if (use_cache)
    if (std::unique_ptr<CausalDecoder<T>> cached = model.new_cached_decoder()) return cached;
  return std::make_unique<RecomputeDecoder<T>>(model);
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> make_seq2seq_decoder(const Model<T>& model, std::vector<int32_t> source,
                                                     bool use_cache) {
  const ModelConfig& c = model.config();
  STRATA_CHECK(c.task == Task::Seq2SeqLM, "a ", c.architecture(), " is not a sequence-to-sequence model");
  STRATA_CHECK(!source.empty(), "make_seq2seq_decoder: the source is empty");
  if (use_cache)
    if (std::unique_ptr<CausalDecoder<T>> cached = model.new_cached_seq2seq_decoder(source)) return cached;
  return std::make_unique<RecomputeDecoder<T>>(model, std::move(source));
}

template std::unique_ptr<CausalDecoder<float>> make_causal_decoder(const Model<float>&, bool);
template std::unique_ptr<CausalDecoder<float>> make_seq2seq_decoder(const Model<float>&, std::vector<int32_t>, bool);
template std::unique_ptr<CausalDecoder<double>> make_seq2seq_decoder(const Model<double>&, std::vector<int32_t>, bool);
template std::unique_ptr<CausalDecoder<double>> make_causal_decoder(const Model<double>&, bool);

}  // namespace strata
