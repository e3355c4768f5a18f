#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

#include "util/console.h"

namespace strata {

namespace {

std::string hms(double s) {
  const int t = static_cast<int>(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02d:%02d", t / 60, t % 60);
  return buf;
}
}  // namespace

Progress::Progress(int64_t total, bool disabled)
    : total_(total), tty_(!disabled && isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}

void Progress::update(int64_t done, const std::string& postfix) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (first_ < 0) {
    first_ = done;
    start_ = now;
  }
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = done > first_ && secs > 0 ? (done - first_) / secs : 0.0;
  const int width = 30;
  const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : 0;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  const std::string eta = rate > 0 ? hms((total_ - done) / rate) : "?";
  char head[160];
  std::snprintf(head, sizeof head, "%3d%%|%s| %lld/%lld [%s<%s, %.2fit/s] ", total_ ? static_cast<int>(100 * done / total_) : 0,
                bar.c_str(), static_cast<long long>(done), static_cast<long long>(total_), hms(secs).c_str(),
                eta.c_str(), rate);
  console_status(head + postfix);
}

void Progress::finish() {
  if (tty_) console_status_end();
}

void progress_message(const std::string& line) { console_message(line); }

}  // namespace strata
