// ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum as Google's rouge_score 0.1.2 computes them with
// rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer) and its
// default tokenizer, which HF evaluate's "rouge" metric wraps:
//  - tokens: the text lowercased (Python's str.lower()), every run of characters other than
//    [a-z0-9] a separator; with use_stemmer, tokens longer than 3 characters go through the
//    Porter stemmer of nltk (train/porter_stemmer.h);
//  - rouge1 / rouge2: clipped unigram / bigram overlap; rougeL: longest common subsequence;
//    rougeLsum: summary-level LCS (the union LCS of each reference sentence with all predicted
//    sentences, each token counted at most as often as it occurs on both sides), sentences being
//    the non-empty lines ("\n"-separated) of each text;
//  - precision = hits / prediction tokens, recall = hits / reference tokens, F = 2PR / (P + R);
//    0 when either side has no tokens.
//
// Aggregation: rouge() returns the mean F-measure over examples. evaluate's default
// (use_aggregator=True) returns instead the `mid` F of rouge_score's BootstrapAggregator: the
// median of 1000 means of examples resampled with NumPy's global RNG, which evaluate leaves
// unseeded, so the mean plus a random error (up to 2e-3 on the fixture's 335 examples;
// docs/training.md, "Text generation metrics"). use_aggregator=False gives the per-example
// F-measures, whose mean is what rouge() returns.
//
// HF's run_summarization reports metric.compute(predictions, references, use_stemmer=True),
// each value as round(v * 100, 4): eval_rouge1, eval_rouge2, eval_rougeL, eval_rougeLsum (plus
// gen_len). Before that it puts each sentence on its own line with nltk.sent_tokenize (Punkt),
// which only rougeLsum sees; the caller provides those newlines.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct RougeScore {
  double precision = 0, recall = 0, fmeasure = 0;
};

struct RougeExampleScores {
  RougeScore rouge1, rouge2, rougeL, rougeLsum;
};

// rouge_score's DefaultTokenizer(use_stemmer).tokenize(text).
std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer);

// RougeScorer.score(target, prediction): the reference comes first, as in rouge_score.
RougeExampleScores rouge_score(std::string_view target, std::string_view prediction, bool use_stemmer);

// RougeScorer.score_multi(targets, prediction): for each ROUGE type, the scores of the target
// with the highest F-measure (the first of equals). Throws strata::Error when targets is empty.
RougeExampleScores rouge_score_multi(const std::vector<std::string>& targets, std::string_view prediction,
                                     bool use_stemmer);

struct RougeScores {
  double rouge1 = 0, rouge2 = 0, rougeL = 0, rougeLsum = 0;  // mean F-measure over the examples, 0..1
  std::vector<RougeExampleScores> per_example;
};

// evaluate.load("rouge").compute(predictions=..., references=..., use_stemmer=...) with one
// reference, or a list of references (score_multi), per prediction; aggregated as the mean (see
// above). Throws strata::Error for no predictions or a count that differs from the references'.
RougeScores rouge(const std::vector<std::string>& predictions, const std::vector<std::string>& references,
                  bool use_stemmer);
RougeScores rouge(const std::vector<std::string>& predictions, const std::vector<std::vector<std::string>>& references,
                  bool use_stemmer);

}  // namespace strata
