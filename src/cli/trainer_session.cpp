#include "cli/trainer_session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/exit_status.h"
#include "dist/gpu_collectives.h"
#include "io/file_fingerprint.h"
#include "io/safetensors.h"
#include "kernels/gemm_threading.h"
#include "kernels/matmul_precision.h"
#include "kernels/ops.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "tokenizers/tokenizer.h"
#include "train/device_choice.h"
#include "train/memory_plan.h"
#include "train/mixed_precision.h"
#include "train/parallel_layout.h"
#include "train/pipeline_partition.h"
#include "train/pipeline_stages.h"
#include "train/progress.h"
#include "train/tensor_parallel.h"
#include "util/console.h"
#include "util/error.h"

namespace strata::cli {

namespace fs = std::filesystem;

namespace {

// STRATA_PAUSE_AT_STEP's value: a step >= 1.
int64_t pause_step(const char* text) {
  char* end = nullptr;
  const long long step = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || step < 1)
    fail(kPauseAtStepVariable, " is '", text, "'; expected a step number >= 1 (after it the ranks wait for a stop request)");
  return step;
}

// What must be the same on every rank: the options and the files the model and tokenizer
// come from, hashed without reading the weights whole (io/file_fingerprint.h).
std::string fingerprint(const TrainingArguments& a) {
  io::Fingerprint h;
  TrainingArguments shared = a;
  shared.num_threads = 0;  // may differ per host
  h.add(training_arguments_json(shared));
  for (const std::string& dir : {a.model_name_or_path, a.tokenizer_name}) {
    std::vector<fs::path> files;
    for (const char* f : {"config.json", "tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model",
                          "model.safetensors.index.json"})
      if (fs::exists(fs::path(dir) / f)) files.push_back(fs::path(dir) / f);
    if (fs::is_directory(dir))
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      h.add(f.filename().string());
      h.add_file(f.string());
    }
  }
  return std::to_string(h.value());
}

// Every rank's host name, in rank order (the grid banner shows which groups share a host).
std::vector<std::string> host_names(dist::Communicator& world) {
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  return world.all_gather_bytes(name, "host names");
}

// What each rank will hold: the Trainer's plan on one stage (replica threads included), one
// plan per pipeline stage otherwise.
void print_memory_plan(const TrainingArguments& a, Trainer& trainer, int dp) {
  const int T = a.sequence_length();
  const int B = a.per_device_train_batch_size, states = a.optimizer_states();
  const EvalShape eval{a.per_device_eval_batch_size, T};
  const Model<float>& model = trainer.model();
  const PipelineStep& pipe = trainer.pipeline();
  if (pipe.stages() == 1 && a.microbatches == 1) {
    std::printf("%s", format_memory_plan(trainer.memory_plan(B, T, eval), B, T).c_str());
    return;
  }
  std::printf("%s", format_pipeline_memory_plans(model, pipe.layout(), dist::parse_pipeline_kind(a.pipeline), B, T,
                                                 a.microbatches, dp, a.sharding_stage(), a.ddp_bucket_cap_mb, states,
                                                 activation_policy(a), eval)
                        .c_str());
}

}  // namespace

void check_output_dir(const TrainingArguments& a) {
  if (!fs::exists(a.output_dir) || a.overwrite_output_dir || !a.resume_from_checkpoint.empty()) return;
  if (!fs::is_directory(a.output_dir)) fail("output_dir ", a.output_dir, " exists and is not a directory");
  if (!fs::is_empty(a.output_dir))
    fail("output_dir ", a.output_dir, " already exists and is not empty; set overwrite_output_dir: true, or "
         "resume_from_checkpoint: latest to continue the run in it");
}

ModelConfig model_config(const TrainingArguments& a) {
  Task task;
  const Task* task_override = nullptr;
  if (!a.task.empty()) {
    parse_task(a.task, &task);
    task_override = &task;
  }
  ModelConfig cfg = load_model_config(a.model_name_or_path, task_override);
  if (cfg.task == Task::Base) {
    task = Task::SequenceClassification;
    cfg = load_model_config(a.model_name_or_path, &task);
  }
  if (!a.problem_type.empty()) cfg.problem_type = parse_problem_type(a.problem_type, "problem_type");
  return cfg;
}

