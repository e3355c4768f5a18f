// strata's tokenizers against the HF tokenizers library itself: every case of
// fixtures/tokenizers/strings.jsonl through the 4 reference tokenizers (and the small synthetic
// ones that exercise the other components) must give exactly what HF gave
// (fixtures/tokenizers/*.expected.jsonl, written by make_expected.py with PyPI tokenizers 0.23.3):
// ids, type ids, masks, tokens, code-point offsets, overflowing windows, decoded text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "data/file_bytes.h"
#include "io/files.h"
#include "test_util_fs.h"
#include "tokenizers/byte_fallback.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace strata::tok {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ScratchDir;

const std::string kFixtures = test::fixture_dir() + "/tokenizers";
// Copies of ../shared/data/tokenizers (made by the HF tokenizers library), so the suite runs anywhere.
const std::string kReference = test::fixture_dir() + "/tokenizers/reference";
const std::vector<std::string> kReferenceNames = {"bert-wordpiece-8k", "bpe-8k", "gpt2", "albert-spm-8k"};

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot read " << path;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// The cases of strings.jsonl and T5's own (t5_strings.jsonl: sentinels, </s> inside text, ...).
const std::map<std::string, json>& cases() {
  static const std::map<std::string, json> all = [] {
    std::map<std::string, json> m;
    for (const char* file : {"/strings.jsonl", "/t5_strings.jsonl"})
      for (const json& c : read_jsonl(kFixtures + file)) m[c["id"].get<std::string>()] = c;
    return m;
  }();
  return all;
}

json encoding_json(const Encoding& e) {
  json offsets = json::array();
  for (const auto& [b, en] : e.offsets) offsets.push_back({b, en});
  json j = {{"ids", e.ids},
            {"type_ids", e.type_ids},
            {"attention_mask", e.attention_mask},
            {"special_tokens_mask", e.special_tokens_mask},
            {"offsets", offsets},
            {"tokens", e.tokens}};
  if (!e.overflowing.empty()) {
    j["overflowing"] = json::array();
    for (const Encoding& o : e.overflowing) j["overflowing"].push_back(encoding_json(o));
  }
  return j;
}

void configure(Tokenizer& t, const json& c, const json& expected) {
  t.set_truncation(std::nullopt);
  t.set_padding(std::nullopt);
  if (c.contains("truncation")) {
    const json& tj = c["truncation"];
    TruncationParams p;
    p.max_length = tj["max_length"].get<size_t>();
    p.stride = tj["stride"].get<size_t>();
    const std::string s = tj["strategy"].get<std::string>();
    p.strategy = s == "only_first"    ? TruncationStrategy::OnlyFirst
                 : s == "only_second" ? TruncationStrategy::OnlySecond
                                      : TruncationStrategy::LongestFirst;
    p.right = tj.value("direction", "right") == "right";
    t.set_truncation(p);
  }
  if (c.contains("padding")) {
    const json& pj = c["padding"];
    PaddingParams p;
    p.strategy = pj["strategy"] == "max_length" ? PaddingStrategy::MaxLength : PaddingStrategy::Longest;
    p.max_length = pj.value("max_length", 0);
    p.pad_to_multiple_of = pj.value("pad_to_multiple_of", 0);
    p.right = pj.value("direction", "right") == "right";
    p.pad_token = expected["pad"][0].get<std::string>();
    p.pad_id = expected["pad"][1].get<int32_t>();
    t.set_padding(p);
  }
}

