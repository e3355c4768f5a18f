#include "jobs/attempt.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/exit_status.h"
#include "io/files.h"
#include "jobs/checkpoint_store.h"
#include "jobs/job_progress.h"
#include "jobs/launcher.h"
#include "jobs/process.h"
#include "util/error.h"

namespace strata::jobs {

namespace fs = std::filesystem;

namespace {

const char* reason_text(StopReason r) {
  switch (r) {
    case StopReason::Interrupted: return "spot interruption";
    case StopReason::MaxRuntime: return "max_run reached";
    case StopReason::MaxWait: return "max_wait reached";
    case StopReason::Stopped: return "stop requested";
    case StopReason::None: break;
  }
  return "";
}

void upload_checkpoints(const CheckpointStore& store, const JobPlan& p, const JobRecord& rec) {
  try {
    const std::vector<std::string> names = store.upload(p.local_dir);
    if (names.empty()) return;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    rec.event(cat("uploaded to checkpoint_uri: ", list), {{"checkpoints", names}});
  } catch (const std::exception& e) {
    rec.event(cat("checkpoint upload failed (will retry): ", e.what()));
  }
}

// The next simulated interruption not yet fired; null if none.
const SimulatedInterruption* next_interruption(const JobPlan& p, const JobRecord& rec) {
  const size_t fired = rec.status().value("interruptions_fired", 0);
  return fired < p.simulate_interruptions.size() ? &p.simulate_interruptions[fired] : nullptr;
}

// The plan the attempt's ranks run under: for an interruption after a step, the ranks pause
// there (kPauseAtStepVariable, read by strata train) until it reaches them. It replaces a
// pause the job's environment asks for.
JobPlan attempt_plan(const JobPlan& p, const SimulatedInterruption* due) {
  if (!due || !due->at_step()) return p;
  JobPlan a = p;
  const std::string prefix = std::string(kPauseAtStepVariable) + "=";
  std::erase_if(a.environment, [&](const std::string& kv) { return kv.starts_with(prefix); });
  a.environment.push_back(prefix + std::to_string(due->step));
  return a;
}

// Whether the simulated interruption is due `ran` seconds into the attempt.
bool interruption_due(const SimulatedInterruption& i, double ran, const std::string& rank0_log) {
  return i.at_step() ? paused_after_step(rank0_log, i.step) : ran >= i.seconds;
}

// Closes attempts whose end was never written (their host died, or the batch step was
// killed): they count until they were last seen.
void close_dangling_attempts(nlohmann::json& s) {
  if (!s.contains("attempts")) return;
  for (auto& a : s["attempts"])
    if (!a.contains("end")) a["end"] = a.value("last_seen", a["start"].get<double>());
}

// A script's SM_MODEL_DIR starts each attempt empty, as /opt/ml/model does on the fresh host
// of a SageMaker restart: the model comes from the attempt that completes, whole.
void empty_model_dir(const JobPlan& p) {
  fs::remove_all(p.model_dir());
  fs::create_directories(p.model_dir());
  fs::create_directories(p.output_data_dir());
}

// The trained model into <job dir>/model: what the script saved in SM_MODEL_DIR, or the files
// (not the checkpoints) of strata train's output_dir.
void upload_model(const JobPlan& p, const JobRecord& rec) {
  const fs::path model = rec.path("model");
  if (p.runs_script()) {
    fs::create_directories(p.model_dir());  // the script may have removed it
    if (fs::is_empty(p.model_dir()))
      rec.event(cat("the script saved nothing in SM_MODEL_DIR (", p.model_dir(), "): the model directory is empty"));
    fs::remove_all(model);
    fs::rename(p.model_dir(), model);
    return;
  }
  const fs::path partial = rec.path(".model.partial");
  fs::remove_all(partial);
  fs::create_directories(partial);
  for (const auto& e : fs::directory_iterator(p.local_dir))
    if (e.is_regular_file()) fs::copy_file(e.path(), partial / e.path().filename());
  fs::remove_all(model);
  fs::rename(partial, model);
}

}  // namespace

std::vector<std::string> rank_command(const JobPlan& p, const std::string& resume) {
  if (!p.runs_script())
    return {p.strata_binary, "train", p.training_config_path(), "--set", "resume_from_checkpoint=" + resume};
  std::vector<std::string> argv = {p.strata_binary, "job", "script-rank", p.job_dir};
  if (!resume.empty()) argv.insert(argv.end(), {"--resume", resume});
  return argv;
}

AttemptResult run_attempt(const JobPlan& p, const JobRecord& rec, int attempt,
                          const std::function<AttemptLaunch(const JobPlan&, const std::string&)>& launch_for,
                          const AttemptHooks& hooks) {
  rec.set_status(JobStatus::Starting, cat("attempt ", attempt, ": downloading checkpoints"));
  const CheckpointStore store(p.checkpoint_dir);
  const std::string resume = store.download(p.local_dir);
  rec.event(resume.empty() ? std::string("no checkpoint in checkpoint_uri: training starts at step 0")
                           : cat("resuming from ", fs::path(resume).filename().string()),
            {{"attempt", attempt}});
  fs::create_directories(rec.attempt_log_dir(attempt));
  if (p.runs_script()) empty_model_dir(p);
  const SimulatedInterruption* const due = next_interruption(p, rec);
  const AttemptLaunch launch = launch_for(attempt_plan(p, due), resume);

  const double created = rec.status().value("created_epoch", now_seconds());
  double before = 0;
  const double start = now_seconds();
  rec.update([&](nlohmann::json& s) {
    close_dangling_attempts(s);
    before = run_seconds(s, start);
    s["attempt"] = attempt;
    s["attempts"].push_back({{"attempt", attempt}, {"start", start}, {"last_seen", start}});
  });
  Process proc = Process::start(launch.argv, {launch.log_path, launch.env, launch.ignored_until_started});
  rec.set_status(JobStatus::Training, cat("attempt ", attempt, ": ", p.world_size(), " rank(s)"));
  rec.event("launched", {{"attempt", attempt}, {"command", shell_join(launch.argv)}});

  AttemptResult r;
  double signalled_at = 0, last_signal = 0, last_sync = start, last_seen = start;
  int escalation = 0;  // after the grace period: 1 = the launcher told to stop at once, 2 = killed
  bool taken = false;  // rank 0 logged that it took the stop request
  bool requeue_asked = false;  // a simulated interruption went through hooks.interrupt (Slurm's requeue)
  bool fired = false;          // this attempt's simulated interruption
  const std::string rank0_log = rec.attempt_log_dir(attempt) + "/rank-0.log";
  for (;;) {
    if (auto st = proc.poll()) {
      r.exit_status = *st;
      break;
    }
    const double now = now_seconds();
    const double ran = before + (now - start);
    if (r.reason == StopReason::None) {
      if (rec.has_request("stop")) {
        r.reason = StopReason::Stopped;
      } else if (rec.take_request("interrupt")) {
        r.reason = StopReason::Interrupted;
      } else if (due && !fired && interruption_due(*due, now - start, rank0_log)) {
        fired = true;
        rec.update([](nlohmann::json& s) { s["interruptions_fired"] = s.value("interruptions_fired", 0) + 1; });
        rec.event(due->at_step() ? cat("simulated spot interruption after step ", due->step, " of attempt ", attempt)
                                 : cat("simulated spot interruption ", due->seconds, " s into attempt ", attempt));
        if (hooks.interrupt) {
          hooks.interrupt();
          requeue_asked = true;
        } else {
          r.reason = StopReason::Interrupted;
        }
      } else if (hooks.external_stop && hooks.external_stop()) {
        // Slurm's signal: a requeue (preemption), or its time limit, which --time sets a grace
        // period after max_run.
        r.reason = ran >= p.max_run - 60 ? StopReason::MaxRuntime : StopReason::Interrupted;
      } else if (ran >= p.max_run) {
        r.reason = StopReason::MaxRuntime;
      } else if (p.max_wait > 0 && now - created >= p.max_wait) {
        r.reason = StopReason::MaxWait;
      }
      if (r.reason != StopReason::None) {
        proc.signal(launch.stop_signal);
        signalled_at = last_signal = now;
        rec.event(cat("stopping the ranks (", reason_text(r.reason), "): they finish their step, write a checkpoint "
                      "and exit; ", p.grace, " s grace"));
      }
    } else if (escalation == 0 && now - signalled_at <= p.grace && now - last_signal >= 0.5 && !taken) {
      // Again, until rank 0 says it took the request: mpirun (and its daemons) drop a signal
      // that comes before they have started the ranks, and so may a rank still in MPI_Init.
      // Not after: mpirun, shutting down, dies of a SIGUSR1 it no longer forwards.
      taken = stop_taken(rank0_log);
      if (!taken) proc.signal(launch.stop_signal);
      last_signal = now;
    } else if (escalation == 0 && now - signalled_at > p.grace) {
      rec.event(cat("the ranks did not exit within the ", p.grace, " s grace period: stopping them at once"));
      proc.signal(SIGTERM);  // mpirun and srun kill their ranks on SIGTERM
      escalation = 1;
    } else if (escalation == 1 && now - signalled_at > p.grace + 10) {
      proc.kill_session();
      escalation = 2;
    }
    if (now - last_sync >= 1) {
      upload_checkpoints(store, p, rec);
      last_sync = now;
    }
    if (now - last_seen >= 5) {
      rec.update([&](nlohmann::json& s) { s["attempts"].back()["last_seen"] = now; });
      last_seen = now;
    }
    if (hooks.tick) hooks.tick(now);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  proc.kill_session();  // what the launcher left behind, if it died before its ranks
  // The launcher can end before the loop above has seen why: Slurm signals the job step and
  // this runner together, and a requeue this runner asked for ends srun within a poll.
  if (r.reason == StopReason::None && r.exit_status != 0 &&
      (requeue_asked || (hooks.external_stop && hooks.external_stop())))
    r.reason = !requeue_asked && before + (now_seconds() - start) >= p.max_run - 60 ? StopReason::MaxRuntime
                                                                                     : StopReason::Interrupted;
  const double end = now_seconds();
  r.seconds = end - start;
  rec.update([&](nlohmann::json& s) {
    auto& a = s["attempts"].back();
    a["end"] = end;
    a["exit_status"] = r.exit_status;
  });
  upload_checkpoints(store, p, rec);
  rec.event(cat("attempt ", attempt, " ended after ", static_cast<int>(r.seconds), " s with exit status ", r.exit_status,
                r.exit_status == kExitInterrupted ? " (stopped with a checkpoint)" : ""),
            {{"attempt", attempt}, {"exit_status", r.exit_status}});
  return r;
}

JobStatus attempt_outcome(const AttemptResult& r) {
  if (r.exit_status == 0) return JobStatus::Completed;
  switch (r.reason) {
    case StopReason::Interrupted: return JobStatus::Interrupted;
    case StopReason::MaxRuntime: return JobStatus::MaxRuntimeExceeded;
    case StopReason::MaxWait: return JobStatus::MaxWaitTimeExceeded;
    case StopReason::Stopped: return JobStatus::Stopped;
    case StopReason::None: break;
  }
  // Someone else stopped the ranks with a checkpoint (a signal by hand): resume like a reclaim.
  return r.exit_status == kExitInterrupted ? JobStatus::Interrupted : JobStatus::Failed;
}

std::string first_error_line(const std::string& dir) {
  std::vector<fs::path> logs;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  for (const auto& log : logs) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos)
        return cat(log.filename().string(), ": ", line);
  }
  return "";
}

