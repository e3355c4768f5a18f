// ZeRO's pieces in one process: optimizers that own slices of the flat buffers reproduce the
// whole-buffer optimizer bit for bit (weight-decay groups and frozen parameters included); the
// optimizer state of a checkpoint is read back into any slice, from either file layout; the
// memory plan slices what it should; released gradient pages read as zeros and leave RAM.
// Several ranks run the same under mpirun: tests/mpi/zero_equivalence.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "dist/communicator.h"
#include "dist/flat_shards.h"
#include "models/registry.h"
#include "tensor/buffer.h"
#include "tensor/resident_memory.h"
#include "test_util_fs.h"
#include "train/memory_plan.h"
#include "train/optimizer.h"
#include "train/optimizer_files.h"
#include "util/error.h"
#include "util/rng.h"

namespace strata {
namespace {

// Parameters of assorted sizes, decay and no-decay interleaved, so that runs and slices cut
// each other at every kind of boundary.
ParamTable make_table() {
  ParamTable t;
  t.add("embeddings.weight", {37, 8}, false);
  t.add("embeddings.LayerNorm.weight", {8}, true);
  t.add("layer.0.dense.weight", {8, 19}, false);
  t.add("layer.0.dense.bias", {19}, true);
  t.add("layer.1.dense.weight", {19, 5}, false);
  t.add("layer.1.dense.bias", {5}, true);
  t.add("head.weight", {5, 3}, false);
  return t;
}

std::vector<float> random_values(size_t n, uint64_t seed, double scale) {
  const CounterRng rng(seed, 0);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal(i) * scale);
  return v;
}

OptimizerConfig config(const std::string& name) {
  OptimizerConfig c;
  c.name = name;
  c.lr = 1e-2;
  c.weight_decay = 0.1;
  c.momentum = 0.9;
  c.exclude_bias_and_norm_from_decay = true;
  return c;
}

TEST(ZeroOptimizer, SlicesReproduceTheWholeBufferExactly) {
  const ParamTable table = make_table();
  const size_t n = table.total();
  std::vector<bool> frozen(table.entries().size(), false);
  frozen[2] = true;  // layer.0.dense.weight
  for (const char* name : {"adamw", "sgd"}) {
    for (int parts : {2, 3, 4, 7}) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(parts) + " slices");
      std::vector<float> whole = random_values(n, 1, 1.0), sliced = whole;
      Optimizer<float> ref(config(name), table);
      ref.set_frozen(frozen);
      const dist::FlatShards shards(n, parts);
      std::vector<std::unique_ptr<Optimizer<float>>> opts;
      for (int r = 0; r < parts; ++r) {
        opts.push_back(std::make_unique<Optimizer<float>>(config(name), table, shards.begin(r), shards.end(r)));
        opts.back()->set_frozen(frozen);
        EXPECT_EQ(opts.back()->state_buffers()[0].second->size(), shards.size(r));  // state for the slice only
      }
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> g = random_values(n, 10 + static_cast<uint64_t>(step), 0.1);
        const double lr = 1e-2 * (step + 1);
        ref.step(whole.data(), g.data(), lr);
        for (auto& o : opts) o->step(sliced.data(), g.data(), lr);  // each touches its slice only
      }
      EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), n * sizeof(float)), 0);
      // The slices' state, put together, is the whole optimizer's state.
      for (size_t k = 0; k < ref.state_buffers().size(); ++k)
        for (int r = 0; r < parts; ++r)
          EXPECT_EQ(std::memcmp(ref.state_buffers()[k].second->data() + shards.begin(r),
                                opts[static_cast<size_t>(r)]->state_buffers()[k].second->data(),
                                shards.size(r) * sizeof(float)),
                    0);
    }
  }
}

