// The study layer's parts on their own (src/study/, src/report/): the study spec and its
// grid, bad input with file and line, learning-rate scaling, the table's medians, spread and
// scaling efficiency, and the gnuplot charts. `strata study` end to end: tests/study/*.sh.
#include <gtest/gtest.h>

#include <cmath>

#include "jobs/process.h"
#include "report/gnuplot_chart.h"
#include "report/html_page.h"
#include "study/cell_plan.h"
#include "study/study_spec.h"
#include "study/study_table.h"
#include "test_util_fs.h"

namespace strata::study {
namespace {

using test::expect_error;

StudySpec parse(const std::string& grid, const std::string& extra = "") {
  return parse_study_spec("study: s\njob: job.yaml\noutput_dir: out\nbudget: {samples: 64}\n" + extra + grid, "study.yaml");
}

TEST(Study, GridCrossesEachMappingAndJoinsTheLists) {
  const StudySpec s = parse(
      "grid:\n"
      "  - {processes_per_host: [1, 2], dataloader_num_workers: [0, 1]}\n"
      "  - {processes_per_host: [1], dataloader_num_workers: [0]}\n"  // a duplicate of the first cell
      "  - {cluster: ['netns:10mbit'], instance_count: [2, 4]}\n");
  ASSERT_EQ(s.cells.size(), 6u);
  EXPECT_EQ(s.cells[0], (CellValues{{Axis::ProcessesPerHost, "1"}, {Axis::DataloaderNumWorkers, "0"}}));
  EXPECT_EQ(s.cells[1], (CellValues{{Axis::ProcessesPerHost, "1"}, {Axis::DataloaderNumWorkers, "1"}}));
  EXPECT_EQ(s.cells[3], (CellValues{{Axis::ProcessesPerHost, "2"}, {Axis::DataloaderNumWorkers, "1"}}));
  // Axes are listed in one order whatever order the file names them in.
  EXPECT_EQ(s.cells[4], (CellValues{{Axis::InstanceCount, "2"}, {Axis::Cluster, "netns:10mbit"}}));
  EXPECT_EQ(s.budget.samples, 64);
}

TEST(Study, BadInputNamesTheLine) {
  expect_error([] { parse("grid: {}\n"); }, {"study.yaml line 5", "the grid is empty"});
  expect_error([] { parse("grid: []\n"); }, {"study.yaml line 5", "the grid is empty"});
  expect_error([] { parse("grid:\n  processes_per_host: []\n"); }, {"line 6", "processes_per_host has no values"});
  expect_error([] { parse("grid:\n  proceses_per_host: [1]\n"); },
               {"study.yaml line 6", "unknown grid axis 'proceses_per_host'", "did you mean 'processes_per_host'"});
  expect_error([] { parse("grid:\n  lr_scaling: [cubic]\n"); }, {"line 6", "none, linear or sqrt", "cubic"});
  expect_error([] { parse("grid:\n  lr_scaling: [sqrt]\n"); }, {"line 5", "needs reference_global_batch"});
  expect_error([] { parse("grid:\n  per_device_train_batch_size: [0]\n"); }, {"line 6", "integer >= 1"});
  expect_error([] { parse("grid:\n  cluster: [cloud]\n"); }, {"line 6", "local, netns or netns:RATE"});
  expect_error([] { parse("grid:\n  layout: [2]\n"); }, {"line 6", "mappings of parallel options"});
  expect_error([] { parse("grid: {processes_per_host: [1]}\n", "repeat: 3\n"); },
               {"study.yaml line 5", "unknown study option 'repeat'", "did you mean 'repeats'"});
  expect_error([] { parse_study_spec("study: s\njob: j\noutput_dir: o\ngrid: {processes_per_host: [1]}\n", "st.yaml"); },
               {"st.yaml: budget is required"});
  expect_error([] { parse("grid: {processes_per_host: [1]}\n", "budget: {epochs: 3}\n"); }, {"budget expects one of"});
}

TEST(Study, FingerprintFollowsTheGridNotTheRepeats) {
  const StudySpec a = parse("grid: {processes_per_host: [1, 2]}\n");
  const StudySpec b = parse("grid: {processes_per_host: [1, 2]}\n", "repeats: 3\n");
  const StudySpec c = parse("grid: {processes_per_host: [1, 4]}\n");
  EXPECT_EQ(study_fingerprint(a, "job", "train"), study_fingerprint(b, "job", "train"));
  EXPECT_NE(study_fingerprint(a, "job", "train"), study_fingerprint(c, "job", "train"));
  EXPECT_NE(study_fingerprint(a, "job", "train"), study_fingerprint(a, "job", "train2"));
}

TEST(Study, LearningRateScaling) {
  EXPECT_DOUBLE_EQ(scaled_learning_rate(5e-5, "none", 1024, 32), 5e-5);
  EXPECT_DOUBLE_EQ(scaled_learning_rate(5e-5, "linear", 1024, 32), 5e-5 * 32);
  // The seed study's figure: 5e-5 x sqrt(32) = 2.83e-4 for 32 devices of batch 32.
  EXPECT_NEAR(scaled_learning_rate(5e-5, "sqrt", 32 * 32, 32), 2.83e-4, 1e-6);
}

RunResult run(double train_s, double sps, double f1, const std::string& status = "Completed") {
  RunResult r;
  r.status = status;
  r.train_runtime = train_s;
  r.samples_per_second = sps;
  r.billable_seconds = train_s + 5;
  r.cost_usd = (train_s + 5) * 0.115 / 3600;
  r.peak_rss_mib = 100 + train_s;
  r.eval["eval_f1"] = f1;
  return r;
}

CellPlan cell(int world, const std::string& id) {
  CellPlan p;
  p.id = id;
  p.label = "ranks " + std::to_string(world);
  p.values = {{Axis::ProcessesPerHost, std::to_string(world)}, {Axis::DataloaderNumWorkers, "0"}};
  p.world_size = world;
  return p;
}

TEST(Study, TableTakesMediansSpreadAndEfficiency) {
  const StudySpec spec = parse("grid: {processes_per_host: [1, 2]}\n", "repeats: 3\n");
  std::vector<CellRuns> cells = {
      {cell(1, "c1"), {run(10, 10, 0.9), run(12, 9, 0.8), run(11, 9.5, 0.85)}},
      {cell(2, "c2"), {run(7, 15, 0.7), run(6, 16, 0.75), run(0, 0, 0, "Failed")}},
  };
  CellPlan bad = cell(3, "c3");
  bad.invalid = "tensor_parallel_degree 2 does not divide 3 ranks";
  cells.push_back({bad, {}});
  const nlohmann::json r = study_results(spec, cells, {});
  ASSERT_EQ(r["cells"].size(), 2u);
  const nlohmann::json& one = r["cells"][0];
  EXPECT_DOUBLE_EQ(one["train_s"].get<double>(), 11);
  EXPECT_DOUBLE_EQ(one["train_s_min"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(one["train_s_max"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(one["eval_f1"].get<double>(), 0.85);
  EXPECT_DOUBLE_EQ(one["scaling_efficiency"].get<double>(), 1.0);
  const nlohmann::json& two = r["cells"][1];
  EXPECT_EQ(two["status"], "partial");
  EXPECT_EQ(two["repeats_done"], 2);
  EXPECT_DOUBLE_EQ(two["samples_per_s"].get<double>(), 15.5);  // the median of two: their mean
  EXPECT_DOUBLE_EQ(two["scaling_efficiency"].get<double>(), 15.5 / (2 * 9.5));
  ASSERT_EQ(r["skipped"].size(), 1u);
  EXPECT_EQ(r["skipped"][0]["reason"], "tensor_parallel_degree 2 does not divide 3 ranks");
  const std::string csv = results_csv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')).substr(0, 30), "cell,cluster,instance_type,ins");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  const std::string md = results_markdown(r);
  EXPECT_NE(md.find("Every cell trains on the same number of samples, 64"), std::string::npos);
  EXPECT_NE(md.find("Skipped (they cannot run):"), std::string::npos);
}

TEST(Report, GnuplotScriptHasTheDataAndTitles) {
  report::Chart c{"Train \"time\"", "ranks", "s", {{"a_b", {2, 1}, {20, 10}, {}, true}}, false, true};
  const std::string s = report::gnuplot_script(c, "/tmp/x.svg");
  EXPECT_NE(s.find("set title \"Train \\\"time\\\"\""), std::string::npos);
  EXPECT_NE(s.find("$s0 << EOD\n1 10\n2 20\nEOD\n"), std::string::npos) << s;  // sorted by x for lines
  EXPECT_NE(s.find("noenhanced"), std::string::npos);  // "a_b" stays a_b, not a subscript
}

TEST(Report, GnuplotDrawsAnInlineSvg) {
  if (!jobs::on_path("gnuplot")) GTEST_SKIP() << "gnuplot-nox is not installed (scripts/install_deps.sh)";
  const std::string svg = report::render_svg({"t", "x", "y", {{"s", {1, 2, 3}, {1, 4, 9}, {}, true}}, false, false});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("<path"), std::string::npos);
}

TEST(Report, HtmlEscapesText) {
  report::HtmlPage p("a < b");
  p.paragraph("x & \"y\"");
  const std::string h = p.html();
  EXPECT_NE(h.find("<title>a &lt; b</title>"), std::string::npos);
  EXPECT_NE(h.find("x &amp; &quot;y&quot;"), std::string::npos);
}

}  // namespace
}  // namespace strata::study
