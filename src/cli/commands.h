// The subcommands of the `strata` executable. Each declares its options on a CLI11 command
// (so `strata <command> --help` and the shell completion come from the same declaration) and
// returns what runs it once the command line is parsed. Running returns the exit code; user
// errors throw strata::Error (main prints it and exits 1). A new command is one entry in
// main.cpp's table and one define_* function.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strata::cli {

// `trailing`: the words after `--`; only a prefix command (launch) is given any.
using Run = std::function<int(const std::vector<std::string>& trailing)>;

Run define_train(CLI::App& cmd);
Run define_evaluate(CLI::App& cmd);
Run define_predict(CLI::App& cmd);
Run define_step(CLI::App& cmd);
Run define_info(CLI::App& cmd);
Run define_generate(CLI::App& cmd);
Run define_tokenize(CLI::App& cmd);
Run define_launch(CLI::App& cmd);
Run define_completion(CLI::App& cmd);
Run define_job(CLI::App& cmd);
Run define_study(CLI::App& cmd);
Run define_report(CLI::App& cmd);
Run define_plan(CLI::App& cmd);

}  // namespace strata::cli
