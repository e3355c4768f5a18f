// Language-model pretraining data with HF run_mlm.py / run_clm.py semantics (data/pretraining.h):
// group_texts chunking (exact blocks, each group's remainder dropped), line_by_line examples,
// token and whole-word masking (counts, word integrity, 80/10/10 within binomial bounds, word
// boundaries of real WordPiece / byte-level BPE / SentencePiece tokenizers), causal-LM labels,
// independence from the worker count, the block-size checks, perplexity, and `strata train`
// on a masked-LM model end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/mlm_masking.h"
#include "data/pretraining.h"
#include "data/token_source.h"
#include "data/tokenizer_encoder.h"
#include "test_util_data.h"
#include "test_util_fs.h"
#include "tokenizers/tokenizer.h"
#include "train/metrics.h"
#include "train/training_args.h"
#include "util/error.h"
#include "util/rng.h"

namespace strata::data {
namespace {

namespace fs = std::filesystem;

using test::expect_error;
using test::ScratchDir;
using test::write_text;

constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3;

// Each whitespace-separated piece of a text is one token: with a vocabulary, its index there;
// without, the piece read as an integer ("17" -> id 17), so that concatenations can be checked
// by value. `specials`: BERT's [CLS] ... [SEP] around every text (so a blank text is [CLS]
// [SEP], as BERT tokenizes ""); truncation to max_len keeps the final [SEP].
std::shared_ptr<const TextEncoder> piece_encoder(bool specials, size_t max_len = 0,
                                                 std::vector<std::string> vocab = {}) {
  auto index = std::make_shared<std::unordered_map<std::string, int32_t>>();
  for (size_t i = 0; i < vocab.size(); ++i) (*index)[vocab[i]] = static_cast<int32_t>(i);
  auto spellings = std::make_shared<const std::vector<std::string>>(std::move(vocab));
  FunctionEncoder::Spec s;
  s.max_length = max_len;
  s.pad_id = kPad;
  s.vocab_size = spellings->empty() ? 1000 : spellings->size();
  s.mask_id = kMask;
  s.single = [=](std::string_view text) {
    Encoded e;
    if (specials) e.ids.push_back(kCls);
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = i;
      while (j < text.size() && text[j] != ' ') ++j;
      if (j > i) {
        const std::string piece(text.substr(i, j - i));
        e.ids.push_back(index->empty() ? std::stoi(piece) : index->at(piece));
      }
      i = j;
    }
    if (specials) e.ids.push_back(kSep);
    e.special_mask.assign(e.ids.size(), 0);
    if (specials) e.special_mask.front() = e.special_mask.back() = 1;
    if (max_len && e.ids.size() > max_len) {
      e.ids.resize(max_len);
      e.special_mask.resize(max_len);
      if (specials) e.ids.back() = kSep, e.special_mask.back() = 1;
    }
    return e;
  };
  s.pair = [](std::string_view, std::string_view) -> Encoded { throw Error("no pairs here"); };
  s.id_to_token = [spellings](int32_t id) -> std::optional<std::string> {
    if (id < 0 || static_cast<size_t>(id) >= spellings->size()) return std::nullopt;
    return (*spellings)[static_cast<size_t>(id)];
  };
  return std::make_shared<FunctionEncoder>(std::move(s));
}

std::shared_ptr<const TextDataset> text_dataset(const ScratchDir& dir, const std::string& name,
                                                const std::string& text, bool keep_blank_lines) {
  write_text(dir.path(name), text);
  DataOptions o;
  o.train_file = dir.path(name);
  o.columns.label = "";
  o.keep_blank_lines = keep_blank_lines;
  return load_datasets(o).train;
}

// Lines "0 1 2", "3 4 5 6 7", ...: consecutive integers, `lengths[i]` of them on line i.
std::string counting_lines(const std::vector<int>& lengths) {
  std::string text;
  int next = 0;
  for (int len : lengths) {
    for (int k = 0; k < len; ++k) text += std::to_string(next++) + (k + 1 < len ? " " : "");
    text += "\n";
  }
  return text;
}

std::vector<int32_t> range_ids(int32_t begin, int32_t end) {
  std::vector<int32_t> v;
  for (int32_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

std::vector<std::string> all_batches(const std::shared_ptr<const BatchMaker>& maker, int workers, size_t batch) {
  LoaderOptions lo;
  lo.batch_size = batch;
  lo.num_workers = workers;
  lo.seed = 11;
  DataLoader dl(maker, lo);
  std::vector<std::string> out = test::epoch_batches(dl, 0), second = test::epoch_batches(dl, 1);
  out.insert(out.end(), second.begin(), second.end());
  return out;
}

// ---- group_texts ----

TEST(PretrainingGroupTexts, BlocksAreExactAndEachGroupDropsItsRemainder) {
  ScratchDir dir;
  // 24 tokens 0..23 over 7 lines.
  const auto data = text_dataset(dir, "c.txt", counting_lines({3, 5, 2, 4, 1, 6, 3}), true);
  const auto enc = piece_encoder(false);
  // One group (the whole corpus): 4 blocks of 5 = tokens 0..19, 20..23 dropped.
  const TokenBlocks whole(*data, *enc, 5, 1, 0);
  ASSERT_EQ(whole.size(), 4u);
  for (size_t b = 0; b < 4; ++b) EXPECT_EQ(whole.get(b).ids, range_ids(5 * b, 5 * b + 5)) << b;
  // Groups of 3 texts, as datasets.map hands group_texts its batches: [0..9] gives 2 blocks,
  // [10..20] 2 blocks (20 dropped), [21..23] none. No block spans two groups.
  for (int threads : {1, 2, 3, 8}) {
    const TokenBlocks grouped(*data, *enc, 5, threads, 3);
    ASSERT_EQ(grouped.size(), 4u) << threads;
    EXPECT_EQ(grouped.get(0).ids, range_ids(0, 5));
    EXPECT_EQ(grouped.get(1).ids, range_ids(5, 10));
    EXPECT_EQ(grouped.get(2).ids, range_ids(10, 15));
    EXPECT_EQ(grouped.get(3).ids, range_ids(15, 20));
  }
  // A block the size of the whole corpus is exactly it; one token more is no block at all.
  EXPECT_EQ(TokenBlocks(*data, *enc, 24, 1, 0).get(0).ids, range_ids(0, 24));
  expect_error([&] { TokenBlocks(*data, *enc, 25, 1, 0); },
               {"c.txt", "7 texts give 24 tokens", "fewer than one block of 25 tokens", "line_by_line"});
  expect_error([&] { TokenBlocks(*data, *piece_encoder(false, 8), 5, 1); }, {"without truncation"});
}

TEST(PretrainingGroupTexts, HfGroupsOfAThousandTexts) {
  ScratchDir dir;
  // 2500 lines of 1..7 tokens: groups of 1000, 1000 and 500 texts, each cut on its own.
  std::vector<int> lengths;
  for (int i = 0; i < 2500; ++i) lengths.push_back(1 + (i * 7919) % 7);
  const auto data = text_dataset(dir, "c.txt", counting_lines(lengths), false);
  const size_t block = 64;
  std::vector<int32_t> expected;  // the kept tokens, in order
  int32_t first = 0;
  for (size_t g = 0; g < 3; ++g) {
    int32_t n = 0;
    for (size_t i = g * 1000; i < std::min<size_t>(2500, (g + 1) * 1000); ++i) n += lengths[i];
    const int32_t kept = n / static_cast<int32_t>(block) * static_cast<int32_t>(block);
    for (int32_t t = first; t < first + kept; ++t) expected.push_back(t);
    first += n;
  }
  const TokenBlocks blocks(*data, *piece_encoder(false), block, 2);
  ASSERT_EQ(blocks.size() * block, expected.size());
  for (size_t b = 0; b < blocks.size(); ++b)
    EXPECT_EQ(blocks.get(b).ids, std::vector<int32_t>(expected.begin() + b * block, expected.begin() + (b + 1) * block));
  EXPECT_LT(blocks.size(), TokenBlocks(*data, *piece_encoder(false), block, 2, 0).size());  // remainders dropped
}

TEST(PretrainingGroupTexts, SpecialTokensComeFromEachTextAndBlankLinesCount) {
  ScratchDir dir;
  // HF's text loader keeps blank lines and BERT encodes "" as [CLS] [SEP]; grouping keeps them.
  const std::string text = "4 5\n\n6\n   \n7 8 9\n";
  PretrainingOptions o;
  o.block_size = 6;
  o.texts_per_group = 0;
  const PretrainingPlan plan = plan_pretraining(o);
  EXPECT_TRUE(plan.keep_blank_lines);
  EXPECT_EQ(plan.encoder_max_length, 0u);
  const auto data = text_dataset(dir, "c.txt", text, plan.keep_blank_lines);
  ASSERT_EQ(data->size(), 5u);
  // [CLS] 4 5 [SEP] [CLS] [SEP] | [CLS] 6 [SEP] [CLS] [SEP] [CLS] | 7 8 9 [SEP]: 16 tokens, 2 blocks.
  const TokenBlocks blocks(*data, *piece_encoder(true), 6, 1, 0);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks.get(0).ids, (std::vector<int32_t>{kCls, 4, 5, kSep, kCls, kSep}));
  EXPECT_EQ(blocks.get(0).special_mask, (std::vector<uint8_t>{1, 0, 0, 1, 1, 1}));
  EXPECT_EQ(blocks.get(1).ids, (std::vector<int32_t>{kCls, 6, kSep, kCls, kSep, kCls}));
  // line_by_line drops blank lines, as run_mlm does.
  o.block_size = 0;
  o.line_by_line = true;
  EXPECT_FALSE(plan_pretraining(o).keep_blank_lines);
  EXPECT_EQ(text_dataset(dir, "d.txt", text, false)->size(), 3u);
}

// ---- line_by_line ----

TEST(PretrainingLineByLine, EachLineTruncatedThenPaddedPerBatch) {
  ScratchDir dir;
  const auto data = text_dataset(dir, "c.txt", "4 5\n\n6 7 8 9 10 11 12 13\n14\n", false);
  ASSERT_EQ(data->size(), 3u);
  for (LmObjective obj : {LmObjective::Masked, LmObjective::Causal}) {
    PretrainingOptions o;
    o.objective = obj;
    o.line_by_line = true;
    o.max_seq_length = 6;
    o.mlm_probability = 0.5;
    const auto enc = piece_encoder(true, plan_pretraining(o).encoder_max_length);
    const auto maker = make_pretraining_batches(data, enc, o);
    ASSERT_EQ(maker->size(), 3u);
    const std::vector<size_t> all = {0, 1, 2}, short_ones = {0, 2};
    const Batch b = maker->make(all, 0);
    ASSERT_EQ(b.T, 6);  // the longest line, cut to max_seq_length keeping its [SEP]
    EXPECT_EQ(std::vector<int32_t>(b.attention_mask.begin(), b.attention_mask.begin() + 6),
              (std::vector<int32_t>{1, 1, 1, 1, 0, 0}));
    EXPECT_EQ(b.input_ids[11], kSep);
    EXPECT_EQ(maker->make(short_ones, 0).T, 4);  // padded per batch, not to max_seq_length
    for (size_t i = 0; i < b.labels.size(); ++i) {
      if (!b.attention_mask[i]) {
        EXPECT_EQ(b.input_ids[i], kPad);
        EXPECT_EQ(b.labels[i], -100);
      } else if (obj == LmObjective::Causal) {
        EXPECT_EQ(b.labels[i], b.input_ids[i]);  // unshifted: the loss shifts
      }
    }
  }
  // The encoder must truncate as the plan says.
  PretrainingOptions o;
  o.line_by_line = true;
  expect_error([&] { make_pretraining_batches(data, piece_encoder(true), o); }, {"line_by_line", "128"});
}

// ---- causal LM ----

TEST(PretrainingClm, GroupedBlocksAreTheirOwnLabels) {
  ScratchDir dir;
  const auto data = text_dataset(dir, "c.txt", counting_lines({7, 3, 9, 2, 5}), true);
  PretrainingOptions o;
  o.objective = LmObjective::Causal;
  o.block_size = 4;
  const PretrainingPlan plan = plan_pretraining(o);
  EXPECT_FALSE(plan.pad_token_required);
  const auto maker = make_pretraining_batches(data, piece_encoder(false), o);
  ASSERT_EQ(maker->size(), 6u);  // 26 tokens -> 6 blocks of 4, 2 dropped
  const std::vector<size_t> idx = {5, 0, 3};
  const Batch b = maker->make(idx, 0);
  EXPECT_EQ(b.B, 3);
  EXPECT_EQ(b.T, 4);
  EXPECT_EQ(b.labels, b.input_ids);
  EXPECT_EQ(std::vector<int32_t>(b.input_ids.begin(), b.input_ids.begin() + 4), range_ids(20, 24));
  EXPECT_EQ(b.attention_mask, std::vector<int32_t>(12, 1));
  PretrainingOptions w = o;
  w.whole_word_mask = true;
  expect_error([&] { plan_pretraining(w); }, {"whole_word_mask", "masked-LM"});
}

// ---- masking ----

// What masking did to the chosen positions of many examples.
struct Split {
  size_t chosen = 0, masked = 0, random = 0, kept = 0;

  // Counts e (base after masking, with its labels); positions not chosen must be unchanged.
  void add(const Encoded& base, const Encoded& e, const std::vector<int32_t>& labels) {
    for (size_t t = 0; t < e.ids.size(); ++t) {
      if (labels[t] == -100) {
        EXPECT_EQ(e.ids[t], base.ids[t]);
        continue;
      }
      EXPECT_FALSE(base.special_mask[t]) << "a special token was masked";
      EXPECT_EQ(labels[t], base.ids[t]);
      ++chosen;
      if (e.ids[t] == kMask)
        ++masked;
      else if (e.ids[t] == base.ids[t])
        ++kept;
      else
        ++random;
    }
  }

  // 80/10/10, each within 5 binomial standard deviations of HF's expectation (a random
  // replacement that draws the original id counts as kept).
  void expect_hf(size_t vocab) const {
    auto within = [](size_t k, size_t n, double p, const char* what) {
      const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
      EXPECT_LT(std::abs(static_cast<double>(k) - mean), 5 * sd) << what << ": " << k << " of " << n;
    };
    ASSERT_GT(chosen, 5000u);
    within(masked, chosen, 0.8, "mask token");
    within(random, chosen, 0.1 * (1 - 1.0 / vocab), "random token");
    within(kept, chosen, 0.1 + 0.1 / vocab, "unchanged");
  }
};

TEST(PretrainingMasking, TokenMaskingRateAndSplitWithinBinomialBounds) {
  MlmOptions o;
  o.seed = 3;
  o.mask_id = kMask;
  o.vocab_size = 1000;
  size_t candidates = 0;
  Split split;
  for (uint64_t example = 0; example < 200; ++example) {
    Encoded base;
    base.ids.push_back(kCls);
    for (int t = 0; t < 510; ++t) base.ids.push_back(4 + (t * 31 + example * 7) % 996);
    base.ids.push_back(kSep);
    base.ids.resize(base.ids.size() + 2, kCls);  // more specials, mid-sequence
    base.special_mask.assign(base.ids.size(), 0);
    base.special_mask[0] = base.special_mask[511] = base.special_mask[512] = base.special_mask[513] = 1;
    Encoded e = base;
    const auto labels = mask_tokens(e, o, example % 3, example);
    split.add(base, e, labels);
    candidates += std::count(base.special_mask.begin(), base.special_mask.end(), 0);
    if (example < 3) {  // a pure function of (seed, epoch, example): again the same, another epoch not
      Encoded again = base, other = base;
      EXPECT_EQ(mask_tokens(again, o, example % 3, example), labels);
      EXPECT_EQ(again.ids, e.ids);
      EXPECT_NE(mask_tokens(other, o, example % 3 + 1, example), labels);
    }
  }
  const double sd = std::sqrt(candidates * 0.15 * 0.85);
  EXPECT_LT(std::abs(static_cast<double>(split.chosen) - candidates * 0.15), 5 * sd)
      << split.chosen << " of " << candidates;
  split.expect_hf(o.vocab_size);
}

// WordPiece-style vocabulary: [PAD] [CLS] [SEP] [MASK], word starts w0..w99, continuations ##c0..##c99.
std::vector<std::string> wordpiece_vocab() {
  std::vector<std::string> v = {"[PAD]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 0; i < 100; ++i) v.push_back(cat("w", i));
  for (int i = 0; i < 100; ++i) v.push_back(cat("##c", i));
  return v;
}

// A text of `words` words of 1..4 pieces; the first `singles` words are one piece each.
std::string wordpiece_text(size_t words, size_t singles, uint64_t salt) {
  std::string text;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t h = mix64(salt * 1000003 + w);
    text += cat("w", h % 100);
    const size_t pieces = w < singles ? 1 : 1 + (h >> 20) % 4;
    for (size_t p = 1; p < pieces; ++p) text += cat(" ##c", (h >> (8 * p)) % 100);
    text += " ";
  }
  return text;
}

TEST(PretrainingMasking, HfWholeWordBudget) {
  const auto enc = piece_encoder(true, 0, wordpiece_vocab());
  MlmOptions o;
  o.mask_id = kMask;
  o.vocab_size = enc->vocab_size();
  o.continues_word = word_continuation_table(*enc);
  // min(512, max(1, round(n * p))) with Python's round: n counts [CLS] and [SEP].
  const std::vector<std::pair<size_t, size_t>> cases = {
      {30, 4},    // 4.5 -> 4 (half to even)
      {50, 8},    // 7.5 -> 8
      {10, 2},    // 1.5 -> 2
      {3, 1},     // 0.45 -> 0 -> at least 1
      {4000, 512}  // 600 -> max_predictions
  };
  for (const auto& [n, budget] : cases) {
    Encoded e = enc->encode(wordpiece_text(n - 2, n - 2, n));  // single-piece words: the budget is met exactly
    ASSERT_EQ(e.ids.size(), n);
    size_t labelled = 0;
    for (int32_t l : mask_tokens(e, o, 0, n)) labelled += l != -100;
    EXPECT_EQ(labelled, budget) << "n = " << n;
  }
}

TEST(PretrainingMasking, WholeWordsAreNeverSplitAndSplit801010) {
  const std::vector<std::string> vocab = wordpiece_vocab();
  const auto enc = piece_encoder(true, 0, vocab);
  MlmOptions o;
  o.seed = 5;
  o.probability = 0.15;
  o.mask_id = kMask;
  o.vocab_size = enc->vocab_size();
  o.continues_word = word_continuation_table(*enc);
  Split split;
  size_t multi_piece_masked = 0;
  for (uint64_t example = 0; example < 400; ++example) {
    // At least as many one-piece words as the budget, so the budget is always met.
    const Encoded base = enc->encode(wordpiece_text(120, 60, example));
    Encoded e = base;
    const auto labels = mask_tokens(e, o, example % 2, example);
    const size_t budget = static_cast<size_t>(std::nearbyint(base.ids.size() * 0.15));
    // Words from the spellings: a piece starting "##" continues the word before it.
    size_t labelled = 0;
    for (size_t t = 1; t + 1 < base.ids.size();) {
      size_t end = t + 1;
      while (end + 1 < base.ids.size() && vocab[static_cast<size_t>(base.ids[end])].starts_with("##")) ++end;
      size_t in = 0;
      for (size_t k = t; k < end; ++k) in += labels[k] != -100;
      EXPECT_TRUE(in == 0 || in == end - t) << "word at " << t << " of example " << example << " split";
      multi_piece_masked += in > 1;
      labelled += in;
      t = end;
    }
    EXPECT_EQ(labels.front(), -100);
    EXPECT_EQ(labels.back(), -100);
    EXPECT_EQ(labelled, budget) << example;
    split.add(base, e, labels);
  }
  EXPECT_GT(multi_piece_masked, 100u);
  split.expect_hf(o.vocab_size);
  // Deterministic in (seed, epoch, example); another epoch masks other words.
  const Encoded base = enc->encode(wordpiece_text(120, 60, 7));
  Encoded a = base, b = base, c = base;
  const auto la = mask_tokens(a, o, 0, 7), lb = mask_tokens(b, o, 0, 7), lc = mask_tokens(c, o, 1, 7);
  EXPECT_EQ(la, lb);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(la, lc);
}

// Words as the table groups a real tokenizer's tokens, against the whitespace words of the text.
TEST(PretrainingMasking, WordBoundariesOfRealTokenizers) {
  const std::string text = "the quick brownish foxes jumped over lazily sleeping hounds";
  for (const char* name : {"bert-wordpiece-8k", "bpe-8k", "albert-spm-8k", "gpt2"}) {
    SCOPED_TRACE(name);
    tok::Tokenizer tok = tok::Tokenizer::from_dir(test::reference_tokenizer(name));
    const TokenizerEncoder enc(tok, 0, /*pad_token_required=*/false);
    const std::vector<uint8_t> continues = word_continuation_table(enc);
    const tok::Encoding e = tok.encode(text);
    int word = -1, multi = 0;
    for (size_t t = 0; t < e.ids.size(); ++t) {
      if (e.special_tokens_mask[t]) continue;
      const bool starts = word < 0 || !continues[static_cast<size_t>(e.ids[t])];
      word += starts;
      multi += !starts;
      // The whitespace word the token's characters lie in (a leading space belongs to the next word).
      const size_t at = std::min(text.size() - 1, e.offsets[t].first);
      const int expected = static_cast<int>(std::count(text.begin(), text.begin() + at + (text[at] == ' '), ' '));
      EXPECT_EQ(word, expected) << "token " << t << " '" << e.tokens[t] << "'";
    }
    EXPECT_EQ(word, 8);
    EXPECT_GT(multi, 0) << "no word of several tokens: the test text does not exercise the rule";
  }
}

// ---- determinism ----

TEST(PretrainingDeterminism, BatchesDoNotDependOnWorkersOrThreads) {
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 90; ++i) text += wordpiece_text(3 + i % 11, 1, i) + "\n" + (i % 7 == 0 ? "\n" : "");
  const auto vocab = wordpiece_vocab();
  struct Case {
    LmObjective objective;
    bool line_by_line, whole_word;
  };
  for (const Case& c : {Case{LmObjective::Masked, false, true}, Case{LmObjective::Masked, false, false},
                        Case{LmObjective::Masked, true, true}, Case{LmObjective::Causal, true, false},
                        Case{LmObjective::Causal, false, false}}) {
    SCOPED_TRACE(cat(c.objective == LmObjective::Masked ? "mlm" : "clm", c.line_by_line ? " line_by_line" : "",
                     c.whole_word ? " wwm" : ""));
    PretrainingOptions o;
    o.objective = c.objective;
    o.line_by_line = c.line_by_line;
    o.whole_word_mask = c.whole_word;
    o.max_seq_length = 16;
    o.block_size = c.line_by_line ? 0 : 16;
    o.texts_per_group = 20;
    o.seed = 9;
    const auto data = text_dataset(dir, "c.txt", text, plan_pretraining(o).keep_blank_lines);
    const auto enc = piece_encoder(true, plan_pretraining(o).encoder_max_length, vocab);
    std::vector<std::vector<std::string>> runs;
    for (int workers : {0, 1, 3}) {
      o.num_threads = 1 + workers;  // the blocks' encoding threads too
      runs.push_back(all_batches(make_pretraining_batches(data, enc, o), workers, 5));
    }
    ASSERT_FALSE(runs[0].empty());
    for (size_t r = 1; r < runs.size(); ++r) EXPECT_EQ(runs[0], runs[r]);
  }
}

// ---- options ----

TEST(PretrainingOptions, BlockSizeDefaultsAndLimits) {
  PretrainingOptions o;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 128u);  // masked LM: max_seq_length, as run_mlm
  o.objective = LmObjective::Causal;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 1024u);  // run_clm, nothing known
  o.model_max_positions = 512;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 512u);  // min(1024, the model's)
  o.model_max_positions = 4096;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 1024u);
  o.tokenizer_max_length = 2048;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 2048u);  // the tokenizer's model_max_length
  o.tokenizer_max_length = 8192;
  EXPECT_EQ(plan_pretraining(o).sequence_length, 1024u);  // above the model: min(1024, model)
  // An explicit block_size above the tokenizer's length is lowered with a warning (HF).
  std::vector<std::string> warnings;
  o.tokenizer_max_length = 512;
  o.block_size = 1000;
  o.warn = [&](const std::string& m) { warnings.push_back(m); };
  EXPECT_EQ(plan_pretraining(o).sequence_length, 512u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("block_size 1000"), std::string::npos) << warnings[0];
  // Above the model's positions: an error naming both values.
  o.tokenizer_max_length = 0;
  o.model_max_positions = 512;
  o.block_size = 1024;
  expect_error([&] { plan_pretraining(o); }, {"block_size 1024", "maximum sequence length 512"});
  o.block_size = 0;
  o.line_by_line = true;
  o.max_seq_length = 600;
  expect_error([&] { plan_pretraining(o); }, {"max_seq_length 600", "512"});
  o.max_seq_length = 64;
  o.block_size = 32;
  expect_error([&] { plan_pretraining(o); }, {"block_size", "line_by_line"});
}

