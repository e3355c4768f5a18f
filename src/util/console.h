// Lines for the person at the terminal, which may be showing a status line (the training
// progress bar, redrawn in place on stderr). A message or warning clears the status line,
// prints above it and draws it again, as tqdm.write does, so a warning never breaks the bar.
// Any room may print through here; any thread may call it.
#pragma once
#include <string>

namespace strata {

// Draws `line` as the status line on stderr, replacing the one shown.
void console_status(const std::string& line);
// Leaves the status line where it is and moves below it; later lines print normally.
void console_status_end();
// A line on stdout (log entries, notices).
void console_message(const std::string& line);
// "warning: <text>" on stderr.
void console_warning(const std::string& text);

}  // namespace strata
