// Question answering, files to metrics: examples (qa_examples.h), features and their windows
// (qa_features.h) against HF's own tokenizers library running run_qa.py's feature logic
// (fixtures/qa/make_qa_reference.py), batches through the DataLoader, post-processing and the
// SQuAD v1.1 / v2.0 scores against ports of utils_qa.py and the official scripts
// (fixtures/qa/make_qa_postprocess_reference.py), hand-computed scores, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/py_text.h"
#include "data/qa_batches.h"
#include "data/qa_examples.h"
#include "data/qa_features.h"
#include "data/special_layout.h"
#include "data/tokenizer_encoder.h"
#include "io/files.h"
#include "test_util_fs.h"
#include "train/qa_postprocess.h"
#include "train/squad_metrics.h"

namespace strata {
namespace {

using test::expect_error;
using test::fixture;
using test::reference_tokenizer;
using test::ScratchDir;
using test::write_text;

const std::string kExamples = fixture("qa/examples.jsonl");

data::QaExamples read_examples(const std::string& path, bool answers_optional = false) {
  return data::read_qa_examples(path, data::detect_format(path, "", 0), data::QaColumns{}, answers_optional);
}

data::QaFeatureOptions options_of(const nlohmann::json& ref, bool pad) {
  data::QaFeatureOptions o;
  o.max_seq_length = ref["max_seq_length"].get<size_t>();
  o.doc_stride = ref["doc_stride"].get<size_t>();
  o.pad_to_max_length = pad;
  return o;
}

// ---- examples ----

TEST(QaExamples, ReadsSquadShapeWithCodePointStarts) {
  const data::QaExamples ex = read_examples(kExamples);
  ASSERT_EQ(ex.examples.size(), 15u);
  EXPECT_TRUE(ex.has_answers);
  const data::QaExample& q4 = ex.examples[3];
  EXPECT_EQ(q4.id, "q4");
  ASSERT_EQ(q4.answers.size(), 3u);  // every gold answer is kept; training uses the first
  EXPECT_EQ(q4.answers[1].text, "Pell family");
  EXPECT_TRUE(ex.examples[5].answers.empty());  // unanswerable
  // answer_start counts code points: after an emoji (2 UTF-16 units, 4 bytes) and accents.
  const data::QaExample& q7 = ex.examples[6];
  const size_t b = data::byte_of_code_point(q7.context, q7.answers[0].start);
  EXPECT_EQ(q7.context.substr(b, q7.answers[0].text.size()), "12 employés");
  EXPECT_EQ(data::byte_of_code_point("aé😀b", 3), 1u + 2u + 4u);
  EXPECT_EQ(data::byte_of_code_point("ab", 9), 2u);  // past the end clamps, as Python slicing
}

TEST(QaExamples, CsvHoldsAnswersAsJsonAndIdsAreOptional) {
  ScratchDir dir;
  write_text(dir.path("qa.csv"),
             "question,context,answers\n"
             "Who?,Ada wrote it.,\"{\"\"text\"\": [\"\"Ada\"\"], \"\"answer_start\"\": [0]}\"\n"
             "When?,In 1843.,\"{\"\"text\"\": [], \"\"answer_start\"\": []}\"\n");
  const data::QaExamples ex = read_examples(dir.path("qa.csv"));
  ASSERT_EQ(ex.examples.size(), 2u);
  EXPECT_EQ(ex.examples[0].id, "0");  // no id column: the row number
  EXPECT_EQ(ex.examples[1].id, "1");
  EXPECT_EQ(ex.examples[0].answers[0].text, "Ada");
  EXPECT_TRUE(ex.examples[1].answers.empty());
  EXPECT_EQ(ex.examples[1].line, 3u);

  // Custom column names, integer ids, and an unlabelled file for prediction.
  write_text(dir.path("qa.jsonl"), "{\"qid\": 7, \"q\": \" Who?\", \"ctx\": \"Ada wrote it.\"}\n");
  data::QaColumns cols;
  cols.question = "q";
  cols.context = "ctx";
  cols.id = "qid";
  const data::QaExamples un = data::read_qa_examples(dir.path("qa.jsonl"), data::detect_format("x.jsonl", "", 0), cols, true);
  EXPECT_FALSE(un.has_answers);
  EXPECT_EQ(un.examples[0].id, "7");
  EXPECT_EQ(un.examples[0].question, " Who?");  // stripped when tokenized, as run_qa does
}

// ---- features against HF ----

class QaFeaturesHf : public ::testing::TestWithParam<std::string> {};

TEST_P(QaFeaturesHf, TrainFeaturesMatchRunQa) {
  const nlohmann::json ref = io::read_json_file(fixture("qa/" + GetParam() + ".features.json"));
  const data::QaExamples ex = read_examples(kExamples);
  for (bool pad : {false, true}) {
    tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer(GetParam()));
    const data::QaFeatures f = data::make_qa_features(tok, ex, options_of(ref, pad), /*train=*/true);
    const nlohmann::json& want = ref["train"];
    ASSERT_EQ(f.features.size(), want.size()) << "pad " << pad;
    for (size_t i = 0; i < want.size(); ++i) {
      const data::QaFeature& got = f.features[i];
      SCOPED_TRACE("feature " + std::to_string(i) + (pad ? " (pad_to_max_length)" : ""));
      EXPECT_EQ(got.example, want[i]["example"].get<size_t>());
      EXPECT_EQ(got.enc.ids, want[i]["input_ids"].get<std::vector<int32_t>>());
      EXPECT_EQ(got.enc.type_ids, want[i]["token_type_ids"].get<std::vector<int32_t>>());
      const nlohmann::json& pos = pad ? ref["train_padded"][i] : want[i];
      EXPECT_EQ(got.start_position, pos["start_position"].get<int32_t>());
      EXPECT_EQ(got.end_position, pos["end_position"].get<int32_t>());
    }
    EXPECT_EQ(f.num_examples(), ex.examples.size());
  }
}

TEST_P(QaFeaturesHf, EvalFeaturesKeepContextOffsetsOnly) {
  const nlohmann::json ref = io::read_json_file(fixture("qa/" + GetParam() + ".features.json"));
  const data::QaExamples ex = read_examples(kExamples);
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer(GetParam()));
  const data::QaFeatures f = data::make_qa_features(tok, ex, options_of(ref, false), /*train=*/false);
  const nlohmann::json& want = ref["eval"];
  ASSERT_EQ(f.features.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const data::QaFeature& got = f.features[i];
    SCOPED_TRACE("feature " + std::to_string(i));
    EXPECT_EQ(ex.examples[got.example].id, want[i]["example_id"].get<std::string>());
    EXPECT_EQ(got.enc.ids, want[i]["input_ids"].get<std::vector<int32_t>>());
    const nlohmann::json& offs = want[i]["offset_mapping"];
    ASSERT_EQ(got.offsets.size(), offs.size());
    for (size_t k = 0; k < offs.size(); ++k) {
      if (offs[k].is_null()) {
        EXPECT_FALSE(got.offsets[k].in_context()) << "token " << k;
      } else {
        EXPECT_EQ(got.offsets[k].begin, offs[k][0].get<int32_t>()) << "token " << k;
        EXPECT_EQ(got.offsets[k].end, offs[k][1].get<int32_t>()) << "token " << k;
      }
    }
  }
  // first[] groups each example's windows.
  for (size_t e = 0; e < f.num_examples(); ++e)
    for (size_t i = f.first[e]; i < f.first[e + 1]; ++i) EXPECT_EQ(f.features[i].example, e);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, QaFeaturesHf, ::testing::Values("bert-wordpiece-8k", "bpe-8k"),
                         [](const auto& info) { return info.param == "bpe-8k" ? std::string("Bpe") : std::string("Bert"); });