TEST(PretrainingOptions, TrainingArgumentsNamesDefaultsAndChecks) {
  const std::string base = "model_name_or_path: m\noutput_dir: o\ndo_train: false\n";
  const TrainingArguments d = parse_training_arguments(base, "job.yaml");
  EXPECT_FALSE(d.line_by_line);
  EXPECT_EQ(d.block_size, 0);
  EXPECT_FALSE(d.whole_word_mask);
  EXPECT_DOUBLE_EQ(d.mlm_probability, 0.15);
  const TrainingArguments a = parse_training_arguments(
      base + "line_by_line: true\nwhole_word_mask: true\nmlm_probability: 0.2\nmax_seq_length: 64\n", "job.yaml");
  const PretrainingOptions o = pretraining_options(a, LmObjective::Masked, 512);
  EXPECT_TRUE(o.line_by_line);
  EXPECT_TRUE(o.whole_word_mask);
  EXPECT_DOUBLE_EQ(o.mlm_probability, 0.2);
  EXPECT_EQ(o.max_seq_length, 64u);
  EXPECT_EQ(o.model_max_positions, 512u);
  expect_error([&] { parse_training_arguments(base + "block_size: -1\n", "job.yaml"); }, {"job.yaml", "block_size"});
  expect_error([&] { parse_training_arguments(base + "block_size: 64\nline_by_line: true\n", "job.yaml"); },
               {"job.yaml", "line_by_line"});
  expect_error([&] { parse_training_arguments(base + "block_sise: 64\n", "job.yaml"); },
               {"did you mean 'block_size'"});
}

