// The job layer's parts on their own (src/jobs/): the spec and its checks, the instance
// catalog, billing arithmetic, the checkpoint store's atomic upload and download, the plan
// (ranks, threads, hostfile slots, missing Slurm tools), the Slurm batch script, and what a
// script entry point is given (arguments, SM_* variables). The
// runners themselves are tested end to end by tests/jobs/*.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "jobs/attempt.h"
#include "jobs/billing.h"
#include "jobs/checkpoint_store.h"
#include "jobs/instance_catalog.h"
#include "jobs/job_plan.h"
#include "jobs/job_record.h"
#include "jobs/job_spec.h"
#include "jobs/script_entry.h"
#include "jobs/slurm.h"
#include "test_util_fs.h"

namespace strata::jobs {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::write_text;

const std::string kCatalog = test::source_dir() + "/catalog/instances.yaml";

// A minimal valid spec; `extra` lines are appended.
std::string spec_text(const std::string& extra = "", const std::string& instance_type = "local.c1") {
  return "instance_type: " + instance_type + "\n" +
         "training_config: {model_name_or_path: m, train_file: t.csv, output_dir: o}\n" + extra;
}

TEST(JobSpec, EstimatorNamesAndDefaults) {
  const JobSpec s = parse_job_spec(spec_text("base_job_name: spam\ninstance_count: 2\ncheckpoint_s3_uri: file:///x\n"
                                             "use_spot_instances: true\nmax_run: 100\nmax_wait: 200\n"
                                             "hyperparameters: {learning_rate: 1.0e-4, text_column: 'a: b'}\n"
                                             "environment: {FOO: bar}\n"),
                                   "job.yaml");
  EXPECT_EQ(s.base_job_name, "spam");
  EXPECT_EQ(s.instance_count, 2);
  EXPECT_EQ(s.checkpoint_uri, "file:///x");  // the Estimator's spelling is an alias
  EXPECT_TRUE(s.use_spot_instances);
  EXPECT_EQ(s.max_run, 100);
  EXPECT_EQ(s.max_wait, 200);
  ASSERT_EQ(s.hyperparameters.size(), 2u);
  EXPECT_EQ(s.hyperparameters[1].second, "\"a: b\"");  // stays one string when parsed again
  EXPECT_EQ(s.environment[0], (std::pair<std::string, std::string>{"FOO", "bar"}));
  EXPECT_EQ(s.backend, Backend::Local);
  EXPECT_EQ(s.output_path, "out/jobs");
  EXPECT_EQ(s.termination_grace_period, 120);
}

TEST(JobSpec, InterruptionsComeAfterSecondsOrAfterAStep) {
  const JobSpec s =
      parse_job_spec(spec_text("use_spot_instances: true\nsimulate_interruptions: [30, {at_step: 200}, 0.5]\n"), "job.yaml");
  ASSERT_EQ(s.simulate_interruptions.size(), 3u);
  EXPECT_FALSE(s.simulate_interruptions[0].at_step());
  EXPECT_EQ(s.simulate_interruptions[0].seconds, 30);
  EXPECT_TRUE(s.simulate_interruptions[1].at_step());
  EXPECT_EQ(s.simulate_interruptions[1].step, 200);
  EXPECT_EQ(s.simulate_interruptions[2].seconds, 0.5);
  for (const char* bad : {"[{at_step: 0}]", "[{at_step: x}]", "[{after: 3}]", "[{at_step: 3, seconds: 2}]", "[-1]"})
    expect_error([&] { parse_job_spec(spec_text("use_spot_instances: true\nsimulate_interruptions: " + std::string(bad) + "\n"), "j.yaml"); },
                 {"j.yaml line 4", "simulate_interruptions expects"});
}

TEST(JobSpec, BadInputNamesTheLineAndTheFix) {
  expect_error([] { parse_job_spec(spec_text("instance_tipe: x\n"), "job.yaml"); },
               {"job.yaml line 3", "unknown job option 'instance_tipe'", "did you mean 'instance_type'"});
  expect_error([] { parse_job_spec(spec_text("use_spot_instances: true\nmax_run: 100\nmax_wait: 50\n"), "job.yaml"); },
               {"job.yaml line 5", "max_wait (50 s) must be at least max_run (100 s)"});
  expect_error([] { parse_job_spec(spec_text("max_wait: 500\n"), "job.yaml"); },
               {"job.yaml line 3", "max_wait", "needs use_spot_instances: true"});
  expect_error([] { parse_job_spec(spec_text("simulate_interruptions: [5]\n"), "job.yaml"); },
               {"only spot capacity is interrupted"});
  expect_error([] { parse_job_spec(spec_text("hostfile: h.txt\n"), "job.yaml"); }, {"backend: hostfile only"});
  expect_error([] { parse_job_spec(spec_text("backend: hostfile\n"), "job.yaml"); }, {"backend hostfile needs hostfile"});
  expect_error([] { parse_job_spec(spec_text("backend: k8s\n"), "job.yaml"); }, {"expected local, hostfile or slurm"});
  expect_error([] { parse_job_spec(spec_text("instance_count: 0\n"), "job.yaml"); }, {"instance_count expects an integer >= 1"});
  expect_error([] { parse_job_spec(spec_text("checkpoint_uri: a\ncheckpoint_s3_uri: b\n"), "job.yaml"); },
               {"line 4", "already set at line 3"});
  expect_error([] { parse_job_spec("training_config: {model_name_or_path: m}\n", "job.yaml"); },
               {"instance_type is required"});
  expect_error([] { parse_job_spec(spec_text("environment: {1BAD: x}\n"), "job.yaml"); }, {"'1BAD' is not a valid name"});
}

TEST(JobSpec, HyperparametersOverrideTheTrainingConfigAsSetDoes) {
  JobSpec s = parse_job_spec(spec_text("hyperparameters: {learning_rate: 1.0e-4, max_steps: 7}\n"
                                       "distribution: {dataparallel: {enabled: true}}\n"),
                             "job.yaml");
  const TrainingArguments a =
      parse_training_arguments(effective_training_config(s, {{"output_dir", "/abs/out"}}), "effective");
  EXPECT_DOUBLE_EQ(a.learning_rate, 1e-4);
  EXPECT_EQ(a.max_steps, 7);
  EXPECT_EQ(a.output_dir, "/abs/out");
  EXPECT_TRUE(a.dataparallel_enabled);  // distribution became the training config's own key

  s = parse_job_spec(spec_text("hyperparameters: {lerning_rate: 1.0e-4}\n"), "job.yaml");
  expect_error([&] { effective_training_config(s, {}); },
               {"job.yaml hyperparameters:", "unknown option 'lerning_rate'", "did you mean 'learning_rate'"});
  s = parse_job_spec(spec_text("hyperparameters: {max_steps: many}\n"), "job.yaml");
  expect_error([&] { effective_training_config(s, {}); }, {"job.yaml hyperparameters: max_steps", "expects an integer"});
  s = parse_job_spec("instance_type: x\ndistribution: {dataparallel: {enabled: true}}\ntraining_config: "
                     "{model_name_or_path: m, train_file: t, output_dir: o, distribution: {dataparallel: {enabled: true}}}\n",
                     "job.yaml");
  expect_error([&] { effective_training_config(s, {}); }, {"distribution is set both here and in", "keep one"});
}

// A spec whose ranks run `script` (a path), with `extra` lines appended.
std::string script_spec(const std::string& script, const std::string& extra = "") {
  return "instance_type: local.c1\nentry_point: " + script + "\n" + extra;
}

TEST(JobSpec, EntryPointRunsAScriptInsteadOfATrainingConfig) {
  test::ScratchDir dir;
  const std::string script = dir.path("train.py");
  write_text(script, "print('hi')\n");
  const JobSpec s = parse_job_spec(script_spec(script, "hyperparameters: {epochs: 3}\n"), "job.yaml");
  EXPECT_TRUE(s.runs_script());
  EXPECT_EQ(s.entry_point, script);
  EXPECT_EQ(s.python, "python3");
  EXPECT_TRUE(s.training_config_yaml.empty());
  EXPECT_FALSE(parse_job_spec(spec_text(), "job.yaml").runs_script());
  EXPECT_EQ(parse_job_spec(script_spec(script, "python: /opt/py/bin/python\n"), "job.yaml").python, "/opt/py/bin/python");

  expect_error([&] { parse_job_spec(spec_text("entry_point: " + script + "\n"), "job.yaml"); },
               {"job.yaml line 3", "entry_point (a Python script) and training_config", "are alternatives; keep one"});
  expect_error([] { parse_job_spec("instance_type: local.c1\n", "job.yaml"); },
               {"job.yaml: training_config or entry_point is required"});
  expect_error([&] { parse_job_spec(script_spec(dir.path("nope.py")), "job.yaml"); },
               {"job.yaml line 2: entry_point " + dir.path("nope.py") + " does not exist"});
  expect_error([&] { parse_job_spec(script_spec(dir.path()), "job.yaml"); },
               {"job.yaml line 2: entry_point " + dir.path() + " is not a file"});
  expect_error([&] { parse_job_spec(script_spec(dir.path("train.yaml")), "job.yaml"); },
               {"entry_point runs a Python script", "looks like a strata train configuration: give it as training_config"});
  expect_error([] { parse_job_spec(spec_text("python: python3\n"), "job.yaml"); },
               {"job.yaml line 3: python is the interpreter of entry_point, and this job has none"});
}

TEST(JobSpec, YamlToJsonTypesPlainScalarsAsYaml12Does) {
  const nlohmann::json j = yaml_to_json(
      "{i: 3, f: 5e-5, g: 1.5, t: true, F: False, n: null, e: ~, s: abc, q: '3', qt: 'true', inf: .inf, "
      "list: [1, x], map: {a: 0x10}}",
      "t.yaml");
  EXPECT_EQ(j["i"], 3);
  EXPECT_TRUE(j["i"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["f"].get<double>(), 5e-5);
  EXPECT_DOUBLE_EQ(j["g"].get<double>(), 1.5);
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["F"], false);
  EXPECT_TRUE(j["n"].is_null());
  EXPECT_TRUE(j["e"].is_null());
  EXPECT_EQ(j["s"], "abc");
  EXPECT_EQ(j["q"], "3");  // quoted: a string
  EXPECT_EQ(j["qt"], "true");
  EXPECT_EQ(j["inf"], ".inf");  // JSON has no infinity
  EXPECT_EQ(j["list"], nlohmann::json::parse(R"([1, "x"])"));
  EXPECT_EQ(j["map"]["a"], "0x10");  // not a YAML 1.2 core int
}

TEST(ScriptEntry, HyperparametersAreArgumentsAsSageMakersToolkitPassesThem) {
  const JobSpec s = parse_job_spec(
      spec_text("hyperparameters: {learning_rate: 5e-5, epochs: 3, fp16: true, debug: False, name: 'a b', q: '3', k: 1}\n"),
      "job.yaml");
  // Sorted by name, a one-letter name with one dash, booleans as Python writes them.
  EXPECT_EQ(script_arguments(s.hyperparameters),
            (std::vector<std::string>{"--debug", "False", "--epochs", "3", "--fp16", "True", "-k", "1", "--learning_rate",
                                      "5e-5", "--name", "a b", "-q", "3"}));
  const nlohmann::json hps = typed_hyperparameters(s.hyperparameters, "job.yaml");
  EXPECT_EQ(hps, nlohmann::json::parse(
                     R"({"learning_rate": 5e-5, "epochs": 3, "fp16": true, "debug": false, "name": "a b", "q": "3", "k": 1})"));
}

TEST(ScriptEntry, EachRankKnowsItsHost) {
  std::map<std::string, std::string> vars;
  const EnvLookup env = [&](const char* n) { return vars.count(n) ? vars.at(n).c_str() : nullptr; };
  const auto no_slurm = [](const std::string&) -> std::vector<std::string> { ADD_FAILURE(); return {}; };
  JobPlan p;
  p.instance_count = 2;
  p.ranks_per_host = 2;
  vars["OMPI_COMM_WORLD_RANK"] = "3";  // mpirun fills the hosts in order
  RankPlace r = rank_place(p, env, no_slurm);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"algo-1", "algo-2"}));  // SageMaker's names: all are this machine
  EXPECT_EQ(r.current_host, "algo-2");
  p.backend = Backend::Hostfile;
  p.hosts = {"node1", "node2"};
  vars["OMPI_COMM_WORLD_RANK"] = "1";
  r = rank_place(p, env, no_slurm);
  EXPECT_EQ(r.hosts, p.hosts);
  EXPECT_EQ(r.current_host, "node1");
  p.backend = Backend::Slurm;
  vars = {{"SLURM_PROCID", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURMD_NODENAME", "n2"}};
  r = rank_place(p, env, [](const std::string& list) {
    EXPECT_EQ(list, "n[1-2]");
    return std::vector<std::string>{"n1", "n2"};
  });
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(r.current_host, "n2");
  vars.clear();  // a lone rank, started by the runner itself
  p.backend = Backend::Local;
  p.instance_count = 1;
  r = rank_place(p, env, no_slurm);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.current_host, "algo-1");
}

