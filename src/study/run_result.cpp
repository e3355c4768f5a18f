#include "study/run_result.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "io/files.h"
#include "jobs/job_record.h"

namespace strata::study {

namespace fs = std::filesystem;

nlohmann::json RunResult::to_json() const {
  return {{"job_name", job_name},
          {"status", status},
          {"message", message},
          {"train_runtime", train_runtime},
          {"train_samples_per_second", samples_per_second},
          {"training_seconds", training_seconds},
          {"billable_seconds", billable_seconds},
          {"cost_usd", cost_usd},
          {"peak_rss_mib", peak_rss_mib},
          {"eval", eval}};
}

RunResult RunResult::from_json(const nlohmann::json& j) {
  RunResult r;
  r.job_name = j.value("job_name", "");
  r.status = j.value("status", "");
  r.message = j.value("message", "");
  r.train_runtime = j.value("train_runtime", 0.0);
  r.samples_per_second = j.value("train_samples_per_second", 0.0);
  r.training_seconds = j.value("training_seconds", 0.0);
  r.billable_seconds = j.value("billable_seconds", 0.0);
  r.cost_usd = j.value("cost_usd", 0.0);
  r.peak_rss_mib = j.value("peak_rss_mib", 0.0);
  if (j.contains("eval")) r.eval = j.at("eval").get<std::map<std::string, double>>();
  return r;
}

std::vector<RankMemory> rank_memory(const std::string& log_dir) {
  static const std::regex line(R"(memory measured, rank (\d+): peak RSS ([0-9.]+) MiB;.*predicted peak ([0-9.]+) MiB)");
  std::vector<RankMemory> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(log_dir, ec)) {
    std::ifstream in(e.path());
    std::string s;
    std::smatch m;
    while (std::getline(in, s))
      if (std::regex_search(s, m, line)) out.push_back({std::stoi(m[1]), std::stod(m[2]), std::stod(m[3])});
  }
  std::sort(out.begin(), out.end(), [](const RankMemory& a, const RankMemory& b) { return a.rank < b.rank; });
  return out;
}

RunResult read_run(const std::string& job_dir) {
  const jobs::JobRecord rec(job_dir);
  RunResult r;
  r.job_name = fs::path(job_dir).filename().string();
  if (!rec.exists()) return r;
  const nlohmann::json s = rec.status();
  r.status = s.value("status", "");
  r.message = s.value("message", "");
  if (s.contains("billing")) {
    const auto& b = s.at("billing");
    r.training_seconds = b.value("training_seconds", 0.0);
    r.billable_seconds = b.value("billable_seconds", 0.0);
    r.cost_usd = b.value("cost_usd", 0.0);
  }
  for (const RankMemory& m : rank_memory(rec.attempt_log_dir(s.value("attempt", 1))))
    r.peak_rss_mib = std::max(r.peak_rss_mib, m.peak_rss_mib);
  if (!r.completed()) return r;
  const nlohmann::json train = io::read_json_file(rec.path("model/train_results.json"));
  r.train_runtime = train.value("train_runtime", 0.0);
  r.samples_per_second = train.value("train_samples_per_second", 0.0);
  const std::string eval_path = rec.path("model/eval_results.json");
  if (fs::exists(eval_path)) {
    const nlohmann::json eval = io::read_json_file(eval_path);
    for (const auto& [k, v] : eval.items())
      if (v.is_number() && k.rfind("eval_", 0) == 0) r.eval[k] = v.get<double>();
  }
  return r;
}

}  // namespace strata::study
