// What one run of a cell (one job) measured, read back from its job record: the status and
// billing (status.json), the trainer's train and eval results (model/*_results.json) and each
// rank's peak RSS (the "memory measured" line of the last attempt's rank logs).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::study {

struct RunResult {
  std::string job_name;
  std::string status;   // the job's final status; "" when it never ran
  std::string message;  // why it failed, when it did
  double train_runtime = 0;        // seconds, the trainer's train_runtime
  double samples_per_second = 0;   // train_samples_per_second
  double training_seconds = 0;     // the job's, waits included
  double billable_seconds = 0;
  double cost_usd = 0;
  double peak_rss_mib = 0;  // the largest rank's
  std::map<std::string, double> eval;  // eval_f1, eval_accuracy, eval_loss, ...

  bool completed() const { return status == "Completed"; }
  nlohmann::json to_json() const;
  static RunResult from_json(const nlohmann::json& j);
};

// The run recorded in job_dir; a job that has not completed gives its status and message only.
RunResult read_run(const std::string& job_dir);

// What each rank logged at the end of training ("memory measured, rank R: peak RSS X MiB; ...
// predicted peak Y MiB") in the rank logs of log_dir.
struct RankMemory {
  int rank = 0;
  double peak_rss_mib = 0, predicted_peak_mib = 0;
};
std::vector<RankMemory> rank_memory(const std::string& log_dir);

}  // namespace strata::study