TEST(ScriptEntry, TheEnvironmentIsSageMakersPlusTheCheckpoints) {
  JobPlan p;
  p.name = "spam-1";
  p.job_dir = "/jobs/spam-1";
  p.local_dir = "/jobs/spam-1/work";
  p.entry_point = "/src/train.py";
  p.python = "python3";
  p.threads_per_rank = 2;
  p.ranks_per_host = 2;
  p.instance.gpus = 2;  // one per rank: SM_NUM_GPUS says the instance type's
  p.script_arguments = {"--epochs", "3", "-k", "x"};
  p.hyperparameters = {{"epochs", 3}, {"k", "x"}};
  const RankPlace place{1, {"algo-1", "algo-2"}, "algo-2"};
  std::map<std::string, std::string> env;
  for (const std::string& kv : script_environment(p, place, "", {{"train", "/data/train.csv"}}))
    env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  EXPECT_EQ(env["SM_MODEL_DIR"], "/jobs/spam-1/output/model");
  EXPECT_EQ(env["SM_OUTPUT_DATA_DIR"], "/jobs/spam-1/output/data");
  EXPECT_EQ(env["SM_CHECKPOINT_DIR"], "/jobs/spam-1/work");
  EXPECT_EQ(nlohmann::json::parse(env["SM_HPS"]), p.hyperparameters);
  EXPECT_EQ(env["SM_HP_EPOCHS"], "3");
  EXPECT_EQ(env["SM_HP_K"], "x");
  EXPECT_EQ(env["SM_NUM_GPUS"], "2");
  EXPECT_EQ(env["SM_NUM_CPUS"], "4");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "2");
  EXPECT_EQ(env["SM_HOSTS"], R"(["algo-1","algo-2"])");
  EXPECT_EQ(env["SM_CURRENT_HOST"], "algo-2");
  EXPECT_EQ(env["SM_CHANNELS"], R"(["train"])");
  EXPECT_EQ(env["SM_MODULE_NAME"], "train");
  EXPECT_EQ(env["TRAINING_JOB_NAME"], "spam-1");
  EXPECT_EQ(env.count("STRATA_RESUME_FROM_CHECKPOINT"), 0u);  // a fresh start
  const nlohmann::json t = nlohmann::json::parse(env["SM_TRAINING_ENV"]);
  EXPECT_EQ(t["channel_input_dirs"]["train"], "/data/train.csv");
  EXPECT_EQ(t["is_master"], false);  // algo-1 is
  EXPECT_EQ(t["master_hostname"], "algo-1");
  EXPECT_EQ(t["user_entry_point"], "train.py");
  const auto resumed = script_environment(p, place, "/jobs/spam-1/work/checkpoint-7", {});
  EXPECT_NE(std::find(resumed.begin(), resumed.end(), "STRATA_RESUME_FROM_CHECKPOINT=/jobs/spam-1/work/checkpoint-7"),
            resumed.end());
  EXPECT_EQ(script_argv(p), (std::vector<std::string>{"python3", "/src/train.py", "--epochs", "3", "-k", "x"}));
}

