// The `strata job` subcommands that look at or act on an existing job (cmd_job_inspect.cpp).
#pragma once

namespace strata::cli {

int job_status(int argc, char** argv);
int job_logs(int argc, char** argv);
int job_stop(int argc, char** argv);
int job_interrupt(int argc, char** argv);
int job_list(int argc, char** argv);

}  // namespace strata::cli
