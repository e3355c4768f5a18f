// The `strata` command line (CLI11): help on every command, --version, HF-style
// `--key value` overrides equal to `--set key=value`, did-you-mean errors, bash completion.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "cli/training_options.h"
#include "test_util_fs.h"

namespace strata {
namespace {

using test::run_strata;
using test::ScratchDir;

const char* kBase = "model_name_or_path: m\noutput_dir: o\ntrain_file: t.csv\nvalidation_file: v.csv\n";

// The arguments a `strata train` command line gives, parsed in-process by the command's own
// option declarations.
TrainingArguments parse_cli(std::vector<std::string> argv) {
  CLI::App cmd;
  cli::TrainingOptions options(cmd);
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  cmd.parse(argv);
  EXPECT_TRUE(cmd.remaining().empty());
  return parse_training_arguments_with(kBase, "job.yaml", options.overrides());
}

std::string as_json(const TrainingArguments& a) { return training_arguments_json(a); }

TEST(Cli, HelpOnEveryCommand) {
  const ScratchDir dir;
  const auto top = run_strata({"--help"}, dir);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // What each command's help must show: its usage and one of its own options.
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"train", "--per_device_train_batch_size"}, {"evaluate", "--per_device_eval_batch_size"},
      {"predict", "--predict_output_format"},     {"generate", "--max-new-tokens"},
      {"launch", "--hostfile"},                   {"step", "--precision"},
      {"info", "--zero-stage"},                   {"tokenize", "--pad-to-multiple-of"},
      {"completion", "shell"},                    {"job", "interrupt"}};
  for (const auto& [name, option] : commands) {
    EXPECT_NE(top.out.find(name), std::string::npos) << name << " not in strata --help:\n" << top.out;
    const auto r = run_strata({name, "--help"}, dir);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find("strata " + name), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(option), std::string::npos) << option << " not in strata " << name << " --help:\n" << r.out;
  }
  // train's help is the option table: type, default and the one-line help of each field.
  const auto train = run_strata({"train", "--help"}, dir);
  for (const char* part : {"--learning_rate FLOAT=5e-05", "peak learning rate", "--evaluation_strategy",
                           "--do_eval BOOL=true", "--report_to LIST", "--push_to_hub", "--set KEY=VALUE"})
    EXPECT_NE(train.out.find(part), std::string::npos) << part << " not in:\n" << train.out;
}