TEST(InstanceCatalog, ShipsTheSeedPricesAndChecksEntries) {
  const InstanceCatalog c = InstanceCatalog::load(kCatalog);
  EXPECT_DOUBLE_EQ(c.at("ml.p3.2xlarge", "t").on_demand_usd_per_hour, 3.825);
  EXPECT_DOUBLE_EQ(c.at("ml.p3.8xlarge", "t").on_demand_usd_per_hour, 14.688);
  EXPECT_DOUBLE_EQ(c.at("ml.p3.16xlarge", "t").on_demand_usd_per_hour, 28.152);
  EXPECT_EQ(c.at("ml.p3.16xlarge", "t").gpus, 8);
  EXPECT_EQ(c.at("ml.p4d.24xlarge", "t").gpus, 8);
  EXPECT_EQ(c.at("local.c2", "t").cores, 2);
  expect_error([&] { c.at("ml.p3.2xlarg", "job.yaml"); },
               {"job.yaml", "instance_type 'ml.p3.2xlarg' is not in the instance catalog", "did you mean 'ml.p3.2xlarge'"});
  const std::string ok = "cores: 2, gpus: 0, memory_gib: 4, on_demand_usd_per_hour: 1.0";
  expect_error([&] { InstanceCatalog::parse("a: {" + ok + ", spot_usd_per_hour: 2.0}\n", "cat.yaml"); },
               {"cat.yaml line 1: a", "spot_usd_per_hour (2) is above on_demand_usd_per_hour (1)"});
  expect_error([&] { InstanceCatalog::parse("a: {" + ok + "}\n", "cat.yaml"); }, {"field 'spot_usd_per_hour' is missing"});
  expect_error([&] { InstanceCatalog::parse("a: {" + ok + ", spot_usd_per_hour: 0.5, core: 2}\n", "cat.yaml"); },
               {"unknown field 'core'", "did you mean 'cores'"});
  // The projection's fields: a GPU model and links, optional; a GPU model needs GPUs.
  EXPECT_EQ(c.at("ml.p4d.24xlarge", "t").gpu, "a100-sxm4-40gb");
  EXPECT_EQ(c.at("ml.p4d.24xlarge", "t").link_between, "efa-p4d");
  EXPECT_EQ(c.at("local.c2", "t").gpu, "");
  expect_error([&] { InstanceCatalog::parse("a: {" + ok + ", spot_usd_per_hour: 0.5, gpu: a100-sxm4-40gb}\n", "cat.yaml"); },
               {"cat.yaml line 1: a", "names a gpu model (a100-sxm4-40gb) but has gpus: 0"});
  expect_error([&] { InstanceCatalog::parse("a: {" + ok + ", spot_usd_per_hour: 0.5, link_betwen: x}\n", "cat.yaml"); },
               {"unknown field 'link_betwen'", "did you mean 'link_between'"});
}