TEST(PretrainingMetrics, PerplexityIsExpOfTheLossWithOverflowToInf) {
  EXPECT_NEAR(perplexity(std::log(20.0)), 20.0, 1e-12);
  EXPECT_EQ(perplexity(0.0), 1.0);
  EXPECT_EQ(perplexity(1000.0), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(perplexity(std::nan(""))));
}

// ---- strata train ----

class PretrainingCli : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"),
               nlohmann::json{{"model_type", "bert"}, {"architectures", {"BertForMaskedLM"}}, {"vocab_size", 8000},
                              {"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                              {"intermediate_size", 64}, {"max_position_embeddings", 64}, {"pad_token_id", 0}}
                   .dump());
    std::string text;
    const char* lines[] = {"the quick brown fox jumps over the lazy dog", "a meeting about the budget for monday",
                           "click here to win money now", "notes from the weekly review of the project"};
    for (int i = 0; i < 40; ++i) text += std::string(lines[i % 4]) + (i % 5 == 4 ? "\n\n" : "\n");
    write_text(dir_.path("train.txt"), text);
    write_text(dir_.path("val.txt"), text.substr(0, 400));
  }
  std::string yaml(const std::string& extra) {
    const std::string y = dir_.path("job.yaml");
    write_text(y, "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + test::source_dir() +
                      "/examples/spam/bert-small\ntrain_file: " + dir_.path("train.txt") +
                      "\nvalidation_file: " + dir_.path("val.txt") + "\noutput_dir: " + dir_.path("out") +
                      "\nmax_seq_length: 32\nper_device_train_batch_size: 4\nmax_steps: 2\nnum_threads: 1\n"
                      "overwrite_output_dir: true\nsave_strategy: 'no'\n" + extra);
    return y;
  }
  ScratchDir dir_;
};

TEST_F(PretrainingCli, TrainsGroupedAndLineByLineAndReportsPerplexity) {
  for (const char* extra : {"", "line_by_line: true\nwhole_word_mask: true\n", "block_size: 48\n"}) {
    SCOPED_TRACE(extra);
    const auto r = test::run_strata({"train", yaml(extra)}, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto eval = nlohmann::json::parse(test::read_text(dir_.path("out/eval_results.json")));
    EXPECT_NEAR(eval["eval_perplexity"].get<double>(), std::exp(eval["eval_loss"].get<double>()), 1e-9);
  }
}

TEST_F(PretrainingCli, BlockSizeAboveTheModelsPositionsStopsBeforeAnyWork) {
  const auto r = test::run_strata({"train", yaml("block_size: 80\n")}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("block_size 80"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("64"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

}  // namespace
}  // namespace strata::data