// What strata gives for one case, in the layout of the expected records.
json run_case(Tokenizer& t, const json& c, const json& expected) {
  json rec = {{"id", c["id"]}};
  if (c.contains("padding")) rec["pad"] = expected["pad"];
  try {
    configure(t, c, expected);
    if (c.contains("batch")) {
      std::vector<Encoding> batch;
      for (const json& text : c["batch"]) batch.push_back(t.encode(text.get<std::string>()));
      t.pad_batch(batch);
      rec["encodings"] = json::array();
      for (const Encoding& e : batch) rec["encodings"].push_back(encoding_json(e));
    } else {
      const bool special = c.value("add_special_tokens", true);
      const std::string text = c["text"].get<std::string>();
      const Encoding e =
          c.contains("pair") ? t.encode_pair(text, c["pair"].get<std::string>(), special) : t.encode(text, special);
      rec["encoding"] = encoding_json(e);
      rec["decode"] = t.decode(e.ids, true);
      rec["decode_keep_special"] = t.decode(e.ids, false);
    }
  } catch (const Error& err) {
    rec["error"] = err.what();
  }
  return rec;
}

// Compares field by field so a failure names the case and what differs.
void expect_same(const json& got, const json& want, const std::string& what) {
  const std::string id = want["id"].get<std::string>();
  if (want.contains("error")) {
    EXPECT_TRUE(got.contains("error")) << what << " / " << id << ": HF fails with \""
                                       << want["error"].get<std::string>() << "\", strata gave "
                                       << got.dump().substr(0, 300);
    return;
  }
  ASSERT_FALSE(got.contains("error")) << what << " / " << id << ": " << got["error"].get<std::string>();
  for (const auto& [key, value] : want.items()) {
    if (key == "encoding") {
      const json g = got.value(key, json::object());
      for (const char* f :
           {"ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask", "overflowing"}) {
        EXPECT_EQ(g.value(f, json()), value.value(f, json()))
            << what << " / " << id << ": " << f << " differ\n  text: " << cases().at(id).dump();
      }
    } else {
      EXPECT_EQ(got.value(key, json()), value) << what << " / " << id << ": " << key << " differs";
    }
  }
}

void check_all(Tokenizer& t, const std::string& expected_file, const std::string& what) {
  const std::vector<json> expected = read_jsonl(expected_file);
  ASSERT_FALSE(expected.empty());
  for (const json& want : expected) {
    const json& c = cases().at(want["id"].get<std::string>());
    expect_same(run_case(t, c, want), want, what);
  }
}

class TokenizerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerReference, EveryFixtureCaseMatchesHF) {
  Tokenizer t = Tokenizer::from_dir(kReference + "/" + GetParam());
  check_all(t, kFixtures + "/" + GetParam() + ".expected.jsonl", GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, TokenizerReference, ::testing::ValuesIn(kReferenceNames), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
});

// T5's tokenizer as transformers' T5Tokenizer makes it (fixtures/tokenizers/make_t5_tokenizer.py):
// a Unigram model under the precompiled nmt_nfkc charsmap, WhitespaceSplit + Metaspace, "$A </s>",
// and the 100 <extra_id_N> sentinels as added special tokens, on strings.jsonl's single and pair
// cases and T5's own.
TEST(TokenizerT5, EveryFixtureCaseMatchesHF) {
  Tokenizer t = Tokenizer::from_dir(kFixtures + "/t5-unigram");
  check_all(t, kFixtures + "/t5-unigram.expected.jsonl", "t5-unigram");
}

// The synthetic tokenizers: a full tokenizer.json, or a reference one with some parts replaced.
std::string synthetic_json(const std::string& name) {
  const json def = io::read_json_file(kFixtures + "/synthetic/" + name + ".json");
  if (!def.contains("base")) return def.dump();
  json j = io::read_json_file(kReference + "/" + def["base"].get<std::string>() + "/tokenizer.json");
  for (const auto& [k, v] : def["patch"].items()) j[k] = v;
  return j.dump();
}