TEST(QaFeatures, SpecialLayoutOfEachPostProcessor) {
  // Template (BERT, ALBERT), RoBERTa and byte-level (GPT-2: none) post-processors.
  auto ids = [](const tok::Tokenizer& t, std::initializer_list<const char*> names) {
    std::vector<int32_t> out;
    for (const char* n : names) out.push_back(*t.token_to_id(n));
    return out;
  };
  for (const char* name : {"bert-wordpiece-8k", "albert-spm-8k"}) {
    const tok::Tokenizer t = tok::Tokenizer::from_dir(reference_tokenizer(name));
    const data::SpecialLayout pair = data::special_layout(t, true), single = data::special_layout(t, false);
    EXPECT_EQ(pair.before.ids, ids(t, {"[CLS]"})) << name;
    EXPECT_EQ(pair.between.ids, ids(t, {"[SEP]"})) << name;
    EXPECT_EQ(pair.after.ids, ids(t, {"[SEP]"})) << name;
    EXPECT_EQ(pair.after.type_ids, std::vector<int32_t>{1}) << name;
    EXPECT_EQ(pair.second_type, 1) << name;
    EXPECT_TRUE(single.between.ids.empty()) << name;
    EXPECT_EQ(single.size(), 2u) << name;
  }
  const tok::Tokenizer roberta = tok::Tokenizer::from_dir(reference_tokenizer("bpe-8k"));
  const data::SpecialLayout r = data::special_layout(roberta, true);
  EXPECT_EQ(r.between.ids, ids(roberta, {"</s>", "</s>"}));
  EXPECT_EQ(r.second_type, 0);  // RoBERTa has one token type
  const data::SpecialLayout g = data::special_layout(tok::Tokenizer::from_dir(reference_tokenizer("gpt2")), true);
  EXPECT_EQ(g.size(), 0u);
}