std::string finish_job(const JobPlan& p, const JobRecord& rec, JobStatus status, const std::string& message) {
  if (status == JobStatus::Completed) {
    rec.set_status(JobStatus::Uploading, "copying the model to the job directory");
    upload_model(p, rec);
  }
  const double end = now_seconds();
  Billing b;
  rec.update([&](nlohmann::json& s) {
    close_dangling_attempts(s);
    s["ended"] = end;
    b = job_billing(p, s, end);
    s["billing"] = b.to_json();
  });
  rec.set_status(status, message);
  return b.report();
}

void create_record(const JobPlan& p, const JobRecord& rec, const std::string& spec_yaml, const std::string& training_yaml) {
  fs::create_directories(rec.path("logs"));
  io::write_file_atomic(rec.path("spec.yaml"), spec_yaml);
  if (!p.runs_script()) io::write_file_atomic(rec.path("training.yaml"), training_yaml);
  io::write_file_atomic(rec.path("plan.json"), p.to_json().dump(2) + "\n");
  const double t = now_seconds();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  rec.update([&](nlohmann::json& s) {
    s = {{"job_name", p.name},
         {"backend", backend_name(p.backend)},
         {"instance_type", p.instance.name},
         {"instance_count", p.instance_count},
         {"use_spot_instances", p.spot},
         {"created", iso_time(t)},
         {"created_epoch", t},
         {"runner", {{"pid", getpid()}, {"host", host}}},
         {"attempt", 0},
         {"attempts", nlohmann::json::array()}};
  });
  rec.set_status(JobStatus::Starting, "job created");
}

}  // namespace strata::jobs
