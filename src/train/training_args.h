// The options of `strata train`: one flat namespace, as HF's run_glue.py / run_mlm.py take
// ModelArguments + DataTrainingArguments + TrainingArguments on one command line, with the
// same names and defaults. Parsed from YAML (plus `--set key=value` overrides), checked
// completely before any work starts: an unknown key names the nearest valid one, a wrong
// type names the expected one, inconsistent values say which and why.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "data/pretraining.h"
#include "nn/activation_policy.h"

namespace strata {

struct TrainingArguments {
  // model (ModelArguments)
  std::string model_name_or_path;  // a directory with config.json, with or without weights
  std::string tokenizer_name;      // default: model_name_or_path
  std::string config_name;         // a directory with config.json: the model when model_name_or_path is unset
  std::string task;  // sequence-classification | masked-lm | causal-lm | token-classification |
                     // question-answering | seq2seq-lm; default from config.json's architectures
  std::string problem_type;        // overrides config.json's
  // data (DataTrainingArguments)
  std::string train_file, validation_file, test_file;
  // text_column may name several columns, comma-separated (run_classification's
  // text_column_names): their texts are joined with text_column_delimiter into one text.
  std::string text_column = "text", text_pair_column, label_column = "label";
  std::string text_column_delimiter = " ";
  int max_seq_length = 128;
  bool pad_to_max_length = false;
  int pad_to_multiple_of = 0;
  double validation_split_percentage = 0;
  bool streaming = false;
  // The first N examples of a split (after grouping texts into blocks for LM pretraining, as
  // run_mlm / run_clm select); -1: all. The example scripts' max_*_samples.
  int64_t max_train_samples = -1, max_eval_samples = -1, max_predict_samples = -1;
  // run_glue's GLUE task (cola, mnli, mrpc, ...): names the predictions file and the model
  // card's dataset, and picks the task's text columns. The data still comes from the files.
  std::string task_name;
  bool do_regression = false;  // run_classification: the labels are regression targets
  // Language-model pretraining (run_mlm.py / run_clm.py; data/pretraining.h)
  double mlm_probability = 0.15;
  bool line_by_line = false;     // each non-blank line one example, instead of grouped texts
  int block_size = 0;            // grouped texts' block; 0 = max_seq_length (MLM) / run_clm's default
  bool whole_word_mask = false;  // mask whole words (DataCollatorForWholeWordMask), masked LM only
  // question answering (run_qa.py)
  std::string question_column = "question", context_column = "context", answer_column = "answers";
  int doc_stride = 128;           // tokens of overlap between the windows of a long context
  int n_best_size = 20;           // start / end candidates per window in post-processing
  int max_answer_length = 30;     // tokens
  bool version_2_with_negative = false;  // SQuAD v2: questions may have no answer
  double null_score_diff_threshold = 0.0;
  // token classification (run_ner.py); its columns default to tokens / tags
  bool label_all_tokens = false;  // every sub-token of a word gets its tag, not only the first
  bool return_entity_level_metrics = false;
  // sequence to sequence (run_summarization.py / run_translation.py): source and target texts from
  // text_column and summary_column, or from the `translation` column's {lang: text} objects when
  // source_lang and target_lang are set; source_prefix (T5's "summarize: ") starts each source.
  std::string summary_column = "summary", source_prefix, source_lang, target_lang;
  int max_source_length = 1024, max_target_length = 128;
  int val_max_target_length = 0;  // evaluation and prediction targets; 0: max_target_length
  bool ignore_pad_token_for_loss = true;  // with pad_to_max_length: padded targets are -100, not pad
  // Seq2SeqTrainingArguments: evaluation generates (and scores ROUGE / BLEU) instead of only
  // taking the loss; its length limit (0: val_max_target_length) and beams (0: the model's
  // generation_config.json, else 1).
  bool predict_with_generate = false;
  int generation_max_length = 0, generation_num_beams = 0;
  // TrainingArguments
  std::string output_dir;
  bool overwrite_output_dir = false;
  bool do_train = true, do_eval = true, do_predict = false;
  double num_train_epochs = 3.0;
  int64_t max_steps = -1;
  int per_device_train_batch_size = 8, per_device_eval_batch_size = 8;
  int gradient_accumulation_steps = 1;
  double learning_rate = 5e-5, weight_decay = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  std::string optim = "adamw_torch";  // adamw_torch | sgd
  double sgd_momentum = 0.0;
  std::string lr_scheduler_type = "linear";
  double warmup_ratio = 0.0;
  double warmup_steps = 0;  // steps, or in (0, 1) a ratio of the total (transformers 5)
  double max_grad_norm = 1.0;
  int64_t seed = 42;
  int64_t data_seed = -1;  // the training data order's seed; -1: seed
  std::string eval_strategy = "no";  // no | steps | epoch
  int64_t eval_steps = 0;            // 0: logging_steps
  double eval_delay = 0;             // epochs or steps (by eval_strategy) before the first evaluation
  std::string logging_strategy = "steps";
  int64_t logging_steps = 500;
  bool logging_first_step = false;
  std::string save_strategy = "steps";
  int64_t save_steps = 500;
  int save_total_limit = 0;  // 0: keep all
  std::string max_shard_size = "5GB";  // save_pretrained's: larger weights are written in shards
  bool load_best_model_at_end = false;
  std::string metric_for_best_model;  // default "loss" when load_best_model_at_end
  std::string greater_is_better;      // "", "true", "false": unset means by metric
  int early_stopping_patience = 0;    // 0: off
  double early_stopping_threshold = 0.0;
  bool freeze_base_model = false;
  int dataloader_num_workers = 0;
  bool dataloader_drop_last = false;
  std::string resume_from_checkpoint;  // path | "latest" (also spelled true)
  bool ignore_data_skip = false;       // resume at the start of the checkpoint's epoch, not its batch
  // txt: HF's predict_results.txt (index, predicted label); csv | jsonl: with probabilities
  std::string predict_output_format = "txt";
  int num_threads = 0;                        // 0: all cores
  // Replica threads (train/pipeline_step.h): the batch's rows cut into this many parts that
  // train at once, one thread each. 0: auto (Trainer::replica_threads says when).
  int replica_threads = 0;
  // HF's name: bit-identical results for any thread count (fixed GEMM tiles), at a cost;
  // by default the same thread count gives the same bits (docs/numerics.md, "Determinism").
  bool full_determinism = false;
  // The device (train/device_choice.h), HF's names: the GPU is used when there is one, unless
  // use_cpu (the older no_cuda). tf32: fp32 products on a GPU through TF32 tensor cores (10-bit
  // mantissa inputs, fp32 accumulation); off by default, so fp32 is exact fp32.
  bool use_cpu = false;
  bool tf32 = false;
  // Mixed precision (train/mixed_precision.h): HF's flags. bf16 / fp16: matrix products take
  // bf16 / fp16 inputs and accumulate in fp32, in training and evaluation, weights and
  // optimizer state stay fp32; fp16 adds dynamic loss scaling (train/loss_scaler.h).
  // *_full_eval: evaluation and prediction products in that precision, whatever training uses.
  bool bf16 = false, fp16 = false, bf16_full_eval = false, fp16_full_eval = false;
  // auto (HF's default; also cpu_amp): native products where the CPU has them, else an error;
  // emulated: inputs rounded, fp32 GEMM, on any CPU (the same numbers, at fp32 speed).
  std::string half_precision_backend = "auto";
  double fp16_init_scale = 65536;      // GradScaler's init_scale (a power of two)
  int64_t fp16_growth_interval = 2000;  // GradScaler's growth_interval
  bool disable_tqdm = false;
  std::string run_name;     // names the run in its logs; "": output_dir
  // Where TensorBoard event files go (default: HF's output_dir/runs/<time>_<host>) and
  // trainer_log.jsonl / trainer_log.csv (default: output_dir).
  std::string logging_dir;
  // HF's integrations: "all" (HF's default: every one strata has), "none", or names:
  // tensorboard, csv (train/log_reporters.h). Others are ignored with the run's warning.
  std::vector<std::string> report_to = {"all"};
  bool include_num_input_tokens_seen = false;  // log num_input_tokens_seen with each entry
  // Distribution (HF names; the SageMaker `distribution` dict sets dataparallel_enabled).
  bool dataparallel_enabled = false;  // also on whenever the job is started as several ranks
  double ddp_bucket_cap_mb = 25;
  double ddp_timeout = 1800;  // seconds a collective may take before the job is aborted
  // Model parallelism and sharding: SageMaker's modelparallel parameters under their names
  // (distribution_args.h reads the `distribution:` block into them), flat keys with HF's.
  // docs/parallelism.md.
  int pipeline_parallel_degree = 1;  // SageMaker: partitions
  int tensor_parallel_degree = 1;
  int microbatches = 1;                       // per optimizer step and rank, of the per-device batch
  std::string pipeline = "interleaved";       // simple (GPipe) | interleaved (1F1B)
  std::string placement_strategy = "cluster";  // cluster | spread | a permutation of DPT
  bool ddp = true;  // replicas (data-parallel degree > 1) are kept in sync by data parallelism
  bool shard_optimizer_state = false;  // ZeRO-1
  int zero_stage = 0;                  // DeepSpeed's zero_optimization.stage: 0, 1, 2
  std::string optimize = "memory";     // memory | speed (tensor-parallel layer layout)
  bool auto_partition = true;
  int default_partition = 0;
  // Blocks per pipeline stage, e.g. [4, 4] (strata's explicit partition; overrides
  // auto_partition). Empty: auto_partition decides, or an even split without it.
  std::vector<int> pipeline_partition;
  int processes_per_host = 0;  // SageMaker's mpi.processes_per_host; 0: whatever the launcher started
  // Activation checkpointing and offloading (HF's gradient_checkpointing; SageMaker's
  // activation_checkpointing / offload_activations set them; docs/parallelism.md): recompute
  // a block's forward in backward instead of keeping its saved tensors, for blocks 0, k, 2k, ...;
  // move the saved tensors of blocks not recomputed (and the blocks' inputs) to a file-backed
  // host-memory pool in $TMPDIR (default /tmp) after forward, fetched back before backward.
  bool gradient_checkpointing = false;
  int gradient_checkpointing_every = 1;  // k >= 1
  bool offload_activations = false;