TEST(QaFeatures, LongContextWindowsCoverTheWholeContext) {
  // Windows overlap by doc_stride tokens and the last one ends with the context, however long
  // (tokenizers 0.23's own overflowing windows stop after max_length tokens).
  ScratchDir dir;
  std::string context;
  for (int i = 0; i < 60; ++i) context += "word" + std::to_string(i) + " ";
  const size_t at = context.size();
  context += "needle in the haystack";
  write_text(dir.path("long.jsonl"), nlohmann::json{{"id", "a"}, {"question", "Where?"}, {"context", context},
                                                    {"answers", {{"text", {"needle"}}, {"answer_start", {at}}}}}
                                         .dump() + "\n");
  const data::QaExamples ex = read_examples(dir.path("long.jsonl"));
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer("bert-wordpiece-8k"));
  data::QaFeatureOptions o;
  o.max_seq_length = 24;
  o.doc_stride = 4;
  const data::QaFeatures f = data::make_qa_features(tok, ex, o, /*train=*/true);
  ASSERT_GT(f.features.size(), 5u);
  const int32_t cls = *tok.token_to_id("[CLS]"), sep = *tok.token_to_id("[SEP]");
  size_t found = 0;
  for (size_t i = 0; i < f.features.size(); ++i) {
    const data::QaFeature& w = f.features[i];
    if (i + 1 < f.features.size()) {
      EXPECT_EQ(w.enc.ids.size(), 24u);
    }
    EXPECT_EQ(w.enc.ids.front(), cls);
    EXPECT_EQ(w.enc.ids.back(), sep);
    if (w.start_position == 0) continue;  // the answer is not wholly in this window: CLS
    ++found;
    EXPECT_EQ(tok.decode({w.enc.ids.begin() + w.start_position, w.enc.ids.begin() + w.end_position + 1}), "needle");
  }
  EXPECT_GE(found, 1u);
  EXPECT_NE(f.features.back().start_position, 0);  // the last window holds the context's end
}

