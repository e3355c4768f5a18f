// The parts of a Tokenizer, shared by the pipeline (tokenizer.cpp) and the loaders
// (tokenizer_json.cpp, legacy_formats.cpp).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizers/added_tokens.h"
#include "tokenizers/decoders.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/post_processors.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/tokenizer.h"

namespace strata::tok {

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;  // may be null
  std::unique_ptr<Decoder> decoder;               // may be null: tokens joined with spaces
  AddedVocabulary added;
  std::optional<TruncationParams> truncation;
  std::optional<PaddingParams> padding;

  void add_tokens(const std::vector<AddedToken>& tokens) { added.add(tokens, *model, normalizer.get()); }
};

// Builders used by Tokenizer::from_dir for the older file formats (legacy_formats.cpp).
std::unique_ptr<Tokenizer::Impl> load_bert_vocab_txt(const std::string& dir);
std::unique_ptr<Tokenizer::Impl> load_vocab_json_merges(const std::string& dir);
std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& path);

}  // namespace strata::tok
