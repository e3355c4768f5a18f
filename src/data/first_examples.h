// The first N examples of a BatchMaker's: the example scripts' max_train_samples /
// max_eval_samples / max_predict_samples, which keep `dataset.select(range(N))`. Examples are
// what the maker batches: rows, sentences, grouped LM blocks, QA windows.
#pragma once
#include <algorithm>
#include <memory>

#include "data/batch_maker.h"

namespace strata::data {

class FirstExamples final : public BatchMaker {
 public:
  FirstExamples(std::shared_ptr<const BatchMaker> all, size_t n) : all_(std::move(all)), n_(std::min(n, all_->size())) {}
  size_t size() const override { return n_; }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override { return all_->make(examples, epoch); }

 private:
  std::shared_ptr<const BatchMaker> all_;
  size_t n_;
};

// `maker` itself when max_samples < 0 (unset) or not below its size, else its first max_samples.
inline std::shared_ptr<const BatchMaker> first_examples(std::shared_ptr<const BatchMaker> maker, int64_t max_samples) {
  if (!maker || max_samples < 0 || static_cast<size_t>(max_samples) >= maker->size()) return maker;
  return std::make_shared<FirstExamples>(std::move(maker), static_cast<size_t>(max_samples));
}

}  // namespace strata::data