TEST(QaFeatures, BatchesThroughTheLoader) {
  const data::QaExamples ex = read_examples(kExamples);
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer("bert-wordpiece-8k"));
  data::QaFeatureOptions o;
  o.max_seq_length = 40;
  o.doc_stride = 8;
  auto features = std::make_shared<const data::QaFeatures>(data::make_qa_features(tok, ex, o, /*train=*/true));
  const int32_t pad = data::pad_token_id(tok);
  data::LoaderOptions lo;
  lo.batch_size = 8;
  lo.seed = 3;
  lo.num_workers = 2;
  data::DataLoader loader(std::make_shared<data::QaBatches>(features, pad, data::CollatorOptions{40, false, 0}), lo);
  EXPECT_EQ(loader.num_examples(), features->features.size());  // the dataset is the features
  loader.start(1, 0);
  Batch b;
  size_t seen = 0;
  while (loader.next(b)) {
    ASSERT_EQ(b.start_positions.size(), static_cast<size_t>(b.B));
    ASSERT_EQ(b.example_ids.size(), static_cast<size_t>(b.B));
    for (int r = 0; r < b.B; ++r) {
      const data::QaFeature& f = features->features[b.example_ids[r]];  // example_ids: feature indices
      EXPECT_EQ(b.start_positions[r], f.start_position);
      EXPECT_EQ(b.end_positions[r], f.end_position);
      const size_t n = f.enc.ids.size();
      for (size_t t = 0; t < static_cast<size_t>(b.T); ++t) {
        EXPECT_EQ(b.input_ids[r * b.T + t], t < n ? f.enc.ids[t] : pad);
        EXPECT_EQ(b.attention_mask[r * b.T + t], t < n ? 1 : 0);
      }
    }
    seen += static_cast<size_t>(b.B);
  }
  EXPECT_EQ(seen, features->features.size());

  // Evaluation batches carry no positions; pad_to_max_length makes every row max_seq_length wide.
  auto eval = std::make_shared<const data::QaFeatures>(data::make_qa_features(tok, ex, o, /*train=*/false));
  const data::QaBatches maker(eval, pad, data::CollatorOptions{40, true, 0});
  const std::vector<size_t> rows{0, 5, 9};
  const Batch e = maker.make(rows, 0);
  EXPECT_EQ(e.T, 40);
  EXPECT_EQ(e.B, 3);
  EXPECT_TRUE(e.start_positions.empty());
}

// ---- post-processing against utils_qa.py ----

TEST(QaPostprocess, MatchesUtilsQa) {
  const nlohmann::json ref = io::read_json_file(fixture("qa/postprocess_reference.json"));
  const nlohmann::json feats = io::read_json_file(fixture("qa/bert-wordpiece-8k.features.json"));
  const data::QaExamples ex = read_examples(kExamples);
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer("bert-wordpiece-8k"));
  const data::QaFeatures f = data::make_qa_features(tok, ex, options_of(feats, false), /*train=*/false);
  QaLogits logits;
  logits.width = ref["width"].get<size_t>();
  logits.start = ref["start_logits"].get<std::vector<float>>();
  logits.end = ref["end_logits"].get<std::vector<float>>();
  for (const nlohmann::json& run : ref["runs"]) {
    QaPostprocessOptions o;
    o.version_2_with_negative = run["version_2_with_negative"].get<bool>();
    o.n_best_size = run["n_best_size"].get<size_t>();
    o.max_answer_length = run["max_answer_length"].get<size_t>();
    o.null_score_diff_threshold = run["null_score_diff_threshold"].get<double>();
    SCOPED_TRACE(std::string(o.version_2_with_negative ? "v2" : "v1") + " n_best " + std::to_string(o.n_best_size));
    const std::vector<QaPrediction> preds = postprocess_qa_predictions(ex, f, logits, o);
    ASSERT_EQ(preds.size(), ex.examples.size());
    for (const QaPrediction& p : preds) {
      SCOPED_TRACE(p.id);
      EXPECT_EQ(p.prediction_text, run["predictions"][p.id].get<std::string>());
      const nlohmann::json& nb = run["nbest"][p.id];
      ASSERT_EQ(p.nbest.size(), nb.size());
      for (size_t i = 0; i < nb.size(); ++i) {
        EXPECT_EQ(p.nbest[i].text, nb[i]["text"].get<std::string>()) << i;
        EXPECT_EQ(p.nbest[i].start_logit, nb[i]["start_logit"].get<float>()) << i;
        EXPECT_EQ(p.nbest[i].end_logit, nb[i]["end_logit"].get<float>()) << i;
        EXPECT_NEAR(p.nbest[i].probability, nb[i]["probability"].get<double>(), 1e-6) << i;
      }
      if (o.version_2_with_negative) {
        ASSERT_TRUE(p.score_diff.has_value());
        EXPECT_EQ(*p.score_diff, run["null_odds"][p.id].get<float>());
      } else {
        EXPECT_FALSE(p.score_diff.has_value());
      }
    }
    std::vector<SquadPrediction> sp = squad_predictions(preds);
    std::vector<SquadReference> refs = squad_references(ex);
    if (!o.version_2_with_negative)  // v1.1 cannot score unanswerable questions
      std::erase_if(refs, [](const SquadReference& r) { return r.answers.empty(); });
    auto expect_map = [](const std::map<std::string, double>& got, const nlohmann::json& want) {
      ASSERT_EQ(got.size(), want.size());
      for (const auto& [k, v] : want.items()) {
        ASSERT_TRUE(got.count(k)) << k;
        EXPECT_NEAR(got.at(k), v.get<double>(), 1e-12) << k;
      }
    };
    if (!o.version_2_with_negative) {
      expect_map(to_map(compute_squad(sp, refs)), run["squad"]);
      continue;
    }
    expect_map(to_map(compute_squad_v2(sp, refs)), run["squad_v2"]);
    for (auto& p : sp) p.no_answer_probability = run["no_answer_probability"][p.id].get<double>();
    expect_map(to_map(compute_squad_v2(sp, refs, 0.5)), run["squad_v2_na"]);
  }
}

