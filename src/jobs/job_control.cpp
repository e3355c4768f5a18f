#include "jobs/job_control.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "io/files.h"
#include "jobs/attempt.h"
#include "jobs/slurm.h"
#include "util/error.h"

namespace strata::jobs {

namespace fs = std::filesystem;

JobPlan load_plan(const JobRecord& rec) { return JobPlan::from_json(io::read_json_file(rec.path("plan.json"))); }

JobRecord find_job(const std::string& name_or_dir, const std::string& output_path) {
  const JobRecord as_dir(name_or_dir);
  if (as_dir.exists()) return as_dir;
  const JobRecord named((fs::path(output_path) / name_or_dir).string());
  if (named.exists()) return named;
  fail("no job '", name_or_dir, "' under ", output_path, " (strata job list --output-path DIR shows the jobs there)");
}

bool job_is_alive(const JobRecord& rec) {
  const nlohmann::json s = rec.status();
  if (s.contains("slurm_job_id")) return !slurm_state(s["slurm_job_id"]).finished();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto& runner = s.value("runner", nlohmann::json::object());
  if (runner.value("host", "") != host) return true;  // another host's runner: assume it lives
  return ::kill(runner.value("pid", 0), 0) == 0;
}

std::string stop_job(const JobRecord& rec) {
  const auto cur = rec.current();
  if (cur && is_final(*cur)) fail("job ", fs::path(rec.dir()).filename().string(), " has ended (", status_name(*cur), ")");
  rec.request("stop");
  rec.event("stop requested (strata job stop)");
  const nlohmann::json s = rec.status();
  if (s.contains("slurm_job_id")) {
    const std::string id = s["slurm_job_id"];
    if (slurm_state(id).state == "PENDING") {
      slurm_cancel(id);
      finish_job(load_plan(rec), rec, JobStatus::Stopped, "stopped while pending in Slurm");
      return cat("Slurm job ", id, " was pending: cancelled; the job is Stopped");
    }
  }
  return "stop requested: the ranks finish their step, write a checkpoint and exit; the job ends Stopped";
}

std::string interrupt_job(const JobRecord& rec) {
  const JobPlan p = load_plan(rec);
  if (!p.spot) fail("job ", p.name, " runs on on-demand capacity; only spot capacity is interrupted");
  const auto cur = rec.current();
  if (cur != JobStatus::Training)
    fail("job ", p.name, " is ", cur ? status_name(*cur) : "not started", "; only a training job can be interrupted");
  const nlohmann::json s = rec.status();
  if (s.contains("slurm_job_id")) {
    const std::string id = s["slurm_job_id"];
    slurm_requeue(id);
    rec.event(cat("spot interruption (strata job interrupt): scontrol requeue ", id));
    return cat("Slurm job ", id, " requeued: its ranks checkpoint and it runs again from the newest checkpoint");
  }
  rec.request("interrupt");
  return "interruption requested: the ranks checkpoint, the runner waits for capacity and resumes";
}

}  // namespace strata::jobs
