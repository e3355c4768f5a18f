// The study layer's parts on their own (src/study/, src/report/): the study spec and its
// grid, bad input with file and line, learning-rate scaling, the table's medians, spread and
// scaling efficiency, and the gnuplot charts. `strata study` end to end: tests/study/*.sh.
#include <gtest/gtest.h>

#include <cmath>

#include "jobs/process.h"
#include "report/gnuplot_chart.h"
#include "report/html_page.h"
#include "study/cell_plan.h"
#include "study/link_model.h"
#include "study/projection.h"
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

TEST(Study, LinkFitRecoversLatencyAndBandwidth) {
  // Times made by the ring model itself with 20 us and 2 GB/s over 4 ranks: the fit gives them back.
  const LinkModel truth{"t", 20e-6, 2e9, ""};
  std::vector<std::pair<double, double>> pts;
  for (double n : {4.0, 65536.0, 1048576.0, 16777216.0}) pts.emplace_back(n, allreduce_seconds(truth, n, 4));
  const LinkModel fit = fit_link("t", pts, 4);
  EXPECT_NEAR(fit.latency_s, 20e-6, 1e-9);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s, 2e9, 1e3);
  EXPECT_DOUBLE_EQ(allreduce_seconds(fit, 1e6, 1), 0.0);  // one rank all-reduces nothing
  expect_error([] { fit_link("x", {{1, 1}}, 2); }, {"link x", "at least 2 measured sizes"});
  expect_error([] { fit_link("x", {{1, 2}, {100, 1}}, 2); }, {"do not grow with the size"});
}

TEST(Study, ProjectionAddsTheSlowerLinkAndSharedCores) {
  const LinkModel shm{"shm", 1e-6, 4e9, ""}, net{"net", 1e-4, 1e8, ""};
  const double bytes = 8e6;
  // One host of 2 ranks: shared memory; 4 hosts: the network sets the pace.
  const StepEstimate one = project_step(0.5, bytes, {1, 2, 0, 1}, shm, net);
  EXPECT_DOUBLE_EQ(one.compute_s, 0.5);
  EXPECT_DOUBLE_EQ(one.comm_s, allreduce_seconds(shm, bytes, 2));
  const StepEstimate four = project_step(0.5, bytes, {4, 2, 0, 1}, shm, net);
  EXPECT_DOUBLE_EQ(four.comm_s, 2.0 * 7 * 1e-4 + 2.0 * 7 / 8 * bytes / 1e8);
  // 4 one-thread ranks on a 2-core machine compute at half speed.
  EXPECT_DOUBLE_EQ(project_step(0.5, bytes, {4, 1, 2, 1}, shm, net).compute_s, 1.0);
}

TEST(Study, LinksFileIsReadAndFitted) {
  const std::vector<LinkModel> links = load_links(std::string(STRATA_SOURCE_DIR) + "/catalog/links.yaml");
  const LinkModel& shm = find_link(links, "shm", "test");
  const LinkModel& net = find_link(links, "netns-100mbit", "test");
  EXPECT_GT(shm.bandwidth_bytes_per_s, 1e9);  // shared memory: GB/s
  EXPECT_LT(net.bandwidth_bytes_per_s, 12.5e6);  // no faster than the 100 Mbit/s limit
  expect_error([&] { find_link(links, "shn", "--link"); }, {"--link: no link 'shn'", "did you mean 'shm'"});
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