TEST(Cli, VersionNamesTheProjectVersion) {
  const ScratchDir dir;
  const auto r = run_strata({"--version"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("strata 0.", 0), 0u) << r.out;
}

TEST(Cli, EveryTrainingOptionHasHelpAndAType) {
  const std::vector<TrainingOptionDoc> docs = training_option_docs();
  EXPECT_GT(docs.size(), 100u);
  for (const TrainingOptionDoc& d : docs) {
    EXPECT_FALSE(d.help.empty()) << d.name;
    EXPECT_TRUE(d.type == "TEXT" || d.type == "INT" || d.type == "FLOAT" || d.type == "BOOL" || d.type == "LIST")
        << d.name << ": " << d.type;
  }
}

TEST(Cli, KeyValueEqualsSet) {
  const std::vector<std::string> set = {"--set", "learning_rate=1e-4", "--set", "do_eval=false",
                                        "--set", "eval_strategy=epoch", "--set", "report_to=[csv, tensorboard]",
                                        "--set", "pipeline_partition=[2, 2]", "--set", "pipeline_parallel_degree=2",
                                        "--set", "run_name=a b"};
  const std::string want = as_json(parse_cli(set));
  EXPECT_EQ(as_json(parse_cli({"--learning_rate", "1e-4", "--do_eval", "false", "--evaluation_strategy", "epoch",
                               "--report_to", "csv", "tensorboard", "--pipeline_partition", "2", "2",
                               "--pipeline_parallel_degree", "2", "--run_name", "a b"})),
            want);
  EXPECT_EQ(as_json(parse_cli({"--learning_rate=1e-4", "--do_eval=false", "--eval_strategy=epoch",
                               "--report_to=csv", "--report_to=tensorboard", "--pipeline_partition", "2", "2",
                               "--pipeline_parallel_degree=2", "--run_name=a b"})),
            want);
  const TrainingArguments a = parse_cli({"--learning_rate", "1e-4"});
  EXPECT_EQ(a.learning_rate, 1e-4);
  EXPECT_NE(as_json(a), want);  // the comparison can fail
}

TEST(Cli, BoolsBareOrWithAValueAndLaterValuesWin) {
  EXPECT_TRUE(parse_cli({"--overwrite_output_dir"}).overwrite_output_dir);
  EXPECT_TRUE(parse_cli({"--overwrite_output_dir", "true"}).overwrite_output_dir);
  EXPECT_FALSE(parse_cli({"--overwrite_output_dir", "false"}).overwrite_output_dir);
  EXPECT_FALSE(parse_cli({"--overwrite_output_dir", "--overwrite_output_dir=false"}).overwrite_output_dir);
  EXPECT_EQ(parse_cli({"--set", "seed=1", "--seed", "2"}).seed, 2);
  EXPECT_EQ(parse_cli({"--seed", "2", "--set", "seed=1"}).seed, 1);
  EXPECT_EQ(parse_cli({"--max_steps", "-1", "--num_train_epochs", "2"}).max_steps, -1);
  // HF arguments strata has no option for are accepted as in a file, and named in the warning.
  const TrainingArguments hub = parse_cli({"--push_to_hub"});
  EXPECT_EQ(hub.ignored_options, std::vector<std::string>{"push_to_hub"});
}

TEST(Cli, BadValuesNameTheOption) {
  try {
    parse_cli({"--learning_rate", "fast"});
    FAIL() << "accepted learning_rate fast";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--learning_rate: option 'learning_rate' expects a number, got 'fast'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_cli({"--do_eval", "maybe"}), Error);
  EXPECT_THROW(parse_cli({"--set", "learning_rate"}), Error);  // no '='
  EXPECT_THROW(parse_cli({"--adafactor"}), Error);             // refused, as in a file
}

TEST(Cli, UnknownOptionsAndCommandsSuggestTheNearest) {
  const ScratchDir dir;
  auto expect = [&](const std::vector<std::string>& args, const std::string& part) {
    const auto r = run_strata(args, dir);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " not in: " << r.err;
  };
  expect({"train", "job.yaml", "--lerning_rate", "1e-3"},
         "strata train: unknown option --lerning_rate; did you mean '--learning_rate'?");
  expect({"train", "job.yaml", "--lerning_rate=1e-3"}, "did you mean '--learning_rate'?");
  expect({"info", "some/dir", "--bach", "4"}, "unknown option --bach; did you mean '--batch'?");
  expect({"trian", "job.yaml"}, "strata: unknown command 'trian'; did you mean 'train'?");
  expect({"launch", "--dryrun", "--", "strata", "train", "x.yaml"}, "did you mean '--dry-run'?");
  expect({"generate", "dir", "--prompt"}, "--prompt");  // a value is missing
  expect({"completion", "fish"}, "no completion for shell 'fish'");
  expect({"job", "run", "job.yaml", "--dryrun"}, "strata job run: unknown option --dryrun; did you mean '--dry-run'?");
  expect({"job", "stats", "j1"}, "strata job: unknown command 'stats'; did you mean 'status'?");
  const auto none = run_strata({}, dir);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("train"), std::string::npos) << none.err;
}

TEST(Cli, LaunchPassesTheCommandThrough) {
  const ScratchDir dir;
  const auto r = run_strata({"launch", "-n", "2", "--mca", "btl", "self,tcp", "--dry-run", "--", "strata", "train",
                             "job.yaml", "--learning_rate", "1e-4"},
                            dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-np 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--mca btl self,tcp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("strata train job.yaml --learning_rate 1e-4"), std::string::npos) << r.out;
}

// The completion script, sourced in bash, completes commands, options and nested paths.
TEST(Cli, BashCompletionFromTheOptionTables) {
  const ScratchDir dir;
  const auto script = run_strata({"completion", "bash"}, dir);
  ASSERT_EQ(script.exit_code, 0) << script.err;
  test::write_text(dir.path("strata.bash"), script.out);
  auto complete = [&](const std::string& words, int cword) {
    test::write_text(dir.path("t.sh"), "source " + dir.path("strata.bash") + "\nCOMP_WORDS=(" + words +
                                           ")\nCOMP_CWORD=" + std::to_string(cword) +
                                           "\n_strata\necho \"${COMPREPLY[*]}\" > " + dir.path("reply.txt") + "\n");
    EXPECT_EQ(std::system(("bash " + dir.path("t.sh")).c_str()), 0);
    std::string reply = test::read_text(dir.path("reply.txt"));
    if (!reply.empty() && reply.back() == '\n') reply.pop_back();
    return reply;
  };
  EXPECT_EQ(complete("strata tr", 1), "train");
  EXPECT_EQ(complete("strata train job.yaml --learning_r", 2 + 1), "--learning_rate");
  EXPECT_EQ(complete("strata info --zero", 2), "--zero-stage");
  EXPECT_EQ(complete("strata train --evaluation_s", 2), "--evaluation_strategy");
  EXPECT_EQ(complete("strata completion --he", 2), "--help");
  EXPECT_EQ(complete("strata job ru", 2), "run");
  EXPECT_EQ(complete("strata job run --dry", 3), "--dry-run");
}

}  // namespace
}  // namespace strata
