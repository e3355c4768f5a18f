// Pipeline parallelism's arithmetic, without MPI: the GPipe and 1F1B schedules (simulated on
// every stage at once: no stage waits forever, each micro-batch runs forward then backward
// once per stage, at most the stated number in flight, and the step takes (m+p-1) micro-batch
// times when stages are equal), the stage partitions, the split of a batch into micro-batches,
// and what each stage of real architectures owns and borrows of the flat buffers and holds of
// activations.
// The multi-process runs are tests/mpi/pipeline_equivalence.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dist/pipeline_schedule.h"
#include "dist/stage_partition.h"
#include "kernels/device.h"
#include "models/config.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "test_util_fs.h"
#include "train/memory_plan.h"
#include "train/micro_batches.h"
#include "train/pipeline_partition.h"
#include "train/pipeline_stages.h"

namespace strata {
namespace {

using dist::PipelineKind;
using dist::PipeOp;

// Runs every stage's schedule against the others: forward j on stage s needs forward j on s-1,
// backward j needs backward j on s+1 (sends never block). Ops take tf / tb time units. Returns
// the time the last op ends, or -1 if some stage can never go on (a deadlock).
double simulate(PipelineKind kind, int p, int m, double tf, double tb, std::vector<int>* max_flight) {
  std::vector<std::vector<PipeOp>> ops(p);
  for (int s = 0; s < p; ++s) ops[s] = dist::pipeline_schedule(kind, p, s, m);
  const double never = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> f_end(p, std::vector<double>(m, never)), b_end = f_end;
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0);
  max_flight->assign(p, 0);
  std::vector<int> flight(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      if (next[s] == ops[s].size()) continue;
      const PipeOp op = ops[s][next[s]];
      const bool fwd = op.kind == PipeOp::Forward;
      const double ready = fwd ? (s == 0 ? 0 : f_end[s - 1][op.micro]) : (s == p - 1 ? 0 : b_end[s + 1][op.micro]);
      if (ready == never) continue;
      if (!fwd && f_end[s][op.micro] == never) return -1;  // backward before its own forward
      clock[s] = std::max(clock[s], ready) + (fwd ? tf : tb);
      (fwd ? f_end : b_end)[s][op.micro] = clock[s];
      flight[s] += fwd ? 1 : -1;
      (*max_flight)[s] = std::max((*max_flight)[s], flight[s]);
      ++next[s];
      progress = true;
    }
  }
  for (int s = 0; s < p; ++s) {
    if (next[s] != ops[s].size()) return -1;
    for (int j = 0; j < m; ++j)
      if (f_end[s][j] == never || b_end[s][j] == never) return -1;
  }
  return *std::max_element(clock.begin(), clock.end());
}

TEST(PipelineSchedule, EveryStageRunsEachMicroBatchOnceWithoutDeadlockAndTheBubbleOfTheFormula) {
  for (PipelineKind kind : {PipelineKind::Simple, PipelineKind::Interleaved})
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m) {
        SCOPED_TRACE(testing::Message() << (kind == PipelineKind::Simple ? "simple" : "interleaved") << " p=" << p
                                        << " m=" << m);
        for (int s = 0; s < p; ++s) {
          const auto ops = dist::pipeline_schedule(kind, p, s, m);
          ASSERT_EQ(ops.size(), 2u * m);
          // Backwards run in micro-batch order on every stage: the same gradient sums in both schedules.
          int expect_b = 0;
          for (const PipeOp& op : ops)
            if (op.kind == PipeOp::Backward) EXPECT_EQ(op.micro, expect_b++);
        }
        std::vector<int> flight;
        const double tf = 1, tb = 2;
        const double span = simulate(kind, p, m, tf, tb, &flight);
        ASSERT_GT(span, 0) << "deadlock";
        EXPECT_DOUBLE_EQ(span, (m + p - 1) * (tf + tb));
        // Each stage computes m (tf + tb) of it: idle the theoretical fraction.
        EXPECT_NEAR(1 - m * (tf + tb) / span, dist::theoretical_bubble(p, m), 1e-12);
        for (int s = 0; s < p; ++s) EXPECT_EQ(flight[s], dist::max_in_flight(kind, p, s, m)) << "stage " << s;
      }
}

