// The progress line of a running job: elapsed time, attempt, step, ETA and the cost so far,
// from the job record and the training log of rank 0. On a terminal it is redrawn in place;
// otherwise a line is printed when the step has moved and at most every `interval` seconds.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "jobs/billing.h"
#include "jobs/job_plan.h"
#include "jobs/job_record.h"

namespace strata::jobs {

// Seconds the job's instances have run (the attempts, a running one up to `now`).
double run_seconds(const nlohmann::json& status, double now);
// The job's billing as of `now` (final once every attempt has ended).
Billing job_billing(const JobPlan& plan, const nlohmann::json& status, double now);

struct TrainingProgress {
  int64_t step = -1;   // the last step rank 0 logged, -1 before the first
  int64_t total = -1;  // "Total optimization steps", -1 before the Trainer printed it
};
TrainingProgress read_training_progress(const std::string& rank0_log);
// Whether rank 0 has logged that it waits for an interruption after `step` (kPausedLine).
bool paused_after_step(const std::string& rank0_log, int64_t step);
// Whether rank 0 has logged that it took a stop request ("stop requested (signal N)").
bool stop_taken(const std::string& rank0_log);

class ProgressLine {
 public:
  explicit ProgressLine(double interval_seconds = 10);
  // Reads the record and prints if due. Lines are prefixed with the time of day.
  void update(const JobPlan& plan, const JobRecord& record, double now);
  // Ends a line drawn in place, before other output.
  void clear();
  // Prints "HH:MM:SS text" above the progress line (now, unless given).
  void say(const std::string& text, const std::string& time_of_day = "");
  // Says each event of the record not said yet: the runner's lines are its events.
  void echo_events(const JobRecord& record);

 private:
  bool tty_;
  double interval_;
  double last_print_ = 0;
  int64_t last_step_ = -2;
  int attempt_ = 0;
  double first_time_ = 0;  // first (time, step) seen in this attempt: the rate behind the ETA
  int64_t first_step_ = -1;
  bool drawn_ = false;
  size_t events_read_ = 0;  // bytes of events.jsonl echoed
};

// "03:12:54" (UTC), the prefix of the runner's lines.
std::string clock_time(double epoch_seconds);
// "1:02:03" or "02:03".
std::string hms(double seconds);

}  // namespace strata::jobs
