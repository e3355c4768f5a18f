// `strata train | evaluate | predict CONFIG.yaml [--key value ...] [--set key=value ...]`: the Trainer as a
// command, configured like HF's run_glue.py / run_mlm.py. Everything the configuration can
// get wrong is checked before any work starts; outputs go to output_dir as HF writes them.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/job_data.h"
#include "cli/training_options.h"
#include "core/exit_status.h"
#include "data/loader.h"
#include "dist/communicator.h"
#include "dist/process_groups.h"
#include "io/file_fingerprint.h"
#include "io/files.h"
#include "io/python_json.h"
#include "io/safetensors.h"
#include "kernels/gemm_threading.h"
#include "train/mixed_precision.h"
#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "tokenizers/tokenizer.h"
#include "train/memory_plan.h"
#include "train/model_card.h"
#include "train/parallel_layout.h"
#include "train/progress.h"
#include "train/tensor_parallel.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

struct Job {
  TrainingArguments args;
  dist::Communicator* comm = nullptr;  // the data-parallel group
  JobData data;
  std::unique_ptr<Model<float>> model;
};

// STRATA_PAUSE_AT_STEP's value: a step >= 1.
int64_t pause_step(const char* text) {
  char* end = nullptr;
  const long long step = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || step < 1)
    fail(kPauseAtStepVariable, " is '", text, "'; expected a step number >= 1 (after it the ranks wait for a stop request)");
  return step;
}

void check_output_dir(const TrainingArguments& a) {
  if (!fs::exists(a.output_dir) || a.overwrite_output_dir || !a.resume_from_checkpoint.empty()) return;
  if (!fs::is_directory(a.output_dir)) fail("output_dir ", a.output_dir, " exists and is not a directory");
  if (!fs::is_empty(a.output_dir))
    fail("output_dir ", a.output_dir, " already exists and is not empty; set overwrite_output_dir: true, or "
         "resume_from_checkpoint: latest to continue the run in it");
}

// The model's config with the task from the arguments (a bare encoder config is
// classification unless told otherwise); the labels come with the data (job_data.h).
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

Job set_up(const TrainingArguments& a, Mode mode, dist::Communicator& world, dist::Communicator& data,
           dist::Communicator& tensor, const dist::Layout& layout) {
  Job job;
  job.args = a;
  job.comm = &data;
  // Ranks on one host share its cores.
  kernels::set_num_threads(a.num_threads > 0 ? a.num_threads
                                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                                               layout.local_world_size));
  // Matrix products threaded by oneDNN, unless every thread count must give the same bits.
  kernels::set_gemm_threading(a.full_determinism ? kernels::GemmThreading::FixedTiles
                                                 : kernels::GemmThreading::Library);
  mixed_precision(a);  // bf16 / fp16 this CPU cannot run are refused before anything is read or written
  if (world.size() > 1) dist::check_same_on_all_ranks(world, fingerprint(a), "configuration or model files");
  ModelConfig cfg = model_config(a);
  // Tensor parallelism: this rank builds (and loads, or initialises) its slices only.
  cfg.tensor_split = {tensor.size(), tensor.rank()};
  if (world.rank() == 0)
    progress_message(cat("cpu: ", kernels::kernel_isa(), " kernels (STRATA_MAX_CPU_ISA caps them), ",
                         kernels::num_threads(), " threads"));
  if (world.rank() == 0)
    progress_message(cat("task: ", task_name(cfg.task),
                         a.task.empty() ? cat(" (from ", a.model_name_or_path,
                                              "/config.json; set task: to train the model for another)")
                                        : std::string()));
  job.data = load_job_data(a, mode, cfg);
  const tok::Tokenizer& tokenizer = *job.data.tokenizers.at(0);
  if (tokenizer.vocab_size() > static_cast<size_t>(cfg.vocab_size))
    fail(a.tokenizer_name, ": the tokenizer has ", tokenizer.vocab_size(), " tokens but ", a.model_name_or_path,
         "/config.json has vocab_size ", cfg.vocab_size);
  if (io::has_weight_files(a.model_name_or_path)) {
    LoadReport report;
    job.model = load_pretrained<float>(cfg, a.model_name_or_path, &report, static_cast<uint64_t>(a.seed));
    print_load_report(report, a.model_name_or_path);
  } else {
    if (mode != Mode::Train) fail(a.model_name_or_path, ": no model.safetensors to ", mode == Mode::Evaluate ? "evaluate" : "predict with");
    progress_message(cat(a.model_name_or_path, " has no weights: initialising a new ", cfg.architecture(),
                         " from its config.json (seed ", a.seed, ")"));
    job.model = make_model<float>(cfg);
    job.model->init_weights(static_cast<uint64_t>(a.seed));
  }
  if (tensor.size() > 1) job.model->set_tensor_group(bind_tensor_group(tensor));
  return job;
}

