// Subcommands of the `strata` executable. Each returns the process exit code and reports
// user errors by throwing strata::Error (main prints it and exits 1).
#pragma once

namespace strata::cli {

int cmd_step(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_train(int argc, char** argv);
int cmd_evaluate(int argc, char** argv);
int cmd_predict(int argc, char** argv);
int cmd_launch(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_job(int argc, char** argv);

}  // namespace strata::cli
