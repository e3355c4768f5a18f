#include "dist/rank_grid.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "util/error.h"

namespace strata::dist {

namespace {

Axis axis_of_letter(char c) { return c == 'D' ? Axis::Data : c == 'P' ? Axis::Pipeline : Axis::Tensor; }

}  // namespace

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::Data: return "data";
    case Axis::Pipeline: return "pipeline";
    case Axis::Tensor: return "tensor";
  }
  return "?";
}

std::string placement_order(const std::string& s) {
  if (s == "cluster") return "DPT";
  if (s == "spread") return "TPD";
  std::string up = s;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string sorted = up;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != "DPT")
    fail("placement_strategy '", s, "' is not cluster, spread or a permutation of the letters D, P, T "
         "(data, pipeline, tensor; the right-most varies fastest over ranks), e.g. DPT or TPD");
  return up;
}

RankGrid::RankGrid(int world_size, int pp, int tp, const std::string& placement)
    : world_(world_size), order_(placement_order(placement)) {
  STRATA_CHECK(world_size >= 1, "a job has at least one process, got ", world_size);
  STRATA_CHECK(pp >= 1, "pipeline_parallel_degree (partitions) must be at least 1, got ", pp);
  STRATA_CHECK(tp >= 1, "tensor_parallel_degree must be at least 1, got ", tp);
  if (world_size % (pp * tp) != 0)
    fail("the job has ", world_size, world_size == 1 ? " process" : " processes",
         ", which pipeline_parallel_degree (partitions) ", pp, " x tensor_parallel_degree ", tp, " = ", pp * tp,
         " does not divide (processes = data x pipeline x tensor parallel degree): start a multiple of ", pp * tp,
         " processes");
  sizes_ = {world_size / (pp * tp), pp, tp};
}

int RankGrid::stride(Axis a) const {
  int s = 1;
  for (size_t i = order_.size(); i-- > 0;) {
    const Axis here = axis_of_letter(order_[i]);
    if (here == a) return s;
    s *= size(here);
  }
  return s;
}

GridCoord RankGrid::coord(int rank) const {
  STRATA_CHECK(rank >= 0 && rank < world_, "rank ", rank, " is outside a grid of ", world_, " ranks");
  auto along = [&](Axis a) { return rank / stride(a) % size(a); };
  return {along(Axis::Data), along(Axis::Pipeline), along(Axis::Tensor)};
}

int RankGrid::rank_of(const GridCoord& c) const {
  return c.d * stride(Axis::Data) + c.p * stride(Axis::Pipeline) + c.t * stride(Axis::Tensor);
}

std::vector<int> RankGrid::group(Axis a, int rank) const {
  const int base = rank - coord(rank)[a] * stride(a);
  std::vector<int> g;
  for (int k = 0; k < size(a); ++k) g.push_back(base + k * stride(a));
  return g;
}

int RankGrid::group_index(Axis a, int rank) const {
  const GridCoord c = coord(rank);
  switch (a) {
    case Axis::Data: return c.p * size(Axis::Tensor) + c.t;
    case Axis::Pipeline: return c.d * size(Axis::Tensor) + c.t;
    case Axis::Tensor: return c.d * size(Axis::Pipeline) + c.p;
  }
  return 0;
}

bool RankGrid::within_hosts(Axis a, const std::vector<std::string>& host_of_rank) const {
  STRATA_CHECK(host_of_rank.size() == static_cast<size_t>(world_), "within_hosts: ", host_of_rank.size(),
               " host labels for ", world_, " ranks");
  for (int r = 0; r < world_; ++r)
    for (int q : group(a, r))
      if (host_of_rank[static_cast<size_t>(q)] != host_of_rank[static_cast<size_t>(r)]) return false;
  return true;
}

std::string RankGrid::describe(const std::vector<std::string>& host_of_rank) const {
  std::string inside, across;
  for (char letter : order_) {
    const Axis a = axis_of_letter(letter);
    if (size(a) == 1) continue;  // a group of one is trivially local
    std::string& list = within_hosts(a, host_of_rank) ? inside : across;
    list += cat(list.empty() ? "" : ", ", axis_name(a));
  }
  std::string out = cat("parallel layout: ", world_, world_ == 1 ? " process" : " processes", " = data ",
                        size(Axis::Data), " x pipeline ", size(Axis::Pipeline), " x tensor ", size(Axis::Tensor),
                        ", placement ", order_, " (", order_.back(), " varies fastest over ranks); groups inside a host: ",
                        inside.empty() ? "none" : inside, "; across hosts: ", across.empty() ? "none" : across, "\n");
  // A table of hundreds of ranks would bury the rest of the banner.
  constexpr int kMaxRows = 64;
  if (world_ > kMaxRows) return out + cat("  (per-rank table left out above ", kMaxRows, " ranks)\n");
  out += "  rank  data  pipe  tensor  host\n";
  for (int r = 0; r < world_; ++r) {
    const GridCoord c = coord(r);
    char line[160];
    std::snprintf(line, sizeof line, "  %4d  %4d  %4d  %6d  %s\n", r, c.d, c.p, c.t,
                  host_of_rank[static_cast<size_t>(r)].c_str());
    out += line;
  }
  return out;
}

std::vector<std::string> block_hosts(int world_size, int local_world_size) {
  STRATA_CHECK(local_world_size >= 1, "block_hosts: local world size ", local_world_size);
  std::vector<std::string> hosts;
  for (int r = 0; r < world_size; ++r) hosts.push_back(cat("host", r / local_world_size));
  return hosts;
}

}  // namespace strata::dist
