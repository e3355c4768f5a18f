// The Trainer's contracts: exact resume after an interruption, gradient accumulation equal to
// the union batch, checkpoint rotation, NaN stops with the last good checkpoint, frozen base
// model, early stopping, and configuration errors reported before any work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/ops.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/rng.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

ModelConfig tiny_config(double dropout) {
  nlohmann::json j = {{"model_type", "bert"}, {"architectures", {"BertForSequenceClassification"}},
                      {"vocab_size", 50},     {"hidden_size", 16},
                      {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                      {"intermediate_size", 32}, {"max_position_embeddings", 32},
                      {"hidden_dropout_prob", dropout}, {"attention_probs_dropout_prob", dropout},
                      {"id2label", {{"0", "ham"}, {"1", "spam"}}}};
  return parse_model_config(j, "tiny");
}

std::unique_ptr<Model<float>> tiny_model(double dropout, uint64_t init_seed = 7) {
  auto m = make_model<float>(tiny_config(dropout));
  m->init_weights(init_seed);
  return m;
}

// N examples of length T with a learnable rule (label = first token is even); batches follow a
// seeded per-epoch permutation, like the real loader. Optionally throws after `crash_after` batches.
class VectorStream : public BatchStream {
 public:
  VectorStream(int n, int batch, uint64_t seed, int64_t crash_after = -1)
      : n_(n), batch_(batch), seed_(seed), crash_after_(crash_after) {}
  size_t num_batches() const override { return (n_ + batch_ - 1) / batch_; }
  size_t num_examples() const override { return n_; }
  void start(int64_t epoch, size_t first) override {
    order_.resize(n_);
    for (int i = 0; i < n_; ++i) order_[i] = i;
    const CounterRng rng(seed_, static_cast<uint64_t>(epoch) + 1);
    for (int i = n_ - 1; i > 0; --i) std::swap(order_[i], order_[rng.bits(i) % (i + 1)]);
    next_ = first;
  }
  int64_t served() const { return served_; }
  bool next(Batch& b) override {
    if (next_ >= num_batches()) return false;
    if (crash_after_ >= 0 && served_ >= crash_after_) throw std::runtime_error("simulated crash");
    ++served_;
    const int T = 8;
    const int lo = static_cast<int>(next_) * batch_, hi = std::min(n_, lo + batch_);
    b = Batch{};
    b.B = hi - lo;
    b.T = T;
    for (int k = lo; k < hi; ++k) {
      const int ex = order_[k];
      const CounterRng rng(99, ex);
      for (int t = 0; t < T; ++t) b.input_ids.push_back(t == 0 ? 4 + (ex % 2) * 1 + 2 * (ex % 7) : 4 + rng.bits(t) % 40);
      b.labels.push_back(b.input_ids[(k - lo) * T] % 2);
    }
    b.attention_mask.assign(b.input_ids.size(), 1);
    b.token_type_ids.assign(b.input_ids.size(), 0);
    ++next_;
    return true;
  }

 private:
  int n_, batch_;
  uint64_t seed_;
  int64_t crash_after_, served_ = 0;
  std::vector<int> order_;
  size_t next_ = 0;
};

class TrainerTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("trainer-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tok");
    std::ofstream(dir_ / "tok" / "vocab.txt") << "[PAD]\n";
  }
  TrainingArguments args(const std::string& yaml) {
    return parse_training_arguments("model_name_or_path: unused\ndo_train: false\noutput_dir: " + (dir_ / "out").string() +
                                        "\nlogging_steps: 1\n" + yaml,
                                    "test.yaml");
  }
  static std::vector<float> params(Trainer& t) {
    const auto& p = t.model().params();
    return std::vector<float>(p.data(), p.data() + p.size());
  }
  static double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
    return worst;
  }
  static std::vector<double> losses(const std::string& out_dir) {
    std::vector<double> l;
    std::ifstream in(fs::path(out_dir) / "trainer_log.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("loss")) l.push_back(j["loss"].get<double>());
    }
    return l;
  }
  fs::path dir_;
};

