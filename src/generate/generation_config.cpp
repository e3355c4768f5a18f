#include "generate/generation_config.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "models/config_fields.h"
#include "util/error.h"

namespace strata::gen {

namespace {

// GenerationConfig fields that change HF's output and that strata does not implement, with
// HF's defaults (transformers 4.36): a file that sets one of them to anything else is
// generating in a way strata will not reproduce, and the caller says so.
const std::pair<const char*, nlohmann::json> kNotImplemented[] = {
    {"min_length", 0},
    {"min_new_tokens", nullptr},
    {"max_time", nullptr},
    {"num_beams", 1},
    {"num_beam_groups", 1},
    {"penalty_alpha", nullptr},
    {"typical_p", 1.0},
    {"epsilon_cutoff", 0.0},
    {"eta_cutoff", 0.0},
    {"diversity_penalty", 0.0},
    {"repetition_penalty", 1.0},
    {"encoder_repetition_penalty", 1.0},
    {"no_repeat_ngram_size", 0},
    {"bad_words_ids", nullptr},
    {"force_words_ids", nullptr},
    {"renormalize_logits", false},
    {"constraints", nullptr},
    {"forced_bos_token_id", nullptr},
    {"forced_eos_token_id", nullptr},
    {"remove_invalid_values", false},
    {"exponential_decay_length_penalty", nullptr},
    {"suppress_tokens", nullptr},
    {"begin_suppress_tokens", nullptr},
    {"sequence_bias", nullptr},
    {"guidance_scale", nullptr},
};

// eos_token_id is an id or a list of ids (HF accepts both); null means none.
std::vector<int32_t> read_eos(const nlohmann::json& j, const std::string& source) {
  auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return {};
  const nlohmann::json list = it->is_array() ? *it : nlohmann::json::array({*it});
  std::vector<int32_t> ids;
  for (const auto& v : list) {
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > INT32_MAX)
      fail(source, ": eos_token_id must be a token id or a list of them, got ", it->dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

}  // namespace

int GenerationConfig::new_token_budget(int prompt_len) const {
  if (max_new_tokens) return *max_new_tokens;
  if (max_length) return *max_length - prompt_len;
  return kDefaultMaxNewTokens;
}

void GenerationConfig::validate(const std::string& where) const {
  if (max_new_tokens && *max_new_tokens <= 0)
    fail(where, "max_new_tokens must be a positive integer, got ", *max_new_tokens);
  if (max_length && *max_length <= 0) fail(where, "max_length must be a positive integer, got ", *max_length);
  if (!(temperature > 0) || !std::isfinite(temperature))
    fail(where, "temperature must be a strictly positive number, got ", temperature,
         " (for greedy decoding leave out do_sample instead)");
  if (top_k < 0) fail(where, "top_k must be 0 (off) or a positive integer, got ", top_k);
  if (!(top_p > 0 && top_p <= 1)) fail(where, "top_p must be in (0, 1], got ", top_p);
  if (num_return_sequences < 1) fail(where, "num_return_sequences must be at least 1, got ", num_return_sequences);
  if (!do_sample && num_return_sequences != 1)
    fail(where, "greedy decoding gives one sequence per prompt, so num_return_sequences must be 1 (got ",
         num_return_sequences, "); sample several with do_sample");
}

GenerationConfig load_generation_config(const std::string& model_dir, std::vector<std::string>* ignored) {
  namespace fs = std::filesystem;
  std::string path = (fs::path(model_dir) / "generation_config.json").string();
  if (!fs::exists(path)) path = (fs::path(model_dir) / "config.json").string();
  if (!fs::exists(path)) fail(model_dir, ": no config.json in this directory");
  const nlohmann::json j = io::read_json_file(path);
  if (!j.is_object()) fail(path, ": expected a JSON object");
  const std::string kind = "generation";
  const ConfigFields f(j, path, kind);

  GenerationConfig g;
  if (f.has("max_new_tokens")) g.max_new_tokens = f.int_or("max_new_tokens", 0);
  if (f.has("max_length")) g.max_length = f.int_or("max_length", 0);
  g.do_sample = f.bool_or("do_sample", g.do_sample);
  g.temperature = f.num_or("temperature", g.temperature);
  g.top_k = f.int_or("top_k", g.top_k);
  g.top_p = f.num_or("top_p", g.top_p);
  g.num_return_sequences = f.int_or("num_return_sequences", g.num_return_sequences);
  g.use_cache = f.bool_or("use_cache", g.use_cache);
  g.bos_token_id = f.int_or("bos_token_id", -1);
  g.eos_token_ids = read_eos(j, path);
  if (ignored)
    for (const auto& [name, dflt] : kNotImplemented)
      if (auto it = j.find(name); it != j.end() && *it != dflt) ignored->push_back(cat(name, " = ", it->dump()));
  return g;
}

}  // namespace strata::gen
