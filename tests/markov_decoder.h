// A CausalDecoder for hand-worked generation tests: each row's next-token logits are
// log(probs[last token of the row]), a fixed table, so the right answer of a search can be
// worked out on paper. It keeps every row's tokens, which reorder() permutes like a real cache.
#pragma once
#include <cmath>
#include <utility>
#include <vector>

#include "models/causal_decoder.h"

namespace strata::test {

class MarkovDecoder final : public CausalDecoder<double> {
 public:
  explicit MarkovDecoder(std::vector<std::vector<double>> probs) : probs_(std::move(probs)) {}
  void reset(int B, int capacity) override {
    rows_.assign(static_cast<size_t>(B), {});
    capacity_ = capacity;
  }
  const double* append(const int32_t* ids, int n) override {
    const int B = static_cast<int>(rows_.size()), V = static_cast<int>(probs_.size());
    check_decoder_input("markov decoder", ids, B, n, length(), capacity_, V);
    logits_.clear();
    for (int b = 0; b < B; ++b) {
      rows_[b].insert(rows_[b].end(), ids + b * n, ids + (b + 1) * n);
      for (double p : probs_[rows_[b].back()]) logits_.push_back(std::log(p));
    }
    return logits_.data();
  }
  void reorder(const std::vector<int32_t>& rows) override {
    check_reorder_rows("markov decoder", rows, static_cast<int>(rows_.size()));
    std::vector<std::vector<int32_t>> moved;
    for (int32_t r : rows) moved.push_back(rows_[r]);
    rows_ = std::move(moved);
  }
  int length() const override { return rows_.empty() ? 0 : static_cast<int>(rows_[0].size()); }
  const std::vector<std::vector<int32_t>>& rows() const { return rows_; }

 private:
  std::vector<std::vector<double>> probs_;  // [V][V]: row = the last token
  std::vector<std::vector<int32_t>> rows_;
  int capacity_ = 0;
  std::vector<double> logits_;
};

}  // namespace strata::test