  // Not options: the HF arguments this configuration set that do not apply here
  // (hf_other_args.h) and report_to names strata does not have, for the run's one warning.
  std::vector<std::string> ignored_options;

  bool best_is_greater() const;        // resolves greater_is_better against the metric
  std::string best_metric_key() const;  // "eval_<metric>"
  // The longest sequence a batch can have: grouped texts' blocks, else max_seq_length.
  int sequence_length() const { return block_size > 0 && !line_by_line ? block_size : max_seq_length; }
  // The ZeRO stage in effect: zero_stage, at least 1 with shard_optimizer_state.
  int sharding_stage() const { return std::max(zero_stage, shard_optimizer_state ? 1 : 0); }
  // Values of optimizer state per parameter: AdamW's exp_avg and exp_avg_sq, SGD's momentum.
  int optimizer_states() const { return optim == "sgd" ? 1 : 2; }
  // max_shard_size in bytes (checked when the arguments were parsed).
  uint64_t max_shard_bytes() const;
};

}  // namespace strata

namespace strata {

// One value given on the command line: `--key value` or `--set key=value`.
struct ArgumentOverride {
  std::string key;    // a field name, an HF alias, or an HF argument strata has no option for
  YAML::Node value;   // a scalar, or a sequence for list options
  std::string where;  // names it in errors, e.g. "--learning_rate"
  // yaml-cpp's Node assignment writes into the node it refers to, so assigning one override
  // over another (as vector::insert in the middle does) would change a third's value.
  ArgumentOverride& operator=(const ArgumentOverride&) = delete;
};
// "key=value" (the --set form; the value parsed as YAML) as an override; `source` names it
// in errors ("--set", a job spec's hyperparameters).
ArgumentOverride parse_set_override(const std::string& key_eq_value, const std::string& source = "--set");

// One row of the option table as a command line shows it (strata train --help, completion).
struct TrainingOptionDoc {
  std::string name;
  std::vector<std::string> aliases;  // HF's older spellings
  std::string type;                  // TEXT, INT, FLOAT, BOOL or LIST
  std::string default_value;         // JSON of the default; "" for an empty text or list
  std::string help;                  // one line (training_args_help.cpp)
};
std::vector<TrainingOptionDoc> training_option_docs();

// Sets option `key` (a field name or HF alias) from a YAML scalar; `where` prefixes errors.
// Unknown keys name the nearest known one.
void set_training_argument(TrainingArguments& a, const std::string& key, const YAML::Node& value,
                           const std::string& where);

// Parses a YAML mapping; `source` names the file in errors. `overrides` are "key=value"
// strings (values parsed as YAML scalars) applied on top; `overrides_source` names them in
// errors (a job spec's hyperparameters are overrides too). Validates everything. Overrides
// apply in order, so a later one wins.
TrainingArguments parse_training_arguments(const std::string& yaml_text, const std::string& source,
                                           const std::vector<std::string>& overrides = {},
                                           const std::string& overrides_source = "--set");
TrainingArguments parse_training_arguments_with(const std::string& yaml_text, const std::string& source,
                                                const std::vector<ArgumentOverride>& overrides);
TrainingArguments load_training_arguments(const std::string& path, const std::vector<ArgumentOverride>& overrides = {});

// The arguments as "name: value" lines, non-default ones marked, for the start-of-run table.
std::string format_training_arguments(const TrainingArguments& a);
// How the Trainer's model state keeps the blocks' saved tensors under these arguments.
nn::ActivationPolicy activation_policy(const TrainingArguments& a);

// As JSON text (written to checkpoints as training_args.json).
std::string training_arguments_json(const TrainingArguments& a);

// The language-model pretraining data options (run_mlm.py / run_clm.py) these arguments set,
// for a model that takes at most `model_max_positions` tokens.
data::PretrainingOptions pretraining_options(const TrainingArguments& a, data::LmObjective objective,
                                             size_t model_max_positions);

}  // namespace strata
