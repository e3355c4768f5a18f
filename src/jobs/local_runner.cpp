#include "jobs/local_runner.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "jobs/attempt.h"
#include "jobs/job_progress.h"
#include "jobs/launcher.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::jobs {

namespace {

// Variables a script's ranks on other hosts need as the runner has them: where its Python
// finds the strata package (a build tree, a virtual environment).
void forward_python_environment(const JobPlan& p, LaunchSpec& s) {
  if (!p.runs_script()) return;
  for (const char* name : {"PYTHONPATH", "VIRTUAL_ENV"})
    if (std::getenv(name)) s.extra_mpirun_args.insert(s.extra_mpirun_args.end(), {"-x", name});
}

// Every rank's output to logs/attempt-<k>/rank-<r>.log: mpirun gives each its rank in the
// environment, so a shell in front of the rank's command picks the file.
AttemptLaunch local_launch(const JobPlan& p, const JobRecord& rec, int attempt, const std::string& resume) {
  const std::string logs = rec.attempt_log_dir(attempt);
  AttemptLaunch l;
  l.env = p.environment;
  const std::vector<std::string> command = rank_command(p, resume);
  if (p.world_size() == 1 && p.backend == Backend::Local) {
    l.argv = command;
    l.log_path = logs + "/rank-0.log";
    l.stop_signal = SIGTERM;
    return l;
  }
  LaunchSpec s;
  s.procs_per_host = p.backend == Backend::Local ? p.world_size() : p.ranks_per_host;
  s.hosts = p.hosts;
  s.cores_per_host = p.backend == Backend::Local ? p.world_size() * p.threads_per_rank : p.instance.cores;
  for (const std::string& kv : p.environment) s.extra_mpirun_args.insert(s.extra_mpirun_args.end(), {"-x", kv.substr(0, kv.find('='))});
  forward_python_environment(p, s);
  s.command = {"sh", "-c", "exec \"$@\" > \"" + logs + "/rank-$OMPI_COMM_WORLD_RANK.log\" 2>&1", "sh"};
  s.command.insert(s.command.end(), command.begin(), command.end());
  l.argv = mpirun_argv(s);
  l.log_path = logs + "/launcher.log";
  l.stop_signal = SIGUSR1;  // mpirun forwards it to every rank; its own SIGTERM kills them without grace
  l.ignored_until_started = {SIGUSR1};  // mpirun dies of one that comes before it can forward it
  return l;
}

// Waits for spot capacity to return (the simulated wait). False if the job must end instead:
// *end is then MaxWaitTimeExceeded or Stopped.
bool wait_for_capacity(const JobPlan& p, const JobRecord& rec, const SignalFlag& ctrl_c, ProgressLine& line,
                       JobStatus* end) {
  const double created = rec.status().value("created_epoch", now_seconds());
  const double from = now_seconds();
  rec.event(cat("waiting for spot capacity (simulated: ", p.simulate_capacity_wait, " s)"));
  line.echo_events(rec);
  for (;;) {
    const double now = now_seconds();
    if (ctrl_c.count() > 0 || rec.has_request("stop")) {
      *end = JobStatus::Stopped;
      return false;
    }
    if (p.max_wait > 0 && now - created >= p.max_wait) {
      *end = JobStatus::MaxWaitTimeExceeded;
      return false;
    }
    if (now - from >= p.simulate_capacity_wait) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  rec.take_request("interrupt");  // one that came while nothing ran interrupts nothing
  rec.event(cat("spot capacity available after ", static_cast<int>(now_seconds() - from), " s"));
  return true;
}

}  // namespace

JobStatus run_local_job(const JobPlan& p, const JobRecord& rec) {
  const SignalFlag ctrl_c({SIGINT, SIGTERM});
  ProgressLine line;
  int stops_asked = 0;
  AttemptHooks hooks;
  hooks.tick = [&](double now) {
    if (ctrl_c.count() > stops_asked) {
      if (stops_asked == 0) rec.request("stop");
      stops_asked = ctrl_c.count();
      line.say(cat("stopping: the ranks finish their step and write a checkpoint (at most ", p.grace, " s)"));
    }
    line.echo_events(rec);
    line.update(p, rec, now);
  };
  JobStatus end = JobStatus::Failed;
  std::string message;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1 && !wait_for_capacity(p, rec, ctrl_c, line, &end)) {
      message = end == JobStatus::Stopped ? "stopped while waiting for spot capacity" : "max_wait reached while waiting for spot capacity";
      break;
    }
    line.echo_events(rec);
    const AttemptResult r =
        run_attempt(p, rec, attempt, [&](const JobPlan& ap, const std::string& resume) { return local_launch(ap, rec, attempt, resume); }, hooks);
    end = attempt_outcome(r);
    if (end != JobStatus::Interrupted) {
      if (end == JobStatus::Failed) {
        const std::string err = first_error_line(rec.attempt_log_dir(attempt));
        message = cat("attempt ", attempt, " exited with status ", r.exit_status, err.empty() ? "" : "; " + err);
      }
      break;
    }
    rec.set_status(JobStatus::Interrupted, cat("attempt ", attempt, " interrupted; resumes from the newest checkpoint"));
    line.echo_events(rec);
  }
  const std::string report = finish_job(p, rec, end, message);
  line.echo_events(rec);
  line.clear();
  std::printf("%s", report.c_str());
  return end;
}

}  // namespace strata::jobs