std::vector<std::string> synthetic_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kFixtures + "/synthetic")) {
    const std::string f = e.path().filename().string();
    if (f.size() > 5 && f.ends_with(".json") && !f.ends_with(".expected.jsonl"))
      names.push_back(f.substr(0, f.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

class TokenizerSynthetic : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerSynthetic, EveryFixtureCaseMatchesHF) {
  ScratchDir dir;
  test::write_text(dir.path("tokenizer.json"), synthetic_json(GetParam()));
  Tokenizer t = Tokenizer::from_tokenizer_json(dir.path("tokenizer.json"));
  check_all(t, kFixtures + "/synthetic/" + GetParam() + ".expected.jsonl", GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, TokenizerSynthetic, ::testing::ValuesIn(synthetic_names()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
});

// ------------------------------------------------------------------ older file formats

TEST(TokenizerLegacyFormats, BertVocabTxtMatchesTokenizerJson) {
  ScratchDir dir;
  for (const char* f : {"vocab.txt", "tokenizer_config.json"})
    fs::copy_file(kReference + "/bert-wordpiece-8k/" + f, dir.path(f));
  Tokenizer t = Tokenizer::from_dir(dir.path());
  check_all(t, kFixtures + "/bert-wordpiece-8k.expected.jsonl", "bert vocab.txt");
}

TEST(TokenizerLegacyFormats, RobertaVocabJsonMergesMatchesTokenizerJson) {
  ScratchDir dir;
  for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json"})
    fs::copy_file(kReference + "/bpe-8k/" + f, dir.path(f));
  Tokenizer t = Tokenizer::from_dir(dir.path());
  check_all(t, kFixtures + "/bpe-8k.expected.jsonl", "bpe-8k vocab.json + merges.txt");
}

TEST(TokenizerLegacyFormats, Gpt2VocabJsonMergesMatchesTokenizerJson) {
  ScratchDir dir;
  // OpenAI's files are stored gzipped (the tree travels to the GPU machine); the loader reads them plain
  test::write_text(dir.path("vocab.json"), std::string(data::FileBytes(kReference + "/gpt2/encoder.json.gz").bytes()));
  test::write_text(dir.path("merges.txt"), std::string(data::FileBytes(kReference + "/gpt2/vocab.bpe.gz").bytes()));
  fs::copy_file(kReference + "/gpt2/tokenizer_config.json", dir.path("tokenizer_config.json"));
  Tokenizer t = Tokenizer::from_dir(dir.path());
  check_all(t, kFixtures + "/gpt2.expected.jsonl", "gpt2 vocab.json + merges.txt");
}

TEST(TokenizerLegacyFormats, DoLowerCaseFalseKeepsCase) {
  ScratchDir dir;
  test::write_text(dir.path("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nHello\nhello\n##s\n");
  test::write_text(dir.path("tokenizer_config.json"), R"({"do_lower_case": false})");
  Tokenizer cased = Tokenizer::from_dir(dir.path());
  EXPECT_EQ(cased.encode("Hello hellos").ids, (std::vector<int32_t>{2, 5, 6, 7, 3}));
  test::write_text(dir.path("tokenizer_config.json"), "{}");  // default: lower case
  EXPECT_EQ(Tokenizer::from_dir(dir.path()).encode("Hello").ids, (std::vector<int32_t>{2, 6, 3}));
}

// ------------------------------------------------------------------ the files the README describes

TEST(TokenizerReferenceFiles, MatchTheReadme) {
  Tokenizer bert = Tokenizer::from_dir(kReference + "/bert-wordpiece-8k");
  EXPECT_EQ(bert.vocab_size(), 8000u);
  const std::vector<std::string> bert_special = {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"};
  for (size_t i = 0; i < bert_special.size(); ++i)
    EXPECT_EQ(bert.token_to_id(bert_special[i]), static_cast<int32_t>(i));
  size_t continuation = 0;
  for (int32_t id = 0; id < 8000; ++id) continuation += bert.id_to_token(id)->rfind("##", 0) == 0;
  EXPECT_EQ(continuation, 1853u);
  // ids 5..1519: the single characters, sorted by code point
  char32_t prev = 0;
  for (int32_t id = 5; id <= 1519; ++id) {
    const std::string t = *bert.id_to_token(id);
    size_t len;
    const char32_t c = uni::decode(t, 0, &len);
    EXPECT_EQ(len, t.size()) << "id " << id;
    EXPECT_GT(c, prev) << "id " << id;
    prev = c;
  }
  EXPECT_EQ(bert.num_special_tokens_to_add(false), 2u);
  EXPECT_EQ(bert.num_special_tokens_to_add(true), 3u);

  Tokenizer bpe = Tokenizer::from_dir(kReference + "/bpe-8k");
  EXPECT_EQ(bpe.vocab_size(), 8000u);
  for (const auto& [tok, id] :
       std::vector<std::pair<std::string, int32_t>>{{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", 4}})
    EXPECT_EQ(bpe.token_to_id(tok), id);
  EXPECT_EQ(bpe.id_to_token(5), "!");           // the 256 byte characters, sorted by code point
  EXPECT_EQ(bpe.id_to_token(260), "\xC5\x83");  // U+0143, the last of them
  const json bpe_json = io::read_json_file(kReference + "/bpe-8k/tokenizer.json");
  EXPECT_EQ(bpe_json["model"]["merges"].size(), 7739u);
  EXPECT_EQ(bpe.num_special_tokens_to_add(true), 4u);

  Tokenizer gpt2 = Tokenizer::from_dir(kReference + "/gpt2");
  EXPECT_EQ(gpt2.vocab_size(), 50257u);
  EXPECT_EQ(gpt2.token_to_id("<|endoftext|>"), 50256);
  EXPECT_EQ(gpt2.num_special_tokens_to_add(false), 0u);
  EXPECT_EQ(gpt2.encode("Hello world").ids, (std::vector<int32_t>{15496, 995}));  // GPT-2's well-known ids

  Tokenizer albert = Tokenizer::from_dir(kReference + "/albert-spm-8k");
  EXPECT_EQ(albert.vocab_size(), 8000u);
  const std::vector<std::string> albert_first = {
      "<pad>", "<unk>", "[CLS]",        "[SEP]",    "[MASK]",       "(",           ")", "\"",
      "-",     ".",     "\xE2\x80\x93", "\xC2\xA3", "\xE2\x82\xAC", "\xE2\x96\x81"};
  for (size_t i = 0; i < albert_first.size(); ++i)
    EXPECT_EQ(albert.id_to_token(static_cast<int32_t>(i)), albert_first[i]);
  // spiece.vocab lists the same pieces in the same order
  const std::string spiece = io::read_file(kReference + "/albert-spm-8k/spiece.vocab");
  size_t line = 0;
  for (size_t pos = 0; pos < spiece.size(); ++line) {
    const size_t end = spiece.find('\n', pos);
    EXPECT_EQ(albert.id_to_token(static_cast<int32_t>(line)), spiece.substr(pos, spiece.find('\t', pos) - pos));
    pos = end == std::string::npos ? spiece.size() : end + 1;
  }
  EXPECT_EQ(line, 8000u);
}

// ------------------------------------------------------------------ invalid UTF-8

TEST(TokenizerInvalidUtf8, ReplacedByReplacementCharacter) {
  // Each maximal ill-formed subsequence becomes one U+FFFD.
  EXPECT_EQ(uni::make_valid_utf8("a\xFF"
                                 "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(uni::make_valid_utf8("a\xE2\x82"), "a\xEF\xBF\xBD");                            // truncated €
  EXPECT_EQ(uni::make_valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(uni::make_valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(uni::make_valid_utf8("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
  for (const std::string& name : kReferenceNames) {
    Tokenizer t = Tokenizer::from_dir(kReference + "/" + name);
    const Encoding bad = t.encode("caf\xC3 \xFFna\xEF\xBF\xBDve \xE2\x82 x");
    const Encoding good = t.encode("caf\xEF\xBF\xBD \xEF\xBF\xBDna\xEF\xBF\xBDve \xEF\xBF\xBD x");
    EXPECT_EQ(bad.ids, good.ids) << name;
    EXPECT_EQ(bad.offsets, good.offsets) << name;  // code points of the repaired text
    EXPECT_EQ(t.encode_pair("\xFF", "ok").ids, t.encode_pair("\xEF\xBF\xBD", "ok").ids) << name;
  }
}

// ------------------------------------------------------------------ errors

using test::expect_error;

json small_wordpiece() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null, "decoder": null,
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "a": 1, "b": 2, "##b": 3}}})");
}

TEST(TokenizerErrors, UnsupportedComponentsNameFileAndComponent) {
  ScratchDir dir;
  const std::string path = dir.path("tokenizer.json");
  auto load_with = [&](const std::string& key, const json& value) {
    json j = small_wordpiece();
    j[key] = value;
    test::write_text(path, j.dump());
    return [&path] { Tokenizer::from_tokenizer_json(path); };
  };
  expect_error(load_with("pre_tokenizer", {{"type", "Foo"}}),
               {path, "pre_tokenizer type 'Foo' is not supported; supported: ", "BertPreTokenizer", "Metaspace"});
  expect_error(load_with("pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScripts"}}}}}),
               {path, "pre_tokenizer.pretokenizers[0] type 'UnicodeScripts' is not supported"});
  expect_error(load_with("normalizer", {{"type", "ByteLevel"}}),
               {path, "normalizer type 'ByteLevel' is not supported; supported: ", "Precompiled"});
  expect_error(load_with("decoder", {{"type", "CTC"}}), {path, "decoder type 'CTC' is not supported", "ByteFallback"});
  expect_error(load_with("post_processor", {{"type", "Bogus"}}),
               {path, "post_processor type 'Bogus' is not supported", "TemplateProcessing"});
  expect_error(load_with("model", {{"type", "WordLevel"}, {"vocab", json::object()}}),
               {path, "model type 'WordLevel' is not supported; supported: WordPiece, BPE, Unigram"});
  expect_error(
      load_with("pre_tokenizer",
                {{"type", "Split"}, {"pattern", {{"Regex", "(?<=a)b"}}}, {"behavior", "Isolated"}, {"invert", false}}),
      {path, "pre_tokenizer.pattern", "(?<=a)b", "lookbehind"});
  expect_error(
      load_with(
          "pre_tokenizer",
          {{"type", "Split"}, {"pattern", {{"Regex", "\\p{Han}+"}}}, {"behavior", "Isolated"}, {"invert", false}}),
      {path, "unsupported property \\p{Han}"});
  expect_error(load_with("pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", "yes"}}),
               {path, "pre_tokenizer.add_prefix_space: expected true or false"});
  expect_error(load_with("normalizer", {{"type", "Replace"}, {"pattern", "x"}, {"content", ""}}),
               {path, "normalizer.pattern: expected {\"String\""});
  expect_error(load_with("model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", {"a b"}}}),
               {path, "model.merges: token 'b' of a merge is not in the vocabulary"});
  expect_error(load_with("version", "2.0"), {path, "unknown tokenizer.json version '2.0'"});
  test::write_text(path, "{\"version\": \"1.0\", ");
  expect_error([&] { Tokenizer::from_tokenizer_json(path); }, {path, "invalid JSON"});
  expect_error([&] { Tokenizer::from_dir(dir.path("missing")); }, {"missing", "not a directory"});
  fs::remove(path);
  expect_error([&] { Tokenizer::from_dir(dir.path()); },
               {dir.path(), "no tokenizer.json, vocab.txt or vocab.json + merges.txt"});
  test::write_text(dir.path("vocab.json"), "{\"a\": 0}");
  test::write_text(dir.path("merges.txt"), "#version: 0.2\na b c\n");
  expect_error([&] { Tokenizer::from_dir(dir.path()); }, {dir.path("merges.txt"), "line 2", "two tokens"});
}