TEST(PipelineSchedule, OneForwardOneBackwardKeepsAtMostPartitionsInFlight) {
  // Stage 0 of 4 with 8 micro-batches: 3 warm-up forwards, then alternating, then 3 backwards.
  const auto ops = dist::pipeline_schedule(PipelineKind::Interleaved, 4, 0, 8);
  std::string order;
  for (const PipeOp& op : ops) order += (op.kind == PipeOp::Forward ? "F" : "B") + std::to_string(op.micro) + " ";
  EXPECT_EQ(order, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
  EXPECT_EQ(dist::max_in_flight(PipelineKind::Interleaved, 4, 0, 8), 4);
  EXPECT_EQ(dist::max_in_flight(PipelineKind::Interleaved, 4, 3, 8), 1);
  EXPECT_EQ(dist::max_in_flight(PipelineKind::Simple, 4, 3, 8), 8);
  EXPECT_THROW(dist::parse_pipeline_kind("1f1b"), Error);
}

// The best split by brute force over every way to cut n layers into p non-empty runs.
double best_by_brute_force(const std::vector<double>& c, int p, double first, double last) {
  const int n = static_cast<int>(c.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts(p - 1);
  std::function<void(int, int)> go = [&](int k, int from) {
    if (k == p - 1) {
      double worst = 0;
      int b = 0;
      for (int s = 0; s < p; ++s) {
        const int e = s + 1 < p ? cuts[s] : n;
        double v = std::accumulate(c.begin() + b, c.begin() + e, 0.0) + (s == 0 ? first : 0) + (s == p - 1 ? last : 0);
        worst = std::max(worst, v);
        b = e;
      }
      best = std::min(best, worst);
      return;
    }
    for (int i = from; i <= n - (p - 1 - k); ++i) {
      cuts[k] = i;
      go(k + 1, i + 1);
    }
  };
  go(0, 1);
  return best;
}

TEST(StagePartition, BalancedSplitIsOptimalAndFavoursEarlierStagesOnTies) {
  EXPECT_EQ(dist::balance_stages({1, 1, 1, 1}, 2, 0, 0), (std::vector<int>{2, 2}));
  EXPECT_EQ(dist::balance_stages({1, 1, 1, 1, 1}, 2, 0, 0), (std::vector<int>{3, 2}));
  // A heavy head (e.g. a 50k-token LM head) leaves fewer blocks to the last stage.
  EXPECT_EQ(dist::balance_stages(std::vector<double>(8, 1.0), 2, 0, 4), (std::vector<int>{6, 2}));
  EXPECT_EQ(dist::even_stages(7, 3), (std::vector<int>{3, 2, 2}));
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.1, 5);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8), p = 1 + static_cast<int>(rng() % n);
    std::vector<double> c(n);
    for (double& x : c) x = u(rng);
    const double first = u(rng), last = u(rng);
    const std::vector<int> sizes = dist::balance_stages(c, p, first, last);
    ASSERT_EQ(static_cast<int>(sizes.size()), p);
    double worst = 0;
    int b = 0;
    for (int s = 0; s < p; ++s) {
      ASSERT_GE(sizes[s], 1);
      worst = std::max(worst, std::accumulate(c.begin() + b, c.begin() + b + sizes[s], 0.0) + (s == 0 ? first : 0) +
                                  (s == p - 1 ? last : 0));
      b += sizes[s];
    }
    ASSERT_EQ(b, n);
    EXPECT_NEAR(worst, best_by_brute_force(c, p, first, last), 1e-9);
  }
}

