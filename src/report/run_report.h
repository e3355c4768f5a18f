// The HTML report of one training run (an output_dir with trainer_log.jsonl) or one job (a job
// directory: its trained model's log, its rank logs and its billing): loss and learning rate
// over steps, eval metrics over steps, throughput over time (from the TensorBoard event files'
// wall times), the memory plan against each rank's measured peak, and the billing.
#pragma once
#include <string>

namespace strata::report {

std::string run_report_html(const std::string& dir);

}  // namespace strata::report