TEST_F(TrainerTest, ResumeAfterInterruptionReproducesTheRunExactly) {
  const std::string cfg = "max_steps: 12\ngradient_accumulation_steps: 2\nper_device_train_batch_size: 4\n"
                          "learning_rate: 1e-2\nwarmup_steps: 3\nsave_strategy: steps\nsave_steps: 5\n";
  Trainer full(args(cfg), tiny_model(0.1), (dir_ / "tok").string());
  VectorStream data(22, 4, 42);  // 6 batches per epoch: 3 steps per epoch, a partial batch at the end
  full.train(data, nullptr);
  const auto want = params(full);
  const auto want_losses = losses((dir_ / "out").string());
  ASSERT_EQ(want_losses.size(), 12u);

  fs::remove_all(dir_ / "out");
  {
    Trainer crashed(args(cfg), tiny_model(0.1), (dir_ / "tok").string());
    VectorStream crashing(22, 4, 42, /*crash_after=*/15);  // dies in step 8, after checkpoint-5
    EXPECT_THROW(crashed.train(crashing, nullptr), std::runtime_error);
  }
  ASSERT_TRUE(fs::exists(dir_ / "out" / "checkpoint-5"));
  // A differently initialised model: only the checkpoint's weights can make it match.
  Trainer resumed(args(cfg + "resume_from_checkpoint: latest\n"), tiny_model(0.1, 123), (dir_ / "tok").string());
  VectorStream again(22, 4, 42);
  resumed.train(again, nullptr);
  EXPECT_EQ(again.served(), 14) << "steps 6..12 need 7 x 2 batches: the resumed run must not replay the data";
  const auto got = params(resumed);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "final parameters differ";
  EXPECT_EQ(losses((dir_ / "out").string()), want_losses);
}

TEST_F(TrainerTest, GradientAccumulationEqualsTheUnionBatch) {
  // Without dropout, 2 micro-batches of 4 must give the step of one batch of 8 (to rounding).
  Trainer acc(args("max_steps: 1\ngradient_accumulation_steps: 2\nper_device_train_batch_size: 4\nsave_strategy: no\n"),
              tiny_model(0.0), (dir_ / "tok").string());
  VectorStream small(16, 4, 1);
  acc.train(small, nullptr);
  fs::remove_all(dir_ / "out");
  Trainer big(args("max_steps: 1\nper_device_train_batch_size: 8\nsave_strategy: no\n"), tiny_model(0.0),
              (dir_ / "tok").string());
  // The same 8 examples in the same order: batch k of 8 == batches 2k, 2k+1 of 4.
  VectorStream large(16, 8, 1);
  big.train(large, nullptr);
  EXPECT_LT(max_abs_diff(params(acc), params(big)), 1e-6);
  EXPECT_NEAR(losses((dir_ / "out").string()).at(0), 0, 10);  // a loss was logged
}

TEST_F(TrainerTest, ReplicaThreadsTakeTheStepsOfAccumulatingTheirParts) {
  // Part r of a batch draws the dropout masks of micro-batch r, so 2 replica threads on
  // batches of 8 must take the steps of accumulating 2 batches of 4 (to the rounding of the
  // gradient sums), dropout on.
  const int threads = kernels::num_threads();
  kernels::set_num_threads(2);
  const std::string common = "max_steps: 3\nsave_strategy: no\nlearning_rate: 1e-2\n";
  Trainer rep(args(common + "per_device_train_batch_size: 8\nreplica_threads: 2\n"), tiny_model(0.1),
              (dir_ / "tok").string());
  EXPECT_EQ(rep.pipeline().replicas(), 2);
  VectorStream large(24, 8, 1);
  rep.train(large, nullptr);
  Trainer acc(args(common + "per_device_train_batch_size: 4\ngradient_accumulation_steps: 2\nreplica_threads: 1\n"),
              tiny_model(0.1), (dir_ / "tok").string());
  VectorStream small(24, 4, 1);
  acc.train(small, nullptr);
  // Without replicas the batch of 8 draws one micro-batch's masks: other steps.
  Trainer whole(args(common + "per_device_train_batch_size: 8\nreplica_threads: 1\n"), tiny_model(0.1),
                (dir_ / "tok").string());
  VectorStream again(24, 8, 1);
  whole.train(again, nullptr);
  kernels::set_num_threads(threads);
  EXPECT_LT(max_abs_diff(params(rep), params(acc)), 1e-6);
  EXPECT_GT(max_abs_diff(params(whole), params(acc)), 1e-4) << "the comparison must be able to fail";
}

