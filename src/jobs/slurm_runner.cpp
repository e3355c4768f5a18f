#include "jobs/slurm_runner.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/exit_status.h"
#include "io/files.h"
#include "jobs/attempt.h"
#include "jobs/job_progress.h"
#include "jobs/slurm.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::jobs {

namespace {

// srun starts the ranks on the allocation's nodes, each writing logs/attempt-<k>/rank-<r>.log.
// Debian's Open MPI wires up through PMIx.
AttemptLaunch srun_launch(const JobPlan& p, const JobRecord& rec, int attempt, const std::string& resume) {
  const std::string log = rec.attempt_log_dir(attempt) + "/rank-%t.log";
  AttemptLaunch l;
  l.argv = {"srun", p.world_size() > 1 ? "--mpi=pmix" : "--mpi=none", "--output=" + log, "--error=" + log};
  for (const std::string& a : rank_command(p, resume)) l.argv.push_back(a);
  l.env = p.environment;
  l.log_path = rec.attempt_log_dir(attempt) + "/launcher.log";
  l.stop_signal = SIGUSR1;  // srun forwards it to every task
  return l;
}

}  // namespace

int run_slurm_step(const JobPlan& p, const JobRecord& rec) {
  const SignalFlag slurm_term({SIGTERM});
  const char* id_env = std::getenv("SLURM_JOB_ID");
  if (!id_env) fail("strata job slurm-step runs inside a Slurm batch job (no SLURM_JOB_ID); use strata job run");
  const std::string id = id_env;
  if (const auto cur = rec.current(); cur && is_final(*cur)) {
    rec.event(cat("Slurm started job ", id, " again, but the job has ended (", status_name(*cur), "): nothing to do"));
    return 0;
  }
  nlohmann::json st = rec.status();
  const int attempt = static_cast<int>(st.value("attempts", nlohmann::json::array()).size()) + 1;
  const double now = now_seconds();
  if (attempt > 1)
    rec.event(cat("Slurm started job ", id, " again: spot capacity available after ",
                  static_cast<int>(now - st.value("interrupted_at", now)), " s"));
  std::string message;
  JobStatus end;
  const double remaining = p.max_run - run_seconds(st, now);
  if (p.max_wait > 0 && now - st.value("created_epoch", now) >= p.max_wait) {
    end = JobStatus::MaxWaitTimeExceeded;
    message = "max_wait reached before the job could start again";
  } else if (remaining <= 0) {
    end = JobStatus::MaxRuntimeExceeded;
    message = "max_run used up by earlier attempts";
  } else {
    // max_run counts every attempt's time; a requeued job would get its full --time again.
    try {
      slurm_set_time_limit(id, remaining + p.grace);
    } catch (const Error& e) {
      rec.event(cat("could not lower the Slurm time limit: ", e.what()));
    }
    AttemptHooks hooks;
    hooks.interrupt = [&] { slurm_requeue(id); };
    hooks.external_stop = [&] { return slurm_term.count() > 0; };
    const AttemptResult r = run_attempt(
        p, rec, attempt, [&](const JobPlan& ap, const std::string& resume) { return srun_launch(ap, rec, attempt, resume); }, hooks);
    end = attempt_outcome(r);
    if (end == JobStatus::Interrupted) {
      rec.update([](nlohmann::json& s) { s["interrupted_at"] = now_seconds(); });
      rec.set_status(JobStatus::Interrupted,
                     cat("attempt ", attempt, " interrupted; Slurm requeues the job, which resumes from the newest checkpoint"));
      return kExitInterrupted;
    }
    if (end == JobStatus::Failed) {
      const std::string err = first_error_line(rec.attempt_log_dir(attempt));
      message = cat("attempt ", attempt, " exited with status ", r.exit_status, err.empty() ? "" : "; " + err);
    }
  }
  std::printf("%s", finish_job(p, rec, end, message).c_str());
  return end == JobStatus::Completed ? 0 : 1;
}

JobStatus run_slurm_job(const JobPlan& p, const JobRecord& rec) {
  const SignalFlag ctrl_c({SIGINT});
  const std::string script = rec.path("job.sbatch");
  io::write_file_atomic(script, slurm_batch_script(p));
  const std::string id = slurm_submit(script);
  rec.update([&](nlohmann::json& s) { s["slurm_job_id"] = id; });
  rec.event(cat("submitted to Slurm as job ", id, " (", script, ")"), {{"slurm_job_id", id}});

  ProgressLine line;
  std::string last_state;
  for (;;) {
    line.echo_events(rec);
    const double now = now_seconds();
    const nlohmann::json st = rec.status();
    const auto cur = parse_status(st.value("status", ""));
    if (cur && is_final(*cur)) break;
    if (ctrl_c.count() > 0) {
      line.clear();
      std::printf("the job goes on in Slurm (job %s): strata job status %s, strata job stop %s\n", id.c_str(),
                  p.name.c_str(), p.name.c_str());
      return cur.value_or(JobStatus::Starting);
    }
    const SlurmState ss = slurm_state(id);
    if (ss.state + ss.reason != last_state) {
      rec.event(cat("Slurm job ", id, ": ", ss.state.empty() ? "unknown to Slurm" : ss.state,
                    ss.reason.empty() || ss.reason == "None" ? "" : " (" + ss.reason + ")"));
      last_state = ss.state + ss.reason;
      continue;
    }
    if (ss.state == "PENDING") {
      if (p.max_wait > 0 && now - st.value("created_epoch", now) >= p.max_wait) {
        slurm_cancel(id);
        finish_job(p, rec, JobStatus::MaxWaitTimeExceeded, "max_wait reached while pending in Slurm");
        break;
      }
      // A requeued job waits for spot capacity: Slurm's own requeue delay is ~2 minutes.
      if (ss.reason == "BeginTime" && cur == JobStatus::Interrupted)
        slurm_set_begin(id, st.value("interrupted_at", now) + p.simulate_capacity_wait - now);
    } else if (ss.finished()) {
      std::this_thread::sleep_for(std::chrono::seconds(2));  // the batch step may be writing its end
      const auto again = rec.current();
      if (!again || !is_final(*again))
        finish_job(p, rec, JobStatus::Failed,
                   cat("Slurm job ", id, " ended ", ss.state.empty() ? "(unknown to Slurm)" : ss.state,
                       " before the job did; see logs/slurm-", id, ".out"));
      break;
    }
    line.update(p, rec, now);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  line.echo_events(rec);
  line.clear();
  const nlohmann::json st = rec.status();
  std::printf("%s", job_billing(p, st, st.value("ended", now_seconds())).report().c_str());
  return rec.current().value_or(JobStatus::Failed);
}

}  // namespace strata::jobs
