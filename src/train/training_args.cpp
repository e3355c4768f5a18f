#include "train/training_args.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/model_files.h"
#include "train/distribution_args.h"
#include "train/hf_other_args.h"
#include "train/loss_scaler.h"
#include "train/mixed_precision.h"
#include "train/log_reporters.h"
#include "train/training_args_help.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata {

namespace {

using Member = std::variant<std::string TrainingArguments::*, int TrainingArguments::*,
                            int64_t TrainingArguments::*, double TrainingArguments::*, bool TrainingArguments::*,
                            std::vector<std::string> TrainingArguments::*, std::vector<int> TrainingArguments::*>;

struct Field {
  const char* name;
  Member member;
};

#define F(name) Field{#name, &TrainingArguments::name}
const Field kFields[] = {
    F(model_name_or_path), F(tokenizer_name), F(task), F(problem_type),
    F(train_file), F(validation_file), F(test_file), F(text_column), F(text_pair_column), F(label_column),
    F(max_seq_length), F(pad_to_max_length), F(pad_to_multiple_of), F(validation_split_percentage), F(streaming),
    F(mlm_probability), F(line_by_line), F(block_size), F(whole_word_mask),
    F(question_column), F(context_column), F(answer_column), F(doc_stride), F(n_best_size), F(max_answer_length),
    F(version_2_with_negative), F(null_score_diff_threshold), F(label_all_tokens), F(return_entity_level_metrics),
    F(summary_column), F(source_prefix), F(source_lang), F(target_lang), F(max_source_length), F(max_target_length),
    F(val_max_target_length), F(ignore_pad_token_for_loss), F(predict_with_generate), F(generation_max_length),
    F(generation_num_beams),
    F(output_dir), F(overwrite_output_dir), F(do_train), F(do_eval), F(do_predict),
    F(num_train_epochs), F(max_steps), F(per_device_train_batch_size), F(per_device_eval_batch_size),
    F(gradient_accumulation_steps), F(learning_rate), F(weight_decay), F(adam_beta1), F(adam_beta2),
    F(adam_epsilon), F(optim), F(sgd_momentum), F(lr_scheduler_type), F(warmup_ratio), F(warmup_steps),
    F(max_grad_norm), F(seed), F(eval_strategy), F(eval_steps), F(logging_strategy), F(logging_steps),
    F(logging_first_step), F(save_strategy), F(save_steps), F(save_total_limit), F(max_shard_size), F(load_best_model_at_end),
    F(metric_for_best_model), F(greater_is_better), F(early_stopping_patience), F(early_stopping_threshold),
    F(freeze_base_model), F(dataloader_num_workers), F(dataloader_drop_last), F(resume_from_checkpoint),
    F(predict_output_format), F(num_threads), F(replica_threads), F(disable_tqdm), F(dataparallel_enabled), F(ddp_bucket_cap_mb),
    F(ddp_timeout),
    F(pipeline_parallel_degree), F(tensor_parallel_degree), F(microbatches), F(pipeline),
    F(placement_strategy), F(ddp), F(shard_optimizer_state), F(zero_stage), F(optimize), F(auto_partition),
    F(default_partition), F(pipeline_partition), F(processes_per_host), F(gradient_checkpointing), F(gradient_checkpointing_every),
    F(offload_activations),
    // HF compatibility (docs/hf_compat.md)
    F(config_name), F(text_column_delimiter), F(max_train_samples), F(max_eval_samples), F(max_predict_samples),
    F(task_name), F(do_regression), F(data_seed), F(eval_delay), F(ignore_data_skip), F(run_name), F(logging_dir),
    F(report_to), F(include_num_input_tokens_seen), F(full_determinism),
    F(use_cpu), F(tf32),
    F(bf16), F(fp16), F(bf16_full_eval), F(fp16_full_eval), F(half_precision_backend), F(fp16_init_scale),
    F(fp16_growth_interval),
};
#undef F

// HF's older spellings, accepted as they are in TrainingArguments.
struct Alias {
  const char* old_name;
  const char* name;
};
constexpr Alias kAliases[] = {{"evaluation_strategy", "eval_strategy"},
                               // the example scripts' data arguments
                               {"per_gpu_train_batch_size", "per_device_train_batch_size"},
                               {"per_gpu_eval_batch_size", "per_device_eval_batch_size"},
                               {"text_column_name", "text_column"},
                               {"text_column_names", "text_column"},  // run_classification: a, b, ...
                               {"label_column_name", "label_column"},
                               {"question_column_name", "question_column"},
                               {"context_column_name", "context_column"},
                               {"answer_column_name", "answer_column"},
                               {"num_beams", "generation_num_beams"},  // run_summarization's data argument
                               {"fp16_backend", "half_precision_backend"},  // deprecated in HF 4.x
                               {"no_cuda", "use_cpu"}};                       // deprecated in HF 4.x

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for (const Field& f : kFields) names.emplace_back(f.name);
  return names;
}

