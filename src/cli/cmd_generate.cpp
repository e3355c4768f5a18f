// `strata generate MODEL_DIR --prompt TEXT`: text from a causal LM (a continuation of the
// prompt) or a sequence-to-sequence model (the prompt is the source: HF's text2text-generation
// pipeline), to see what a trained model learned. Glue only: the tokenizer turns prompts into ids and ids back into text,
// generate/ does the decoding (options as HF's GenerationConfig names them, docs/generate.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "generate/generator.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "tokenizers/tokenizer.h"
#include "util/error.h"

namespace strata::cli {

namespace {

struct GenerateOptions {
  std::string dir;
  std::optional<std::string> prompt, prompt_file, tokenizer;
  std::optional<int> max_new_tokens, min_new_tokens, min_length, top_k, num_return_sequences, num_beams,
      no_repeat_ngram_size;
  std::optional<double> temperature, top_p, length_penalty, repetition_penalty;
  std::optional<std::string> early_stopping;
  std::optional<long long> seed;
  // Flags: given (count() > 0) they override generation_config.json's do_sample / use_cache.
  bool do_sample = false, use_cache = true;
  const CLI::Option* do_sample_flag = nullptr;
  const CLI::Option* use_cache_flag = nullptr;
  int threads = 0;
  std::string device = "cpu";
  bool json = false;
};

// "GPT2LMHeadModel, ...": the classes strata can generate with, from the registry.
std::string generating_classes() {
  std::string s;
  for (const Architecture* a : all_architectures())
    for (Task t : {Task::CausalLM, Task::Seq2SeqLM})
      if (const char* suffix = a->class_suffix(t)) s += (s.empty() ? "" : ", ") + std::string(a->class_prefix) + suffix;
  return s;
}

std::vector<std::string> read_prompts(const GenerateOptions& a) {
  if (a.prompt.has_value() == a.prompt_file.has_value())
    fail("strata generate: give the text to continue with --prompt TEXT or --prompt-file FILE (one prompt per "
         "line), not both");
  if (a.prompt) return {*a.prompt};
  const std::string path = *a.prompt_file;
  std::ifstream in(path);
  if (!in) fail(path, ": cannot open the prompt file");
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) prompts.push_back(line);  // blank lines separate nothing: skipped
  }
  if (prompts.empty()) fail(path, ": no prompts (the file has no non-blank line)");
  return prompts;
}

// The generation config of `dir` with the command line's overrides.
gen::GenerationConfig generation_config(const GenerateOptions& a, const std::string& dir) {
  std::vector<std::string> ignored;
  gen::GenerationConfig g = gen::load_generation_config(dir, &ignored);
  for (const std::string& field : ignored)
    std::fprintf(stderr, "strata generate: warning: %s: %s is not implemented; generating without it\n", dir.c_str(),
                 field.c_str());
  if (a.max_new_tokens) g.max_new_tokens = *a.max_new_tokens;
  if (a.min_new_tokens) g.min_new_tokens = *a.min_new_tokens;
  g.min_length = a.min_length.value_or(g.min_length);
  if (a.do_sample_flag->count()) g.do_sample = a.do_sample;
  g.temperature = a.temperature.value_or(g.temperature);
  g.top_k = a.top_k.value_or(g.top_k);
  g.top_p = a.top_p.value_or(g.top_p);
  g.num_return_sequences = a.num_return_sequences.value_or(g.num_return_sequences);
  g.num_beams = a.num_beams.value_or(g.num_beams);
  g.length_penalty = a.length_penalty.value_or(g.length_penalty);
  if (a.early_stopping)
    g.early_stopping = gen::parse_early_stopping(*a.early_stopping, "strata generate: --early-stopping: ");
  g.no_repeat_ngram_size = a.no_repeat_ngram_size.value_or(g.no_repeat_ngram_size);
  g.repetition_penalty = a.repetition_penalty.value_or(g.repetition_penalty);
  if (a.use_cache_flag->count()) g.use_cache = a.use_cache;
  const long long seed = a.seed.value_or(static_cast<long long>(g.seed));
  if (seed < 0) fail("strata generate: --seed must be a non-negative integer, got ", seed);
  g.seed = static_cast<uint64_t>(seed);
  g.validate("strata generate: ");
  if (!g.do_sample && (a.temperature || a.top_k || a.top_p))
    std::fprintf(stderr, "strata generate: warning: --temperature, --top-k and --top-p only apply with --do-sample; "
                         "decoding greedily\n");
  // HF's validate warns the same way when both are set by the caller (not by generation_config.json).
  if (g.num_beams == 1 && (a.length_penalty || a.early_stopping))
    std::fprintf(stderr, "strata generate: warning: --length-penalty and --early-stopping only apply with --num-beams "
                         "> 1; there is one beam\n");
  return g;
}

// The text a sequence adds to its prompt, as HF's text-generation pipeline cuts it: decode the
// whole sequence and drop the decoded prompt, so a character whose bytes straddle the boundary
// comes out whole.
std::string completion_text(const tok::Tokenizer& tk, const std::vector<int32_t>& prompt,
                            const std::vector<int32_t>& generated) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string full = tk.decode(all), head = tk.decode(prompt);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tk.decode(generated);
}