TEST(Billing, CostIsBillableSecondsTimesInstancesTimesHourlyPrice) {
  Billing b;
  b.training_seconds = 5000;
  b.billable_seconds = 3600;
  b.instance_count = 2;
  b.on_demand_usd_per_hour = 3.825;
  b.spot_usd_per_hour = 1.1475;
  EXPECT_DOUBLE_EQ(b.cost_usd(), 2 * 3.825);  // on demand
  EXPECT_DOUBLE_EQ(b.spot_savings_percent(), 0);
  b.spot = true;
  EXPECT_NEAR(b.cost_usd(), 2 * 1.1475, 1e-12);
  EXPECT_NEAR(b.on_demand_cost_usd(), 2 * 3.825, 1e-12);
  EXPECT_NEAR(b.spot_savings_percent(), 70.0, 1e-9);
  const std::string r = b.report();
  EXPECT_NE(r.find("Training seconds: 5000\nBillable seconds: 3600\nManaged Spot Training savings: 70.0%"), std::string::npos)
      << r;
  EXPECT_EQ(b.to_json()["cost_usd"], 2.295);
}

class Store : public testing::Test {
 protected:
  // A checkpoint directory as the Trainer writes one (what matters here: complete = renamed).
  void make_checkpoint(const std::string& dir, int step) {
    const fs::path p = fs::path(dir) / ("checkpoint-" + std::to_string(step));
    fs::create_directories(p);
    write_text((p / "trainer_state.json").string(), "{\"global_step\": " + std::to_string(step) + "}");
    write_text((p / "model.safetensors").string(), std::string(1000, static_cast<char>('a' + step % 26)));
  }
  std::vector<std::string> names(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  test::ScratchDir dir_;
};

TEST_F(Store, UploadIsAtomicAndMirrorsRotation) {
  const std::string local = dir_.path("local"), uri = dir_.path("uri");
  const CheckpointStore store(uri);
  store.check_writable("job.yaml");
  make_checkpoint(local, 10);
  make_checkpoint(local, 20);
  EXPECT_EQ(store.upload(local), (std::vector<std::string>{"checkpoint-10", "checkpoint-20"}));
  EXPECT_EQ(store.upload(local), std::vector<std::string>{});  // nothing new
  // The trainer rotated checkpoint-10 away and wrote checkpoint-30: the store follows.
  fs::remove_all(fs::path(local) / "checkpoint-10");
  make_checkpoint(local, 30);
  EXPECT_EQ(store.upload(local), std::vector<std::string>{"checkpoint-30"});
  EXPECT_EQ(names(uri), (std::vector<std::string>{"checkpoint-20", "checkpoint-30"}));
  EXPECT_EQ(test::read_text(uri + "/checkpoint-30/model.safetensors"), std::string(1000, 'e'));
}

TEST_F(Store, AHalfCopiedCheckpointIsNeverUsed) {
  const std::string local = dir_.path("local"), uri = dir_.path("uri");
  const CheckpointStore store(uri);
  make_checkpoint(uri, 10);
  // A copy that died half way: its temporary name is all a resume could see of it.
  fs::create_directories(uri + "/.partial.checkpoint-20.999");
  write_text(uri + "/.partial.checkpoint-20.999/trainer_state.json", "{\"global_step\": 20}");
  EXPECT_EQ(store.download(local), local + "/checkpoint-10");
  EXPECT_EQ(names(local), std::vector<std::string>{"checkpoint-10"});
  store.upload(local);  // the next upload clears the debris
  EXPECT_EQ(names(uri), std::vector<std::string>{"checkpoint-10"});
}

TEST_F(Store, DownloadReplacesWhatTheHostHad) {
  const std::string local = dir_.path("local"), uri = dir_.path("uri");
  make_checkpoint(local, 99);  // left by an earlier attempt on this host, never uploaded
  EXPECT_EQ(CheckpointStore(uri).download(local), "");
  EXPECT_TRUE(names(local).empty());
}

TEST_F(Store, UnreachableOrForeignUrisAreRefused) {
  expect_error([] { CheckpointStore::resolve("s3://bucket/ckpt", "job.yaml"); },
               {"job.yaml", "checkpoint_uri 's3://bucket/ckpt'", "no client for s3://"});
  EXPECT_EQ(CheckpointStore::resolve("file:///data/ckpt", "j"), "/data/ckpt");
  write_text(dir_.path("a_file"), "x");
  expect_error([&] { CheckpointStore(dir_.path("a_file/ckpt")).check_writable("job.yaml"); },
               {"job.yaml: checkpoint_uri", "is unreachable"});
  expect_error([] { CheckpointStore("/proc/strata_jobs_test/ckpt").check_writable("job.yaml"); }, {"is not writable"});
  CheckpointStore(dir_.path("new/ckpt")).check_writable("job.yaml");
  EXPECT_FALSE(fs::exists(dir_.path("new")));  // checked, not created
}

TEST(JobPlan, RanksPerInstanceFollowTheDistributionOrTheGpus) {
  const InstanceCatalog c = InstanceCatalog::load(kCatalog);
  EXPECT_EQ(ranks_per_instance(c.at("local.c2", ""), "", "j"), 1);
  EXPECT_EQ(ranks_per_instance(c.at("ml.p3.8xlarge", ""), "", "j"), 4);  // one per GPU
  EXPECT_EQ(ranks_per_instance(c.at("local.c2", ""), "mpi: {enabled: true, processes_per_host: 2}", "j"), 2);
  expect_error([&] { ranks_per_instance(c.at("local.c2", ""), "mpi: {processes_per_host: 3}", "job.yaml"); },
               {"job.yaml", "processes_per_host is 3 but an local.c2 instance has 2 core(s)"});
}

class Plan : public testing::Test {
 protected:
  PlanInputs inputs(const std::string& extra, const std::string& instance_type = "local.c1") {
    write_text(dir_.path("spec.yaml"), spec_text(extra + "output_path: " + dir_.path("jobs") + "\n", instance_type));
    PlanInputs in;
    in.spec = load_job_spec(dir_.path("spec.yaml"));
    in.catalog = InstanceCatalog::load(kCatalog);
    in.job_name = "j1";
    in.working_dir = dir_.path();
    in.strata_binary = "strata";
    in.local_cores = 2;
    return in;
  }
  test::ScratchDir dir_;
};

TEST_F(Plan, ResolvesPathsThreadsAndTheTrainingConfig) {
  const PlannedJob pj =
      make_plan(inputs("instance_count: 2\nuse_spot_instances: true\nsimulate_interruptions: [{at_step: 7}, 2.5]\n"));
  EXPECT_EQ(pj.plan.job_dir, dir_.path("jobs/j1"));
  EXPECT_EQ(pj.plan.checkpoint_dir, dir_.path("jobs/j1/checkpoints"));
  EXPECT_EQ(pj.plan.local_dir, dir_.path("jobs/j1/work"));
  EXPECT_EQ(pj.plan.world_size(), 2);
  EXPECT_EQ(pj.plan.threads_per_rank, 1);
  EXPECT_EQ(pj.args.output_dir, pj.plan.local_dir);  // the ranks write where the runner uploads from
  EXPECT_EQ(pj.args.num_threads, 1);
  EXPECT_EQ(JobPlan::from_json(pj.plan.to_json()).to_json(), pj.plan.to_json());
  EXPECT_EQ(pj.plan.to_json()["simulate_interruptions"], nlohmann::json::parse(R"([{"at_step": 7}, 2.5])"));
  // Two local.c2 instances on this 2-core machine: the ranks share its cores, and are told so.
  const PlannedJob crowded = make_plan(inputs("instance_count: 2\n", "local.c2"));
  EXPECT_EQ(crowded.plan.threads_per_rank, 1);
  ASSERT_FALSE(crowded.notes.empty());
  EXPECT_NE(crowded.notes[0].find("describe 4 cores; this machine has 2"), std::string::npos);
}

// A local job's instances are this machine: the GPUs an instance type describes must be here
// (one per rank), unless the job trains on the CPUs; a machine without GPUs trains on its CPUs.
TEST_F(Plan, ALocalJobAsksForAtMostTheGpusThisMachineHas) {
  PlanInputs in = inputs("", "ml.p3.8xlarge");
  const PlannedJob on_cpus = make_plan(in);  // local_gpus 0
  ASSERT_FALSE(on_cpus.notes.empty());
  EXPECT_NE(on_cpus.notes.back().find("describe 4 GPU(s); this machine has none: the ranks train on its CPUs"),
            std::string::npos);
  in.local_gpus = 4;
  EXPECT_EQ(make_plan(in).plan.world_size(), 4);
  in.local_gpus = 2;
  expect_error([&] { make_plan(in); },
               {"spec.yaml", "1 x ml.p3.8xlarge ask for 4 GPUs, but this machine has 2", "use_cpu: true"});
  PlanInputs cpu = inputs("hyperparameters: {use_cpu: true}\n", "ml.p3.8xlarge");
  cpu.local_gpus = 2;
  EXPECT_EQ(make_plan(cpu).plan.world_size(), 4);
}

TEST_F(Plan, HostfileSlotsMustExist) {
  write_text(dir_.path("hosts.txt"), "# two hosts\nnode1 slots=1\nnode2 slots=4\n");
  expect_error([&] { make_plan(inputs("backend: hostfile\nhostfile: " + dir_.path("hosts.txt") + "\ninstance_count: 2\n")); },
               {"hosts.txt line 3: node2 slots=4", "local.c1 instance has 1 core(s)", "more slots than exist"});
  expect_error([&] { make_plan(inputs("backend: hostfile\nhostfile: " + dir_.path("hosts.txt") + "\ninstance_count: 3\n")); },
               {"hosts.txt names 2 host(s); instance_count is 3"});
  const PlannedJob ok = make_plan(inputs("backend: hostfile\nhostfile: " + dir_.path("hosts.txt") + "\n"));
  EXPECT_EQ(ok.plan.hosts, std::vector<std::string>{"node1"});
}

TEST_F(Plan, SlurmNeedsItsClient) {
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", dir_.path().c_str(), 1);  // no sbatch here
  expect_error([&] { make_plan(inputs("backend: slurm\n")); },
               {"spec.yaml: backend slurm needs sbatch, which is not on PATH"});
  setenv("PATH", saved.c_str(), 1);
}

TEST_F(Plan, AScriptEntryPointRunsThroughTheRankWrapper) {
  PlanInputs in = inputs("");
  write_text(dir_.path("train.py"), "print('hi')\n");
  write_text(dir_.path("spec.yaml"), "instance_type: local.c1\nentry_point: " + dir_.path("train.py") +
                                         "\nhyperparameters: {epochs: 2}\ndistribution: {mpi: {enabled: true}}\n"
                                         "output_path: " + dir_.path("jobs") + "\n");
  in.spec = load_job_spec(dir_.path("spec.yaml"));
  const PlannedJob pj = make_plan(in);
  EXPECT_TRUE(pj.plan.runs_script());
  EXPECT_EQ(pj.plan.entry_point, dir_.path("train.py"));
  EXPECT_EQ(pj.plan.script_arguments, (std::vector<std::string>{"--epochs", "2"}));
  EXPECT_EQ(pj.plan.distribution, nlohmann::json::parse(R"({"mpi": {"enabled": true}})"));
  EXPECT_TRUE(pj.training_yaml.empty());
  EXPECT_EQ(JobPlan::from_json(pj.plan.to_json()).to_json(), pj.plan.to_json());
  EXPECT_EQ(rank_command(pj.plan, ""), (std::vector<std::string>{"strata", "job", "script-rank", pj.plan.job_dir}));
  EXPECT_EQ(rank_command(pj.plan, "/c/checkpoint-5"),
            (std::vector<std::string>{"strata", "job", "script-rank", pj.plan.job_dir, "--resume", "/c/checkpoint-5"}));
  // A plan.json written before script entry points reads as a strata train job.
  nlohmann::json old = pj.plan.to_json();
  for (const char* key : {"entry_point", "python", "script_arguments", "hyperparameters", "distribution"}) old.erase(key);
  EXPECT_FALSE(JobPlan::from_json(old).runs_script());

  in.spec.python = dir_.path("no-python");
  expect_error([&] { make_plan(in); },
               {"python '" + dir_.path("no-python") + "' (the interpreter of entry_point) is not an executable file"});
  in.spec.python = "no-such-python3";
  expect_error([&] { make_plan(in); }, {"python 'no-such-python3'", "is not on PATH; set python: to its path"});
}

TEST_F(Plan, TheRunnerOwnsResume) {
  expect_error([&] { make_plan(inputs("hyperparameters: {resume_from_checkpoint: latest}\n")); },
               {"resume_from_checkpoint is the job runner's to set"});
}

TEST(Slurm, BatchScriptCarriesTheCatalogAndTheLimits) {
  JobPlan p;
  p.name = "spam-1";
  p.job_dir = "/jobs/spam-1";
  p.instance_count = 2;
  p.ranks_per_host = 4;
  p.threads_per_rank = 8;
  p.max_run = 3600;
  p.grace = 120;
  p.working_dir = "/work";
  p.strata_binary = "/bin/strata";
  p.slurm_partition = "gpu";
  const std::string s = slurm_batch_script(p);
  for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n", "#SBATCH --cpus-per-task=8\n",
                           "#SBATCH --time=62\n", "#SBATCH --requeue\n", "#SBATCH --signal=B:TERM@120\n",
                           "#SBATCH --partition=gpu\n", "exec /bin/strata job slurm-step /jobs/spam-1\n"})
    EXPECT_NE(s.find(line), std::string::npos) << line << " not in\n" << s;
  EXPECT_EQ(s.find("--gpus-per-node"), std::string::npos) << "a CPU instance type asks for no GPU";
  p.instance.gpus = 4;
  EXPECT_NE(slurm_batch_script(p).find("#SBATCH --gpus-per-node=4\n"), std::string::npos);
  EXPECT_FALSE((SlurmState{"PENDING", "BeginTime"}.finished()));
  EXPECT_TRUE((SlurmState{"COMPLETED", ""}.finished()));
  EXPECT_TRUE((SlurmState{"", ""}.finished()));  // no longer known to Slurm
}

TEST(JobRecord, StatusesNamesAndEvents) {
  EXPECT_EQ(parse_status("MaxWaitTimeExceeded"), JobStatus::MaxWaitTimeExceeded);
  EXPECT_TRUE(is_final(JobStatus::Stopped));
  EXPECT_FALSE(is_final(JobStatus::Interrupted));
  check_job_name("spam-2026-11-23-03-12-54-123", "t");
  expect_error([] { check_job_name("spam_job", "--job-name"); }, {"--job-name: job name 'spam_job' is not valid"});
  test::ScratchDir dir;
  const JobRecord r(dir.path());
  r.set_status(JobStatus::Training, "attempt 1");
  r.event("hello", {{"k", 1}});
  EXPECT_EQ(r.current(), JobStatus::Training);
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["event"], "Training: attempt 1");
  EXPECT_EQ(ev[1]["k"], 1);
  EXPECT_EQ(ev[1]["time"].get<std::string>().size(), std::string("2026-11-23T03:12:54.123Z").size());
  r.request("interrupt");
  EXPECT_TRUE(r.take_request("interrupt"));
  EXPECT_FALSE(r.take_request("interrupt"));
}

}  // namespace
}  // namespace strata::jobs
