// The study layer's parts on their own (src/study/, src/report/): the study spec and its
// grid, bad input with file and line, learning-rate scaling, the table's medians, spread and
// scaling efficiency, and the gnuplot charts. `strata study` end to end: tests/study/*.sh.
#include <gtest/gtest.h>

#include <cmath>

#include "jobs/instance_catalog.h"
#include "jobs/process.h"
#include "models/registry.h"
#include "report/gnuplot_chart.h"
#include "report/html_page.h"
#include "study/cell_plan.h"
#include "study/gpu_rank.h"
#include "study/link_model.h"
#include "study/projection.h"
#include "study/study_spec.h"
#include "study/study_table.h"
#include "test_util_fs.h"
#include "train/unit_profile.h"

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

// A profile made by hand: embeddings, 4 blocks, a head; a tied weight read by units 0 and 5.
UnitProfile hand_profile() {
  UnitProfile p;
  p.threads = 2;
  p.units = {{0.01, 0.02, 0, 0, 100}, {0.1, 0.2, 4e3, 4, 1000}, {0.1, 0.2, 4e3, 4, 1000},
             {0.1, 0.2, 4e3, 4, 1000}, {0.1, 0.2, 4e3, 4, 1000}, {0.02, 0.04, 0, 0, 10}};
  p.optimizer_s_per_value = 1e-6;
  p.boundary_bytes = 8e5;
  p.shared = {{400, {0, 5}}};
  return p;
}

TEST(Study, ProjectionLayoutsParse) {
  const std::string head = "projection: {instance_type: local.c2, instance_counts: [1, 4], link: datacenter-25gbit";
  EXPECT_EQ(parse("grid: {processes_per_host: [1]}\n", head + "}\n").projection.layouts, std::vector<std::string>{"{}"});
  const StudySpec s = parse("grid: {processes_per_host: [1]}\n",
                            head + ", layouts: [{tensor_parallel_degree: 2}, {pipeline_parallel_degree: 2, microbatches: 4}]}\n");
  EXPECT_EQ(s.projection.layouts,
            (std::vector<std::string>{"{tensor_parallel_degree: 2}", "{pipeline_parallel_degree: 2, microbatches: 4}"}));
  expect_error([&] { parse("grid: {processes_per_host: [1]}\n", head + ", layouts: [tp2]}\n"); },
               {"study.yaml line 5", "projection.layouts expects mappings of parallel options"});
  expect_error([&] { parse("grid: {processes_per_host: [1]}\n", head + ", layouts: []}\n"); },
               {"projection expects", "layouts: [{..}, ..]"});
}

TEST(Study, ProjectionOfDataParallelism) {
  const LinkModel shm{"shm", 1e-6, 4e9, ""}, net{"net", 1e-4, 1e8, ""};
  const UnitProfile p = hand_profile();
  const double units = 0.03 + 4 * 0.3 + 0.06, values = 4110, bytes = values * 4;
  EXPECT_DOUBLE_EQ(p.step_compute_s(), units + values * 1e-6);
  EXPECT_DOUBLE_EQ(other_seconds(2.0, p), 2.0 - p.step_compute_s());
  EXPECT_DOUBLE_EQ(other_seconds(0.1, p), 0.0);  // never negative
  ParallelLayout dp2;
  dp2.dp = 2;
  // One host of 2 ranks: shared memory; 4 hosts: the network sets the pace.
  const StepEstimate one = project_layout(p, dp2, {1, 2, 0, 2}, shm, net, 0.5);
  EXPECT_DOUBLE_EQ(one.compute_s, units + values * 1e-6 + 0.5);
  EXPECT_DOUBLE_EQ(one.bubble_s, 0);
  EXPECT_NEAR(one.comm_s, allreduce_seconds(shm, bytes, 2), 1e-15);
  ParallelLayout dp8 = dp2;
  dp8.dp = 8;
  EXPECT_NEAR(project_layout(p, dp8, {4, 2, 0, 2}, shm, net, 0.5).comm_s, 2.0 * 7 * 1e-4 + 2.0 * 7 / 8 * bytes / 1e8, 1e-15);
  // 4 two-thread ranks on a 2-core machine compute at a quarter of the speed; a rank of 4
  // threads on its own host at twice the profile's.
  ParallelLayout dp4 = dp2;
  dp4.dp = 4;
  EXPECT_DOUBLE_EQ(project_layout(p, dp4, {4, 1, 2, 2}, shm, net, 0.5).compute_s, 4 * one.compute_s);
  EXPECT_DOUBLE_EQ(project_layout(p, dp4, {4, 1, 0, 4}, shm, net, 0.5).compute_s, one.compute_s / 2);
  // ZeRO: each rank updates its 1/dp slice.
  ParallelLayout zero = dp2;
  zero.zero_stage = 1;
  EXPECT_DOUBLE_EQ(project_layout(p, zero, {1, 2, 0, 2}, shm, net, 0).compute_s, units + values / 2 * 1e-6);
}

