#include "train/hf_other_args.h"

#include <string>

namespace strata {

namespace {

using Kind = HfOtherArg::Kind;

// Sorted by where HF declares them: TrainingArguments, then the example scripts' arguments.
constexpr HfOtherArg kArgs[] = {
    // TrainingArguments: the Hub
    {"push_to_hub", Kind::Ignored, "", nullptr},
    {"hub_model_id", Kind::Ignored, "", nullptr},
    {"hub_strategy", Kind::Ignored, "every_save", nullptr},
    {"hub_token", Kind::Ignored, "", nullptr},
    {"hub_private_repo", Kind::Ignored, "", nullptr},
    {"hub_always_push", Kind::Ignored, "", nullptr},
    {"hub_revision", Kind::Ignored, "", nullptr},
    {"push_to_hub_model_id", Kind::Ignored, "", nullptr},
    {"push_to_hub_organization", Kind::Ignored, "", nullptr},
    {"push_to_hub_token", Kind::Ignored, "", nullptr},
    // devices, precision and torch internals
    {"use_mps_device", Kind::Ignored, "", nullptr},
    {"use_ipex", Kind::Ignored, "", nullptr},
    {"jit_mode_eval", Kind::Ignored, "", nullptr},
    {"fp16_opt_level", Kind::Ignored, "O1", nullptr},
    {"torch_compile", Kind::Ignored, "", nullptr},
    {"torch_compile_backend", Kind::Ignored, "", nullptr},
    {"torch_compile_mode", Kind::Ignored, "", nullptr},
    {"torchdynamo", Kind::Ignored, "", nullptr},
    {"torch_empty_cache_steps", Kind::Ignored, "", nullptr},
    {"use_liger_kernel", Kind::Ignored, "", nullptr},
    {"auto_find_batch_size", Kind::Ignored, "", nullptr},
    {"skip_memory_metrics", Kind::Ignored, "true", nullptr},
    {"include_tokens_per_second", Kind::Inherent, "", nullptr},  // train_tokens_per_second is always reported
    // processes and sharding (strata's own: the distribution block, docs/distributed.md)
    {"local_rank", Kind::Ignored, "-1", nullptr},
    {"ddp_backend", Kind::Ignored, "", nullptr},
    {"ddp_find_unused_parameters", Kind::Ignored, "", nullptr},
    {"ddp_broadcast_buffers", Kind::Ignored, "", nullptr},
    {"average_tokens_across_devices", Kind::Ignored, "", nullptr},
    {"fsdp", Kind::Ignored, "", nullptr},
    {"fsdp_config", Kind::Ignored, "", nullptr},
    {"fsdp_min_num_params", Kind::Ignored, "", nullptr},
    {"fsdp_transformer_layer_cls_to_wrap", Kind::Ignored, "", nullptr},
    {"mp_parameters", Kind::Ignored, "", nullptr},
    {"accelerator_config", Kind::Ignored, "", nullptr},
    {"dispatch_batches", Kind::Ignored, "", nullptr},
    {"split_batches", Kind::Ignored, "", nullptr},
    {"tpu_num_cores", Kind::Ignored, "", nullptr},
    {"tpu_metrics_debug", Kind::Ignored, "", nullptr},
    {"debug", Kind::Ignored, "", nullptr},
    // data loading and evaluation internals
    {"dataloader_pin_memory", Kind::Ignored, "true", nullptr},
    {"dataloader_persistent_workers", Kind::Ignored, "", nullptr},
    {"dataloader_prefetch_factor", Kind::Ignored, "", nullptr},
    {"remove_unused_columns", Kind::Ignored, "true", nullptr},
    {"label_names", Kind::Ignored, "", nullptr},
    {"group_by_length", Kind::Ignored, "", nullptr},
    {"length_column_name", Kind::Ignored, "length", nullptr},
    {"past_index", Kind::Ignored, "-1", nullptr},
    {"prediction_loss_only", Kind::Ignored, "", nullptr},
    {"eval_accumulation_steps", Kind::Ignored, "", nullptr},
    {"eval_do_concat_batches", Kind::Ignored, "true", nullptr},
    {"eval_on_start", Kind::Ignored, "", nullptr},
    {"eval_use_gather_object", Kind::Ignored, "", nullptr},
    {"batch_eval_metrics", Kind::Ignored, "", nullptr},
    {"include_inputs_for_metrics", Kind::Ignored, "", nullptr},
    {"include_for_metrics", Kind::Ignored, "", nullptr},
    {"use_legacy_prediction_loop", Kind::Ignored, "", nullptr},
    // logging verbosity and saving details
    {"log_level", Kind::Ignored, "passive", nullptr},
    {"log_level_replica", Kind::Ignored, "warning", nullptr},
    {"log_on_each_node", Kind::Ignored, "true", nullptr},
    {"logging_nan_inf_filter", Kind::Ignored, "true", nullptr},
    {"save_safetensors", Kind::Ignored, "true", nullptr},  // strata always writes safetensors
    {"save_on_each_node", Kind::Ignored, "", nullptr},
    {"save_only_model", Kind::Ignored, "", nullptr},
    {"restore_callback_states_from_checkpoint", Kind::Ignored, "", nullptr},
    {"ray_scope", Kind::Ignored, "last", nullptr},
    {"gradient_checkpointing_kwargs", Kind::Ignored, "", nullptr},
    // training features strata does not have
    {"label_smoothing_factor", Kind::Refused, "",
     "label smoothing is not implemented; remove it or set 0"},
    {"adafactor", Kind::Refused, "", "Adafactor is not implemented; use optim: adamw_torch or sgd"},
    {"optim_args", Kind::Refused, "",
     "optimizer arguments are set by adam_beta1, adam_beta2, adam_epsilon, weight_decay and sgd_momentum"},
    {"optim_target_modules", Kind::Refused, "", "GaLore-style optimizers are not implemented"},
    {"lr_scheduler_kwargs", Kind::Refused, "",
     "the schedules take HF's defaults (cosine_with_restarts: 1 cycle; polynomial: power 1, lr_end 1e-7); "
     "scheduler arguments are not supported"},
    {"neftune_noise_alpha", Kind::Refused, "", "NEFTune embedding noise is not implemented; remove it"},
    // ModelArguments of the example scripts
    {"cache_dir", Kind::Ignored, "", nullptr},
    {"use_fast_tokenizer", Kind::Ignored, "true", nullptr},
    {"model_revision", Kind::Ignored, "main", nullptr},
    {"token", Kind::Ignored, "", nullptr},
    {"use_auth_token", Kind::Ignored, "", nullptr},
    {"trust_remote_code", Kind::Ignored, "", nullptr},
    {"ignore_mismatched_sizes", Kind::Ignored, "", nullptr},
    {"low_cpu_mem_usage", Kind::Ignored, "", nullptr},
    {"torch_dtype", Kind::Ignored, "", nullptr},
    {"model_type", Kind::Ignored, "", nullptr},  // only read when there is no model_name_or_path
    {"config_overrides", Kind::Refused, "",
     "strata reads the model's config.json as it is: edit it (in model_name_or_path or config_name) instead"},
    // DataTrainingArguments of the example scripts
    {"dataset_name", Kind::Refused, "",
     "strata reads local files, not Hub datasets: save the dataset's splits as JSON Lines or CSV (datasets' "
     "Dataset.to_json / to_csv) and set train_file, validation_file and test_file"},
    {"dataset_config_name", Kind::Ignored, "", nullptr},
    {"overwrite_cache", Kind::Ignored, "", nullptr},
    {"preprocessing_num_workers", Kind::Ignored, "", nullptr},
    {"keep_linebreaks", Kind::Ignored, "", nullptr},  // strata's text loader drops line breaks
    {"shuffle_train_dataset", Kind::Ignored, "", nullptr},
    {"shuffle_seed", Kind::Ignored, "42", nullptr},
    {"metric_name", Kind::Ignored, "", nullptr},  // strata reports every metric of the task
    {"remove_splits", Kind::Ignored, "", nullptr},
    {"remove_columns", Kind::Ignored, "", nullptr},
    {"train_split_name", Kind::Ignored, "train", nullptr},
    {"validation_split_name", Kind::Ignored, "validation", nullptr},
    {"test_split_name", Kind::Ignored, "test", nullptr},
};

bool falsy(const std::string& s) {
  bool b = true;
  double d = 1;
  return s.empty() || s == "None" || s == "none" || (YAML::convert<bool>::decode(YAML::Node(s), b) && !b) ||
         (YAML::convert<double>::decode(YAML::Node(s), d) && d == 0);
}

}  // namespace

std::span<const HfOtherArg> hf_other_args() { return kArgs; }

const HfOtherArg* find_hf_other_arg(std::string_view name) {
  for (const HfOtherArg& a : kArgs)
    if (name == a.name) return &a;
  return nullptr;
}

bool at_hf_default(const HfOtherArg& arg, const YAML::Node& value) {
  if (!value.IsDefined() || value.IsNull()) return true;
  if (value.IsSequence() || value.IsMap()) return value.size() == 0;
  const std::string s = value.Scalar();
  const std::string dflt = arg.hf_default;
  if (dflt.empty()) return falsy(s);
  bool b1, b2;
  if (YAML::convert<bool>::decode(value, b1) && YAML::convert<bool>::decode(YAML::Node(dflt), b2)) return b1 == b2;
  double d1, d2;
  if (YAML::convert<double>::decode(value, d1) && YAML::convert<double>::decode(YAML::Node(dflt), d2)) return d1 == d2;
  return s == dflt;
}

}  // namespace strata
