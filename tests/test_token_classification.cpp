// Token classification, files to metrics: pre-split words through a tokenizer and run_ner's
// label alignment against HF's own tokenizers library (fixtures/token_cls/
// make_words_reference.py), the tag set, batches through the DataLoader, bad input, and the
// seqeval metrics on cases worked out by hand from seqeval's chunking rules.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/token_cls_batches.h"
#include "data/token_cls_data.h"
#include "data/word_encoder.h"
#include "io/files.h"
#include "test_util_fs.h"
#include "train/seqeval.h"

namespace strata {
namespace {

using test::expect_error;
using test::ScratchDir;
using test::write_text;

const std::string kWords = test::fixture("token_cls/words.jsonl");

data::TokenClsData load(const std::string& train, const std::string& validation = "") {
  data::TokenClsOptions o;
  o.train_file = train;
  o.validation_file = validation;
  return data::load_token_cls(o);
}

// ---- words and labels against HF ----

class WordsHf : public ::testing::TestWithParam<std::string> {};

TEST_P(WordsHf, EncodingAndLabelsMatchRunNer) {
  const nlohmann::json ref = io::read_json_file(test::fixture("token_cls/" + GetParam() + ".words.json"));
  const data::TokenClsData d = load(kWords);
  EXPECT_EQ(d.tags.names, ref["label_list"].get<std::vector<std::string>>());
  EXPECT_EQ(d.tags.b_to_i, ref["b_to_i"].get<std::vector<int32_t>>());
  tok::Tokenizer tok = tok::Tokenizer::from_dir(test::reference_tokenizer(GetParam()));
  const data::WordEncoder enc(tok, ref["max_length"].get<size_t>(), ref["add_prefix_space"].get<bool>());
  ASSERT_EQ(d.train->size(), ref["encodings"].size());
  for (size_t i = 0; i < d.train->size(); ++i) {
    SCOPED_TRACE("example " + std::to_string(i));
    const nlohmann::json& want = ref["encodings"][i];
    const data::WordEncoding got = enc.encode(d.train->words[i]);
    EXPECT_EQ(got.enc.ids, want["input_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(got.enc.type_ids, want["token_type_ids"].get<std::vector<int32_t>>());
    std::vector<int32_t> word_ids;
    for (const auto& w : want["word_ids"]) word_ids.push_back(w.is_null() ? -1 : w.get<int32_t>());
    EXPECT_EQ(got.word_ids, word_ids);
    for (size_t k = 0; k < got.word_ids.size(); ++k) EXPECT_EQ(got.enc.special_mask[k], got.word_ids[k] < 0 ? 1 : 0);
    EXPECT_EQ(data::align_labels(got.word_ids, d.train->tags[i], d.tags, false),
              want["labels"].get<std::vector<int32_t>>());
    EXPECT_EQ(data::align_labels(got.word_ids, d.train->tags[i], d.tags, true),
              want["labels_all_tokens"].get<std::vector<int32_t>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, WordsHf, ::testing::Values("bert-wordpiece-8k", "bpe-8k"),
                         [](const auto& info) { return info.param == "bpe-8k" ? std::string("Bpe") : std::string("Bert"); });

TEST(TokenCls, AlignLabelsByHand) {
  // Tags O=0, B-PER=1, I-PER=2, B-X=3 (no I-X): b_to_i maps B-PER to I-PER and B-X to itself.
  const data::TagSet tags = data::tag_set_from_names({"O", "B-PER", "I-PER", "B-X"});
  EXPECT_EQ(tags.b_to_i, (std::vector<int32_t>{0, 2, 2, 3}));
  EXPECT_FALSE(tags.int_tags);
  // [CLS] Pe ##ter Black ##burn X ##x [SEP]
  const std::vector<int32_t> word_ids{-1, 0, 0, 1, 1, 2, 2, -1};
  const std::vector<int32_t> word_tags{1, 2, 3};
  EXPECT_EQ(data::align_labels(word_ids, word_tags, tags, false),
            (std::vector<int32_t>{-100, 1, -100, 2, -100, 3, -100, -100}));
  EXPECT_EQ(data::align_labels(word_ids, word_tags, tags, true), (std::vector<int32_t>{-100, 1, 2, 2, 2, 3, 3, -100}));
  EXPECT_TRUE(data::tag_set_from_names({"0", "-1", "12"}).int_tags);
}

TEST(TokenCls, IntegerTagsSortNumerically) {
  ScratchDir dir;
  write_text(dir.path("t.jsonl"), "{\"tokens\": [\"a\", \"b\", \"c\"], \"tags\": [12, 0, 5]}\n"
                                  "{\"tokens\": [\"d\"], \"tags\": [5]}\n");
  const data::TokenClsData d = load(dir.path("t.jsonl"));
  EXPECT_TRUE(d.tags.int_tags);
  EXPECT_EQ(d.tags.names, (std::vector<std::string>{"0", "5", "12"}));  // run_ner: sorted, id = position
  EXPECT_EQ(d.train->tags[0], (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(d.train->lines, (std::vector<size_t>{1, 2}));
}

TEST(TokenCls, CsvAndCustomColumns) {
  ScratchDir dir;
  write_text(dir.path("t.csv"), "words,ner\n\"[\"\"Ada\"\", \"\"wrote\"\"]\",\"[\"\"B-PER\"\", \"\"O\"\"]\"\n");
  data::TokenClsOptions o;
  o.train_file = dir.path("t.csv");
  o.columns.text = "words";
  o.columns.label = "ner";
  const data::TokenClsData d = data::load_token_cls(o);
  EXPECT_EQ(d.train->words[0], (std::vector<std::string>{"Ada", "wrote"}));
  EXPECT_EQ(d.tags.names, (std::vector<std::string>{"B-PER", "O"}));
  // Without a training file the tag set is the model's (config.json id2label).
  data::TokenClsOptions eval;
  eval.validation_file = dir.path("t.csv");
  eval.columns = o.columns;
  eval.label_names = {"O", "B-PER"};
  EXPECT_EQ(data::load_token_cls(eval).validation->tags[0], (std::vector<int32_t>{1, 0}));
}

TEST(TokenCls, BatchesThroughTheLoader) {
  const data::TokenClsData d = load(kWords);
  tok::Tokenizer tok = tok::Tokenizer::from_dir(test::reference_tokenizer("bert-wordpiece-8k"));
  auto enc = std::make_shared<const data::WordEncoder>(tok, 16, false);
  auto maker = std::make_shared<data::TokenClsBatches>(d.train, enc, d.tags, /*label_all_tokens=*/false,
                                                       data::CollatorOptions{16, false, 0});
  data::LoaderOptions lo;
  lo.batch_size = 2;
  lo.num_workers = 2;
  data::DataLoader loader(maker, lo);
  loader.start(0, 0);
  Batch b;
  size_t seen = 0;
  while (loader.next(b)) {
    ASSERT_EQ(b.labels.size(), static_cast<size_t>(b.B * b.T));
    for (int r = 0; r < b.B; ++r) {
      const size_t i = b.example_ids[r];
      const data::WordEncoding we = enc->encode(d.train->words[i]);
      const std::vector<int32_t> want = data::align_labels(we.word_ids, d.train->tags[i], d.tags, false);
      for (size_t t = 0; t < static_cast<size_t>(b.T); ++t) {
        EXPECT_EQ(b.labels[r * b.T + t], t < want.size() ? want[t] : -100);
        EXPECT_EQ(b.input_ids[r * b.T + t], t < want.size() ? we.enc.ids[t] : enc->pad_id());
      }
    }
    seen += static_cast<size_t>(b.B);
  }
  EXPECT_EQ(seen, d.train->size());
  EXPECT_THROW(data::WordEncoder(tok, 2, false), Error);  // no room beside [CLS] and [SEP]
}

// ---- bad input ----

TEST(TokenClsBadInput, TokensAndTagsOfDifferentLengths) {
  ScratchDir dir;
  write_text(dir.path("t.jsonl"), "{\"tokens\": [\"a\"], \"tags\": [\"O\"]}\n\n"
                                  "{\"tokens\": [\"a\", \"b\"], \"tags\": [\"O\"]}\n");
  expect_error([&] { load(dir.path("t.jsonl")); },
               {dir.path("t.jsonl"), "line 3", "2 words in column 'tokens' but 1 tags in column 'tags'", "one tag per word"});
}

TEST(TokenClsBadInput, UnknownTagInValidation) {
  ScratchDir dir;
  write_text(dir.path("train.jsonl"), "{\"tokens\": [\"a\", \"b\"], \"tags\": [\"B-PER\", \"O\"]}\n");
  write_text(dir.path("val.jsonl"), "{\"tokens\": [\"a\"], \"tags\": [\"O\"]}\n"
                                    "{\"tokens\": [\"a\"], \"tags\": [\"B-LOC\"]}\n");
  expect_error([&] { load(dir.path("train.jsonl"), dir.path("val.jsonl")); },
               {dir.path("val.jsonl"), "line 2", "unknown tag 'B-LOC'", "the training file", "2 tags: B-PER, O"});
  write_text(dir.path("ints.jsonl"), "{\"tokens\": [\"a\"], \"tags\": [0]}\n");
  expect_error([&] { load(dir.path("train.jsonl"), dir.path("ints.jsonl")); },
               {dir.path("ints.jsonl"), "the tags are integers but those of the training file"});
}

TEST(TokenClsBadInput, MissingColumnsAndWrongKinds) {
  ScratchDir dir;
  write_text(dir.path("a.jsonl"), "{\"token\": [\"a\"], \"tags\": [\"O\"]}\n");
  expect_error([&] { load(dir.path("a.jsonl")); }, {"line 1", "no column 'tokens'", "did you mean 'token'?"});
  write_text(dir.path("b.jsonl"), "{\"tokens\": \"a b\", \"tags\": [\"O\", \"O\"]}\n");
  expect_error([&] { load(dir.path("b.jsonl")); }, {"column 'tokens' holds the text 'a b', which is not JSON",
                                                   "expected a list of words"});
  write_text(dir.path("c.jsonl"), "{\"tokens\": [\"a\", \"b\"], \"tags\": [\"O\", 1]}\n");
  expect_error([&] { load(dir.path("c.jsonl")); }, {"line 1", "mixes string and integer tags"});
  write_text(dir.path("d.jsonl"), "{\"tokens\": [\"a\"], \"tags\": [true]}\n");
  expect_error([&] { load(dir.path("d.jsonl")); }, {"has the tag true; expected strings or integers"});
  write_text(dir.path("e.jsonl"), "{\"tokens\": [1], \"tags\": [\"O\"]}\n");
  expect_error([&] { load(dir.path("e.jsonl")); }, {"column 'tokens' is not a list of strings"});
  data::TokenClsOptions none;
  none.validation_file = dir.path("a.jsonl");
  expect_error([&] { data::load_token_cls(none); }, {"no train_file", "no label names"});
}

// ---- seqeval ----

using Seqs = std::vector<std::vector<std::string>>;

TEST(Seqeval, EntitiesByHand) {
  // seqeval's docstring example.
  EXPECT_EQ(get_entities({"B-PER", "I-PER", "O", "B-LOC"}), (std::vector<Entity>{{"PER", 0, 1}, {"LOC", 3, 3}}));
  // IOB1: an I- after O starts an entity; a change of type ends one and starts another.
  EXPECT_EQ(get_entities({"I-PER", "I-PER", "O", "I-LOC"}), (std::vector<Entity>{{"PER", 0, 1}, {"LOC", 3, 3}}));
  EXPECT_EQ(get_entities({"B-PER", "I-LOC", "I-LOC"}), (std::vector<Entity>{{"PER", 0, 0}, {"LOC", 1, 2}}));
  // B after B or I ends the chunk; IOBES: S is a one-token chunk, E ends one.
  EXPECT_EQ(get_entities({"B-PER", "B-PER", "I-PER"}), (std::vector<Entity>{{"PER", 0, 0}, {"PER", 1, 2}}));
  EXPECT_EQ(get_entities({"S-PER", "B-LOC", "E-LOC", "O"}), (std::vector<Entity>{{"PER", 0, 0}, {"LOC", 1, 2}}));
  // No prefix: the type is what follows the first character's dash, "_" when nothing does.
  EXPECT_EQ(get_entities({"B", "I", "O"}), (std::vector<Entity>{{"_", 0, 1}}));
  EXPECT_EQ(get_entities({"B-A-B", "I-A-B"}), (std::vector<Entity>{{"A-B", 0, 1}}));
  expect_error([] { get_entities({"O", ""}); }, {"empty tag at position 1"});
}

TEST(Seqeval, ScoresByHand) {
  // seqeval's docstring example. References: MISC at 3..5, PER at 8..9 (sentences joined with
  // an O: sentence 2 starts at 8). Predictions: MISC at 2..5, PER at 8..9. One of two found,
  // one of two predicted right: P = R = F1 = 1/2; MISC 0/0/0, PER 1/1/1. Tokens: sentence 1
  // differs at positions 2 (B-MISC for O) and 3 (I-MISC for B-MISC): 8 of 10 right.
  const Seqs ref{{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}};
  const Seqs pred{{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}};
  const SeqevalMetrics m = compute_seqeval(pred, ref);
  EXPECT_DOUBLE_EQ(m.overall_precision, 0.5);
  EXPECT_DOUBLE_EQ(m.overall_recall, 0.5);
  EXPECT_DOUBLE_EQ(m.overall_f1, 0.5);
  EXPECT_DOUBLE_EQ(m.overall_accuracy, 0.8);
  ASSERT_EQ(m.per_type.size(), 2u);
  EXPECT_DOUBLE_EQ(m.per_type.at("MISC").f1, 0.0);
  EXPECT_EQ(m.per_type.at("MISC").number, 1u);
  EXPECT_DOUBLE_EQ(m.per_type.at("PER").precision, 1.0);

  // IOB1 references, IOB2 predictions: the same chunks, so entity scores are perfect while
  // token accuracy is 2 of 4.
  const SeqevalMetrics iob = compute_seqeval({{"B-PER", "I-PER", "O", "B-LOC"}}, {{"I-PER", "I-PER", "O", "I-LOC"}});
  EXPECT_DOUBLE_EQ(iob.overall_f1, 1.0);
  EXPECT_DOUBLE_EQ(iob.overall_accuracy, 0.5);

  // Entities never span sentences: [B-PER] [I-PER] is two PER chunks. Predicted: one PER at 0
  // (right) and an ORG no reference has (number 0). P = 1/2, R = 1/2.
  const SeqevalMetrics split = compute_seqeval({{"B-PER"}, {"B-ORG"}}, {{"B-PER"}, {"I-PER"}});
  EXPECT_DOUBLE_EQ(split.overall_precision, 0.5);
  EXPECT_DOUBLE_EQ(split.overall_recall, 0.5);
  EXPECT_EQ(split.per_type.at("ORG").number, 0u);
  EXPECT_DOUBLE_EQ(split.per_type.at("ORG").precision, 0.0);
  // PER: 1 predicted, right; 2 in the references: P 1, R 1/2, F1 2/3.
  EXPECT_DOUBLE_EQ(split.per_type.at("PER").recall, 0.5);
  EXPECT_DOUBLE_EQ(split.per_type.at("PER").f1, 2.0 / 3.0);

  // Nothing to find and nothing predicted: every ratio is 0/0 = 0; accuracy is 1.
  const SeqevalMetrics none = compute_seqeval({{"O", "O"}}, {{"O", "O"}});
  EXPECT_DOUBLE_EQ(none.overall_f1, 0.0);
  EXPECT_DOUBLE_EQ(none.overall_accuracy, 1.0);
  EXPECT_TRUE(none.per_type.empty());

  expect_error([] { compute_seqeval({{"O"}}, {{"O", "O"}}); }, {"sequence 0 has 1 predicted tags but 2 reference tags"});
  expect_error([] { compute_seqeval({}, {}); }, {"no tags"});
}

TEST(Seqeval, FromLogitsAsRunNer) {
  // 2 rows x 3 positions x 3 labels (O, B-PER, I-PER); -100 positions are skipped; a tie goes
  // to the first label, as np.argmax.
  const std::vector<std::string> names{"O", "B-PER", "I-PER"};
  const std::vector<float> logits{
      0, 9, 0,  5, 0, 0,  1, 1, 0,  // row 0: B-PER, (skipped), tie -> O
      0, 0, 9,  0, 9, 0,  9, 0, 0,  // row 1: I-PER, B-PER, O
  };
  const std::vector<int32_t> labels{1, -100, 0, 1, 2, -100};
  TagSequences s;
  add_tag_sequences(s, logits, labels, 2, 3, names);
  EXPECT_EQ(s.predictions, (Seqs{{"B-PER", "O"}, {"I-PER", "B-PER"}}));
  EXPECT_EQ(s.references, (Seqs{{"B-PER", "O"}, {"B-PER", "I-PER"}}));
  // Entities: references PER 0..0 and PER 3..4; predictions PER 0..0, PER 3..3, PER 4..4.
  const SeqevalMetrics m = compute_seqeval(s.predictions, s.references);
  EXPECT_DOUBLE_EQ(m.overall_precision, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.overall_recall, 0.5);
  EXPECT_DOUBLE_EQ(m.overall_accuracy, 0.5);
  const auto plain = to_map(m);
  EXPECT_EQ(plain.size(), 4u);
  EXPECT_DOUBLE_EQ(plain.at("f1"), 0.4);  // 2 * 1/3 * 1/2 / (5/6)
  const auto entity = to_map(m, /*entity_level=*/true);
  EXPECT_DOUBLE_EQ(entity.at("PER_number"), 2.0);
  EXPECT_DOUBLE_EQ(entity.at("overall_recall"), 0.5);
  expect_error([&] { add_tag_sequences(s, logits, std::vector<int32_t>{7, 0, 0, 0, 0, 0}, 2, 3, names); },
               {"label 7 at row 0, position 0"});
}

}  // namespace
}  // namespace strata