TEST_F(TrainerTest, AnErrorInAReplicaThreadStopsTheRunWithItsMessage) {
  // Thrown inside the replicas' parallel region, where an escaping exception would terminate.
  class Unlabelled : public VectorStream {
   public:
    using VectorStream::VectorStream;
    bool next(Batch& b) override {
      if (!VectorStream::next(b)) return false;
      b.labels.clear();
      return true;
    }
  };
  Trainer t(args("max_steps: 2\nper_device_train_batch_size: 8\nreplica_threads: 2\nsave_strategy: no\n"),
            tiny_model(0.1), (dir_ / "tok").string());
  Unlabelled data(16, 8, 1);
  try {
    t.train(data, nullptr);
    FAIL() << "a batch without labels must stop training";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the batch has no labels"), std::string::npos) << e.what();
  }
}

TEST_F(TrainerTest, ReplicaThreadsAutoIsOnePerThreadUnlessBitsMustNotDependOnThreads) {
  const int threads = kernels::num_threads();
  kernels::set_num_threads(2);
  Trainer on(args("per_device_train_batch_size: 8\n"), tiny_model(0.0), (dir_ / "tok").string());
  Trainer one_row(args("per_device_train_batch_size: 1\n"), tiny_model(0.0), (dir_ / "tok").string());
  Trainer exact(args("per_device_train_batch_size: 8\nfull_determinism: true\n"), tiny_model(0.0),
                (dir_ / "tok").string());
  kernels::set_num_threads(1);
  Trainer single(args("per_device_train_batch_size: 8\n"), tiny_model(0.0), (dir_ / "tok").string());
  kernels::set_num_threads(threads);
  EXPECT_EQ(on.pipeline().replicas(), 2);
  EXPECT_EQ(one_row.pipeline().replicas(), 1) << "no more replicas than rows";
  EXPECT_EQ(exact.pipeline().replicas(), 1) << "full_determinism: the same bits for any thread count";
  EXPECT_EQ(single.pipeline().replicas(), 1);
  // The plan holds a state per replica and a gradient buffer more.
  const size_t grads = on.model().table().total() * sizeof(float);
  const RankMemoryPlan two = plan_replica_memory(on.model(), 8, 8, 2, 1, 0, 25, 2);
  const RankMemoryPlan one = plan_rank_memory(on.model(), 8, 8, 1, 0, 25, 2);
  EXPECT_EQ(two.gradients, 2 * grads);
  EXPECT_EQ(one.gradients, grads);
  EXPECT_EQ(two.replicas, 2);
  EXPECT_EQ(two.micro_rows, 4);
}

TEST_F(TrainerTest, SaveTotalLimitKeepsTheNewestAndTheBest) {
  Trainer t(args("max_steps: 6\nper_device_train_batch_size: 4\nsave_strategy: steps\nsave_steps: 1\n"
                 "save_total_limit: 2\n"),
            tiny_model(0.0), (dir_ / "tok").string());
  VectorStream data(24, 4, 3);
  t.train(data, nullptr);
  const auto kept = list_checkpoints((dir_ / "out").string());
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_TRUE(kept.back().ends_with("checkpoint-6"));
  // With a best checkpoint to protect, it survives rotation.
  rotate_checkpoints((dir_ / "out").string(), 1, kept.front());
  const auto after = list_checkpoints((dir_ / "out").string());
  EXPECT_EQ(after, kept) << "neither the newest nor the best may be deleted";
}

