// ROUGE, BLEU and the Porter stemmer against the packages HF's seq2seq example scripts use:
// rouge-score 0.1.2 with nltk 3.10.4's PorterStemmer, and sacrebleu 2.6.0.
// tests/fixtures/make_fixtures_seq2seq_metrics.sh writes seq2seq_metrics.json.gz (inputs and the
// packages' outputs); a few hand-worked cases follow.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/file_bytes.h"
#include "test_paths.h"
#include "train/bleu.h"
#include "train/porter_stemmer.h"
#include "train/rouge.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;

const json& reference() {
  static const json j = [] {
    const data::FileBytes f(test::fixture_dir() + "/seq2seq_metrics.json.gz");  // gzip: inflated
    return json::parse(f.bytes());
  }();
  return j;
}

constexpr double kRougeTol = 1e-12, kBleuTol = 1e-9;

void expect_score(const RougeScore& got, const json& want, const char* type) {
  SCOPED_TRACE(type);
  EXPECT_NEAR(got.precision, want[0].get<double>(), kRougeTol);
  EXPECT_NEAR(got.recall, want[1].get<double>(), kRougeTol);
  EXPECT_NEAR(got.fmeasure, want[2].get<double>(), kRougeTol);
}

void expect_scores(const RougeExampleScores& got, const json& want) {
  expect_score(got.rouge1, want["rouge1"], "rouge1");
  expect_score(got.rouge2, want["rouge2"], "rouge2");
  expect_score(got.rougeL, want["rougeL"], "rougeL");
  expect_score(got.rougeLsum, want["rougeLsum"], "rougeLsum");
}

BleuOptions bleu_options(const json& o) {
  BleuOptions opt;
  const std::string method = o["smooth_method"];
  opt.smooth_method = method == "exp"     ? BleuSmoothing::exp
                      : method == "floor" ? BleuSmoothing::floor
                      : method == "add-k" ? BleuSmoothing::add_k
                                          : BleuSmoothing::none;
  if (!o["smooth_value"].is_null()) opt.smooth_value = o["smooth_value"].get<double>();
  opt.lowercase = o["lowercase"];
  opt.use_effective_order = o["use_effective_order"];
  return opt;
}

TEST(PorterStemmer, EveryWordAsNltk) {
  const auto& words = reference()["stems"]["words"];
  const auto& stems = reference()["stems"]["stems"];
  ASSERT_EQ(words.size(), stems.size());
  ASSERT_GT(words.size(), 10000u);
  size_t wrong = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string got = porter_stem(words[i].get<std::string>());
    if (got != stems[i].get<std::string>() && ++wrong <= 20)
      ADD_FAILURE() << words[i] << ": got '" << got << "', nltk " << stems[i];
  }
  EXPECT_EQ(wrong, 0u) << "of " << words.size() << " words";
}

TEST(Rouge, TokenizerAsRougeScore) {
  for (const auto& c : reference()["rouge_tokens"]) {
    SCOPED_TRACE(c["text"].get<std::string>());
    EXPECT_EQ(rouge_tokenize(c["text"].get<std::string>(), false), c["tokens"].get<std::vector<std::string>>());
    EXPECT_EQ(rouge_tokenize(c["text"].get<std::string>(), true), c["stemmed"].get<std::vector<std::string>>());
  }
}

