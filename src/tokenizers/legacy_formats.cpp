// The older tokenizer files, turned into the pipelines transformers' converters build from them:
//   vocab.txt (+ tokenizer_config.json)            -> BERT (BertConverter)
//   vocab.json + merges.txt (+ tokenizer_config.json) -> RoBERTa (RobertaConverter) or GPT-2
//                                                     (GPT2Converter), by tokenizer_class
#include <filesystem>

#include "io/files.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/tokenizer_impl.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using nlohmann::json;

json read_config(const std::string& dir) {
  const std::string path = dir + "/tokenizer_config.json";
  if (!std::filesystem::exists(path)) return json::object();
  json j = io::read_json_file(path);
  if (!j.is_object()) fail(path, ": expected a JSON object");
  return j;
}

// A special token in tokenizer_config.json: "[CLS]" or {"content": "[CLS]", ...}.
std::string token_name(const json& config, const char* key, const std::string& dflt, const std::string& where) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return dflt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return json_fields::get_string(*it, "content", where + "." + key);
  fail(where, ".", key, ": expected a token string or {\"content\": ...}, got ", it->dump());
}

std::pair<std::string, int32_t> in_vocab(const Model& model, const std::string& token, const std::string& where) {
  const auto id = model.token_to_id(token);
  if (!id) fail(where, ": special token '", token, "' is not in the vocabulary");
  return {token, *id};
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> load_bert_vocab_txt(const std::string& dir) {
  const std::string path = dir + "/vocab.txt";
  const std::string text = io::read_file(path);
  WordPieceConfig wp;
  size_t index = 0;
  for (size_t pos = 0; pos < text.size(); ++index) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(pos, end - pos);
    if (!token.empty() && token.back() == '\r') token.pop_back();
    if (!uni::is_valid_utf8(token)) fail(path, ": line ", index + 1, " is not valid UTF-8");
    wp.vocab[token] = static_cast<int32_t>(index);  // a repeated token keeps its last line, as in BertTokenizer
    pos = end + 1;
  }
  if (wp.vocab.empty()) fail(path, ": empty vocabulary");

  const json config = read_config(dir);
  const std::string where = dir + "/tokenizer_config.json";
  const bool lowercase = json_fields::get_bool(config, "do_lower_case", true, where);
  const bool strip_accents = json_fields::get_bool(config, "strip_accents", lowercase, where);
  const bool chinese = json_fields::get_bool(config, "tokenize_chinese_chars", true, where);
  const std::string unk = token_name(config, "unk_token", "[UNK]", where);
  const std::string sep = token_name(config, "sep_token", "[SEP]", where);
  const std::string pad = token_name(config, "pad_token", "[PAD]", where);
  const std::string cls = token_name(config, "cls_token", "[CLS]", where);
  const std::string mask = token_name(config, "mask_token", "[MASK]", where);
  wp.unk_token = unk;

  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->model = make_wordpiece(std::move(wp));
  impl->normalizer = make_bert_normalizer(true, chinese, strip_accents, lowercase);
  impl->pre_tokenizer = make_bert_pre_tokenizer();
  impl->post_processor = make_bert_template(in_vocab(*impl->model, cls, path), in_vocab(*impl->model, sep, path));
  impl->decoder = make_wordpiece_decoder("##", true);
  std::vector<AddedToken> specials;
  for (const std::string& t : {unk, sep, pad, cls, mask}) specials.push_back({t, false, false, false, false, true});
  impl->add_tokens(specials);
  return impl;
}

std::unique_ptr<Tokenizer::Impl> load_vocab_json_merges(const std::string& dir) {
  const std::string vocab_path = dir + "/vocab.json", merges_path = dir + "/merges.txt";
  BpeConfig bpe;
  bpe.vocab = vocab_from_json(io::read_json_file(vocab_path), vocab_path);
  const std::string merges = io::read_file(merges_path);
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges.size();) {
    size_t end = merges.find('\n', pos);
    if (end == std::string::npos) end = merges.size();
    std::string line = merges.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
      fail(merges_path, ": line ", line_no, ": expected two tokens separated by one space, got \"", line, "\"");
    bpe.merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  bpe.continuing_subword_prefix = "";
  bpe.end_of_word_suffix = "";

  const json config = read_config(dir);
  const std::string where = dir + "/tokenizer_config.json";
  const bool add_prefix_space = json_fields::get_bool(config, "add_prefix_space", false, where);
  const std::string cls_name = token_name(config, "cls_token", "<s>", where);
  const std::string sep_name = token_name(config, "sep_token", "</s>", where);
  const std::string klass = json_fields::get_string_or(config, "tokenizer_class", "", where);
  // RoBERTa-style files carry <s> ... </s>; GPT-2-style ones only <|endoftext|>.
  const bool roberta =
      klass.find("Roberta") != std::string::npos ||
      (klass.find("GPT2") == std::string::npos && bpe.vocab.count(cls_name) && bpe.vocab.count(sep_name));

  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->model = make_bpe(std::move(bpe), merges_path);
  impl->pre_tokenizer = make_byte_level_pre_tokenizer(add_prefix_space, true);
  impl->decoder = make_byte_level_decoder();
  std::vector<AddedToken> specials;
  if (roberta) {
    impl->post_processor = make_roberta_processing(
        in_vocab(*impl->model, cls_name, vocab_path), in_vocab(*impl->model, sep_name, vocab_path),
        json_fields::get_bool(config, "trim_offsets", true, where), add_prefix_space);
    for (const auto& [key, dflt] : {std::pair{"bos_token", "<s>"},
                                    {"pad_token", "<pad>"},
                                    {"eos_token", "</s>"},
                                    {"unk_token", "<unk>"},
                                    {"mask_token", "<mask>"}}) {
      const std::string name = token_name(config, key, dflt, where);
      // RoBERTa's mask token swallows the space before it.
      if (impl->model->token_to_id(name))
        specials.push_back({name, false, std::string(key) == "mask_token", false, false, true});
    }
  } else {
    impl->post_processor = make_byte_level_processing(false, true);
    for (const char* key : {"bos_token", "eos_token", "unk_token"}) {
      const std::string name = token_name(config, key, "<|endoftext|>", where);
      if (impl->model->token_to_id(name)) specials.push_back({name, false, false, false, true, true});
    }
  }
  impl->add_tokens(specials);
  return impl;
}

}  // namespace strata::tok
