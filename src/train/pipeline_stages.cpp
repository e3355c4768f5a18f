#include "train/pipeline_stages.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace strata {

PipelineStages::PipelineStages(const Model<float>& model, const std::vector<int>& blocks_per_stage) {
  const int p = static_cast<int>(blocks_per_stage.size()), L = model.num_blocks();
  STRATA_CHECK(p >= 1 && std::accumulate(blocks_per_stage.begin(), blocks_per_stage.end(), 0) == L &&
                   *std::min_element(blocks_per_stage.begin(), blocks_per_stage.end()) >= 1,
               "pipeline stages: block counts that do not cover the model's ", L, " blocks");
  // Stage s runs blocks first..first+n-1, i.e. units first+1..first+n; the first stage also
  // unit 0 (the embeddings), the last also the head unit.
  int first = 0;
  for (int s = 0; s < p; ++s) {
    const int n = blocks_per_stage[static_cast<size_t>(s)];
    units_.push_back({s == 0 ? 0 : first + 1, s == p - 1 ? model.num_units() : first + n + 1});
    first += n;
  }
  // Which stages read each table entry.
  const auto& entries = model.table().entries();
  std::vector<std::vector<int>> readers(entries.size());
  for (int s = 0; s < p; ++s)
    for (int u = units_[s].begin; u < units_[s].end; ++u)
      for (size_t e : model.unit_parameters(u))
        if (readers[e].empty() || readers[e].back() != s) readers[e].push_back(s);
  // Each stage's owned entries must form one run of the flat buffer, in stage order.
  windows_.assign(static_cast<size_t>(p), {0, 0});
  std::vector<bool> seen(static_cast<size_t>(p), false);
  size_t expect_offset = 0;
  int last_owner = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    STRATA_CHECK(!readers[e].empty(), "pipeline stages: no unit reads parameter ", entries[e].name);
    const int owner = readers[e].front();
    STRATA_CHECK(owner >= last_owner && entries[e].offset == expect_offset,
                 "pipeline stages: parameter ", entries[e].name, " (stage ", owner,
                 ") breaks the unit order of the parameter table");
    auto& w = windows_[static_cast<size_t>(owner)];
    if (!seen[static_cast<size_t>(owner)]) w = {entries[e].offset, entries[e].offset};
    seen[static_cast<size_t>(owner)] = true;
    w.second = entries[e].offset + entries[e].numel;
    expect_offset = w.second;
    last_owner = owner;
    if (readers[e].size() > 1)
      shared_.push_back({e, owner, std::vector<int>(readers[e].begin() + 1, readers[e].end())});
  }
  // A stage that owns nothing (ALBERT's middle stages run only shared layers) gets an empty
  // window where the next stage's starts.
  size_t next = model.table().total();
  for (int s = p - 1; s >= 0; --s) {
    if (!seen[static_cast<size_t>(s)]) windows_[static_cast<size_t>(s)] = {next, next};
    next = windows_[static_cast<size_t>(s)].first;
  }
}

int PipelineStages::blocks(int s) const {
  const UnitRange r = units(s);
  return std::min(r.end, static_cast<int>(units_.back().end) - 1) - std::max(r.begin, 1);
}

std::vector<size_t> PipelineStages::borrowed(int s) const {
  std::vector<size_t> out;
  for (const Shared& sh : shared_)
    if (std::find(sh.borrowers.begin(), sh.borrowers.end(), s) != sh.borrowers.end()) out.push_back(sh.entry);
  return out;
}

EntryFilter PipelineStages::keeps(const ParamTable& table, int s) const {
  std::vector<bool> kept(table.entries().size(), false);
  for (size_t e = 0; e < kept.size(); ++e) {
    const ParamEntry& p = table.entries()[e];
    kept[e] = p.offset >= begin(s) && p.offset + p.numel <= end(s);
  }
  for (size_t e : borrowed(s)) kept[e] = true;
  return [kept = std::move(kept)](size_t e) { return kept[e]; };
}

std::string PipelineStages::describe(const ParamTable& table) const {
  std::string out = cat("pipeline: ", count(), " stages\n");
  const int head = units_.back().end - 1;
  for (int s = 0; s < count(); ++s) {
    const UnitRange r = units(s);
    const int first_block = std::max(r.begin, 1) - 1;
    size_t borrowed_values = 0;
    for (size_t e : borrowed(s)) borrowed_values += table.entries()[e].numel;
    out += cat("  stage ", s, ": ", r.begin == 0 ? "embeddings, " : "", "blocks ", first_block, "..",
               first_block + blocks(s) - 1, r.end - 1 == head ? ", head" : "", "; owns ", end(s) - begin(s),
               " parameters", borrowed_values ? cat(", borrows ", borrowed_values, " shared") : std::string(), "\n");
  }
  return out;
}

}  // namespace strata