const Field& find_field(const std::string& key, const std::string& src) {
  std::string k = key;
  for (const Alias& a : kAliases)
    if (k == a.old_name) k = a.name;
  for (const Field& f : kFields)
    if (k == f.name) return f;
  std::vector<std::string> keys = field_names();
  keys.insert(keys.end(), {"distribution", "deepspeed"});  // the blocks parse_training_arguments reads
  fail(src, ": unknown option '", key, "'", did_you_mean(key, keys), " (see docs/training.md for the list)");
}

// A YAML list of integers, e.g. [4, 4]; null or [] for none.
std::vector<int> int_list(const YAML::Node& v, const std::function<void(const char*)>& bad) {
  std::vector<int> xs;
  if (!v.IsNull() && !v.IsSequence()) bad("a list of integers, e.g. [4, 4]");
  for (const auto& item : v) {
    long long x = 0;
    if (!item.IsScalar() || !YAML::convert<long long>::decode(item, x) || x < INT32_MIN || x > INT32_MAX)
      bad("a list of integers, e.g. [4, 4]");
    xs.push_back(static_cast<int>(x));
  }
  return xs;
}

void assign(TrainingArguments& a, const Field& f, const YAML::Node& v, const std::string& where) {
  auto bad = [&](const char* expected) {
    std::ostringstream os;
    os << v;
    fail(where, ": option '", f.name, "' expects ", expected, ", got '", os.str(), "'");
  };
  std::visit(
      [&](auto member) {
        using M = std::remove_reference_t<decltype(a.*member)>;
        if constexpr (std::is_same_v<M, std::vector<int>>) {
          a.*member = int_list(v, bad);
        } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {  // a name or a list of names
          a.*member = {};
          if (v.IsScalar()) {
            a.*member = {v.as<std::string>()};
          } else if (v.IsSequence()) {
            for (const YAML::Node& e : v) {
              if (!e.IsScalar()) bad("a name or a list of names");
              (a.*member).push_back(e.as<std::string>());
            }
          } else if (!v.IsNull()) {
            bad("a name or a list of names");
          }
        } else if (v.IsNull()) {  // HF's None: the default (an empty string)
          if constexpr (std::is_same_v<M, std::string>) a.*member = std::string();
        } else if (!v.IsScalar()) {
          bad("a single value");
        } else if constexpr (std::is_same_v<M, std::string>) {
          a.*member = v.as<std::string>();
        } else if constexpr (std::is_same_v<M, bool>) {
          bool x;
          if (!YAML::convert<bool>::decode(v, x)) bad("true or false");
          a.*member = x;
        } else if constexpr (std::is_same_v<M, double>) {
          double x;
          if (!YAML::convert<double>::decode(v, x)) bad("a number");
          a.*member = x;
        } else {
          long long x;
          if (!YAML::convert<long long>::decode(v, x)) bad("an integer");
          if (std::is_same_v<M, int> && (x < INT32_MIN || x > INT32_MAX)) bad("a 32-bit integer");
          a.*member = static_cast<M>(x);
        }
      },
      f.member);
}

void note_ignored(TrainingArguments& a, const std::string& what) {
  if (std::find(a.ignored_options.begin(), a.ignored_options.end(), what) == a.ignored_options.end())
    a.ignored_options.push_back(what);
}

// An HF argument strata has no option for (hf_other_args.h): noted for the run's warning when
// ignored, an error when refused, nothing when at HF's default. False for any other key.
bool take_hf_other_arg(TrainingArguments& a, const std::string& key, const YAML::Node& v, const std::string& where) {
  const HfOtherArg* arg = find_hf_other_arg(key);
  if (!arg) return false;
  if (arg->kind == HfOtherArg::Kind::Inherent || at_hf_default(*arg, v)) return true;
  if (arg->kind == HfOtherArg::Kind::Refused) {
    std::ostringstream os;
    os << v;
    fail(where, ": ", key, ": ", os.str(), " is not supported: ", arg->refusal);
  }
  note_ignored(a, key);
  return true;
}