TEST(MicroBatches, RowsAreSplitEvenlyAndEveryPerRowFieldAlike) {
  Batch b;
  b.B = 5;
  b.T = 2;
  for (int i = 0; i < 10; ++i) {
    b.input_ids.push_back(i);
    b.attention_mask.push_back(1);
    b.labels.push_back(100 + i);
  }
  b.example_ids = {0, 1, 2, 3, 4};
  b.float_labels = {0.5, 1.5, 2.5, 3.5, 4.5};
  const std::vector<Batch> parts = split_rows(b, 3);  // 5 rows: 1, 2, 2
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].B, 1);
  EXPECT_EQ(parts[1].B, 2);
  EXPECT_EQ(parts[2].B, 2);
  std::vector<int32_t> ids, labels;
  std::vector<size_t> examples;
  for (const Batch& p : parts) {
    EXPECT_EQ(p.T, 2);
    EXPECT_EQ(p.input_ids.size(), static_cast<size_t>(p.B * 2));
    EXPECT_TRUE(p.token_type_ids.empty());
    ids.insert(ids.end(), p.input_ids.begin(), p.input_ids.end());
    labels.insert(labels.end(), p.labels.begin(), p.labels.end());
    examples.insert(examples.end(), p.example_ids.begin(), p.example_ids.end());
  }
  EXPECT_EQ(ids, b.input_ids);
  EXPECT_EQ(labels, b.labels);
  EXPECT_EQ(examples, b.example_ids);
  EXPECT_EQ(parts[2].float_labels, (std::vector<double>{3.5, 4.5}));
  // Fewer rows than parts (a short last batch): some micro-batches are empty.
  b.B = 1;
  b.input_ids = {7, 8};
  b.attention_mask = {1, 1};
  b.labels = {1, 2};
  b.example_ids = {0};
  b.float_labels = {0.5};
  const auto few = split_rows(b, 2);
  EXPECT_EQ(few[0].B, 0);
  EXPECT_TRUE(few[0].input_ids.empty());
  EXPECT_EQ(few[1].B, 1);
}

std::unique_ptr<Model<float>> model_from_fixture(const std::string& name, int layers, int groups = 0) {
  ModelConfig c = load_model_config(test::fixture(name));
  c.num_layers = layers;
  if (groups) c.num_hidden_groups = groups;
  return make_model<float>(c);
}

void expect_windows_cover(const Model<float>& m, const PipelineStages& st) {
  size_t at = 0;
  for (int s = 0; s < st.count(); ++s) {
    EXPECT_EQ(st.begin(s), at) << "stage " << s;
    at = st.end(s);
  }
  EXPECT_EQ(at, m.table().total());
}

TEST(PipelineStages, Gpt2TiedEmbeddingIsOwnedByTheFirstStageAndBorrowedByTheLast) {
  auto m = model_from_fixture("gpt2-causal-lm", 4);
  const PipelineStages st(*m, {1, 2, 1});
  ASSERT_EQ(st.count(), 3);
  EXPECT_EQ(st.units(0).begin, 0);
  EXPECT_EQ(st.units(0).end, 2);  // embeddings, block 0
  EXPECT_EQ(st.units(1).begin, 2);
  EXPECT_EQ(st.units(1).end, 4);  // blocks 1, 2
  EXPECT_EQ(st.units(2).begin, 4);
  EXPECT_EQ(st.units(2).end, m->num_units());  // block 3, head
  EXPECT_EQ(st.blocks(1), 2);
  expect_windows_cover(*m, st);
  ASSERT_EQ(st.shared().size(), 1u);
  const auto& wte = m->table().entries()[st.shared()[0].entry];
  EXPECT_EQ(wte.name, "transformer.wte.weight");
  EXPECT_EQ(st.shared()[0].owner, 0);
  EXPECT_EQ(st.shared()[0].borrowers, std::vector<int>{2});
  EXPECT_EQ(st.borrowed(2), std::vector<size_t>{st.shared()[0].entry});
  EXPECT_TRUE(st.borrowed(0).empty());
  EXPECT_EQ(m->table().at("transformer.ln_f.weight").offset >= st.begin(2), true);
  const PipelineStages one(*m, {4});
  EXPECT_TRUE(one.shared().empty());
  EXPECT_EQ(one.end(0), m->table().total());
}

