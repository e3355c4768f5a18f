#include "report/run_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "report/gnuplot_chart.h"
#include "report/html_page.h"
#include "study/run_result.h"
#include "train/tensorboard_log.h"
#include "util/error.h"

namespace strata::report {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<json> read_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, ": cannot be read (strata report needs the trainer's log, trainer_log.jsonl)");
  std::vector<json> entries;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      entries.push_back(json::parse(line));
    } catch (const json::exception& e) {
      fail(path, " line ", n, ": invalid JSON: ", e.what());
    }
  }
  return entries;
}

bool is_curve_metric(const std::string& k) {
  return k.rfind("eval_", 0) == 0 && k != "eval_loss" && k.find("runtime") == std::string::npos &&
         k.find("per_second") == std::string::npos;
}

void add_point(std::map<std::string, Series>& by, const std::string& name, double x, double y) {
  Series& s = by[name];
  s.title = name;
  s.x.push_back(x);
  s.y.push_back(y);
}

Chart chart_of(std::map<std::string, Series> by, std::string title, std::string xlabel, std::string ylabel) {
  Chart c{std::move(title), std::move(xlabel), std::move(ylabel), {}, false, false};
  for (auto& [k, s] : by) c.series.push_back(std::move(s));
  return c;
}

// Training throughput between consecutive logged steps, from the wall time TensorBoard
// recorded with each train/loss value.
void throughput(HtmlPage& page, const std::string& trainer_dir, double samples_per_step) {
  std::vector<TensorBoardScalar> loss;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(trainer_dir, ec); it != fs::recursive_directory_iterator(); ++it)
    if (it->path().filename().string().rfind("events.out.tfevents", 0) == 0)
      for (const TensorBoardScalar& s : read_tensorboard_scalars(it->path().string()))
        if (s.tag == "train/loss") loss.push_back(s);
  std::sort(loss.begin(), loss.end(), [](const auto& a, const auto& b) { return a.wall_time < b.wall_time; });
  if (loss.size() < 2) {
    page.paragraph("Throughput over time: no TensorBoard events with two logged steps under " + trainer_dir +
                   " (report_to tensorboard writes them; docs/curves.md).");
    return;
  }
  Series s{samples_per_step > 0 ? "samples/s" : "steps/s", {}, {}, {}, true};
  for (size_t i = 1; i < loss.size(); ++i) {
    const double dt = loss[i].wall_time - loss[i - 1].wall_time;
    if (dt <= 0 || loss[i].step <= loss[i - 1].step) continue;  // a resumed run logs its steps again
    const double steps_per_s = (loss[i].step - loss[i - 1].step) / dt;
    s.x.push_back(loss[i].wall_time - loss.front().wall_time);
    s.y.push_back(samples_per_step > 0 ? steps_per_s * samples_per_step : steps_per_s);
  }
  page.chart(render_svg(Chart{"Training throughput", "time since the first logged step, s", s.title, {s}, false, false}),
             "Between consecutive logged steps (logging_steps apart), from the wall times in the TensorBoard events.");
}

// Each rank's "memory measured" line (strata train, at the end of training) of the job's last attempt.
void memory(HtmlPage& page, const std::string& log_dir) {
  Series measured{"measured peak RSS", {}, {}, {}, false}, predicted{"predicted peak (memory plan)", {}, {}, {}, false};
  for (const study::RankMemory& m : study::rank_memory(log_dir)) {
    measured.x.push_back(m.rank);
    measured.y.push_back(m.peak_rss_mib);
    predicted.x.push_back(m.rank);
    predicted.y.push_back(m.predicted_peak_mib);
  }
  if (measured.x.empty()) {
    page.paragraph("Memory: no rank logged its measured peak in " + log_dir + ".");
    return;
  }
  Chart c{"Memory per rank: plan and measured peak", "rank", "MiB", {predicted, measured}, false, true};
  page.chart(render_svg(c), "The memory plan strata info prints (parameters, gradients, optimizer state, "
                            "activations, scratch, plus what was held before training) against each rank's peak RSS.");
}

void billing(HtmlPage& page, const json& status) {
  if (!status.contains("billing")) {
    page.paragraph("Billing: the job has not ended yet.");
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [k, v] : status.at("billing").items()) rows.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
  page.table({"billing", "value"}, rows);
}

}  // namespace

std::string run_report_html(const std::string& dir) {
  const bool job = fs::exists(dir + "/status.json");
  const json status = job ? io::read_json_file(dir + "/status.json") : json::object();
  std::string trainer_dir = dir;
  if (job) trainer_dir = fs::exists(dir + "/model/trainer_log.jsonl") ? dir + "/model" : dir + "/work";
  const std::vector<json> log = read_log(trainer_dir + "/trainer_log.jsonl");
  HtmlPage page(job ? "Job " + status.value("job_name", fs::path(dir).filename().string())
                    : "Training run " + fs::path(dir).filename().string());
  if (job)
    page.paragraph(cat("Status ", status.value("status", "?"), "; ", status.value("instance_count", 0), " x ",
                       status.value("instance_type", "?"), ", backend ", status.value("backend", "?"), "; created ",
                       status.value("created", "?"), "."));

  std::map<std::string, Series> losses, lr, metrics;
  double samples_per_step = 0;
  for (const json& e : log) {
    const double step = e.value("step", 0.0);
    if (e.contains("loss")) add_point(losses, "training loss", step, e.at("loss").get<double>());
    if (e.contains("eval_loss")) add_point(losses, "eval loss", step, e.at("eval_loss").get<double>());
    if (e.contains("learning_rate")) add_point(lr, "learning rate", step, e.at("learning_rate").get<double>());
    for (const auto& [k, v] : e.items())
      if (is_curve_metric(k) && v.is_number()) add_point(metrics, k, step, v.get<double>());
    if (e.contains("train_samples_per_second") && e.value("train_steps_per_second", 0.0) > 0)
      samples_per_step = e.at("train_samples_per_second").get<double>() / e.at("train_steps_per_second").get<double>();
  }
  page.heading("Curves");
  page.chart(render_svg(chart_of(losses, "Loss", "step", "loss")), "Training loss at each logged step; eval loss at each evaluation.");
  page.chart(render_svg(chart_of(lr, "Learning rate", "step", "learning rate")), "The scheduler's learning rate at each logged step.");
  page.chart(render_svg(chart_of(metrics, "Evaluation metrics", "step", "value")), "Every eval_* metric at each evaluation.");
  throughput(page, job ? dir + "/work" : trainer_dir, samples_per_step);
  page.heading("Memory");
  if (job) memory(page, cat(dir, "/logs/attempt-", status.value("attempt", 1)));
  else page.paragraph("Memory: a run directory keeps no rank logs; the report of its job shows the plan against the peak.");
  if (job) {
    page.heading("Billing");
    billing(page, status);
  }
  return page.html();
}

}  // namespace strata::report