std::unique_ptr<data::DataLoader> loader(const Job& job, const Split& split, bool train) {
  if (!split.batches) return nullptr;
  const TrainingArguments& a = job.args;
  data::LoaderOptions lo;
  lo.rank = static_cast<size_t>(job.comm->rank());
  lo.world_size = static_cast<size_t>(job.comm->size());
  lo.batch_size = static_cast<size_t>(train ? a.per_device_train_batch_size : a.per_device_eval_batch_size);
  lo.shuffle = train;
  lo.drop_last = train && a.dataloader_drop_last;
  lo.seed = static_cast<uint64_t>(a.data_seed >= 0 ? a.data_seed : a.seed);
  lo.num_workers = a.dataloader_num_workers;
  return std::make_unique<data::DataLoader>(split.batches, lo);
}

void write_json(const std::string& dir, const std::string& name, const nlohmann::json& j) {
  io::write_file_atomic((fs::path(dir) / name).string(), io::python_json(j) + "\n");
}

void print_metrics(const std::string& title, const nlohmann::json& m) {
  std::printf("***** %s metrics *****\n", title.c_str());
  for (const auto& [k, v] : m.items()) std::printf("  %-28s = %s\n", k.c_str(), v.dump().c_str());
}

int run_job(const TrainingArguments& a, Mode mode, dist::Communicator& world, const dist::ProcessGroups& groups,
            const dist::Layout& layout);

// Every rank's host name, in rank order (the grid banner shows which groups share a host).
std::vector<std::string> host_names(dist::Communicator& world) {
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  return world.all_gather_bytes(name, "host names");
}

