#include "jobs/job_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <regex>

#include "core/exit_status.h"
#include "util/error.h"

namespace strata::jobs {

namespace {

// The last `bytes` of a file (or all of it).
std::string tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<size_t>(in.tellg());
  const size_t from = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string s(size - from, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

std::string head(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string s(bytes, '\0');
  in.read(s.data(), static_cast<std::streamsize>(bytes));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

}  // namespace

double run_seconds(const nlohmann::json& status, double now) {
  double total = 0;
  for (const auto& a : status.value("attempts", nlohmann::json::array())) {
    const double end = a.contains("end") ? a["end"].get<double>() : now;
    total += std::max(0.0, end - a.at("start").get<double>());
  }
  return total;
}

Billing job_billing(const JobPlan& p, const nlohmann::json& status, double now) {
  Billing b;
  b.instance_count = p.instance_count;
  b.spot = p.spot;
  b.on_demand_usd_per_hour = p.instance.on_demand_usd_per_hour;
  b.spot_usd_per_hour = p.instance.spot_usd_per_hour;
  b.billable_seconds = run_seconds(status, now);
  const auto& attempts = status.value("attempts", nlohmann::json::array());
  if (!attempts.empty()) {
    const double first = attempts.front().at("start");
    const double end = status.contains("ended") ? status["ended"].get<double>() : now;
    b.training_seconds = std::max(b.billable_seconds, end - first);
  }
  return b;
}

TrainingProgress read_training_progress(const std::string& log) {
  TrainingProgress p;
  static const std::regex total(R"(Total optimization steps = (\d+))");
  static const std::regex step(R"("step":(\d+))");
  std::smatch m;
  const std::string start = head(log, 1 << 14);
  if (std::regex_search(start, m, total)) p.total = std::stoll(m[1]);
  const std::string end = tail(log, 1 << 12);
  for (auto it = std::sregex_iterator(end.begin(), end.end(), step); it != std::sregex_iterator(); ++it)
    p.step = std::stoll((*it)[1]);
  return p;
}

bool paused_after_step(const std::string& log, int64_t step) {
  return tail(log, 1 << 12).find(cat(kPausedLine, step, ";")) != std::string::npos;
}

bool stop_taken(const std::string& log) { return tail(log, 1 << 12).find("stop requested (signal") != std::string::npos; }

std::string clock_time(double t) {
  const auto secs = static_cast<time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string hms(double s) {
  const int t = static_cast<int>(std::max(0.0, s));
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02d:%02d", t / 60, t % 60);
  return buf;
}

ProgressLine::ProgressLine(double interval) : tty_(isatty(STDOUT_FILENO)), interval_(interval) {}

void ProgressLine::update(const JobPlan& plan, const JobRecord& record, double now) {
  const nlohmann::json st = record.status();
  const int attempt = st.value("attempt", 0);
  if (attempt == 0 || st.value("status", "") != "Training") return;
  const TrainingProgress tp = read_training_progress(record.attempt_log_dir(attempt) + "/rank-0.log");
  if (attempt != attempt_) {
    attempt_ = attempt;
    first_step_ = -1;
  }
  if (tp.step >= 0 && first_step_ < 0) {
    first_step_ = tp.step;
    first_time_ = now;
  }
  const bool moved = tp.step != last_step_;
  if (!tty_ && (!moved || now - last_print_ < interval_)) return;
  last_step_ = tp.step;
  last_print_ = now;
  const Billing b = job_billing(plan, st, now);
  std::string eta = "?";
  if (tp.total > 0 && tp.step > first_step_ && now > first_time_)
    eta = hms((tp.total - tp.step) * (now - first_time_) / static_cast<double>(tp.step - first_step_));
  const std::string step = tp.step < 0 ? "starting" : tp.total > 0 ? cat("step ", tp.step, "/", tp.total) : cat("step ", tp.step);
  char cost[64];
  std::snprintf(cost, sizeof cost, "%.6f", b.cost_usd());
  const std::string line = cat(clock_time(now), " ", plan.name, " | elapsed ", hms(b.training_seconds), " | attempt ",
                               attempt, " | ", step, " | ETA ", eta, " | cost so far ", cost, " USD");
  if (tty_) {
    std::printf("\r%s\033[K", line.c_str());
    drawn_ = true;
  } else {
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

void ProgressLine::clear() {
  if (drawn_) std::printf("\r\033[K");
  drawn_ = false;
  std::fflush(stdout);
}

void ProgressLine::say(const std::string& text, const std::string& time_of_day) {
  clear();
  std::printf("%s %s\n", time_of_day.empty() ? clock_time(now_seconds()).c_str() : time_of_day.c_str(), text.c_str());
  std::fflush(stdout);
}

void ProgressLine::echo_events(const JobRecord& record) {
  // Each at the time it happened: "2026-11-23T05:36:15.123Z" -> "05:36:15".
  for (const auto& e : record.events(&events_read_)) {
    const std::string t = e.value("time", "");
    say(e.value("event", ""), t.size() >= 19 ? t.substr(11, 8) : "");
  }
}

}  // namespace strata::jobs