int run_generate(const GenerateOptions& a) {
  const std::string& dir = a.dir;
  const ModelConfig cfg = load_model_config(dir);
  const bool seq2seq = cfg.task == Task::Seq2SeqLM;
  if (cfg.task != Task::CausalLM && !seq2seq)
    fail(dir, ": a ", cfg.architecture(), " is not a causal language model nor a sequence-to-sequence one, so it "
         "cannot generate text; strata generate runs ", generating_classes(),
         " (the class in config.json's \"architectures\")");
  // An encoder-decoder's decoder starts from decoder_start_token_id; the prompt is its source.
  const std::vector<int32_t> decoder_prompt = {cfg.raw.value("decoder_start_token_id", cfg.pad_token_id)};
  const gen::GenerationConfig g = generation_config(a, dir);
  kernels::set_num_threads(a.threads);
  kernels::Device device;
  if (!kernels::parse_device(a.device, &device))
    fail("strata generate: --device must be cpu, cuda or cuda:N, got '", a.device, "'");
  try {
    kernels::use_device(device);
  } catch (const std::runtime_error& e) {
    fail("strata generate: ", e.what(), "; use --device cpu");
  }
  const std::vector<std::string> prompts = read_prompts(a);

  // Every prompt is tokenized and checked before any work, so a bad line costs no generation.
  const std::string tok_dir = a.tokenizer.value_or(dir);
  const tok::Tokenizer tk = tok::Tokenizer::from_dir(tok_dir);
  std::vector<std::vector<int32_t>> ids;
  g.check_forced_ids(cfg.vocab_size, "strata generate: " + dir + ": ");
  bool warned_min_length = false;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> p = tk.encode(prompts[i]).ids;
    if (p.empty()) {
      // HF starts an empty input from bos_token_id.
      if (g.bos_token_id < 0)
        fail("strata generate: prompt ", i + 1, " has no tokens and ", dir, " has no bos_token_id to start from");
      p.push_back(g.bos_token_id);
    }
    for (int32_t id : p)
      if (id < 0 || id >= cfg.vocab_size)
        fail("strata generate: prompt ", i + 1, ": token id ", id, " from the tokenizer in ", tok_dir,
             " is outside the model's vocabulary (vocab_size ", cfg.vocab_size, "); is it this model's tokenizer?");
    if (seq2seq && static_cast<int>(p.size()) > cfg.max_position_embeddings)
      fail("strata generate: prompt ", i + 1, " has ", p.size(), " tokens, more than the encoder's ",
           cfg.max_position_embeddings, " positions; shorten it");
    const int P = seq2seq ? 1 : static_cast<int>(p.size()), budget = g.new_token_budget(P);
    if (budget <= 0)
      fail("strata generate: prompt ", i + 1, " has ", P, " tokens, which leaves no room under max_length ",
           g.max_length.value_or(0), " from ", dir, "; pass --max-new-tokens N");
    if (P + budget > cfg.max_position_embeddings) {
      const int room = std::max(1, cfg.max_position_embeddings - P);
      if (seq2seq)
        fail("strata generate: ", budget, " new tokens after the decoder's start token exceed the model's ",
             cfg.max_position_embeddings, " positions; pass --max-new-tokens ", room);
      fail("strata generate: prompt ", i + 1, " has ", P, " tokens; with ", budget, " new tokens that is ", P + budget,
           " positions, more than the model's ", cfg.max_position_embeddings,
           " (n_positions). Shorten the prompt or pass --max-new-tokens ", room);
    }
    // HF warns the same way and generates up to max_length.
    if (g.min_sequence_length(P) > P + budget && !warned_min_length) {
      std::fprintf(stderr, "strata generate: warning: unfeasible length constraints: the minimum length (%d) is larger "
                   "than the maximum possible length (%d); generation stops at the maximum\n",
                   g.min_sequence_length(P), P + budget);
      warned_min_length = true;
    }
    ids.push_back(std::move(p));
  }

  LoadReport report;
  const std::unique_ptr<Model<float>> model = load_pretrained<float>(dir, &report);
  print_load_report(report, dir);
  if (!report.missing.empty())
    std::fprintf(stderr, "strata generate: warning: %s lacks %zu trained tensors; they are random\n", dir.c_str(),
                 report.missing.size());
  const std::unique_ptr<CausalDecoder<float>> causal = seq2seq ? nullptr : make_causal_decoder(*model, g.use_cache);

  const bool json = a.json;
  const bool headers = prompts.size() * g.num_return_sequences > 1;
  size_t new_tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    // an encoder-decoder's decoder holds its source: one per prompt
    const std::unique_ptr<CausalDecoder<float>> source_decoder =
        seq2seq ? make_seq2seq_decoder(*model, ids[i], g.use_cache) : nullptr;
    const std::vector<gen::Generated> out =
        gen::generate(seq2seq ? *source_decoder : *causal, seq2seq ? decoder_prompt : ids[i], g, cfg.vocab_size,
                      cfg.max_position_embeddings, i);
    nlohmann::json seqs = nlohmann::json::array(), scores = nlohmann::json::array();
    for (size_t j = 0; j < out.size(); ++j) {
      new_tokens += out[j].ids.size();
      const std::string text = seq2seq ? tk.decode(out[j].ids) : completion_text(tk, ids[i], out[j].ids);
      if (json) {
        seqs.push_back({{"generated_ids", out[j].ids},
                        {"completion", text},
                        {"finish_reason", gen::finish_reason_name(out[j].finish)}});
        if (out[j].score) scores.push_back(*out[j].score);
      } else {
        if (headers) std::printf("=== prompt %zu, sequence %zu ===\n", i + 1, j + 1);
        if (seq2seq) std::printf("%s\n", text.c_str());  // the source is not part of the output
        else std::printf("%s%s\n", prompts[i].c_str(), text.c_str());
      }
    }
    if (json) {
      nlohmann::json line = {{"prompt", prompts[i]}, {"prompt_ids", ids[i]}, {"sequences", seqs}};
      if (!scores.empty()) line["sequences_scores"] = scores;  // beam search's, as HF's output names them
      // Decoded bytes may end inside a UTF-8 character: replaced (U+FFFD), not an error.
      std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fflush(stdout);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string search = g.num_beams > 1 ? cat(", ", g.num_beams, " beams") : "";
  std::fprintf(stderr,
               "strata generate: %zu new tokens for %zu prompt(s) in %.3f s, %.1f tokens/s (%s%s, %d threads)\n",
               new_tokens, prompts.size(), s, new_tokens / s, g.use_cache ? "kv cache" : "recompute, no cache",
               search.c_str(), kernels::num_threads());
  return 0;
}

}  // namespace