TEST(QaPostprocess, HandComputedSpansAndNullAnswer) {
  // One example, one feature: [CLS] q [SEP] c0 c1 c2 [SEP] with c_i = context words.
  data::QaExamples ex;
  ex.has_answers = true;
  ex.examples.push_back({"x", "q", "alpha beta gamma", {}, 1});
  data::QaFeatures f;
  f.first = {0, 1};
  data::QaFeature feat;
  feat.enc.ids.assign(7, 5);
  feat.offsets = {{}, {}, {}, {0, 5}, {6, 10}, {11, 16}, {}};
  f.features.push_back(feat);
  QaLogits l;
  l.width = 8;  // one padding position past the feature: never an answer
  //              CLS  q   SEP  alpha beta gamma SEP  pad
  l.start = {1.0f, 9.f, 0.f, 3.0f, 2.0f, 0.5f, 0.f, 50.f};
  l.end = {1.0f, 9.f, 0.f, 0.5f, 4.0f, 1.0f, 0.f, 50.f};
  QaPostprocessOptions o;
  o.n_best_size = 3;
  // Top-3 starts: pad(7), q(1), alpha(3); ends: pad(7), q(1), beta(4). The only valid pair is
  // alpha..beta (3 + 4 = 7); q and pad are outside the context.
  std::vector<QaPrediction> p = postprocess_qa_predictions(ex, f, l, o);
  ASSERT_EQ(p[0].nbest.size(), 1u);
  EXPECT_EQ(p[0].prediction_text, "alpha beta");
  EXPECT_FLOAT_EQ(p[0].nbest[0].probability, 1.0f);

  // v2: the null score 1 + 1 = 2 is below the span's 7, so score_diff = 2 - 7 = -5 and the span
  // is predicted; a threshold of -6 makes -5 exceed it and the null answer win.
  o.version_2_with_negative = true;
  p = postprocess_qa_predictions(ex, f, l, o);
  EXPECT_EQ(p[0].prediction_text, "alpha beta");
  EXPECT_FLOAT_EQ(*p[0].score_diff, -5.0f);
  ASSERT_EQ(p[0].nbest.size(), 2u);  // the span, then the null answer
  EXPECT_EQ(p[0].nbest[1].text, "");
  EXPECT_NEAR(p[0].nbest[0].probability, 1 / (1 + std::exp(-5.0)), 1e-7);
  o.null_score_diff_threshold = -6;
  EXPECT_EQ(postprocess_qa_predictions(ex, f, l, o)[0].prediction_text, "");

  // max_answer_length 1 leaves no span: v1 falls back to HF's "empty" candidate.
  o = QaPostprocessOptions{};
  o.n_best_size = 3;
  o.max_answer_length = 1;
  p = postprocess_qa_predictions(ex, f, l, o);
  EXPECT_EQ(p[0].prediction_text, "empty");

  l.start.pop_back();
  expect_error([&] { postprocess_qa_predictions(ex, f, l, o); }, {"start and end logits of 1 features x width 8"});
}