// A stage loads only what it keeps (its window and what it borrows): those values as a whole
// load has them, the rest never written (zero, and on the CPU no page of it resident beyond the
// pages it shares with kept values), and the load report of the whole checkpoint.
TEST(PipelineStages, AStageLoadsOnlyWhatItKeeps) {
  const std::string dir = test::fixture("gpt2-causal-lm");
  const ModelConfig cfg = load_model_config(dir);
  LoadReport whole_report, report;
  const auto whole = load_pretrained<float>(cfg, dir, &whole_report);
  const PipelineStages st(*whole, {1, 1});
  for (int s = 0; s < st.count(); ++s) {
    const EntryFilter keep = st.keeps(whole->table(), s);
    const auto part = load_pretrained<float>(cfg, dir, &report, 42, keep);
    EXPECT_EQ(report.missing, whole_report.missing);
    EXPECT_EQ(report.unexpected, whole_report.unexpected);
    // Residency first: reading a page that was never written maps one (of zeros).
    const auto& entries = whole->table().entries();
    const std::vector<size_t> borrowed = st.borrowed(s);
    size_t kept_bytes = 0;
    for (size_t e = 0; e < entries.size(); ++e) kept_bytes += keep(e) ? entries[e].numel * sizeof(float) : 0;
    const size_t resident = kernels::resident_bytes(part->params().data(), part->params().size() * sizeof(float));
    EXPECT_LE(resident, kept_bytes + 2 * 4096 * (borrowed.size() + 1)) << "stage " << s;
    for (size_t e = 0; e < entries.size(); ++e) {
      const ParamEntry& p = entries[e];
      const float* a = part->params().data() + p.offset;
      const float* b = whole->params().data() + p.offset;
      const bool lent = std::find(borrowed.begin(), borrowed.end(), e) != borrowed.end();
      EXPECT_EQ(keep(e), lent || (p.offset >= st.begin(s) && p.offset + p.numel <= st.end(s))) << p.name;
      if (keep(e))
        EXPECT_TRUE(std::equal(a, a + p.numel, b)) << p.name;
      else
        EXPECT_TRUE(std::all_of(a, a + p.numel, [](float v) { return v == 0.0f; })) << p.name;
    }
    EXPECT_LT(kept_bytes, whole->params().size() * sizeof(float)) << "stage " << s;
  }
  // Stage 1 of GPT-2 borrows the tied embedding and loads it too.
  EXPECT_TRUE(st.keeps(whole->table(), 1)(st.shared().at(0).entry));
}

