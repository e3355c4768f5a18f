// `strata train | evaluate | predict CONFIG.yaml [--key value ...] [--set key=value ...]`: the Trainer as a
// command, configured like HF's run_glue.py / run_mlm.py. Everything the configuration can
// get wrong is checked before any work starts; outputs go to output_dir as HF writes them.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/trainer_session.h"
#include "cli/training_options.h"
#include "core/exit_status.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "io/python_json.h"
#include "train/model_card.h"
#include "train/parallel_layout.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

void write_json(const std::string& dir, const std::string& name, const nlohmann::json& j) {
  io::write_file_atomic((fs::path(dir) / name).string(), io::python_json(j) + "\n");
}

void print_metrics(const std::string& title, const nlohmann::json& m) {
  std::printf("***** %s metrics *****\n", title.c_str());
  for (const auto& [k, v] : m.items()) std::printf("  %-28s = %s\n", k.c_str(), v.dump().c_str());
}

int run_job(TrainerSession& session, Mode mode);

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
  check_parallel_layout(a, model_config(a), a.model_name_or_path + "/config.json", make_rank_grid(a, layout), layout);
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
  Ranks ranks = join_ranks(a.ddp_timeout);
  try {
    TrainerSession session(a, mode, ranks);
    return run_job(session, mode);
  } catch (const Error& e) {
    if (ranks.world->size() == 1) throw;
    ranks.world->abort(cat("strata: rank ", ranks.world->rank(), ": error: ", e.what()), 1);
    return 1;  // abort does not return
  }
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
  // run_summarization / run_translation tag their models by the data's kind
  if (trainer.model().config().task == Task::Seq2SeqLM) info.task_tag = a.source_lang.empty() ? "summarization" : "translation";
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

int run_job(TrainerSession& session, Mode mode) {
  const TrainingArguments& a = session.args();
  const bool main = session.is_main();
  Trainer& trainer = session.trainer();
  data::DataLoader* const train_data = session.train_data();
  data::DataLoader* const eval_data = session.eval_data();
  data::DataLoader* const test_data = session.test_data();
  const EvalTask* eval_task = session.eval_task();

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
      r = trainer.train(*train_data, eval_data, eval_task);
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
    Trainer::PassResult r = trainer.predict(*test_data, "predict", session.test_task());
    const Task task = trainer.model().config().task;
    // A seq2seq model's predictions are generated (run_summarization writes them only then).
    const bool writes = task == Task::Seq2SeqLM ? a.predict_with_generate : task != Task::MaskedLM && task != Task::CausalLM;
    if (main && writes) {
      const std::string path = r.outputs->write_predictions(a.output_dir, "predict");
      std::printf("predictions for %zu examples -> %s\n", test_data->num_examples(), path.c_str());
    }
    if (session.test_labelled()) report("predict", r.metrics, *test_data);
  }
  if (main) {
    write_json(a.output_dir, "all_results.json", all);
    if (train_data) write_model_card(a, trainer, *train_data, eval_data);
  }
  session.world().barrier("results written");
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