TEST(Rouge, EveryCaseAsRougeScore) {
  size_t checked = 0;
  for (const auto& c : reference()["rouge_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string prediction = c["prediction"];
    for (const bool stem : {false, true}) {
      SCOPED_TRACE(stem ? "use_stemmer" : "no stemmer");
      const json& want = c["scores"][stem ? "stemmed" : "plain"];
      if (c.contains("references"))
        expect_scores(rouge_score_multi(c["references"].get<std::vector<std::string>>(), prediction, stem), want);
      else
        expect_scores(rouge_score(c["reference"].get<std::string>(), prediction, stem), want);
      ++checked;
    }
  }
  EXPECT_GT(checked, 600u);
}

// evaluate's rouge over every single-reference case: the mean of per-example F-measures
// (use_aggregator=False, averaged) to rounding, and the bootstrap's `mid` (its default) close
// to that mean but not equal to it.
TEST(Rouge, CorpusMeanAsEvaluate) {
  std::vector<std::string> predictions, references;
  for (const auto& c : reference()["rouge_cases"]) {
    if (!c.contains("reference")) continue;
    predictions.push_back(c["prediction"]);
    references.push_back(c["reference"]);
  }
  for (const auto& corpus : reference()["rouge_corpora"]) {
    const bool stem = corpus["use_stemmer"];
    SCOPED_TRACE(stem ? "use_stemmer" : "no stemmer");
    const RougeScores got = rouge(predictions, references, stem);
    ASSERT_EQ(got.per_example.size(), predictions.size());
    const json& mean = corpus["mean"];
    EXPECT_NEAR(got.rouge1, mean["rouge1"].get<double>(), kRougeTol);
    EXPECT_NEAR(got.rouge2, mean["rouge2"].get<double>(), kRougeTol);
    EXPECT_NEAR(got.rougeL, mean["rougeL"].get<double>(), kRougeTol);
    EXPECT_NEAR(got.rougeLsum, mean["rougeLsum"].get<double>(), kRougeTol);
    for (const auto& mid : corpus["bootstrap_mid"]) {
      EXPECT_NEAR(got.rouge1, mid["rouge1"].get<double>(), 5e-3);
      EXPECT_NEAR(got.rougeLsum, mid["rougeLsum"].get<double>(), 5e-3);
      EXPECT_NE(got.rouge1, mid["rouge1"].get<double>());
    }
  }
}

TEST(Rouge, ByHand) {
  const auto same = rouge_score("The cat sat on the mat.", "the CAT sat on the mat", false);
  for (const RougeScore& s : {same.rouge1, same.rouge2, same.rougeL, same.rougeLsum}) EXPECT_EQ(s.fmeasure, 1.0);
  const auto disjoint = rouge_score("alpha beta", "gamma delta", true);
  for (const RougeScore& s : {disjoint.rouge1, disjoint.rouge2, disjoint.rougeL, disjoint.rougeLsum})
    EXPECT_EQ(s.fmeasure, 0.0);
  // Reference of 6 tokens, prediction "the cat": P = 2/2, R = 2/6, F = 2 * 1 * (1/3) / (4/3) = 1/2.
  const auto prefix = rouge_score("the cat sat on the mat", "the cat", false);
  EXPECT_DOUBLE_EQ(prefix.rouge1.precision, 1.0);
  EXPECT_DOUBLE_EQ(prefix.rouge1.recall, 1.0 / 3);
  EXPECT_DOUBLE_EQ(prefix.rouge1.fmeasure, 0.5);
  EXPECT_DOUBLE_EQ(prefix.rouge2.recall, 1.0 / 5);  // 1 of 5 reference bigrams
  // Stemming: runners / running / runs -> runner / run / run.
  EXPECT_EQ(rouge_tokenize("The runners were running, it runs!", true),
            (std::vector<std::string>{"the", "runner", "were", "run", "it", "run"}));
  // rougeLsum on lines: "a b" and "c d" both found, in either order; rougeL sees one order.
  const auto lines = rouge_score("a b\nc d", "c d\na b", false);
  EXPECT_EQ(lines.rougeLsum.fmeasure, 1.0);
  EXPECT_EQ(lines.rougeL.fmeasure, 0.5);
  const RougeScores two = rouge({"a b", "x"}, std::vector<std::string>{"a b", "y"}, false);
  EXPECT_EQ(two.rouge1, 0.5);
}

TEST(Rouge, RefusesBadShapes) {
  EXPECT_THROW(rouge({}, std::vector<std::string>{}, false), Error);
  try {
    rouge({"a", "b"}, std::vector<std::string>{"a"}, false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 predictions but 1 references"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rouge_score_multi({}, "a", false), Error);
}

TEST(Bleu, Tokenizer13aAsSacrebleu) {
  for (const auto& c : reference()["tokenize_13a"]) {
    SCOPED_TRACE(c["text"].get<std::string>());
    EXPECT_EQ(tokenize_13a(c["text"].get<std::string>()), c["tokens"].get<std::string>());
  }
}

TEST(Bleu, EveryCorpusAsSacrebleu) {
  size_t checked = 0;
  for (const auto& corpus : reference()["bleu_corpora"]) {
    SCOPED_TRACE(corpus["name"].get<std::string>());
    const auto hyps = corpus["hypotheses"].get<std::vector<std::string>>();
    const auto refs = corpus["references"].get<std::vector<std::vector<std::string>>>();
    for (const auto& result : corpus["results"]) {
      SCOPED_TRACE(result["options"].dump());
      const BleuResult got = corpus_bleu(hyps, refs, bleu_options(result["options"]));
      const json& want = result["expected"];
      EXPECT_NEAR(got.score, want["score"].get<double>(), kBleuTol);
      for (size_t n = 0; n < 4; ++n) {
        EXPECT_NEAR(got.precisions[n], want["precisions"][n].get<double>(), kBleuTol) << "order " << n + 1;
        EXPECT_EQ(got.counts[n], want["counts"][n].get<size_t>()) << "order " << n + 1;
        EXPECT_EQ(got.totals[n], want["totals"][n].get<size_t>()) << "order " << n + 1;
      }
      EXPECT_NEAR(got.bp, want["bp"].get<double>(), kBleuTol);
      EXPECT_NEAR(got.ratio, want["ratio"].get<double>(), kBleuTol);
      EXPECT_EQ(got.sys_len, want["sys_len"].get<size_t>());
      EXPECT_EQ(got.ref_len, want["ref_len"].get<size_t>());
      ++checked;
    }
  }
  EXPECT_GT(checked, 500u);
}

TEST(Bleu, ByHand) {
  const std::string s = "the quick brown fox jumps over the lazy dog";
  EXPECT_DOUBLE_EQ(corpus_bleu({s}, {{s}}).score, 100.0);
  EXPECT_EQ(corpus_bleu({"alpha beta gamma delta"}, {{"one two three four"}}).score, 0.0);
  // A 6-token prefix of an 8-token reference: every n-gram matches, bp = exp(1 - 8/6).
  const BleuResult prefix = corpus_bleu({"a b c d e f"}, {{"a b c d e f g h"}});
  EXPECT_DOUBLE_EQ(prefix.bp, std::exp(1 - 8.0 / 6));
  EXPECT_DOUBLE_EQ(prefix.score, 100 * std::exp(1 - 8.0 / 6));
  EXPECT_EQ(prefix.totals, (std::array<size_t, 4>{6, 5, 4, 3}));
  // The closest reference length decides bp: 5 tokens against references of 4 and 6 -> 4.
  EXPECT_EQ(corpus_bleu({"a b c d e"}, {{"a b c d e f", "a b c d"}}).ref_len, 4u);
  // Two tokens: no 3- or 4-grams, so the geometric mean over four orders is 0 unless the
  // effective order stops at 2.
  EXPECT_EQ(corpus_bleu({"a b"}, {{"a b"}}).score, 0.0);
  BleuOptions effective;
  effective.use_effective_order = true;
  EXPECT_DOUBLE_EQ(corpus_bleu({"a b"}, {{"a b"}}, effective).score, 100.0);
}

TEST(Bleu, RefusesBadShapes) {
  EXPECT_THROW(corpus_bleu({}, {}), Error);
  EXPECT_THROW(corpus_bleu({"a"}, {{"a"}, {"b"}}), Error);
  try {
    corpus_bleu({"a", "b"}, {{"a"}, {}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hypothesis 1 has no reference"), std::string::npos) << e.what();
  }
  BleuOptions negative;
  negative.smooth_method = BleuSmoothing::floor;
  negative.smooth_value = -1;
  EXPECT_THROW(corpus_bleu({"a"}, {{"a"}}, negative), Error);
}

}  // namespace
}  // namespace strata