void check_one_of(const std::string& v, const char* name, std::initializer_list<const char*> allowed,
                  const std::string& src) {
  std::string list;
  for (const char* x : allowed) {
    if (v == x) return;
    list += (list.empty() ? "" : ", ") + std::string(x);
  }
  fail(src, ": ", name, " is '", v, "'; expected one of ", list);
}

// The arguments HF's example scripts add or spell their own way, resolved to strata's options.
void resolve_hf_spellings(TrainingArguments& a, const std::string& src) {
  if (!a.config_name.empty()) {  // run_mlm / run_clm from scratch: config_name without model_name_or_path
    if (a.model_name_or_path.empty()) a.model_name_or_path = a.config_name;
    if (a.config_name != a.model_name_or_path)
      fail(src, ": config_name (", a.config_name, ") differs from model_name_or_path (", a.model_name_or_path,
           "); strata reads config.json from the model directory: set one of them");
  }
  // Trainer.train(resume_from_checkpoint=True) resumes from the last checkpoint.
  if (a.resume_from_checkpoint == "true" || a.resume_from_checkpoint == "True") a.resume_from_checkpoint = "latest";
  if (a.resume_from_checkpoint == "false" || a.resume_from_checkpoint == "False") a.resume_from_checkpoint.clear();
  for (char& c : a.task_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // as run_glue
  if (a.do_regression) {
    if (!a.problem_type.empty() && a.problem_type != "regression")
      fail(src, ": do_regression is true but problem_type is '", a.problem_type, "'");
    a.problem_type = "regression";
  }
  // Integrations strata does not have (wandb, mlflow, ...) are noted as ignored.
  const std::vector<std::string>& have = supported_report_to();
  for (const std::string& r : a.report_to)
    if (r != "all" && r != "none" && std::find(have.begin(), have.end(), r) == have.end())
      note_ignored(a, "report_to: " + r);
}

void validate(TrainingArguments& a, const std::string& src) {
  resolve_hf_spellings(a, src);
  if (a.model_name_or_path.empty()) fail(src, ": model_name_or_path is required (a directory with config.json)");
  if (a.output_dir.empty()) fail(src, ": output_dir is required");
  // A sentence-transformers export keeps its tokenizer beside the HF model it holds.
  if (a.tokenizer_name.empty()) a.tokenizer_name = io::hf_model_dir(a.model_name_or_path);
  if (a.do_train && a.train_file.empty()) fail(src, ": do_train is true but train_file is not set");
  if (a.do_predict && a.test_file.empty()) fail(src, ": do_predict is true but test_file is not set");
  if (!a.task.empty())
    check_one_of(a.task, "task",
                 {"sequence-classification", "masked-lm", "causal-lm", "token-classification", "question-answering"},
                 src);
  if (!a.problem_type.empty())
    check_one_of(a.problem_type, "problem_type",
                 {"single_label_classification", "multi_label_classification", "regression"}, src);
  // adamw_torch_fused is torch's AdamW in one kernel: the same update.
  check_one_of(a.optim, "optim", {"adamw_torch", "adamw_torch_fused", "adamw", "sgd"}, src);
  check_one_of(a.lr_scheduler_type, "lr_scheduler_type",
               {"linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
                "inverse_sqrt"},
               src);
  check_one_of(a.eval_strategy, "eval_strategy", {"no", "steps", "epoch"}, src);
  check_one_of(a.save_strategy, "save_strategy", {"no", "steps", "epoch"}, src);
  check_one_of(a.logging_strategy, "logging_strategy", {"no", "steps", "epoch"}, src);
  check_one_of(a.predict_output_format, "predict_output_format", {"txt", "csv", "jsonl"}, src);
  if (!a.greater_is_better.empty()) check_one_of(a.greater_is_better, "greater_is_better", {"true", "false"}, src);
  if (a.bf16 && a.fp16) fail(src, ": bf16 and fp16 are both true; set one (HF: at most one of fp16 and bf16)");
  if (a.bf16_full_eval && a.fp16_full_eval) fail(src, ": bf16_full_eval and fp16_full_eval are both true; set one");
  if (a.half_precision_backend == "apex")
    fail(src, ": half_precision_backend: apex is NVIDIA's CUDA extension; strata has auto (also cpu_amp) and emulated");
  check_one_of(a.half_precision_backend, "half_precision_backend", {"auto", "cpu_amp", "emulated"}, src);
  if (!is_power_of_two(a.fp16_init_scale))
    fail(src, ": fp16_init_scale must be a power of two (the loss scale only doubles and halves, and a power of two "
         "scales gradients exactly), got ", a.fp16_init_scale);
  if (a.fp16_growth_interval <= 0) fail(src, ": fp16_growth_interval must be positive, got ", a.fp16_growth_interval);
  auto positive = [&](double v, const char* n) {
    if (!(v > 0)) fail(src, ": ", n, " must be positive, got ", v);
  };
  positive(a.per_device_train_batch_size, "per_device_train_batch_size");
  positive(a.per_device_eval_batch_size, "per_device_eval_batch_size");
  positive(a.gradient_accumulation_steps, "gradient_accumulation_steps");
  positive(a.max_seq_length, "max_seq_length");
  positive(a.learning_rate, "learning_rate");
  if (a.max_steps <= 0 && !(a.num_train_epochs > 0))
    fail(src, ": set num_train_epochs > 0 or max_steps > 0");
  if (a.warmup_ratio < 0 || a.warmup_ratio > 1) fail(src, ": warmup_ratio must be in [0, 1], got ", a.warmup_ratio);
  if (a.warmup_steps < 0) fail(src, ": warmup_steps must be >= 0");
  if (a.weight_decay < 0) fail(src, ": weight_decay must be >= 0");
  if (a.adam_beta1 < 0 || a.adam_beta1 >= 1 || a.adam_beta2 < 0 || a.adam_beta2 >= 1)
    fail(src, ": adam_beta1 and adam_beta2 must be in [0, 1)");
  if (a.validation_split_percentage < 0 || a.validation_split_percentage >= 100)
    fail(src, ": validation_split_percentage must be in [0, 100)");
  // run_mlm / run_clm split train only when there is no validation file (their default is 5%).
  if (!a.validation_file.empty()) a.validation_split_percentage = 0;
  if (a.mlm_probability <= 0 || a.mlm_probability >= 1) fail(src, ": mlm_probability must be in (0, 1)");
  if (a.block_size < 0) fail(src, ": block_size must be >= 0 (0: the default), got ", a.block_size);
  if (a.line_by_line && a.block_size > 0)
    fail(src, ": block_size sets the length of grouped texts; with line_by_line each line is cut at max_seq_length "
         "instead: set one of them");
  positive(a.doc_stride, "doc_stride");
  positive(a.max_source_length, "max_source_length");
  positive(a.max_target_length, "max_target_length");
  for (const auto& [n, v] : {std::pair{"val_max_target_length", a.val_max_target_length},
                             {"generation_max_length", a.generation_max_length},
                             {"generation_num_beams", a.generation_num_beams}})
    if (v < 0) fail(src, ": ", n, " must be positive (or 0: its default), got ", v);
  if (a.source_lang.empty() != a.target_lang.empty())
    fail(src, ": translation needs both source_lang and target_lang (the `translation` column's keys)");
  positive(a.n_best_size, "n_best_size");
  positive(a.max_answer_length, "max_answer_length");
  for (const auto& [n, v] : {std::pair{"max_train_samples", a.max_train_samples},
                             {"max_eval_samples", a.max_eval_samples}, {"max_predict_samples", a.max_predict_samples}})
    if (v == 0 || v < -1) fail(src, ": ", n, " must be positive (or unset for all), got ", v);
  if (a.data_seed < -1) fail(src, ": data_seed must be >= 0 (or unset: seed), got ", a.data_seed);
  if (a.eval_delay < 0) fail(src, ": eval_delay must be >= 0, got ", a.eval_delay);
  if (a.text_column.empty() || a.text_column.front() == ',' || a.text_column.back() == ',' ||
      a.text_column.find(",,") != std::string::npos)
    fail(src, ": text_column '", a.text_column, "' must name a column, or several separated by commas");
  if (a.dataloader_num_workers < 0) fail(src, ": dataloader_num_workers must be >= 0");
  if (a.save_total_limit < 0) fail(src, ": save_total_limit must be >= 0");
  io::parse_shard_size(a.max_shard_size, src);
  if (!(a.ddp_bucket_cap_mb > 0)) fail(src, ": ddp_bucket_cap_mb must be positive");
  if (!(a.ddp_timeout > 0)) fail(src, ": ddp_timeout must be positive (seconds)");
  if (a.logging_steps <= 0 && a.logging_strategy == "steps") fail(src, ": logging_steps must be positive");
  if (a.eval_steps <= 0) a.eval_steps = a.logging_steps;
  if (a.save_strategy == "steps" && a.save_steps <= 0) fail(src, ": save_steps must be positive");
  const bool has_eval = !a.validation_file.empty() || a.validation_split_percentage > 0;
  if (a.eval_strategy != "no" && !has_eval)
    fail(src, ": eval_strategy is '", a.eval_strategy, "' but there is no validation_file or validation_split_percentage");
  if (a.load_best_model_at_end) {
    if (a.eval_strategy == "no") fail(src, ": load_best_model_at_end needs eval_strategy steps or epoch");
    if (a.save_strategy != a.eval_strategy)
      fail(src, ": load_best_model_at_end needs save_strategy == eval_strategy (got '", a.save_strategy, "' and '",
           a.eval_strategy, "')");
    // Every evaluation then has its checkpoint, so the best one is always on disk.
    if (a.save_strategy == "steps" && a.save_steps != a.eval_steps)
      fail(src, ": load_best_model_at_end needs save_steps (", a.save_steps, ") equal to eval_steps (", a.eval_steps,
           ")");
  }
  if (a.early_stopping_patience > 0 && a.eval_strategy == "no")
    fail(src, ": early_stopping_patience needs eval_strategy steps or epoch");
  if (a.metric_for_best_model.empty() && (a.load_best_model_at_end || a.early_stopping_patience > 0))
    a.metric_for_best_model = "loss";
  if (!has_eval) a.do_eval = false;
  if (a.gradient_checkpointing_every != 1 && !a.gradient_checkpointing)
    fail(src, ": gradient_checkpointing_every is ", a.gradient_checkpointing_every,
         " but gradient_checkpointing is false; set gradient_checkpointing: true to recompute every ",
         a.gradient_checkpointing_every, "-th block");
}

}  // namespace

