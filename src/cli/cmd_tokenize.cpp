// `strata tokenize --tokenizer DIR`: JSONL texts in, JSONL encodings out (docs/tokenizers.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/files.h"
#include "tokenizers/tokenizer.h"
#include "util/error.h"

namespace strata::cli {

namespace {

using nlohmann::json;

struct TokenizeOptions {
  std::string tokenizer;
  std::optional<int> max_length, stride, pad_to_multiple_of;
  std::optional<std::string> truncation, padding, input, output;
  bool pair = false;
};

// ordered_json keeps the fields in the documented order.
nlohmann::ordered_json encoding_json(const tok::Encoding& e) {
  nlohmann::ordered_json offsets = nlohmann::ordered_json::array();
  for (const auto& [b, en] : e.offsets) offsets.push_back({b, en});
  nlohmann::ordered_json j = {{"input_ids", e.ids},
                              {"token_type_ids", e.type_ids},
                              {"attention_mask", e.attention_mask},
                              {"offsets", std::move(offsets)},
                              {"tokens", e.tokens}};
  if (!e.overflowing.empty()) {
    j["overflowing"] = nlohmann::ordered_json::array();
    for (const tok::Encoding& o : e.overflowing) j["overflowing"].push_back(encoding_json(o));
  }
  return j;
}

std::optional<tok::TruncationParams> truncation_from(const TokenizeOptions& a) {
  if (!a.max_length) {
    if (a.stride || a.truncation) fail("strata tokenize: --stride and --truncation need --max-length");
    return std::nullopt;
  }
  const int max_length = *a.max_length, stride = a.stride.value_or(0);
  if (max_length <= 0) fail("strata tokenize: --max-length must be positive, got ", max_length);
  if (stride < 0) fail("strata tokenize: --stride must not be negative, got ", stride);
  tok::TruncationParams t;
  t.max_length = static_cast<size_t>(max_length);
  t.stride = static_cast<size_t>(stride);
  const std::string s = a.truncation.value_or("longest_first");
  if (s == "longest_first")
    t.strategy = tok::TruncationStrategy::LongestFirst;
  else if (s == "only_first")
    t.strategy = tok::TruncationStrategy::OnlyFirst;
  else if (s == "only_second")
    t.strategy = tok::TruncationStrategy::OnlySecond;
  else
    fail("strata tokenize: --truncation expects longest_first, only_first or only_second, got '", s, "'");
  return t;
}

std::optional<tok::PaddingParams> padding_from(const TokenizeOptions& a, const tok::Tokenizer& t) {
  if (!a.padding) {
    if (a.pad_to_multiple_of) fail("strata tokenize: --pad-to-multiple-of needs --padding");
    return std::nullopt;
  }
  // The tokenizer's own padding settings (pad token, direction) when it has them.
  tok::PaddingParams p = t.padding().value_or(tok::PaddingParams{});
  if (!t.padding()) {
    std::optional<int32_t> id;
    for (const char* name : {"[PAD]", "<pad>"})
      if ((id = t.token_to_id(name))) {
        p.pad_token = name;
        p.pad_id = *id;
        break;
      }
    if (!id) fail("strata tokenize: --padding needs a pad token, and the tokenizer has neither [PAD] nor <pad>");
  }
  const std::string s = *a.padding;
  if (s == "longest") {
    p.strategy = tok::PaddingStrategy::Longest;
  } else if (s == "max_length") {
    if (!a.max_length) fail("strata tokenize: --padding max_length needs --max-length");
    p.strategy = tok::PaddingStrategy::MaxLength;
    p.max_length = static_cast<size_t>(*a.max_length);
  } else {
    fail("strata tokenize: --padding expects longest or max_length, got '", s, "'");
  }
  const int multiple = a.pad_to_multiple_of.value_or(0);
  if (multiple < 0) fail("strata tokenize: --pad-to-multiple-of must not be negative, got ", multiple);
  p.pad_to_multiple_of = static_cast<size_t>(multiple);
  return p;
}

std::string field(const json& line, const char* key, size_t line_no) {
  auto it = line.find(key);
  if (it == line.end() || !it->is_string())
    fail("input line ", line_no, ": expected a string field \"", key, "\", got ", line.dump().substr(0, 200));
  return it->get<std::string>();
}

int run_tokenize(const TokenizeOptions& a) {
  tok::Tokenizer t = tok::Tokenizer::from_dir(a.tokenizer);
  t.set_truncation(truncation_from(a));
  // Padding is applied to the whole input at once (as encode_batch does): "longest" means the
  // longest line of the input.
  const std::optional<tok::PaddingParams> padding = padding_from(a, t);
  t.set_padding(std::nullopt);
  const bool pair = a.pair;

  std::string input;
  const std::string input_name = a.input.value_or("stdin");
  if (a.input) {
    input = io::read_file(*a.input);
  } else {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    input = ss.str();
  }
  std::vector<tok::Encoding> encodings;
  size_t line_no = 0;
  for (size_t pos = 0; pos < input.size();) {
    size_t end = input.find('\n', pos);
    if (end == std::string::npos) end = input.size();
    const std::string_view raw(input.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (raw.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line
    json line;
    try {
      line = json::parse(raw);
    } catch (const json::parse_error& e) {
      fail(input_name, ": input line ", line_no, ": invalid JSON: ", e.what());
    }
    if (!line.is_object()) fail(input_name, ": input line ", line_no, ": expected a JSON object {\"text\": ...}");
    try {
      const std::string text = field(line, "text", line_no);
      encodings.push_back(pair ? t.encode_pair(text, field(line, "text_pair", line_no)) : t.encode(text));
    } catch (const Error& e) {
      const std::string msg = e.what();
      fail(input_name, ": ", msg.rfind("input line", 0) == 0 ? msg : cat("input line ", line_no, ": ", msg));
    }
  }
  if (padding) {
    t.set_padding(padding);
    t.pad_batch(encodings);
  }
  std::string out;
  for (const tok::Encoding& e : encodings) out += encoding_json(e).dump() + "\n";
  if (a.output)
    io::write_file_atomic(*a.output, out);
  else
    std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

Run define_tokenize(CLI::App& cmd) {
  auto o = std::make_shared<TokenizeOptions>();
  cmd.add_option("--tokenizer", o->tokenizer, "tokenizer directory (tokenizer.json, vocab.txt, vocab.json + merges.txt)")
      ->required();
  cmd.add_flag("--pair", o->pair, "encode {\"text\", \"text_pair\"} pairs");
  cmd.add_option("--max-length", o->max_length, "truncate to N tokens");
  cmd.add_option("--stride", o->stride, "tokens of overlap in the overflowing windows");
  cmd.add_option("--truncation", o->truncation, "longest_first (default), only_first or only_second");
  cmd.add_option("--padding", o->padding, "longest or max_length");
  cmd.add_option("--pad-to-multiple-of", o->pad_to_multiple_of, "round padded lengths up to a multiple of N");
  cmd.add_option("--input", o->input, "JSONL file of {\"text\": ...} lines (default: stdin)");
  cmd.add_option("--output", o->output, "JSONL file of encodings (default: stdout)");
  return [o](const auto&) { return run_tokenize(*o); };
}

}  // namespace strata::cli
