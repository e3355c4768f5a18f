// Training progress as the HF Trainer shows it: on a terminal, one bar redrawn in place with
// rate and ETA; otherwise nothing but the log lines (one plain line per logging step).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace strata {

class Progress {
 public:
  Progress(int64_t total, bool disabled);
  void update(int64_t done, const std::string& postfix);
  void finish();

 private:
  int64_t total_;
  bool tty_;
  int64_t first_ = -1;
  std::chrono::steady_clock::time_point start_;
};

// A message line (log entry, notice) printed above the bar (util/console.h).
void progress_message(const std::string& line);

}  // namespace strata