TEST(Study, ProjectionOfPipelineAndTensorParallelism) {
  const LinkModel shm{"shm", 1e-6, 4e9, ""}, net{"net", 1e-4, 1e8, ""};
  const UnitProfile p = hand_profile();
  // Two stages of 2 blocks, 4 micro-batches, one rank per host: the stages talk over the network.
  ParallelLayout pipe;
  pipe.pp = 2;
  pipe.microbatches = 4;
  pipe.stage_blocks = {2, 2};
  const StepEstimate e = project_layout(p, pipe, {2, 1, 0, 2}, shm, net, 0);
  const double c0 = 0.03 + 0.6, c1 = 0.6 + 0.06, send = p2p_seconds(net, 8e5);
  const double t0 = c0 + send, t1 = c1 + send;
  EXPECT_DOUBLE_EQ(e.compute_s, 4 * c1 + 2100 * 1e-6);  // the slower stage's work, AdamW over the larger window
  EXPECT_NEAR(e.bubble_s, c0, 1e-12);                    // fill and drain: sum - max
  // The pipeline with its sends, less its work; the tied weight's gradient and values each way.
  EXPECT_NEAR(e.comm_s, (t0 + t1 + 3 * std::max(t0, t1)) - (c0 + c1 + 3 * c1) + 2 * p2p_seconds(net, 400), 1e-12);
  // Gradient accumulation repeats the pipeline, not the update.
  pipe.accumulation = 2;
  const double once_per_step = 2100e-6 + 2 * p2p_seconds(net, 400);
  EXPECT_NEAR(project_layout(p, pipe, {2, 1, 0, 2}, shm, net, 0).step_s(),
              2 * (e.step_s() - once_per_step) + once_per_step, 1e-12);
  // Tensor parallelism over 2 ranks of one host: each block's 4 all-reduces of 1 kB over shared
  // memory; over 2 hosts of one rank each, the network.
  ParallelLayout tensor;
  tensor.tp = 2;
  const StepEstimate in_host = project_layout(p, tensor, {1, 2, 0, 2}, shm, net, 0);
  EXPECT_NEAR(in_host.comm_s, 16 * allreduce_seconds(shm, 1e3, 2), 1e-15);
  EXPECT_NEAR(project_layout(p, tensor, {2, 1, 0, 2}, shm, net, 0).comm_s, 16 * allreduce_seconds(net, 1e3, 2), 1e-15);
  expect_error([&] {
    ParallelLayout bad = pipe;
    bad.stage_blocks = {2, 1};
    project_layout(p, bad, {1, 2, 0, 2}, shm, net, 0);
  }, {"add up to 3", "the profile has 4"});
}