Run define_generate(CLI::App& cmd) {
  auto o = std::make_shared<GenerateOptions>();
  cmd.add_option("dir", o->dir, "model directory of a causal LM or a sequence-to-sequence model (config.json + model.safetensors)")
      ->required()
      ->type_name("MODEL_DIR");
  cmd.add_option("--prompt", o->prompt, "the text to continue");
  cmd.add_option("--prompt-file", o->prompt_file, "a file of prompts, one per line");
  // Options that are GenerationConfig fields also take HF's spelling (--max_new_tokens).
  cmd.add_option("--max-new-tokens,--max_new_tokens", o->max_new_tokens,
                 "tokens to generate (default: generation_config.json's, else 50)");
  cmd.add_option("--min-new-tokens,--min_new_tokens", o->min_new_tokens,
                 "no eos before this many new tokens (wins over --min-length)");
  cmd.add_option("--min-length,--min_length", o->min_length,
                 "no eos while the sequence is shorter: prompt, or the decoder start token, included (default 0)");
  o->do_sample_flag = cmd.add_flag("--do-sample,--do_sample", o->do_sample, "sample instead of greedy decoding");
  cmd.add_option("--temperature", o->temperature, "sampling temperature (default 1.0)");
  cmd.add_option("--top-k,--top_k", o->top_k, "sample from the k most likely tokens (default 50)");
  cmd.add_option("--top-p,--top_p", o->top_p, "sample from the smallest set with this probability (default 1.0)");
  cmd.add_option("--seed", o->seed, "sampling seed");
  cmd.add_option("--num-return-sequences,--num_return_sequences", o->num_return_sequences,
                 "sequences per prompt (sampling; with beam search its best hypotheses, at most --num-beams)");
  cmd.add_option("--num-beams,--num_beams", o->num_beams, "beam search with this many beams (default 1: none)");
  cmd.add_option("--length-penalty,--length_penalty", o->length_penalty,
                 "beam search: a hypothesis scores log-prob / new_tokens^X (default 1.0; > 0 favours longer ones)");
  cmd.add_option("--early-stopping,--early_stopping", o->early_stopping,
                 "beam search: when to stop, true | false | never (default false)")
      ->type_name("true|false|never");
  cmd.add_option("--no-repeat-ngram-size,--no_repeat_ngram_size", o->no_repeat_ngram_size,
                 "no n-gram of this size occurs twice (default 0: off)");
  cmd.add_option("--repetition-penalty,--repetition_penalty", o->repetition_penalty,
                 "penalize tokens already in the sequence (default 1.0: off)");
  o->use_cache_flag = cmd.add_flag("--use-cache,--use_cache", o->use_cache,
                                   "keep a KV cache (default true; --use-cache=false recomputes)");
  cmd.add_option("--tokenizer", o->tokenizer, "tokenizer directory (default: the model's)");
  cmd.add_option("--threads", o->threads, "compute threads (0: all cores)");
  cmd.add_option("--device", o->device, "where the model runs: cpu (default), cuda or cuda:N (causal LMs)");
  cmd.add_flag("--json", o->json, "one JSON line per prompt with ids, completions, finish reasons (and beam scores)");
  return [o](const auto&) { return run_generate(*o); };
}

}  // namespace strata::cli
