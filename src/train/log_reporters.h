// Where the Trainer's logged values go besides trainer_log.jsonl: the report_to integrations
// strata has (HF's TrainingArguments.report_to), written by the main process only.
//  - tensorboard: TensorBoard event files (tensorboard_log.h) under logging_dir, by default
//    output_dir/runs/<time>_<host> as HF's;
//  - csv: trainer_log.csv beside trainer_log.jsonl, one row per log entry (csv_log.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/training_args.h"

namespace strata {

class LogReporter {
 public:
  virtual ~LogReporter() = default;
  // `entry` (with its "step") was just appended to `history`, the run's whole log so far
  // (after a resume, the checkpoint's log first).
  virtual void log(const nlohmann::json& entry, const std::vector<nlohmann::json>& history) = 0;
};

// The report_to names strata has; "all" means every one of them, as HF's "all" means every
// integration installed.
const std::vector<std::string>& supported_report_to();

// The reporters `a.report_to` asks for; `log_dir` is where trainer_log.jsonl goes.
std::vector<std::unique_ptr<LogReporter>> make_log_reporters(const TrainingArguments& a, const std::string& log_dir);

}  // namespace strata
