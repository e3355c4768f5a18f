#include "study/projection.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace strata::study {

namespace {

// Whether a group of `size` ranks, `stride` apart in the rank order, spans more than one host
// (ranks fill hosts in order, ranks_per_host each).
bool crosses_hosts(int size, int stride, int ranks_per_host) {
  return size > 1 && static_cast<int64_t>(size - 1) * stride + 1 > ranks_per_host;
}

// Units [first, end) of each stage: the embeddings go with the first, the head with the last.
std::vector<std::pair<int, int>> stage_units(const std::vector<int>& stage_blocks, int units) {
  if (stage_blocks.empty()) return {{0, units}};
  const int blocks = std::accumulate(stage_blocks.begin(), stage_blocks.end(), 0);
  if (blocks != units - 2) fail("projection: the stages' blocks add up to ", blocks, ", the profile has ", units - 2);
  std::vector<std::pair<int, int>> out;
  int next = 1;
  for (size_t s = 0; s < stage_blocks.size(); ++s) {
    const int first = s == 0 ? 0 : next;
    next += stage_blocks[s];
    out.push_back({first, s + 1 == stage_blocks.size() ? units : next});
  }
  return out;
}

}  // namespace

std::string ProfileKey::id() const { return cat(model, " B ", B, " T ", T, " tp ", tp, " threads ", threads); }

StepEstimate project_layout(const UnitProfile& micro, const ParallelLayout& l, const LayoutShape& shape,
                            const LinkModel& intra, const LinkModel& inter, double other_s) {
  const auto stages = stage_units(l.stage_blocks, static_cast<int>(micro.units.size()));
  const int p = static_cast<int>(stages.size()), m = l.microbatches;
  const int rph = shape.ranks_per_host;
  const LinkModel& tp_link = crosses_hosts(l.tp, 1, rph) ? inter : intra;
  const LinkModel& pp_link = crosses_hosts(p, l.tp, rph) ? inter : intra;
  const LinkModel& dp_link = crosses_hosts(l.dp, l.tp * p, rph) ? inter : intra;
  // A rank's compute: slower where ranks share cores, faster with more threads than the profile's.
  const double sharing =
      shape.shared_cores > 0 ? std::max(1.0, static_cast<double>(shape.world()) * shape.threads_per_rank / shape.shared_cores)
                             : 1.0;
  const double scale = sharing * micro.threads / shape.threads_per_rank;

  double work_max = 0, work_sum = 0, time_max = 0, time_sum = 0, after_max = 0, update_max = 0;
  std::vector<int> stage_of(micro.units.size());
  for (int s = 0; s < p; ++s) {
    double work = 0, tp_comm = 0, owned = 0;
    for (int u = stages[s].first; u < stages[s].second; ++u) {
      const UnitWork& w = micro.units[static_cast<size_t>(u)];
      stage_of[static_cast<size_t>(u)] = s;
      work += (w.forward_s + w.backward_s) * scale;
      if (w.tp_calls > 0) tp_comm += w.tp_calls * allreduce_seconds(tp_link, w.tp_bytes / w.tp_calls, l.tp);
      owned += w.owned_values;
    }
    const double sends = (s < p - 1 ? 1 : 0) + (s > 0 ? 1 : 0);
    const double t = work + tp_comm + sends * p2p_seconds(pp_link, micro.boundary_bytes);
    work_max = std::max(work_max, work);
    work_sum += work;
    time_max = std::max(time_max, t);
    time_sum += t;
    // After the last backward: the data-parallel all-reduce of the stage's gradients, then
    // AdamW over its values (its 1/dp slice under ZeRO).
    const double update = (l.zero_stage > 0 ? owned / l.dp : owned) * micro.optimizer_s_per_value * scale;
    update_max = std::max(update_max, update);
    after_max = std::max(after_max, allreduce_seconds(dp_link, owned * sizeof(float), l.dp) + update);
  }
  // A shared parameter read on several stages: each borrowing stage sends the owner its
  // gradient and gets the new values back, once per step.
  double shared_s = 0;
  for (const UnitProfile::Shared& sh : micro.shared) {
    std::vector<int> on;
    for (int u : sh.units) on.push_back(stage_of[static_cast<size_t>(u)]);
    std::sort(on.begin(), on.end());
    const auto borrowers = std::unique(on.begin(), on.end()) - on.begin() - 1;
    shared_s += 2.0 * static_cast<double>(borrowers) * p2p_seconds(pp_link, sh.bytes);
  }

  StepEstimate e;
  const double a = l.accumulation;
  const double pipeline = a * (time_sum + (m - 1) * time_max), busy = a * (work_sum + (m - 1) * work_max);
  e.compute_s = a * m * work_max + update_max + other_s * scale;
  e.bubble_s = busy - a * m * work_max;
  e.comm_s = (pipeline - busy) + shared_s + (after_max - update_max);
  return e;
}

double other_seconds(double measured_step_s, const UnitProfile& whole_batch) {
  return std::max(0.0, measured_step_s - whole_batch.step_compute_s());
}

}  // namespace strata::study