Ranks join_ranks(double timeout_s) {
  Ranks r;
  r.layout = dist::detect_layout();
  if (r.layout.world_size == 1) {
    r.world = dist::make_single_process_communicator();
    return r;
  }
  // Several ranks: a rank that fails takes the job down at once (the caller aborts through
  // `world`), instead of leaving the others waiting in a collective.
  r.world = dist::make_mpi_communicator(timeout_s);
  if (r.world->size() != r.layout.world_size)
    fail("the environment says ", r.layout.world_size, " processes (", r.layout.source, ") but MPI has ", r.world->size());
  return r;
}

TrainerSession::TrainerSession(const TrainingArguments& a, Mode mode, Ranks& ranks)
    : args_(a), ranks_(ranks) {
  const dist::Layout& layout = ranks_.layout;
  const dist::RankGrid grid = make_rank_grid(a, layout);
  ModelConfig cfg = model_config(a);
  check_parallel_layout(a, cfg, a.model_name_or_path + "/config.json", grid, layout);
  // Refused before anything is read or written: a device this machine lacks, bf16 / fp16 this
  // CPU cannot run.
  const kernels::Device device = training_device(a, layout.local_rank, layout.local_world_size);
  kernels::use_device(device);
  kernels::set_tf32(a.tf32);
  mixed_precision(a);
  // GPU ranks: collectives on device buffers (NCCL, or MPI through host memory).
  std::string collectives;
  const bool own_gpu = gpu_per_rank(layout.local_world_size, kernels::cuda_device_count());
  if (device.is_cuda() && ranks_.world->size() > 1)
    gpu_world_ = dist::make_gpu_communicator(*ranks_.world, own_gpu, a.ddp_timeout, &collectives);
  dist::Communicator& world = this->world();
  groups_ = dist::make_process_groups(world, grid);
  if (world.size() > 1) {
    const std::vector<std::string> hosts = host_names(world);
    if (world.rank() == 0) std::printf("%s", grid.describe(hosts).c_str());
  }

  // Ranks on one host share its cores.
  kernels::set_num_threads(a.num_threads > 0 ? a.num_threads
                                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                                               layout.local_world_size));
  // Matrix products threaded by oneDNN, unless every thread count must give the same bits.
  kernels::set_gemm_threading(a.full_determinism ? kernels::GemmThreading::FixedTiles
                                                 : kernels::GemmThreading::Library);
  if (world.size() > 1) dist::check_same_on_all_ranks(world, fingerprint(a), "configuration or model files");
  std::unique_ptr<Model<float>> model;
  // Tensor parallelism: this rank builds (and loads, or initialises) its slices only.
  cfg.tensor_split = {groups_.tensor->size(), groups_.tensor->rank()};
  if (world.rank() == 0) {
    progress_message(cat("device: ", kernels::describe_device(device)));
    if (!collectives.empty()) progress_message(collectives);
    if (device.is_cuda() && !own_gpu)
      console_warning(cat(layout.local_world_size, " ranks share this host's ", kernels::cuda_device_count(), " GPU",
                          kernels::cuda_device_count() == 1 ? "" : "s",
                          ": they take turns on it and exchange gradients through host memory, which suits tests "
                          "and small jobs; for speed start one rank per GPU"));
    progress_message(cat("cpu: ", kernels::kernel_isa(), " kernels (STRATA_MAX_CPU_ISA caps them), ",
                         kernels::num_threads(), " threads"));
  }
  if (world.rank() == 0)
    progress_message(cat("task: ", task_name(cfg.task),
                         a.task.empty() ? cat(" (from ", a.model_name_or_path,
                                              "/config.json; set task: to train the model for another)")
                                        : std::string()));
  data_ = load_job_data(a, mode, cfg, [this]() -> const Model<float>& { return trainer_->model(); });
  // The memory plan and check size a batch by max_seq_length: for an encoder-decoder, the longer
  // of its two sides (an upper bound on each).
  if (cfg.task == Task::Seq2SeqLM) args_.max_seq_length = std::max(a.max_source_length, a.max_target_length);
  const tok::Tokenizer& tokenizer = *data_.tokenizers.at(0);
  if (tokenizer.vocab_size() > static_cast<size_t>(cfg.vocab_size))
    fail(a.tokenizer_name, ": the tokenizer has ", tokenizer.vocab_size(), " tokens but ", a.model_name_or_path,
         "/config.json has vocab_size ", cfg.vocab_size);
  // A pipeline stage loads (or initialises) only what it keeps: its parameters never pass
  // through its memory, host or GPU, whole. The stages follow from the model's table alone.
  EntryFilter keep;
  if (groups_.pipeline->size() > 1) {
    const std::unique_ptr<Model<float>> table_only = make_model<float>(cfg);  // reserved, never written
    const PipelineStages stages(*table_only, partition_blocks(*table_only, args_, groups_.pipeline->size(),
                                                              a.model_name_or_path + "/config.json", nullptr));
    keep = stages.keeps(table_only->table(), groups_.pipeline->rank());
  }
  if (io::has_weight_files(a.model_name_or_path)) {
    LoadReport report;
    model = load_pretrained<float>(cfg, a.model_name_or_path, &report, static_cast<uint64_t>(a.seed), keep);
    print_load_report(report, a.model_name_or_path);
  } else {
    if (mode != Mode::Train) fail(a.model_name_or_path, ": no model.safetensors to ", mode == Mode::Evaluate ? "evaluate" : "predict with");
    progress_message(cat(a.model_name_or_path, " has no weights: initialising a new ", cfg.architecture(),
                         " from its config.json (seed ", a.seed, ")"));
    model = make_model<float>(cfg);
    model->init_weights(static_cast<uint64_t>(a.seed), keep);
  }
  if (groups_.tensor->size() > 1) model->set_tensor_group(bind_tensor_group(*groups_.tensor));
  const bool main = world.rank() == 0;
  if (main) fs::create_directories(a.output_dir);
  world.barrier("output directory ready");
  if (mode == Mode::Train) train_ = loader(data_.train, true);
  eval_ = loader(data_.validation, false);
  test_ = loader(data_.test, false);
  dist::Communicator& data = *groups_.data;
  trainer_ = std::make_unique<Trainer>(args_, std::move(model), a.tokenizer_name,
                                       TrainerGroups{&world, &data, groups_.pipeline.get(), groups_.tensor.get(),
                                                     layout.local_world_size});
  if (main && mode == Mode::Train) print_memory_plan(args_, *trainer_, data.size());
  if (const char* pause = std::getenv(kPauseAtStepVariable)) trainer_->pause_after_step(pause_step(pause));
}