TEST(QaPostprocess, WritesHfPredictionFiles) {
  ScratchDir dir;
  QaPrediction p{"q\"1", "Zoë", {{"Zoë", 1.5f, 2.5f, 0.75f}, {"", 0.5f, 0.25f, 0.25f}}, -3.0f};
  write_qa_predictions(dir.path(), "eval", {p});
  const nlohmann::json best = io::read_json_file(dir.path("eval_predictions.json"));
  EXPECT_EQ(best["q\"1"], "Zoë");
  const nlohmann::json nbest = io::read_json_file(dir.path("eval_nbest_predictions.json"));
  EXPECT_EQ(nbest["q\"1"][0]["probability"].get<double>(), 0.75);
  EXPECT_EQ(nbest["q\"1"][1]["text"], "");
  EXPECT_EQ(io::read_json_file(dir.path("eval_null_odds.json"))["q\"1"].get<double>(), -3.0);
  write_qa_predictions(dir.path(), "", {QaPrediction{"a", "b", {{"b", 0, 0, 1}}, std::nullopt}});
  EXPECT_TRUE(std::filesystem::exists(dir.path("predictions.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("null_odds.json")));  // v1: no null odds
}

// ---- SQuAD metrics ----

TEST(SquadMetrics, NormalisationAndScoresMatchTheOfficialScripts) {
  const nlohmann::json ref = io::read_json_file(fixture("qa/postprocess_reference.json"));
  for (const nlohmann::json& c : ref["pairs"]) {
    const std::string pred = c["prediction"], gold = c["gold"];
    SCOPED_TRACE(pred + " | " + gold);
    EXPECT_EQ(normalize_answer(pred), c["normalized_prediction"].get<std::string>());
    EXPECT_EQ(squad_exact(pred, gold), c["exact"].get<double>());
    EXPECT_DOUBLE_EQ(squad_f1(pred, gold), c["f1_v1"].get<double>());
    const double v2 = to_map(compute_squad_v2({{"x", pred, 0}}, {{"x", gold.empty() ? std::vector<std::string>{}
                                                                                    : std::vector<std::string>{gold}}}))
                          .at("f1");
    EXPECT_DOUBLE_EQ(v2, 100.0 * c["f1_v2"].get<double>());
  }
}

TEST(SquadMetrics, HandComputed) {
  // Normalisation: lower, ASCII punctuation out, whole-word articles out, whitespace collapsed.
  EXPECT_EQ(normalize_answer("  The  Cat's\tHAT, an apple!"), "cats hat apple");
  EXPECT_EQ(normalize_answer("theatre anthem a-b"), "theatre anthem ab");
  // Final_Sigma, as Python's str.lower(): a word-final capital sigma becomes U+03C2.
  EXPECT_EQ(data::py::lower("\u039f\u0394\u039f\u03a3 \u03a3\u0391\u03a3"),
            "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03b1\u03c2");

  // "the cat sat" vs "cat sat on mat": tokens [cat, sat] vs [cat, sat, on, mat]: 2 shared,
  // precision 1, recall 1/2, F1 2/3.
  EXPECT_DOUBLE_EQ(squad_f1("the cat sat", "cat sat on mat"), 2.0 / 3.0);
  EXPECT_EQ(squad_exact("The Cat", "cat."), 1.0);
  EXPECT_EQ(squad_f1("", ""), 0.0);  // v1.1: no shared token scores 0, even for two empties
  // Repeated tokens count as a multiset: "red red" vs "red" shares 1: P 1/2, R 1, F1 2/3.
  EXPECT_DOUBLE_EQ(squad_f1("red red", "red"), 2.0 / 3.0);

  // v1.1 over three questions, best over gold answers; q3 unanswered scores 0 but counts.
  const std::vector<SquadReference> refs{{"q1", {"Denver Broncos", "Broncos"}}, {"q2", {"1932"}}, {"q3", {"x"}}};
  const SquadMetrics m = compute_squad({{"q1", "the Broncos", 0}, {"q2", "in 1932", 0}, {"zz", "x", 0}}, refs);
  // q1: EM 1 (vs "Broncos"), F1 1; q2: EM 0, F1 [in, 1932] vs [1932] = 2 * 1/2 * 1 / 1.5 = 2/3.
  EXPECT_DOUBLE_EQ(m.exact_match, 100.0 * 1 / 3);
  EXPECT_DOUBLE_EQ(m.f1, 100.0 * (1 + 2.0 / 3) / 3);
  expect_error([] { compute_squad({}, {{"q", {}}}); }, {"question 'q' has no gold answer", "squad_v2"});

  // v2.0: q1 answerable and answered right, q2 answerable and answered "", q3 unanswerable and
  // answered "", q4 unanswerable but answered.
  const std::vector<SquadReference> r2{{"q1", {"Paris"}}, {"q2", {"Rome"}}, {"q3", {}}, {"q4", {}}};
  std::vector<SquadPrediction> p2{{"q1", "Paris", 0}, {"q2", "", 0}, {"q3", "", 0}, {"q4", "Oslo", 0}};
  SquadV2Metrics v = compute_squad_v2(p2, r2);
  EXPECT_DOUBLE_EQ(v.exact, 50.0);
  EXPECT_DOUBLE_EQ(v.f1, 50.0);
  EXPECT_EQ(v.total, 4u);
  EXPECT_DOUBLE_EQ(v.has_ans_exact, 50.0);
  EXPECT_DOUBLE_EQ(v.no_ans_exact, 50.0);
  // best_exact: start from the 2 unanswerable questions answered "", walk by probability (all
  // 0: in order): q1 +1 -> 3, q2 +0, q3 +0, q4 -1 -> 2. Peak 3 of 4 = 75, threshold 0.
  EXPECT_DOUBLE_EQ(v.best_exact, 75.0);
  EXPECT_DOUBLE_EQ(v.best_exact_thresh, 0.0);
  // With q4's no-answer probability above the threshold it is predicted unanswerable: exact 75.
  p2[3].no_answer_probability = 0.9;
  v = compute_squad_v2(p2, r2, 0.5);
  EXPECT_DOUBLE_EQ(v.exact, 75.0);
  EXPECT_DOUBLE_EQ(v.no_ans_exact, 100.0);
  EXPECT_DOUBLE_EQ(v.best_exact, 75.0);  // q4 now sorts last: 2 -> 3 (q1) ... -> 2 (q4)
  const auto names = to_map(v);
  for (const char* k : {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1",
                        "NoAns_total", "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"})
    EXPECT_TRUE(names.count(k)) << k;
  expect_error([&] { compute_squad_v2({{"q1", "Paris", 0}}, r2); }, {"no prediction for question 'q2'"});
}

// ---- bad input ----

class QaBadInput : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    write_text(dir_.path(name), text);
    return dir_.path(name);
  }
  ScratchDir dir_;
};

TEST_F(QaBadInput, AnswerNotAtItsStart) {
  const std::string p = write("a.jsonl",
                              R"({"id": "1", "question": "Q", "context": "Ada wrote it.", "answers": {"text": ["Ada"], "answer_start": [0]}})"
                              "\n"
                              R"({"id": "2", "question": "Q", "context": "Ada wrote it.", "answers": {"text": ["wrote"], "answer_start": [3]}})"
                              "\n");
  expect_error([&] { read_examples(p); },
               {p, "line 2", "column 'answers'", "answer 0 'wrote' is not in the context at answer_start 3",
                "reads ' wrote it.'"});
  const std::string q = write("b.jsonl",
                              R"({"question": "Q", "context": "Zoë 😀 rit.", "answers": {"text": ["rit"], "answer_start": [8]}})"
                              "\n");
  expect_error([&] { read_examples(q); }, {"line 1", "answer_start 8 (code points"});  // a byte offset is wrong
  const std::string ok = write("c.jsonl",
                               R"({"question": "Q", "context": "Zoë 😀 rit.", "answers": {"text": ["rit"], "answer_start": [6]}})"
                               "\n");
  EXPECT_EQ(read_examples(ok).examples[0].answers[0].start, 6u);
}

TEST_F(QaBadInput, AnswerListsOfDifferentLengths) {
  const std::string p = write("a.jsonl",
                              R"({"question": "Q", "context": "Ada", "answers": {"text": ["Ada", "Ad"], "answer_start": [0]}})"
                              "\n");
  expect_error([&] { read_examples(p); }, {p, "line 1", "column 'answers'", "2 answer text(s) but 1 answer_start"});
}

TEST_F(QaBadInput, MalformedAnswers) {
  const std::string a = write("a.jsonl", R"({"question": "Q", "context": "Ada", "answers": ["Ada"]})" "\n");
  expect_error([&] { read_examples(a); }, {"line 1", "column 'answers'", "a JSON array", "expected SQuAD answers"});
  const std::string b = write("b.jsonl", R"({"question": "Q", "context": "Ada", "answers": {"text": ["Ada"]}})" "\n");
  expect_error([&] { read_examples(b); }, {"no 'answer_start' list"});
  const std::string c = write("c.jsonl",
                              R"({"question": "Q", "context": "Ada", "answers": {"text": [""], "answer_start": [0]}})" "\n");
  expect_error([&] { read_examples(c); }, {"answer 0 has an empty text"});
  const std::string d = write("d.csv", "question,context,answers\nQ,Ada,\"{'text': ['Ada']}\"\n");
  expect_error([&] { read_examples(d); }, {d, "line 2", "column 'answers' holds the text", "which is not JSON"});
  const std::string e = write("e.jsonl",
                              R"({"id": "x", "question": "Q", "context": "Ada", "answers": {"text": [], "answer_start": []}})"
                              "\n"
                              R"({"id": "x", "question": "Q", "context": "Ada", "answers": {"text": [], "answer_start": []}})"
                              "\n");
  expect_error([&] { read_examples(e); }, {"line 2", "duplicate id 'x'"});
}

TEST_F(QaBadInput, MissingColumnsNameTheNearest) {
  const std::string p = write("a.csv", "question,contexts,answers\nQ,Ada,\"{}\"\n");
  expect_error([&] { read_examples(p); },
               {p, "line 2", "no column 'context'", "(columns: answers, contexts, question)", "did you mean 'contexts'?"});
  const std::string q = write("b.jsonl", R"({"question": "Q", "context": "Ada", "answer": {}})" "\n");
  expect_error([&] { read_examples(q); }, {"no column 'answers'", "did you mean 'answer'?"});
  // Training needs answers even where reading them was optional.
  const std::string r = write("c.jsonl", R"({"question": "Q", "context": "Ada"})" "\n");
  const data::QaExamples un = read_examples(r, /*answers_optional=*/true);
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer("bert-wordpiece-8k"));
  expect_error([&] { data::make_qa_features(tok, un, {}, /*train=*/true); }, {r, "no answers column"});
  const std::string t = write("d.txt", "just text\n");
  expect_error([&] { read_examples(t); }, {t, "plain-text file has no columns"});
}

TEST_F(QaBadInput, QuestionTooLongForTheWindow) {
  const std::string p = write("a.jsonl",
                              R"({"question": "one two three four five six seven eight nine ten", "context": "Ada wrote it.", "answers": {"text": [], "answer_start": []}})"
                              "\n");
  tok::Tokenizer tok = tok::Tokenizer::from_dir(reference_tokenizer("bert-wordpiece-8k"));
  data::QaFeatureOptions o;
  o.max_seq_length = 12;
  o.doc_stride = 1;
  expect_error([&] { data::make_qa_features(tok, read_examples(p), o, true); },
               {p, "line 1", "tokens and 3 special tokens leave no room for the context", "max_seq_length 12"});
  o.max_seq_length = 15;  // room for 2 context tokens, not more than doc_stride 2
  o.doc_stride = 2;
  expect_error([&] { data::make_qa_features(tok, read_examples(p), o, true); },
               {"doc_stride 2 must be smaller than the context tokens that fit beside the question (2"});
}

}  // namespace
}  // namespace strata