TEST(TokenizerErrors, TruncationSettings) {
  Tokenizer t = Tokenizer::from_dir(kReference + "/bert-wordpiece-8k");
  TruncationParams p;
  p.max_length = 6;
  p.stride = 4;  // 6 - 2 special tokens leaves 4: the stride must be smaller
  expect_error([&] { t.set_truncation(p); }, {"stride 4", "max_length 6"});
  p.stride = 3;
  t.set_truncation(p);
  EXPECT_EQ(t.encode("one two three four five six seven").ids.size(), 6u);
  p.strategy = TruncationStrategy::OnlySecond;
  t.set_truncation(p);
  expect_error([&] { t.encode("one two three four five six seven"); }, {"Second sequence not provided"});
}

// ------------------------------------------------------------------ padding and batches

TEST(TokenizerPadding, BatchPadsToLongestAndMultiple) {
  Tokenizer t = Tokenizer::from_dir(kReference + "/bert-wordpiece-8k");
  PaddingParams p;
  p.pad_id = 3;
  p.pad_to_multiple_of = 4;
  p.right = false;
  t.set_padding(p);
  std::vector<Encoding> batch = {t.encode("a"), t.encode("a b c d e f"), t.encode("")};
  t.pad_batch(batch);
  for (const Encoding& e : batch) {
    EXPECT_EQ(e.ids.size(), 8u);
    EXPECT_EQ(e.attention_mask.size(), 8u);
  }
  EXPECT_EQ(batch[0].ids[0], 3);
  EXPECT_EQ(batch[0].attention_mask[0], 0);
  EXPECT_EQ(batch[0].special_tokens_mask[0], 1);
  EXPECT_EQ(batch[2].ids, (std::vector<int32_t>{3, 3, 3, 3, 3, 3, 1, 2}));
}