bool TrainingArguments::best_is_greater() const {
  if (!greater_is_better.empty()) return greater_is_better == "true";
  const std::string m = metric_for_best_model;
  return !(m == "loss" || m == "eval_loss" || m.ends_with("mse"));
}

std::string TrainingArguments::best_metric_key() const {
  return metric_for_best_model.starts_with("eval_") ? metric_for_best_model : "eval_" + metric_for_best_model;
}

uint64_t TrainingArguments::max_shard_bytes() const { return io::parse_shard_size(max_shard_size, "max_shard_size"); }

TrainingArguments parse_training_arguments_with(const std::string& text, const std::string& src,
                                                const std::vector<ArgumentOverride>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(src, ": invalid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  if (!root.IsMap() && !root.IsNull()) fail(src, ": expected a YAML mapping of option: value");
  TrainingArguments a;
  for (const auto& kv : root) {
    const std::string key = yaml_key(kv.first, src);
    if (key == "distribution") {
      read_distribution(a, kv.second, src);
    } else if (key == "deepspeed") {
      read_deepspeed(a, kv.second, src);
    } else if (!take_hf_other_arg(a, key, kv.second, cat(src, " line ", kv.first.Mark().line + 1))) {
      assign(a, find_field(key, src), kv.second, cat(src, " line ", kv.first.Mark().line + 1));
    }
  }
  for (const ArgumentOverride& o : overrides) {
    if (take_hf_other_arg(a, o.key, o.value, o.where)) continue;
    assign(a, find_field(o.key, o.where), o.value, o.where);
  }
  validate(a, src);
  validate_parallel_arguments(a, src);
  return a;
}

TrainingArguments parse_training_arguments(const std::string& text, const std::string& src,
                                           const std::vector<std::string>& overrides,
                                           const std::string& overrides_source) {
  std::vector<ArgumentOverride> parsed;
  for (const std::string& o : overrides) parsed.push_back(parse_set_override(o, overrides_source));
  return parse_training_arguments_with(text, src, parsed);
}

ArgumentOverride parse_set_override(const std::string& o, const std::string& source) {
  const size_t eq = o.find('=');
  if (eq == std::string::npos || eq == 0) fail(source, " ", o, ": expected key=value");
  const std::string key = o.substr(0, eq);
  try {
    return {key, YAML::Load(o.substr(eq + 1)), source + " " + key};
  } catch (const YAML::Exception& e) {
    fail(source, " ", o, ": the value is not valid YAML: ", e.msg);
  }
}

void set_training_argument(TrainingArguments& a, const std::string& key, const YAML::Node& value,
                           const std::string& where) {
  assign(a, find_field(key, where), value, where);
}

TrainingArguments load_training_arguments(const std::string& path, const std::vector<ArgumentOverride>& overrides) {
  return parse_training_arguments_with(io::read_file(path), path, overrides);
}

namespace {
nlohmann::json to_json(const TrainingArguments& a) {
  nlohmann::json j;
  for (const Field& f : kFields) std::visit([&](auto m) { j[f.name] = a.*m; }, f.member);
  return j;
}
}  // namespace

std::string format_training_arguments(const TrainingArguments& a) {
  const nlohmann::json cur = to_json(a), dflt = to_json(TrainingArguments{});
  std::string out;
  for (const Field& f : kFields) {
    const bool changed = cur[f.name] != dflt[f.name];
    out += cat("  ", changed ? "*" : " ", " ", f.name, std::string(30 - std::min<size_t>(29, std::string(f.name).size()), ' '),
               cur[f.name].dump(), "\n");
  }
  return out;
}

std::string training_arguments_json(const TrainingArguments& a) { return to_json(a).dump(2) + "\n"; }

namespace {
const char* type_name(std::string TrainingArguments::*) { return "TEXT"; }
const char* type_name(bool TrainingArguments::*) { return "BOOL"; }
const char* type_name(double TrainingArguments::*) { return "FLOAT"; }
const char* type_name(int TrainingArguments::*) { return "INT"; }
const char* type_name(int64_t TrainingArguments::*) { return "INT"; }
template <typename T>
const char* type_name(std::vector<T> TrainingArguments::*) { return "LIST"; }
}  // namespace

std::vector<TrainingOptionDoc> training_option_docs() {
  const nlohmann::json dflt = to_json(TrainingArguments{});
  std::vector<TrainingOptionDoc> docs;
  for (const Field& f : kFields) {
    TrainingOptionDoc d;
    d.name = f.name;
    for (const Alias& al : kAliases)
      if (d.name == al.name) d.aliases.emplace_back(al.old_name);
    d.type = std::visit([](auto m) { return type_name(m); }, f.member);
    const nlohmann::json& v = dflt[f.name];
    const bool empty = (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty());
    d.default_value = empty ? "" : v.is_string() ? v.get<std::string>() : v.dump();
    const char* help = training_option_help(f.name);
    if (!help) fail("internal: option '", f.name, "' has no help line in training_args_help.cpp");
    d.help = help;
    docs.push_back(std::move(d));
  }
  return docs;
}

nn::ActivationPolicy activation_policy(const TrainingArguments& a) {
  nn::ActivationPolicy p;
  p.checkpoint_every = a.gradient_checkpointing ? a.gradient_checkpointing_every : 0;
  p.offload = a.offload_activations;
  p.products = requested_precision(a).train;
  const char* tmp = std::getenv("TMPDIR");
  if (tmp && *tmp) p.offload_dir = tmp;
  return p;
}

data::PretrainingOptions pretraining_options(const TrainingArguments& a, data::LmObjective objective,
                                             size_t model_max_positions) {
  data::PretrainingOptions o;
  o.objective = objective;
  o.line_by_line = a.line_by_line;
  o.max_seq_length = static_cast<size_t>(a.max_seq_length);
  o.block_size = static_cast<size_t>(a.block_size);
  o.model_max_positions = model_max_positions;
  o.mlm_probability = a.mlm_probability;
  o.whole_word_mask = a.whole_word_mask;
  o.seed = static_cast<uint64_t>(a.seed);
  o.pad_to_max_length = a.pad_to_max_length;
  o.pad_to_multiple_of = static_cast<size_t>(a.pad_to_multiple_of);
  o.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

}  // namespace strata
