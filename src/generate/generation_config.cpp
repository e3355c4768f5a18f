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
    {"max_time", nullptr},
    {"num_beam_groups", 1},
    {"penalty_alpha", nullptr},
    {"typical_p", 1.0},
    {"epsilon_cutoff", 0.0},
    {"eta_cutoff", 0.0},
    {"diversity_penalty", 0.0},
    {"encoder_repetition_penalty", 1.0},
    {"bad_words_ids", nullptr},
    {"force_words_ids", nullptr},
    {"renormalize_logits", false},
    {"constraints", nullptr},
    {"remove_invalid_values", false},
    {"exponential_decay_length_penalty", nullptr},
    {"suppress_tokens", nullptr},
    {"begin_suppress_tokens", nullptr},
    {"sequence_bias", nullptr},
    {"guidance_scale", nullptr},
};

// early_stopping is true, false or "never" (HF's validate refuses anything else); null means false.
EarlyStopping read_early_stopping(const nlohmann::json& j, const std::string& source) {
  auto it = j.find("early_stopping");
  if (it == j.end() || it->is_null()) return EarlyStopping::Heuristic;
  if (it->is_boolean()) return it->get<bool>() ? EarlyStopping::OnceNumBeamsDone : EarlyStopping::Heuristic;
  if (it->is_string() && it->get<std::string>() == "never") return EarlyStopping::Never;
  fail(source, ": field 'early_stopping' must be true, false or \"never\", got ", it->dump());
}

// eos_token_id and forced_eos_token_id are an id or a list of ids (HF accepts both); null
// means none.
std::vector<int32_t> read_token_ids(const nlohmann::json& j, const char* field, const std::string& source) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return {};
  const nlohmann::json list = it->is_array() ? *it : nlohmann::json::array({*it});
  std::vector<int32_t> ids;
  for (const auto& v : list) {
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > INT32_MAX)
      fail(source, ": ", field, " must be a token id or a list of them, got ", it->dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

}  // namespace

EarlyStopping parse_early_stopping(const std::string& text, const std::string& where) {
  if (text == "false") return EarlyStopping::Heuristic;
  if (text == "true") return EarlyStopping::OnceNumBeamsDone;
  if (text == "never") return EarlyStopping::Never;
  fail(where, "early_stopping must be true, false or never, got '", text, "'");
}

int GenerationConfig::new_token_budget(int prompt_len) const {
  if (max_new_tokens) return *max_new_tokens;
  if (max_length) return *max_length - prompt_len;
  return kDefaultMaxNewTokens;
}

int GenerationConfig::min_sequence_length(int prompt_len) const {
  return min_new_tokens ? prompt_len + *min_new_tokens : min_length;
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
  if (num_beams < 1) fail(where, "num_beams must be a positive integer (1: no beam search), got ", num_beams);
  if (num_beams == 1 && !do_sample && num_return_sequences != 1)
    fail(where, "greedy decoding gives one sequence per prompt, so num_return_sequences must be 1 (got ",
         num_return_sequences, "); sample several with do_sample, or keep several beams with num_beams");
  if (num_beams > 1 && num_return_sequences > num_beams)
    fail(where, "num_return_sequences (", num_return_sequences, ") has to be smaller or equal to num_beams (",
         num_beams, "): beam search returns its best finished hypotheses");
  if (num_beams > 1 && do_sample)
    fail(where, "beam sampling (num_beams ", num_beams, " with do_sample) is not implemented; use beam search "
         "(without do_sample) or sampling (num_beams 1)");
  if (!std::isfinite(length_penalty)) fail(where, "length_penalty must be a finite number, got ", length_penalty);
  if (no_repeat_ngram_size < 0)
    fail(where, "no_repeat_ngram_size must be 0 (off) or a positive integer, got ", no_repeat_ngram_size);
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    fail(where, "repetition_penalty must be a strictly positive number (1: off), got ", repetition_penalty);
  // HF's MinLength / MinNewTokensLength processors refuse negative lengths (generate skips the
  // processor for one <= 0, so it ignores a negative one; strata says so instead).
  if (min_length < 0) fail(where, "min_length must be a non-negative integer (0: off), got ", min_length);
  if (min_new_tokens && *min_new_tokens < 0)
    fail(where, "min_new_tokens must be a non-negative integer, got ", *min_new_tokens);
  if (forced_bos_token_id && *forced_bos_token_id < 0)
    fail(where, "forced_bos_token_id must be a token id, got ", *forced_bos_token_id);
  for (int32_t id : forced_eos_token_ids)
    if (id < 0) fail(where, "forced_eos_token_id must be a token id or a list of them, got ", id);
}

void GenerationConfig::check_forced_ids(int vocab_size, const std::string& where) const {
  std::vector<std::pair<const char*, int32_t>> forced;
  if (forced_bos_token_id) forced.emplace_back("forced_bos_token_id", *forced_bos_token_id);
  for (int32_t id : forced_eos_token_ids) forced.emplace_back("forced_eos_token_id", id);
  for (const auto& [field, id] : forced)
    if (id < 0 || id >= vocab_size)
      fail(where, field, " ", id, " is not a token of the model's vocabulary (vocab_size ", vocab_size, ")");
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
  g.num_beams = f.int_or("num_beams", g.num_beams);
  g.length_penalty = f.num_or("length_penalty", g.length_penalty);
  g.early_stopping = read_early_stopping(j, path);
  g.no_repeat_ngram_size = f.int_or("no_repeat_ngram_size", g.no_repeat_ngram_size);
  g.repetition_penalty = f.num_or("repetition_penalty", g.repetition_penalty);
  g.min_length = f.int_or("min_length", g.min_length);
  if (f.has("min_new_tokens")) g.min_new_tokens = f.int_or("min_new_tokens", 0);
  if (f.has("forced_bos_token_id")) g.forced_bos_token_id = f.int_or("forced_bos_token_id", 0);
  g.forced_eos_token_ids = read_token_ids(j, "forced_eos_token_id", path);
  g.use_cache = f.bool_or("use_cache", g.use_cache);
  g.bos_token_id = f.int_or("bos_token_id", -1);
  g.eos_token_ids = read_token_ids(j, "eos_token_id", path);
  if (ignored)
    for (const auto& [name, dflt] : kNotImplemented)
      if (auto it = j.find(name); it != j.end() && *it != dflt) ignored->push_back(cat(name, " = ", it->dump()));
  return g;
}

}  // namespace strata::gen