// ------------------------------------------------------------------ threads

TEST(TokenizerThreads, ConcurrentEncodesMatchSerialOnes) {
  std::vector<std::string> texts;
  for (const auto& [id, c] : cases())
    if (c.contains("text")) texts.push_back(c["text"].get<std::string>());
  for (const std::string& name : kReferenceNames) {
    const Tokenizer t = Tokenizer::from_dir(kReference + "/" + name);
    std::vector<std::vector<int32_t>> serial;
    for (const std::string& s : texts) serial.push_back(t.encode(s).ids);
    // Two threads, each over all texts (offset so they start on different ones, cold caches).
    std::vector<std::vector<std::vector<int32_t>>> got(2, std::vector<std::vector<int32_t>>(texts.size()));
    const Tokenizer fresh = Tokenizer::from_dir(kReference + "/" + name);
    std::vector<std::thread> threads;
    for (size_t k = 0; k < 2; ++k)
      threads.emplace_back([&, k] {
        for (size_t n = 0; n < texts.size(); ++n) {
          const size_t i = (n + k * texts.size() / 2) % texts.size();
          got[k][i] = fresh.encode(texts[i]).ids;
        }
      });
    for (auto& th : threads) th.join();
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(got[k], serial) << name << " thread " << k;
  }
}

// The one byte-fallback spelling the BPE and Unigram models and the ByteFallback decoder share.
TEST(TokenizerByteFallback, SpellingAndTable) {
  EXPECT_EQ(byte_fallback::token_name(0x0A), "<0x0A>");
  EXPECT_EQ(byte_fallback::token_name(0xFF), "<0xFF>");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(byte_fallback::token_byte(byte_fallback::token_name(b)), b);
  EXPECT_EQ(byte_fallback::token_byte("<0xab>"), 0xAB);  // either case, as HF's decoder reads it
  for (const char* t : {"<0xG0>", "<0x0A", "0x0A>", "<0x0AA>", "<1x0A>", "a"})
    EXPECT_EQ(byte_fallback::token_byte(t), -1) << t;
  Vocab v;
  v["<0x41>"] = 7;
  v["<0x42>"] = 9;
  const byte_fallback::ByteIds ids(v);
  EXPECT_EQ(ids['A'], 7);
  EXPECT_EQ(ids['C'], -1);
  EXPECT_TRUE(ids.covers("ABBA"));
  EXPECT_FALSE(ids.covers("ABC"));
  EXPECT_FALSE(byte_fallback::ByteIds().covers("A"));
}

}  // namespace
}  // namespace strata::tok