TEST(Study, UnitProfileCountsTheTensorParallelTraffic) {
  // A tiny masked-LM BERT: 3 blocks, hidden 8, 2 heads; its decoder is tied to the word embeddings.
  const ModelConfig cfg = parse_model_config(
      {{"model_type", "bert"}, {"architectures", {"BertForMaskedLM"}}, {"vocab_size", 40}, {"hidden_size", 8},
       {"num_hidden_layers", 3}, {"num_attention_heads", 2}, {"intermediate_size", 16}, {"max_position_embeddings", 16},
       {"type_vocab_size", 2}, {"hidden_dropout_prob", 0.1}, {"attention_probs_dropout_prob", 0.1}},
      "tiny bert");
  const UnitProfile whole = profile_units(cfg, 2, 6, 1, 1, 2);
  ASSERT_EQ(whole.units.size(), 5u);
  double owned = 0;
  for (const UnitWork& u : whole.units) {
    EXPECT_GT(u.forward_s, 0);
    EXPECT_GT(u.backward_s, 0);
    EXPECT_GE(u.forward_ops, 2);  // ops counted at their outermost call: a block runs tens of them
    EXPECT_GE(u.backward_ops, 2);
    EXPECT_EQ(u.tp_calls, 0);
    owned += u.owned_values;
  }
  EXPECT_DOUBLE_EQ(owned, static_cast<double>(make_model<float>(cfg)->table().total()));
  EXPECT_GT(whole.units[1].forward_ops, 10);  // a block's share of the blocks' ops
  EXPECT_DOUBLE_EQ(whole.boundary_bytes, 2 * 6 * 8 * 4);
  ASSERT_EQ(whole.shared.size(), 1u);  // the tied word embeddings
  EXPECT_EQ(whole.shared[0].units, (std::vector<int>{0, 4}));
  EXPECT_DOUBLE_EQ(whole.shared[0].bytes, 40 * 8 * 4);
  // Rank 0 of 2: each block all-reduces [B*T, C] twice forward and twice backward (Megatron).
  const UnitProfile half = profile_units(cfg, 2, 6, 2, 1, 2);
  for (int u = 1; u <= 3; ++u) {
    EXPECT_DOUBLE_EQ(half.units[u].tp_calls, 4);
    EXPECT_DOUBLE_EQ(half.units[u].tp_bytes, 4 * 2 * 6 * 8 * 4);
  }
  EXPECT_GT(half.units[0].tp_calls, 0);  // the vocabulary-parallel lookup
  EXPECT_LT(half.units[1].owned_values, whole.units[1].owned_values);
  const UnitProfile back = UnitProfile::from_json(half.to_json());
  EXPECT_EQ(back.to_json(), half.to_json());
}

TEST(Study, LinksFileIsReadAndFitted) {
  const std::vector<LinkModel> links = load_links(test::source_dir() + "/catalog/links.yaml");
  const LinkModel& shm = find_link(links, "shm", "test");
  const LinkModel& net = find_link(links, "netns-100mbit", "test");
  EXPECT_GT(shm.bandwidth_bytes_per_s, 1e9);  // shared memory: GB/s
  EXPECT_LT(net.bandwidth_bytes_per_s, 12.5e6);  // no faster than the 100 Mbit/s limit
  expect_error([&] { find_link(links, "shn", "--link"); }, {"--link: no link 'shn'", "did you mean 'shm'"});
}