int run(const std::string& config, const std::vector<ArgumentOverride>& overrides, Mode mode, const char* name) {
  deliver_signals_to_an_idle_thread();  // first: every thread started later inherits the mask
  if (config.empty())
    fail("strata ", name, ": expected one CONFIG.yaml, e.g. strata ", name, " examples/spam/train.yaml (a bool option "
         "right before it takes it as its value: put CONFIG first or write --do_eval=true)");
  // The mode's own settings first, so the command line can still change them.
  std::vector<ArgumentOverride> all;
  if (mode == Mode::Predict) all.push_back(parse_set_override("do_predict=true"));
  if (mode != Mode::Train) all.push_back(parse_set_override("do_train=false"));
  for (const ArgumentOverride& o : overrides) all.push_back(o);
  const TrainingArguments a = load_training_arguments(config, all);
  const dist::Layout layout = dist::detect_layout();
  // The layout against the process count and the model, before MPI starts or any data is read.
  const dist::RankGrid grid = make_rank_grid(a, layout);
  check_parallel_layout(a, model_config(a), a.model_name_or_path + "/config.json", grid, layout);
  if (mode == Mode::Train && layout.rank == 0) check_output_dir(a);
  if (layout.rank == 0) {
    std::printf("strata %s %s\n%s", name, config.c_str(), format_training_arguments(a).c_str());
    std::printf("processes: %s\n", layout.describe().c_str());
    if (!a.ignored_options.empty()) {
      std::string names;
      for (const std::string& o : a.ignored_options) names += (names.empty() ? "" : ", ") + o;
      std::fprintf(stderr, "warning: ignoring options that do not apply to strata: %s (docs/hf_compat.md)\n",
                   names.c_str());
    }
  }
  if (layout.world_size == 1) {
    auto single = dist::make_single_process_communicator();
    return run_job(a, mode, *single, dist::make_process_groups(*single, grid), layout);
  }
  // Several ranks: data parallel (as HF's Trainer under torchrun), pipeline stages, or both. A
  // rank that fails takes the job down at once, instead of leaving the others waiting in a
  // collective.
  auto mpi = dist::make_mpi_communicator(a.ddp_timeout);
  if (mpi->size() != layout.world_size)
    fail("the environment says ", layout.world_size, " processes (", layout.source, ") but MPI has ", mpi->size());
  try {
    const dist::ProcessGroups groups = dist::make_process_groups(*mpi, grid);
    const std::vector<std::string> hosts = host_names(*mpi);
    if (mpi->rank() == 0) std::printf("%s", grid.describe(hosts).c_str());
    return run_job(a, mode, *mpi, groups, layout);
  } catch (const Error& e) {
    mpi->abort(cat("strata: rank ", mpi->rank(), ": error: ", e.what()), 1);
    return 1;  // abort does not return
  }
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

// HF's task tag of a model (the model card's `tasks`, as each example script passes it).
const char* task_tag(Task task) {
  switch (task) {
    case Task::SequenceClassification: return "text-classification";
    case Task::MaskedLM: return "fill-mask";
    case Task::CausalLM: return "text-generation";
    case Task::TokenClassification: return "token-classification";
    case Task::QuestionAnswering: return "question-answering";
    default: return "";
  }
}

// The README.md model card of the trained model in output_dir (Trainer.create_model_card).
void write_model_card(const TrainingArguments& a, Trainer& trainer, const data::DataLoader& train,
                      const data::DataLoader* eval) {
  ModelCardInfo info;
  info.model_name = fs::path(a.output_dir).lexically_normal().filename().string();
  if (info.model_name.empty()) info.model_name = fs::path(a.output_dir).lexically_normal().parent_path().filename().string();
  if (io::has_weight_files(a.model_name_or_path)) info.finetuned_from = a.model_name_or_path;
  info.task_tag = task_tag(trainer.model().config().task);
  if (!a.task_name.empty() && trainer.model().config().task == Task::SequenceClassification) {  // run_glue's kwargs
    info.dataset_tag = "glue";
    info.dataset_args = a.task_name;
    info.dataset = "GLUE ";
    for (char c : a.task_name) info.dataset += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  info.data_lines.push_back(cat("train_file: ", a.train_file, " (", train.num_examples(), " examples)"));
  if (eval)
    info.data_lines.push_back(a.validation_file.empty()
                                  ? cat("validation: ", a.validation_split_percentage, "% of train_file (",
                                        eval->num_examples(), " examples)")
                                  : cat("validation_file: ", a.validation_file, " (", eval->num_examples(), " examples)"));
  info.world_size = trainer.data_parallel_size();
  io::write_file_atomic((fs::path(a.output_dir) / "README.md").string(),
                        make_model_card(info, a, trainer.state().log_history));
}

int run_job(const TrainingArguments& a, Mode mode, dist::Communicator& world, const dist::ProcessGroups& groups,
            const dist::Layout& layout) {
  const bool main = world.rank() == 0;
  dist::Communicator& comm = *groups.data;
  Job job = set_up(a, mode, world, comm, *groups.tensor, layout);
  if (main) fs::create_directories(a.output_dir);
  world.barrier("output directory ready");
  auto train_data = mode == Mode::Train ? loader(job, job.data.train, true) : nullptr;
  auto eval_data = loader(job, job.data.validation, false);
  auto test_data = loader(job, job.data.test, false);
  const EvalTask* eval_task = job.data.validation.eval.get();
  Trainer trainer(a, std::move(job.model), a.tokenizer_name,
                  {&world, &comm, groups.pipeline.get(), groups.tensor.get(), layout.local_world_size});
  if (main && mode == Mode::Train) print_memory_plan(a, trainer, comm.size());
  if (const char* pause = std::getenv(kPauseAtStepVariable)) trainer.pause_after_step(pause_step(pause));

  // Results are the same on every rank (outputs are gathered); rank 0 writes them, under the
  // names HF's example scripts give them (Trainer.save_metrics: <split>_results.json and
  // all_results.json), with the scripts' <split>_samples counts.
  nlohmann::json all = nlohmann::json::object();
  auto report = [&](const char* split, nlohmann::json r, const data::DataLoader& data) {
    r[cat(split, "_samples")] = data.num_examples();
    all.update(r);
    if (!main) return;
    write_json(a.output_dir, cat(split, "_results.json"), r);
    print_metrics(split, r);
  };
  if (train_data) {
    nlohmann::json r;
    try {
      r = trainer.train(*train_data, eval_data.get(), eval_task);
    } catch (const TrainingInterrupted&) {
      // Every rank stopped after the same step and the checkpoint is on disk: an orderly exit.
      dist::set_agreed_exit_status(kExitInterrupted);
      return kExitInterrupted;
    }
    trainer.save_model(a.output_dir);  // every rank: pipeline stages send their parameters to rank 0
    report("train", r, *train_data);
  }
  if (eval_data && (mode == Mode::Evaluate || a.do_eval)) {
    Trainer::PassResult r = trainer.predict(*eval_data, "eval", eval_task);
    if (train_data) trainer.log(r.metrics);  // as Trainer.evaluate logs: the model card's final results
    report("eval", r.metrics, *eval_data);
    // run_qa writes the evaluation's answers too: they are what a reader checks first.
    if (main && trainer.model().config().task == Task::QuestionAnswering) r.outputs->write_predictions(a.output_dir, "eval");
  }
  if (test_data) {
    Trainer::PassResult r = trainer.predict(*test_data, "predict", job.data.test.eval.get());
    const Task task = trainer.model().config().task;
    if (main && task != Task::MaskedLM && task != Task::CausalLM) {
      const std::string path = r.outputs->write_predictions(a.output_dir, "predict");
      std::printf("predictions for %zu examples -> %s\n", test_data->num_examples(), path.c_str());
    }
    if (job.data.test.labelled) report("predict", r.metrics, *test_data);
  }
  if (main) {
    write_json(a.output_dir, "all_results.json", all);
    if (train_data) write_model_card(a, trainer, *train_data, eval_data.get());
  }
  world.barrier("results written");
  return 0;
}

// The three commands take the same CONFIG and options; they differ in what they run.
Run define(CLI::App& cmd, Mode mode) {
  auto config = std::make_shared<std::string>();
  cmd.add_option("config", *config, "YAML file of option: value (or an HF example script's JSON config)")
      ->type_name("CONFIG.yaml");
  auto options = std::make_shared<TrainingOptions>(cmd);
  const std::string name = cmd.get_name();
  return [config, options, mode, name](const auto&) { return run(*config, options->overrides(), mode, name.c_str()); };
}

}  // namespace

Run define_train(CLI::App& cmd) { return define(cmd, Mode::Train); }
Run define_evaluate(CLI::App& cmd) { return define(cmd, Mode::Evaluate); }
Run define_predict(CLI::App& cmd) { return define(cmd, Mode::Predict); }

}  // namespace strata::cli