ExtraSplit TrainerSession::load_split(const std::string& file, Mode mode) {
  TrainingArguments a = args_;
  (mode == Mode::Evaluate ? a.validation_file : a.test_file) = file;
  if (mode == Mode::Evaluate) a.test_file.clear();
  ModelConfig cfg = trainer_->model().config();  // the trained labels
  ExtraSplit s;
  s.data = load_job_data(a, mode, cfg, [this]() -> const Model<float>& { return trainer_->model(); });
  Split& split = mode == Mode::Evaluate ? s.data.validation : s.data.test;
  s.loader = loader(split, false);
  s.task = split.eval.get();
  return s;
}

std::unique_ptr<data::DataLoader> TrainerSession::loader(const Split& split, bool train) const {
  if (!split.batches) return nullptr;
  const TrainingArguments& a = args_;
  data::LoaderOptions lo;
  lo.rank = static_cast<size_t>(groups_.data->rank());
  lo.world_size = static_cast<size_t>(groups_.data->size());
  lo.batch_size = static_cast<size_t>(train ? a.per_device_train_batch_size : a.per_device_eval_batch_size);
  lo.shuffle = train;
  lo.drop_last = train && a.dataloader_drop_last;
  lo.seed = static_cast<uint64_t>(a.data_seed >= 0 ? a.data_seed : a.seed);
  lo.num_workers = a.dataloader_num_workers;
  return std::make_unique<data::DataLoader>(split.batches, lo);
}

}  // namespace strata::cli