TEST(Study, GpuCatalogIsReadAndChecked) {
  const GpuCatalog c = GpuCatalog::load(test::source_dir() + "/catalog/gpus.yaml");
  const GpuModel& a100 = c.at("a100-sxm4-40gb", "t");
  EXPECT_DOUBLE_EQ(a100.peak_flops.at("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(a100.memory_bytes_per_s, 1555e9);
  EXPECT_EQ(c.matching("NVIDIA H100 80GB HBM3"), &c.at("h100-sxm5-80gb", "t"));
  EXPECT_EQ(c.matching("NVIDIA H200"), &c.at("h200-sxm-141gb", "t"));
  EXPECT_EQ(c.matching("Tesla T4"), nullptr);
  EXPECT_NE(c.achieved(a100).source.find("assumed"), std::string::npos);  // nothing measured yet
  expect_error([&] { c.at("a100-sxm4-40g", "instances.yaml: ml.p4d.24xlarge.gpu"); },
               {"ml.p4d.24xlarge.gpu: no GPU 'a100-sxm4-40g'", "did you mean 'a100-sxm4-40gb'"});
  const std::string assumed =
      "assumed: {products: {fp32: 0.5, tf32: 0.4, bf16: 0.3, fp16: 0.3}, memory: 0.7, launch_us: 4, source: s}\n";
  const std::string gpu = "  g: {match: G, memory_gib: 8, memory_gbs: 100, tflops: {fp32: 10, bf16: 80}, source: s";
  const GpuCatalog one = GpuCatalog::parse(assumed + "gpus:\n" + gpu + ", achieved: {products: {bf16: 0.5}, memory: 0.9, source: m}}\n", "g.yaml");
  EXPECT_DOUBLE_EQ(one.achieved(one.at("g", "t")).products.at("bf16"), 0.5);  // measured beats assumed
  EXPECT_DOUBLE_EQ(one.achieved(one.at("g", "t")).launch_s, 4e-6);             // the assumed launch, where none measured
  expect_error([&] { GpuCatalog::parse(assumed + "gpus:\n" + gpu + ", memory_gbps: 1}\n", "g.yaml"); },
               {"g.yaml line 3: g: unknown field 'memory_gbps'", "did you mean 'memory_gbs'"});
  expect_error([&] { GpuCatalog::parse(assumed + "gpus:\n" + gpu + ", tflops: {fp23: 1}}\n", "g.yaml"); },
               {"g.yaml line 3: g.tflops.fp23: unknown precision", "did you mean 'fp32'"});
  expect_error([&] { GpuCatalog::parse(assumed + "gpus:\n" + gpu + ", achieved: {products: {bf16: 1.5}, memory: 0.9, source: m}}\n", "g.yaml"); },
               {"g.achieved.products.bf16 is 1.5: at most 1"});
  expect_error([&] { GpuCatalog::parse(assumed + "gpus:\n  g: {match: G, memory_gib: 8, tflops: {fp32: 1}, source: s}\n", "g.yaml"); },
               {"g.yaml line 3: g: field 'memory_gbs' is missing"});
  expect_error([&] { GpuCatalog::parse(assumed + "gpus:\n  g: {match: G, memory_gib: 8, memory_gbs: 1, tflops: {bf16: 80}, source: s}\n", "g.yaml"); },
               {"g.tflops: every GPU needs its fp32 peak"});
  expect_error([&] { GpuCatalog::parse("gpus: {}\n", "g.yaml"); }, {"g.yaml: expected {assumed:"});
  expect_error([&] { GpuCatalog::parse("assumed: {products: {fp32: 0.5}, memory: 0.7, source: s}\ngpus: {}\n", "g.yaml"); },
               {"assumed.products needs a fraction for tf32"});
  expect_error([&] {
    GpuCatalog::parse("assumed: {products: {fp32: 0.5, tf32: 0.4, bf16: 0.3, fp16: 0.3}, memory: 0.7, source: s}\ngpus: {}\n",
                      "g.yaml");
  }, {"g.yaml: assumed.launch_us", "is missing"});
}

TEST(Study, ShippedGpuTypesNameKnownGpusAndLinks) {
  const jobs::InstanceCatalog types = jobs::InstanceCatalog::load(test::source_dir() + "/catalog/instances.yaml");
  const GpuCatalog gpus = GpuCatalog::load(test::source_dir() + "/catalog/gpus.yaml");
  const std::vector<LinkModel> links = load_links(test::source_dir() + "/catalog/links.yaml");
  int gpu_types = 0;
  for (const jobs::InstanceType& t : types.types()) {
    if (!t.gpu.empty()) {
      gpus.at(t.gpu, t.name);
      ++gpu_types;
    }
    if (!t.link_within.empty()) {
      EXPECT_GT(find_link(links, t.link_within, t.name).bandwidth_bytes_per_s, 1e10) << t.name;
    }
    if (!t.link_between.empty()) find_link(links, t.link_between, t.name);
  }
  EXPECT_EQ(gpu_types, 4);  // ml.p3.2xlarge, .8xlarge, .16xlarge, ml.p4d.24xlarge
}

TEST(Study, GpuRanksComputeTheirUnitsFlopsAtTheAchievedRate) {
  const GpuCatalog gpus = GpuCatalog::load(test::source_dir() + "/catalog/gpus.yaml");
  const GpuModel& v100 = gpus.at("v100-sxm2-16gb", "t");
  // TF32 on a GPU without it runs fp32 (as PyTorch does); bf16 without tensor cores for it is refused.
  EXPECT_DOUBLE_EQ(gpu_peak_flops(v100, "tf32", "t"), v100.peak_flops.at("fp32"));
  expect_error([&] { gpu_peak_flops(v100, "bf16", "ml.p3.16xlarge"); },
               {"ml.p3.16xlarge: v100-sxm2-16gb has no bf16 tensor cores", "train in fp16 or fp32 there"});
  TrainingArguments a;
  EXPECT_EQ(gpu_product_precision(a), "fp32");
  a.tf32 = true;
  EXPECT_EQ(gpu_product_precision(a), "tf32");
  a.bf16 = true;
  EXPECT_EQ(gpu_product_precision(a), "bf16");

  GpuRanks g{gpus.at("a100-sxm4-40gb", "t"), {{{"bf16", 0.5}}, 0.8, 5e-6, "test"}, "bf16", 312e12};
  UnitProfile cpu = hand_profile();
  for (UnitWork& w : cpu.units) w.forward_ops = w.backward_ops = 10;
  cpu.units[0].forward_ops = 1000;
  const std::vector<double> flops = {3e9, 3e12, 3e12, 3e12, 3e12, 6e11};
  const UnitProfile on_gpu = gpu_rank_profile(cpu, flops, g);
  const double rate = 312e12 * 0.5;
  EXPECT_EQ(on_gpu.threads, 1);
  EXPECT_DOUBLE_EQ(on_gpu.units[1].forward_s, 1e12 / rate);  // a third forward, two thirds backward
  EXPECT_DOUBLE_EQ(on_gpu.units[1].backward_s, 2e12 / rate);
  EXPECT_DOUBLE_EQ(on_gpu.units[5].backward_s, 4e11 / rate);
  // A unit is never faster than its launches: 6 us of forward compute and 5 ms of launches, 13 us
  // of backward compute and 50 us of launches.
  EXPECT_DOUBLE_EQ(on_gpu.units[0].forward_s, 1000 * 5e-6);
  EXPECT_DOUBLE_EQ(on_gpu.units[0].backward_s, 10 * 5e-6);
  EXPECT_DOUBLE_EQ(on_gpu.optimizer_s_per_value, 28 / (1555e9 * 0.8));
  // What a rank sends and owns stays the CPU profile's.
  EXPECT_EQ(on_gpu.units[1].tp_bytes, cpu.units[1].tp_bytes);
  EXPECT_EQ(on_gpu.units[1].owned_values, cpu.units[1].owned_values);
  EXPECT_EQ(on_gpu.boundary_bytes, cpu.boundary_bytes);
  // A profile measured at some rate gives that rate back as the fraction of the peak.
  EXPECT_NEAR(achieved_fraction(gpu_rank_profile(hand_profile(), flops, g), flops, 312e12), 0.5, 1e-12);
  expect_error([&] { gpu_rank_profile(cpu, {1, 2}, g); }, {"2 unit FLOP counts for a profile of 6 units"});

  // 8 ranks in one host all-reduce over its NVSwitch; 16 over two hosts cross the network.
  const std::vector<LinkModel> links = load_links(test::source_dir() + "/catalog/links.yaml");
  const LinkModel& nvswitch = find_link(links, "nvswitch-a100", "t");
  const LinkModel& efa = find_link(links, "efa-p4d", "t");
  ParallelLayout dp;
  dp.dp = 8;
  const double values = 4110;  // the hand profile's owned parameter values
  const StepEstimate one_host = project_layout(on_gpu, dp, {1, 8, 0, 1}, nvswitch, efa, 0.01);
  EXPECT_NEAR(one_host.compute_s, on_gpu.layer_units_s() + values * on_gpu.optimizer_s_per_value + 0.01, 1e-12);
  EXPECT_NEAR(one_host.comm_s, allreduce_seconds(nvswitch, values * 4, 8), 1e-15);
  dp.dp = 16;
  EXPECT_NEAR(project_layout(on_gpu, dp, {2, 8, 0, 1}, nvswitch, efa, 0.01).comm_s, allreduce_seconds(efa, values * 4, 16),
              1e-15);
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
