// `strata tokenize`: JSONL in, JSONL out, the same encodings as the library, errors that name
// the input line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util_fs.h"
#include "tokenizers/tokenizer.h"

namespace strata::tok {
namespace {

using nlohmann::json;
using test::ScratchDir;

const std::string kBert = test::reference_tokenizer("bert-wordpiece-8k");

std::vector<json> parse_lines(const std::string& text) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    out.push_back(json::parse(text.substr(pos, end - pos)));
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST(TokenizerCli, EncodesEachLineAsTheLibraryDoes) {
  ScratchDir dir;
  test::write_text(dir.path("in.jsonl"),
                   "{\"text\": \"Hello, world!\"}\n\n{\"text\": \"caf\\u00e9 \\u4f60\\u597d\"}\n");
  const auto r = test::run_strata(
      {"tokenize", "--tokenizer", kBert, "--input", dir.path("in.jsonl"), "--output", dir.path("out.jsonl")}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> lines = parse_lines(test::read_text(dir.path("out.jsonl")));
  ASSERT_EQ(lines.size(), 2u);
  const Tokenizer t = Tokenizer::from_dir(kBert);
  const Encoding e = t.encode("caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD");
  EXPECT_EQ(lines[1]["input_ids"], json(e.ids));
  EXPECT_EQ(lines[1]["tokens"], json(e.tokens));
  EXPECT_EQ(lines[1]["token_type_ids"], json(e.type_ids));
  EXPECT_EQ(lines[1]["attention_mask"], json(e.attention_mask));
  json offsets = json::array();
  for (const auto& [b, en] : e.offsets) offsets.push_back({b, en});
  EXPECT_EQ(lines[1]["offsets"], offsets);  // code points: 你 is at 5
  EXPECT_FALSE(lines[0].contains("overflowing"));
}

TEST(TokenizerCli, PairsTruncationAndPadding) {
  ScratchDir dir;
  test::write_text(dir.path("in.jsonl"),
                   "{\"text\": \"one two three four five six seven\", \"text_pair\": \"eight nine\"}\n"
                   "{\"text\": \"a\", \"text_pair\": \"b\"}\n");
  const auto r = test::run_strata(
      {"tokenize", "--tokenizer", kBert, "--pair", "--max-length", "8", "--stride", "1", "--truncation", "only_first",
       "--padding", "longest", "--pad-to-multiple-of", "4", "--input", dir.path("in.jsonl")},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> lines = parse_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["input_ids"].size(), 8u);
  EXPECT_EQ(lines[1]["input_ids"].size(), 8u);  // padded to the longest line
  EXPECT_EQ(lines[1]["attention_mask"], json::parse("[1,1,1,1,1,0,0,0]"));
  EXPECT_EQ(lines[1]["token_type_ids"], json::parse("[0,0,0,1,1,0,0,0]"));
  ASSERT_TRUE(lines[0].contains("overflowing"));
  EXPECT_EQ(lines[0]["overflowing"][0]["tokens"][0], "[CLS]");
}

TEST(TokenizerCli, ErrorsNameTheLine) {
  ScratchDir dir;
  test::write_text(dir.path("in.jsonl"), "{\"text\": \"fine\"}\n{\"text\": 3}\n");
  auto r = test::run_strata({"tokenize", "--tokenizer", kBert, "--input", dir.path("in.jsonl")}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("input line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"text\""), std::string::npos) << r.err;

  test::write_text(dir.path("in.jsonl"), "{\"text\": \"fine\"}\n\n{\"text\": \"x\"\n");
  r = test::run_strata({"tokenize", "--tokenizer", kBert, "--input", dir.path("in.jsonl")}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("input line 3: invalid JSON"), std::string::npos) << r.err;

  test::write_text(dir.path("in.jsonl"), "{\"text\": \"only one\"}\n");
  r = test::run_strata({"tokenize", "--tokenizer", kBert, "--pair", "--input", dir.path("in.jsonl")}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("input line 1: expected a string field \"text_pair\""), std::string::npos) << r.err;

  r = test::run_strata({"tokenize", "--tokenizer", kBert, "--padding", "widest"}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--padding expects longest or max_length"), std::string::npos) << r.err;
  r = test::run_strata({"tokenize", "--tokenizer", dir.path("nowhere")}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::tok