// A whole optimizer's state, saved in both layouts (the sharded one by a single-process
// "group" of one slice), read into optimizers owning the slices of other degrees.
TEST(ZeroOptimizer, CheckpointStateReadsIntoAnySlice) {
  const ParamTable table = make_table();
  const size_t n = table.total();
  const test::ScratchDir dir;
  Optimizer<float> saved(config("adamw"), table);
  std::vector<float> p = random_values(n, 2, 1.0);
  for (int step = 0; step < 2; ++step) saved.step(p.data(), random_values(n, 20 + static_cast<uint64_t>(step), 0.1).data(), 1e-2);
  std::filesystem::create_directories(dir.path("full"));
  std::filesystem::create_directories(dir.path("sharded"));
  write_optimizer_state(dir.path("full"), table, saved);
  auto one = dist::make_single_process_communicator();
  const dist::FlatShards whole(n, 1);
  SliceLayout lay;
  lay.zero_stage = 1;
  lay.shards = &whole;
  write_optimizer_slices(dir.path("sharded"), table, saved, true, lay, *one);
  EXPECT_TRUE(std::filesystem::exists(dir.path("sharded/optimizer-00001-of-00001.safetensors")));

  for (const char* layout : {"full", "sharded"}) {
    for (int parts : {1, 3, 5}) {
      SCOPED_TRACE(std::string(layout) + " -> " + std::to_string(parts) + " slices");
      const dist::FlatShards shards(n, parts);
      for (int r = 0; r < parts; ++r) {
        Optimizer<float> got(config("adamw"), table, shards.begin(r), shards.end(r));
        read_optimizer_state(dir.path(layout), table, got);
        EXPECT_EQ(got.steps_taken(), 2);
        for (size_t k = 0; k < 2; ++k)
          EXPECT_EQ(std::memcmp(saved.state_buffers()[k].second->data() + shards.begin(r),
                                got.state_buffers()[k].second->data(), shards.size(r) * sizeof(float)),
                    0);
      }
    }
  }
  // Another model's (or optimizer's) state is refused, naming the file.
  ParamTable other = make_table();
  other.add("extra.weight", {4}, false);
  Optimizer<float> wrong(config("adamw"), other);
  try {
    read_optimizer_state(dir.path("sharded"), other, wrong);
    ADD_FAILURE() << "another model's state was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer_layout.json: the optimizer state covers"), std::string::npos)
        << e.what();
  }
  Optimizer<float> sgd(config("sgd"), table);
  EXPECT_THROW(read_optimizer_state(dir.path("sharded"), table, sgd), Error);
  EXPECT_THROW(read_optimizer_state(dir.path("full"), table, sgd), Error);
}

TEST(ZeroOptimizer, MemoryPlanSlicesStateAndGradients) {
  nlohmann::json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 200},
                      {"n_embd", 64},         {"n_layer", 2},                       {"n_head", 2},
                      {"n_positions", 64}};
  const auto model = make_model<float>(parse_model_config(j, "gpt2 test"));
  const size_t n = model->table().total(), slice = dist::FlatShards(n, 4).size(0) * 4;
  const RankMemoryPlan z0 = plan_rank_memory(*model, 2, 16, 4, 0, 25, 2);
  const RankMemoryPlan z1 = plan_rank_memory(*model, 2, 16, 4, 1, 25, 2);
  const RankMemoryPlan z2 = plan_rank_memory(*model, 2, 16, 4, 2, 0.01, 2);
  EXPECT_EQ(z0.optimizer_state, 2 * n * 4);
  EXPECT_EQ(z1.optimizer_state, 2 * slice);
  EXPECT_EQ(z1.gradients, n * 4);
  EXPECT_EQ(z2.gradients, slice);
  // The tied wte (read by the embeddings and the LM head) stays resident on the ranks that do
  // not own it, besides two buckets of 0.01 MiB and the largest unit (a block) being written.
  ASSERT_EQ(model->unit_parameters(1).size(), 12u);  // ln_1, c_attn, c_proj, ln_2, c_fc, mlp c_proj: no tied ones
  const size_t wte = model->table().at("transformer.wte.weight").numel * 4;
  size_t block = 0;
  for (size_t e : model->unit_parameters(1)) block += model->table().entries()[e].numel * 4;
  EXPECT_EQ(z2.gradients_peak,
            dist::FlatShards(n, 4).size(1) * 4 + wte + 2 * static_cast<size_t>(0.01 * 1024 * 1024) + block);
  EXPECT_EQ(plan_rank_memory(*model, 2, 16, 1, 2, 25, 2).optimizer_state, 2 * n * 4);  // one rank: nothing to shard
}

TEST(ZeroOptimizer, ReleasedPagesReadAsZeroAndLeaveRam) {
  const size_t n = 4 << 20;  // 16 MiB of floats
  Buffer<float> b(n);
  std::fill(b.data(), b.data() + n, 1.0f);
  const size_t before = kernels::resident_bytes(b.data(), n * sizeof(float));
  EXPECT_GE(before, n * sizeof(float) - 4096);
  // An unaligned range in the middle: its partial pages are zeroed, its neighbours kept.
  const size_t lo = 1000, hi = n - 1000;
  kernels::zero_and_release(b.data() + lo, (hi - lo) * sizeof(float));
  const size_t after = kernels::resident_bytes(b.data(), n * sizeof(float));
  EXPECT_LT(after, before / 8) << before << " -> " << after;
  EXPECT_EQ(b[lo - 1], 1.0f);
  EXPECT_EQ(b[hi], 1.0f);
  for (size_t i : {lo, lo + 1, n / 2, hi - 1}) EXPECT_EQ(b[i], 0.0f) << i;
  b[n / 2] = 2.0f;  // a released page is usable again
  EXPECT_EQ(b[n / 2], 2.0f);
  EXPECT_GT(peak_resident_bytes(), n * sizeof(float));
}

}  // namespace
}  // namespace strata
