#include "util/console.h"

#include <cstdio>
#include <mutex>

namespace strata {

namespace {
std::mutex g_mutex;
std::string g_status;  // the status line shown now; empty: none

// "\r" + erase-line: the status line is gone and the cursor at the start of its line.
void clear_status() {
  if (!g_status.empty()) std::fputs("\r\033[K", stderr);
}

void redraw_status() {
  if (g_status.empty()) return;
  std::fprintf(stderr, "\r%s\033[K", g_status.c_str());
  std::fflush(stderr);
}
}  // namespace

void console_status(const std::string& line) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_status = line;
  redraw_status();
}

void console_status_end() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_status.empty()) std::fputc('\n', stderr);
  g_status.clear();
}

void console_message(const std::string& line) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  clear_status();
  std::fflush(stderr);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);  // before the bar is drawn again on the other stream
  redraw_status();
}

void console_warning(const std::string& text) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  clear_status();
  std::fprintf(stderr, "warning: %s\n", text.c_str());
  std::fflush(stderr);
  redraw_status();
}

}  // namespace strata
