// Corpus BLEU as sacreBLEU 2.6's corpus_bleu computes it with its default tokenizer, 13a
// (mteval-v13a's, as WMT uses it), and maximum n-gram order 4, which HF evaluate's "sacrebleu"
// metric wraps:
//  - each segment: optionally lowercased (str.lower()), right-stripped, tokenized by 13a;
//  - per hypothesis, n-gram matches clipped by the largest count of the n-gram in any one of
//    its references; the reference length is that of the reference closest in length (the
//    shorter of two equally close);
//  - matches, totals and lengths summed over the corpus, then precisions (percent), the
//    brevity penalty exp(1 - ref_len / sys_len) when sys_len < ref_len, and
//    score = bp * exp(mean of log precisions), 0..100.
//
// HF's run_translation reports evaluate.load("sacrebleu").compute(predictions, references)
// ["score"] as eval_bleu, round(score, 4) (plus gen_len), with the defaults below.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// sacreBLEU's smooth_method (Chen & Cherry 2014): exp halves the count of each successive
// n-gram order without a match (mteval-v13a's; the default), floor gives such an order
// smooth_value matches, add-k adds smooth_value to the matches and totals of orders 2..4, none
// leaves zero precisions at zero (and the score with them).
enum class BleuSmoothing { exp, floor, add_k, none };

struct BleuOptions {
  BleuSmoothing smooth_method = BleuSmoothing::exp;
  std::optional<double> smooth_value;  // unset: 0.1 for floor, 1 for add-k (unused by the others)
  bool lowercase = false;
  bool use_effective_order = false;  // average over the orders up to the last with any n-grams
};

struct BleuResult {
  double score = 0;  // 0..100
  // Matched and hypothesis n-grams of orders 1..4, summed over the corpus. sacreBLEU's
  // BLEUScore.counts / totals are the same except with add-k, where they include the added k.
  std::array<size_t, 4> counts{}, totals{};
  std::array<double, 4> precisions{};  // percent, after smoothing; all 0 when nothing matches
  double bp = 0;
  double ratio = 0;  // sys_len / ref_len, 0 when ref_len is 0
  size_t sys_len = 0, ref_len = 0;
};

// Tokenizer13a()(line): drops "<skipped>", joins "-\n" line breaks, turns other newlines into
// spaces, unescapes &quot; &amp; &lt; &gt;, separates punctuation and symbols, and periods and
// commas except between digits, and a dash after a digit; tokens joined by single spaces.
std::string tokenize_13a(std::string_view line);

// references[i]: the references of hypotheses[i], one or more (sacreBLEU takes reference
// streams and a None for a missing one; evaluate's references per prediction). Throws
// strata::Error for no hypotheses, counts that differ, a hypothesis without references or a
// negative smooth_value.
BleuResult corpus_bleu(const std::vector<std::string>& hypotheses,
                       const std::vector<std::vector<std::string>>& references, const BleuOptions& options = {});

}  // namespace strata
