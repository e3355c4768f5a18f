// A job's directory, <output_path>/<job name>/, and the files that record it (docs/jobs.md):
//   spec.yaml, training.yaml, plan.json   what was asked, the training config it runs, the plan
//   status.json                           the status and the figures so far (rewritten atomically)
//   events.jsonl                          append-only, one timestamped event per line
//   logs/attempt-<k>/rank-<r>.log         every rank's output, per attempt (launcher.log: mpirun's)
//   model/                                the trained model once the job has completed
//   requests/stop, requests/interrupt     left by `strata job stop|interrupt` for the runner
// Several processes write here (the runner, a Slurm batch step, `strata job stop`): status
// updates hold a lock on the directory, events are single appends.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::jobs {

// SageMaker's secondary statuses of a training job.
enum class JobStatus {
  Starting,
  Training,
  Interrupted,
  Uploading,
  Completed,
  Failed,
  Stopped,
  MaxRuntimeExceeded,
  MaxWaitTimeExceeded
};
const char* status_name(JobStatus s);
std::optional<JobStatus> parse_status(const std::string& name);
bool is_final(JobStatus s);  // Completed, Failed, Stopped, MaxRuntimeExceeded, MaxWaitTimeExceeded

double now_seconds();                    // since the epoch, to the microsecond
std::string iso_time(double epoch_secs);  // 2026-11-23T03:12:54.123Z

// Job names as SageMaker allows them: letters, digits and hyphens, at most 63, starting and
// ending with a letter or digit.
void check_job_name(const std::string& name, const std::string& where);

class JobRecord {
 public:
  explicit JobRecord(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string path(const std::string& rel) const;
  std::string attempt_log_dir(int attempt) const;
  bool exists() const;

  nlohmann::json status() const;  // status.json, {} before the first update
  std::optional<JobStatus> current() const;
  // Changes status.json under the directory's lock: `change` edits the current content.
  void update(const std::function<void(nlohmann::json&)>& change) const;
  // Sets "status" (and "message" if given), and logs the change as an event.
  void set_status(JobStatus s, const std::string& message = "") const;
  // Appends {"time", "event", ...fields} to events.jsonl.
  void event(const std::string& message, nlohmann::json fields = nlohmann::json::object()) const;
  // The events from byte `*offset` of events.jsonl on (all of them from 0); moves *offset
  // past what was read, so a follower reads each event once.
  std::vector<nlohmann::json> events(size_t* offset = nullptr) const;

  void request(const std::string& what) const;  // "stop" or "interrupt"
  bool has_request(const std::string& what) const;
  bool take_request(const std::string& what) const;  // true (and removes it) if present

 private:
  std::string dir_;
};

// The job directories under output_path, oldest first.
std::vector<std::string> list_job_dirs(const std::string& output_path);

}  // namespace strata::jobs