TEST(PipelineStages, BertDecoderTiesAndAlbertSharedLayers) {
  auto bert = model_from_fixture("bert-masked-lm", 2);
  const PipelineStages b(*bert, {1, 1});
  expect_windows_cover(*bert, b);
  ASSERT_EQ(b.shared().size(), 1u);
  EXPECT_EQ(bert->table().entries()[b.shared()[0].entry].name, "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(b.shared()[0].borrowers, std::vector<int>{1});
  // ALBERT, 4 layers in 2 groups over 4 stages: stage 1 runs only group 0's second repeat, so
  // it owns nothing and borrows the group; stage 3 borrows group 1 and the word embeddings.
  auto albert = model_from_fixture("albert-masked-lm", 4, 2);
  const PipelineStages a(*albert, {1, 1, 1, 1});
  expect_windows_cover(*albert, a);
  EXPECT_EQ(a.begin(1), a.end(1));
  EXPECT_FALSE(a.borrowed(1).empty());
  EXPECT_TRUE(a.borrowed(2).empty());
  EXPECT_GT(a.end(2), a.begin(2));
  std::vector<int> owners;
  for (size_t e : a.borrowed(3))
    for (const auto& sh : a.shared())
      if (sh.entry == e) owners.push_back(sh.owner);
  std::sort(owners.begin(), owners.end());
  owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
  EXPECT_EQ(owners, (std::vector<int>{0, 2}));
}

// The stages' plans against the whole model's: parameters (each counted once, plus the
// borrowed copies) and optimizer state add up; activations add up but for the hand-off
// buffer each further stage's range has of its own (one boundary, B*T*hidden), with the
// embeddings' output on the first stage and the logits on the last; one stage is the
// one-process plan.
TEST(PipelineMemoryPlan, StagesAddUpToTheWholeModel) {
  for (const char* fixture : {"gpt2-causal-lm", "bert-masked-lm", "albert-masked-lm"}) {
    SCOPED_TRACE(fixture);
    auto m = model_from_fixture(fixture, 4);
    const int rows = 3, T = 16;
    const RankMemoryPlan whole = plan_rank_memory(*m, rows, T, 1, 0, 25, 2);
    const PipelineStages one(*m, {4});
    const RankMemoryPlan single = plan_stage_memory(*m, stage_share(*m, one, 0, PipelineKind::Interleaved, rows, 1), T,
                                                    1, 0, 25, 2);
    EXPECT_EQ(single.parameters, whole.parameters);
    EXPECT_EQ(single.activations, whole.activations);
    EXPECT_EQ(single.total(), whole.total());
    const PipelineStages st(*m, {1, 2, 1});
    size_t params = 0, optimizer = 0, activations = 0, borrowed_all = 0;
    for (int s = 0; s < 3; ++s) {
      const StageShare share = stage_share(*m, st, s, PipelineKind::Interleaved, rows, 1);
      EXPECT_EQ(share.first_block, s == 0 ? 0 : s == 1 ? 1 : 3);
      const RankMemoryPlan p = plan_stage_memory(*m, share, T, 1, 0, 25, 2);
      EXPECT_EQ(p.parameters, (share.owned + share.borrowed) * sizeof(float));
      params += p.parameters;
      borrowed_all += share.borrowed * sizeof(float);
      optimizer += p.optimizer_state;
      activations += p.activations;
    }
    EXPECT_EQ(params - borrowed_all, whole.parameters);
    EXPECT_EQ(optimizer, whole.optimizer_state);
    const size_t boundary = m->activation_terms(rows, T).boundary * sizeof(float);
    EXPECT_EQ(activations, whole.activations + 2 * boundary);
  }
}

// An encoder-decoder's stages may hold blocks of either stack or both (a BlockActivations per
// stack): cut inside both stacks, the activations add up to the whole model's but for one
// hand-off buffer per cut, as above.
TEST(PipelineMemoryPlan, AnEncoderDecodersStagesAddUpToTheWholeModel) {
  for (const auto& [fixture, blocks] : std::vector<std::pair<std::string, std::vector<int>>>{
           {"bart-cond-gen", {1, 2, 1}}, {"t5-cond-gen", {1, 2, 2}}}) {
    SCOPED_TRACE(fixture);
    auto m = make_model<float>(load_model_config(test::fixture(fixture)));
    const int rows = 3, T = 16;
    const RankMemoryPlan whole = plan_rank_memory(*m, rows, T, 1, 0, 25, 2);
    const PipelineStages st(*m, blocks);
    size_t activations = 0;
    for (int s = 0; s < st.count(); ++s)
      activations += plan_stage_memory(*m, stage_share(*m, st, s, PipelineKind::Interleaved, rows, 1), T, 1, 0, 25, 2)
                         .activations;
    const Model<float>::ActivationTerms t = m->activation_terms(rows, T);
    EXPECT_GT(t.decoder_saved.saved, t.block_saved.saved);  // a decoder block's two attentions
    EXPECT_EQ(activations, whole.activations + (t.boundary + t.decoder_boundary) * sizeof(float));
  }
}

// BART's units: the encoder's layers alike, the decoder's alike and heavier (cross-attention's
// products, twice the attention); the first decoder layer gathers from the shared table for the
// decoder's embeddings (no product). Boundaries past the encoder carry its output too.
TEST(PipelinePartition, AnEncoderDecodersDecoderLayersWeighMore) {
  auto m = make_model<float>(load_model_config(test::fixture("bart-cond-gen")));  // 2 + 2 layers, d_model 16
  const std::vector<double> f = estimate_unit_flops(*m, 12);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_DOUBLE_EQ(f[1], f[2]);
  EXPECT_DOUBLE_EQ(f[3], f[4]);
  EXPECT_GT(f[3], f[1]);
  EXPECT_EQ(m->boundary_values(3, 12, 8, 0), 3u * 12 * 16);
  EXPECT_EQ(m->boundary_values(3, 12, 8, 2), 3u * 12 * 16);
  EXPECT_EQ(m->boundary_values(3, 12, 8, 3), 3u * (8 + 12) * 16);
}

TEST(PipelinePartition, AutoPartitionGivesTheLastStageFewerBlocksWhenTheHeadIsHeavy) {
  ModelConfig c = load_model_config(test::fixture("gpt2-causal-lm"));
  c.num_layers = 8;
  c.vocab_size = 50257;  // GPT-2's head: 2 x 768 x 50257 per token ~ 6 blocks' products at hidden 64
  auto m = make_model<float>(c);
  const std::vector<double> f = estimate_unit_flops(*m, 64);
  ASSERT_EQ(f.size(), 10u);
  EXPECT_GT(f.back(), 3 * f[1]);
  EXPECT_DOUBLE_EQ(f[1], f[8]);  // blocks alike
  TrainingArguments a;
  a.max_seq_length = 64;
  std::string how;
  const std::vector<int> auto_split = partition_blocks(*m, a, 2, "config.json", &how);
  EXPECT_GT(auto_split[0], auto_split[1]);
  EXPECT_NE(how.find("auto_partition"), std::string::npos);
  a.auto_partition = false;
  EXPECT_EQ(partition_blocks(*m, a, 3, "config.json"), (std::vector<int>{3, 3, 2}));
  a.pipeline_partition = {2, 6};
  EXPECT_EQ(partition_blocks(*m, a, 2, "config.json"), (std::vector<int>{2, 6}));
  a.pipeline_partition = {2, 5};
  try {
    partition_blocks(*m, a, 2, "m/config.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_partition gives 7 blocks in all, but the model has 8 layers "
                                         "(m/config.json)"),
              std::string::npos)
        << e.what();
  }
}

TEST(PipelinePartition, TheYamlListOption) {
  const TrainingArguments a = parse_training_arguments(
      "model_name_or_path: m\noutput_dir: o\ntrain_file: t\npipeline_parallel_degree: 2\npipeline_partition: [3, 5]\n",
      "job.yaml");
  EXPECT_EQ(a.pipeline_partition, (std::vector<int>{3, 5}));
  const TrainingArguments b = parse_training_arguments("model_name_or_path: m\noutput_dir: o\ntrain_file: t\n",
                                                       "job.yaml", {"pipeline_parallel_degree=2",
                                                                    "pipeline_partition=[1, 1]"});
  EXPECT_EQ(b.pipeline_partition, (std::vector<int>{1, 1}));
  EXPECT_THROW(parse_training_arguments("model_name_or_path: m\noutput_dir: o\ntrain_file: t\npipeline_partition: 4\n",
                                        "job.yaml"),
               Error);
}

}  // namespace
}  // namespace strata
