// One line of help per TrainingArguments option, for `strata train --help` and the shell
// completion. Kept apart from the option table so that the table stays one line per field;
// training_option_docs() fails loudly when a field has no line here (a unit test calls it).
#include "train/training_args_help.h"

namespace strata {

namespace {

struct Help {
  std::string_view name;
  const char* text;
};

constexpr Help kHelp[] = {
    // model
    {"model_name_or_path", "directory with config.json (and model.safetensors to fine-tune; without it: from scratch)"},
    {"tokenizer_name", "tokenizer directory (tokenizer.json, vocab.txt or vocab.json + merges.txt); default: the model's"},
    {"config_name", "directory with config.json, for a model trained from scratch (run_mlm / run_clm)"},
    {"task", "sequence-classification, masked-lm, causal-lm, token-classification, question-answering or seq2seq-lm; default: config.json's architectures"},
    {"problem_type", "single_label_classification, multi_label_classification or regression; overrides config.json's"},
    // data
    {"train_file", "training data: .csv, .tsv, .json/.jsonl or .txt (optionally .gz)"},
    {"validation_file", "evaluation data, same formats as train_file"},
    {"test_file", "prediction data, same formats as train_file (labels optional)"},
    {"text_column", "column(s) with the text; several, comma-separated, are joined by text_column_delimiter"},
    {"text_pair_column", "column with the second text of a pair (e.g. sentence2)"},
    {"label_column", "column with the label"},
    {"text_column_delimiter", "joins several text columns into one text"},
    {"max_seq_length", "tokens per example after truncation"},
    {"pad_to_max_length", "pad every batch to max_seq_length instead of its longest example"},
    {"pad_to_multiple_of", "pad batches to a multiple of this many tokens (0: no rounding)"},
    {"validation_split_percentage", "percent of train_file held out for evaluation when there is no validation_file"},
    {"streaming", "read the data files while training instead of loading them first"},
    {"max_train_samples", "use the first N training examples (-1: all)"},
    {"max_eval_samples", "use the first N evaluation examples (-1: all)"},
    {"max_predict_samples", "use the first N prediction examples (-1: all)"},
    {"task_name", "run_glue's GLUE task (cola, mnli, mrpc, ...): names outputs and picks the text columns"},
    {"do_regression", "the labels are regression targets (run_classification)"},
    {"mlm_probability", "fraction of tokens masked for masked-LM training"},
    {"line_by_line", "each non-blank line is one example, instead of grouped blocks of text"},
    {"block_size", "tokens per block of grouped text (0: max_seq_length for MLM, run_clm's default for CLM)"},
    {"whole_word_mask", "mask whole words instead of sub-word tokens (masked LM)"},
    {"question_column", "question answering: column with the question"},
    {"context_column", "question answering: column with the context"},
    {"answer_column", "question answering: column with the answers ({text, answer_start})"},
    {"doc_stride", "question answering: tokens of overlap between windows of a long context"},
    {"n_best_size", "question answering: start/end candidates per window in post-processing"},
    {"max_answer_length", "question answering: longest answer in tokens"},
    {"version_2_with_negative", "question answering: SQuAD v2, questions may have no answer"},
    {"null_score_diff_threshold", "question answering: predict no answer when its score beats the best by this"},
    {"label_all_tokens", "token classification: every sub-token of a word gets the word's tag"},
    {"return_entity_level_metrics", "token classification: report precision/recall/F1 per entity type"},
    {"summary_column", "sequence to sequence: column with the target text (run_summarization)"},
    {"source_prefix", "sequence to sequence: text put before every source (T5: \"summarize: \")"},
    {"source_lang", "translation: the source's key in the `translation` column (e.g. en)"},
    {"target_lang", "translation: the target's key in the `translation` column (e.g. ro)"},
    {"max_source_length", "sequence to sequence: source tokens after truncation"},
    {"max_target_length", "sequence to sequence: target tokens after truncation (training)"},
    {"val_max_target_length", "sequence to sequence: target tokens for evaluation and prediction (0: max_target_length)"},
    {"ignore_pad_token_for_loss", "sequence to sequence: padded target positions are -100 (no loss)"},
    {"predict_with_generate", "sequence to sequence: evaluation generates and reports ROUGE / BLEU"},
    {"generation_max_length", "sequence to sequence: longest generation (0: val_max_target_length)"},
    {"generation_num_beams", "sequence to sequence: beams when generating (0: the model's generation config)"},
    // TrainingArguments
    {"output_dir", "where the model, checkpoints, logs and results go"},
    {"overwrite_output_dir", "train into a non-empty output_dir"},
    {"do_train", "train on train_file"},
    {"do_eval", "evaluate on validation_file at the end"},
    {"do_predict", "predict test_file at the end"},
    {"num_train_epochs", "epochs to train (fractions allowed)"},
    {"max_steps", "optimizer steps to train; overrides num_train_epochs when > 0"},
    {"per_device_train_batch_size", "training examples per batch and rank"},
    {"per_device_eval_batch_size", "evaluation examples per batch and rank"},
    {"gradient_accumulation_steps", "batches whose gradients are summed before one optimizer step"},
    {"learning_rate", "peak learning rate"},
    {"weight_decay", "AdamW weight decay (not on biases and LayerNorm weights)"},
    {"adam_beta1", "AdamW beta1"},
    {"adam_beta2", "AdamW beta2"},
    {"adam_epsilon", "AdamW epsilon"},
    {"optim", "adamw_torch (adamw, adamw_torch_fused) or sgd"},
    {"sgd_momentum", "momentum of optim sgd"},
    {"lr_scheduler_type", "linear, cosine, cosine_with_restarts, polynomial, constant, constant_with_warmup or inverse_sqrt"},
    {"warmup_ratio", "fraction of the steps spent warming the learning rate up"},
    {"warmup_steps", "steps spent warming the learning rate up, or below 1 their ratio of all steps (as "
                     "transformers 5); overrides warmup_ratio when > 0"},
    {"max_grad_norm", "clip the gradient to this global L2 norm (0: no clipping)"},
    {"seed", "seed of initialisation, dropout and (without data_seed) the data order"},
    {"data_seed", "seed of the training data order (-1: seed)"},
    {"eval_strategy", "when to evaluate during training: no, steps or epoch"},
    {"eval_steps", "evaluate every N steps with eval_strategy steps (0: logging_steps)"},
    {"eval_delay", "epochs or steps before the first evaluation"},
    {"logging_strategy", "when to log: no, steps or epoch"},
    {"logging_steps", "log every N steps"},
    {"logging_first_step", "also log the first step"},
    {"save_strategy", "when to save a checkpoint: no, steps or epoch"},
    {"save_steps", "save a checkpoint every N steps"},
    {"save_total_limit", "keep at most N checkpoints (0: all)"},
    {"max_shard_size", "saved weights above this size (e.g. 5GB, 500MB) are written in shards, as HF does"},
    {"load_best_model_at_end", "end with the best checkpoint by metric_for_best_model"},
    {"metric_for_best_model", "metric that picks the best checkpoint (default: loss)"},
    {"greater_is_better", "true or false; default: by the metric (loss: false)"},
    {"early_stopping_patience", "stop after N evaluations without improvement (0: off)"},
    {"early_stopping_threshold", "least improvement that counts for early stopping"},
    {"freeze_base_model", "train the task head only"},
    {"dataloader_num_workers", "threads preparing batches ahead of training"},
    {"dataloader_drop_last", "drop the last incomplete training batch"},
    {"resume_from_checkpoint", "checkpoint directory to resume from, or latest (also: true)"},
    {"ignore_data_skip", "on resume, start at the beginning of the checkpoint's epoch"},
    {"predict_output_format", "txt (HF's predict_results.txt), csv or jsonl (with probabilities)"},
    {"num_threads", "compute threads per rank (0: the host's cores / ranks on it)"},
    {"replica_threads", "parts of each batch trained at once, a thread each, gradients summed (0: auto: "
                        "num_threads, fewer if their extra gradient buffers would pass 128 MiB; 1: off)"},
    {"full_determinism", "the same bits for any num_threads (fixed GEMM tiles; slower)"},
    {"use_cpu", "train on the CPU even where there is a GPU (no_cuda: the older name)"},
    {"tf32", "fp32 products on the GPU through TF32 tensor cores (refused on the CPU, as HF does)"},
    {"bf16", "mixed precision: matrix products in bf16 with fp32 accumulation, fp32 master weights"},
    {"fp16", "mixed precision: matrix products in fp16 with fp32 accumulation and dynamic loss scaling"},
    {"bf16_full_eval", "evaluation and prediction products in bf16"},
    {"fp16_full_eval", "evaluation and prediction products in fp16"},
    {"half_precision_backend", "auto (native bf16 where the CPU has avx512_bf16 or AMX; also cpu_amp) or emulated "
                               "(inputs rounded, fp32 GEMM: any CPU, fp32 speed)"},
    {"fp16_init_scale", "fp16's initial loss scale (GradScaler's init_scale; a power of two)"},
    {"fp16_growth_interval", "clean fp16 steps before the loss scale doubles (GradScaler's growth_interval)"},
    {"disable_tqdm", "no progress bar"},
    {"run_name", "name of the run in logs and curves (default: output_dir)"},
    {"logging_dir", "where TensorBoard event files go (default: output_dir/runs/<time>_<host>) and trainer_log.jsonl (default: output_dir)"},
    {"report_to", "all, none, or a list of: tensorboard, csv"},
    {"include_num_input_tokens_seen", "log num_input_tokens_seen with every entry"},
    // distribution
    {"dataparallel_enabled", "data parallelism (also on whenever the job runs as several ranks)"},
    {"ddp_bucket_cap_mb", "MiB of gradients per all-reduce bucket"},
    {"ddp_timeout", "seconds a collective may take before the job is aborted"},
    {"pipeline_parallel_degree", "pipeline stages (SageMaker: partitions)"},
    {"tensor_parallel_degree", "tensor-parallel ranks per layer"},
    {"microbatches", "micro-batches per optimizer step and rank, in the pipeline"},
    {"pipeline", "pipeline schedule: simple (GPipe) or interleaved (1F1B)"},
    {"placement_strategy", "rank placement: cluster, spread, or a permutation of DPT"},
    {"ddp", "keep replicas in sync by data parallelism"},
    {"shard_optimizer_state", "shard the optimizer state across data-parallel ranks (ZeRO-1)"},
    {"zero_stage", "DeepSpeed ZeRO stage: 0, 1 or 2 (2 also shards gradients)"},
    {"optimize", "tensor-parallel layer layout: memory or speed"},
    {"auto_partition", "split blocks across pipeline stages by their cost"},
    {"default_partition", "stage of the layers outside the blocks, without auto_partition"},
    {"pipeline_partition", "blocks per pipeline stage, e.g. [4, 4]; overrides auto_partition"},
    {"processes_per_host", "ranks per host (SageMaker's mpi.processes_per_host; 0: as launched)"},
    {"gradient_checkpointing", "recompute blocks' forward in backward instead of keeping activations"},
    {"gradient_checkpointing_every", "recompute every k-th block (k >= 1)"},
    {"offload_activations", "move saved activations to host-memory files between forward and backward"},
};

}  // namespace

const char* training_option_help(std::string_view name) {
  for (const Help& h : kHelp)
    if (h.name == name) return h.text;
  return nullptr;
}

}  // namespace strata
