// `strata <command> [options]`: the commands of commands.h on one CLI11 parser. Help, the
// version and the errors of the command line (an unknown command or option, with the nearest
// valid name) are handled here, once for every command.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "cli/commands.h"
#include "util/error.h"
#include "util/nearest_name.h"

namespace {

using namespace strata::cli;

struct Command {
  const char* name;
  const char* summary;
  Run (*define)(CLI::App&);
};
constexpr Command kCommands[] = {
    {"train", "fine-tune or pretrain a model from a YAML file of HF TrainingArguments names (docs/training.md)",
     define_train},
    {"evaluate", "loss and metrics of a trained model on validation_file", define_evaluate},
    {"predict", "predictions with label names and probabilities for test_file", define_predict},
    {"generate", "text from a causal LM (GPT-2) or a sequence-to-sequence model (BART, T5): greedy, sampled or beam search (docs/generate.md)",
     define_generate},
    {"launch", "run a command as a data-parallel job through mpirun (docs/distributed.md)", define_launch},
    {"job", "training jobs: an Estimator-shaped spec run locally, over a hostfile or on Slurm (docs/jobs.md)",
     define_job},
    {"study", "scaling and cost studies: a grid of jobs, one table (docs/studies.md)", define_study},
    {"plan", "memory, step time, total time and cost of a job on each candidate layout, best first (docs/studies.md)",
     define_plan},
    {"report", "one self-contained HTML report of a study, a job or a training run (docs/reports.md)", define_report},
    {"step", "one forward + backward (and optionally one optimizer step) on a batch, written to .safetensors",
     define_step},
    {"info", "architecture, parameter count and the training memory per rank of a layout (docs/parallelism.md)",
     define_info},
    {"tokenize", "JSONL texts to JSONL encodings with HF tokenizers' exact output (docs/tokenizers.md)",
     define_tokenize},
    {"completion", "print the shell completion script: source <(strata completion bash)", define_completion},
};

// Every long option name of `cmd`, for "did you mean".
std::vector<std::string> option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  for (const CLI::App* sub : cmd.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// The innermost command selected (strata job run: run).
CLI::App* deepest(CLI::App* cmd) {
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  return cmd;
}

// A mistake in the command line itself (exit 2), as opposed to in what it asks for (exit 1).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Words CLI11 did not take (commands allow extras so that this message, not CLI11's, names them).
void check_leftovers(const CLI::App& cmd) {
  const std::vector<std::string> rest = cmd.remaining();
  if (rest.empty()) return;
  // A prefix command (launch) keeps the words after its options: a command, which never starts with '-'.
  if (cmd.get_prefix_command() && rest.front()[0] != '-') return;
  std::string where = "strata";  // and the command path: strata job run
  for (const CLI::App* c = &cmd; c->get_parent(); c = c->get_parent()) where.insert(6, " " + c->get_name());
  for (const std::string& word : rest) {
    if (word.size() < 2 || word[0] != '-') continue;
    const std::string name = word.substr(0, word.find('='));
    throw UsageError(strata::cat(where, ": unknown option ", name, strata::did_you_mean(name, option_names(cmd)),
                                 " (see ", where, " --help)"));
  }
  if (!cmd.get_subcommands({}).empty())
    throw UsageError(strata::cat(where, ": unknown command '", rest.front(), "'",
                                 strata::did_you_mean(rest.front(), option_names(cmd)), " (see ", where, " --help)"));
  throw UsageError(strata::cat(where, ": unexpected argument '", rest.front(), "' (see ", where, " --help)"));
}

// The command `words` select (reversed, as CLI11 takes them), checked for leftovers. Null
// when there is none: then strata's help was printed.
CLI::App* parse_command_line(CLI::App& app, std::vector<std::string> words, const std::vector<std::string>& names,
                             bool trailing) {
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) throw;  // --help, --version
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    // An unknown option explains a missing one better than the other way round.
    if (!parsed.empty()) check_leftovers(*deepest(parsed.front()));
    throw UsageError(strata::cat("strata", parsed.empty() ? "" : " " + parsed.front()->get_name(), ": ", e.what()));
  }
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  if (parsed.empty()) {
    const std::vector<std::string> rest = app.remaining();
    if (rest.empty()) return nullptr;
    if (rest.front().rfind("-", 0) == 0) check_leftovers(app);
    throw UsageError(strata::cat("strata: unknown command '", rest.front(), "'", strata::did_you_mean(rest.front(), names),
                                 " (see strata --help)"));
  }
  CLI::App* cmd = parsed.front();
  check_leftovers(*deepest(cmd));
  if (trailing && !cmd->get_prefix_command())
    throw UsageError(strata::cat("strata ", cmd->get_name(), ": unexpected arguments after -- (see strata ",
                                 cmd->get_name(), " --help)"));
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("strata: train Hugging Face-style transformers on CPUs, from one process to many machines", "strata");
  app.set_version_flag("--version", STRATA_VERSION);
  app.allow_extras();
  std::map<const CLI::App*, Run> runs;
  std::vector<std::string> names;
  for (const Command& c : kCommands) {
    CLI::App* cmd = app.add_subcommand(c.name, c.summary);
    cmd->allow_extras();
    runs[cmd] = c.define(*cmd);
    names.emplace_back(c.name);
  }
  // The words after the first `--` are a command for launch to run; split off before CLI11
  // parses, which would otherwise read a word such as "train" there as strata's own command.
  std::vector<std::string> words(argv + 1, argv + argc), trailing;
  if (const auto dashes = std::find(words.begin(), words.end(), "--"); dashes != words.end()) {
    trailing.assign(dashes + 1, words.end());
    words.erase(dashes, words.end());
  }
  std::reverse(words.begin(), words.end());  // CLI11 takes them last first
  CLI::App* cmd = nullptr;
  try {
    cmd = parse_command_line(app, words, names, !trailing.empty());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // --help, --version
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (!cmd) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  try {
    return runs.at(cmd)(trailing);
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // The environment's failure, not strata's (a full disk, a read-only or vanished
    // directory): its message names the path and the reason.
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 3;
  }
}