TEST_F(TrainerTest, NonFiniteLossStopsNamingTheStepAndTheLastGoodCheckpoint) {
  Trainer t(args("max_steps: 20\nper_device_train_batch_size: 4\nlearning_rate: 1e30\nmax_grad_norm: 0\n"
                 "save_strategy: steps\nsave_steps: 1\nweight_decay: 0\nlr_scheduler_type: constant\n"),
            tiny_model(0.0), (dir_ / "tok").string());
  VectorStream data(24, 4, 3);
  try {
    t.train(data, nullptr);
    FAIL() << "expected the NaN loss to stop training";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("step "), std::string::npos) << msg;
    EXPECT_NE(msg.find("checkpoint-"), std::string::npos) << msg;
  }
  for (const auto& c : list_checkpoints((dir_ / "out").string())) {
    const std::unique_ptr<Model<float>> owned = make_model<float>(tiny_config(0.0));
    Model<float>& m = *owned;
    load_weights(m, c);
    for (size_t i = 0; i < m.params().size(); ++i) ASSERT_TRUE(std::isfinite(m.params()[i])) << c;
  }
}

TEST_F(TrainerTest, FreezeBaseModelTrainsOnlyTheHead) {
  Trainer t(args("max_steps: 3\nper_device_train_batch_size: 4\nfreeze_base_model: true\nsave_strategy: no\n"
                 "learning_rate: 1e-2\n"),
            tiny_model(0.1), (dir_ / "tok").string());
  const auto before = params(t);
  VectorStream data(24, 4, 3);
  t.train(data, nullptr);
  const auto after = params(t);
  for (const ParamEntry& e : t.model().table().entries()) {
    const bool same = std::memcmp(before.data() + e.offset, after.data() + e.offset, e.numel * sizeof(float)) == 0;
    EXPECT_EQ(same, t.model().is_base_parameter(e)) << e.name;
  }
}

TEST_F(TrainerTest, EarlyStoppingStopsAfterPatienceEvaluations) {
  // lr 0: the eval loss never improves after the first evaluation.
  Trainer t(args("max_steps: 50\nper_device_train_batch_size: 4\nlearning_rate: 1e-30\nvalidation_file: x\n"
                 "eval_strategy: steps\neval_steps: 2\nsave_strategy: no\nearly_stopping_patience: 2\n"),
            tiny_model(0.0), (dir_ / "tok").string());
  VectorStream data(24, 4, 3), eval(10, 4, 0);
  const auto res = t.train(data, &eval);
  EXPECT_EQ(res["global_step"].get<int64_t>(), 6);  // evals at 2 (best), 4 and 6 (no improvement)
}

TEST(TrainingArguments, UnknownKeySuggestsTheNearestName) {
  try {
    parse_training_arguments("model_name_or_path: m\noutput_dir: o\ndo_train: false\nlearning_rat: 1e-3\n", "job.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'learning_rate'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("job.yaml"), std::string::npos) << e.what();
  }
}

TEST(TrainingArguments, WrongTypeAndInconsistentValuesAreErrors) {
  const std::string base = "model_name_or_path: m\noutput_dir: o\ndo_train: false\n";
  auto message = [&](const std::string& extra) {
    try {
      parse_training_arguments(base + extra, "job.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("per_device_train_batch_size: eight\n").find("expects an integer"), std::string::npos);
  EXPECT_NE(message("eval_strategy: steps\n").find("no validation_file"), std::string::npos);
  EXPECT_NE(message("lr_scheduler_type: cosin\n").find("expected one of"), std::string::npos);
  EXPECT_NE(message("validation_file: v\neval_strategy: steps\nload_best_model_at_end: true\nsave_steps: 7\neval_steps: 5\n")
                .find("save_steps"),
            std::string::npos);
  EXPECT_NE(message("do_train: true\n").find("train_file"), std::string::npos);
  // --set overrides are checked the same way.
  EXPECT_THROW(parse_training_arguments(base, "job.yaml", {"num_train_epochs=abc"}), Error);
  EXPECT_EQ(parse_training_arguments(base, "job.yaml", {"learning_rate=0.25"}).learning_rate, 0.25);
}

}  // namespace
}  // namespace strata
