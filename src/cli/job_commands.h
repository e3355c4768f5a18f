// The `strata job` subcommands that look at or act on an existing job (cmd_job_inspect.cpp),
// declared on the `job` command with what runs each.
#pragma once
#include <map>

#include "cli/commands.h"

namespace strata::cli {

void define_job_inspection(CLI::App& job, std::map<const CLI::App*, Run>& runs);

}  // namespace strata::cli
