// Step time, job time and cost of a data-parallel layout, from what one rank measured: its
// compute time per step (the study's one-rank cell, or `strata plan`'s calibration run) and
// the gradient bytes each step all-reduces, plus the links' all-reduce model (link_model.h).
//   step = compute x oversubscription + all-reduce(gradient bytes, ranks)
// The all-reduce is counted whole: DDP hides part of it behind backward, so this is an upper
// bound where communication matters and exact where it does not. Ranks that share cores (a
// study's cells all run on this machine) compute more slowly by the ratio of threads to cores.
#pragma once
#include "study/link_model.h"

namespace strata::study {

struct LayoutShape {
  int instances = 1;
  int ranks_per_host = 1;
  // The cores the ranks' threads really share: this machine's for cells that all run here; 0
  // for real hosts (every rank has the cores the catalog gives it).
  int shared_cores = 0;
  int threads_per_rank = 1;
  int world() const { return instances * ranks_per_host; }
};

struct StepEstimate {
  double compute_s = 0, comm_s = 0;
  double step_s() const { return compute_s + comm_s; }
};

// Within one host the ranks all-reduce over `intra`; across hosts the ring crosses `inter`,
// the slower link, which then sets the pace.
StepEstimate project_step(double compute_s, double gradient_bytes, const LayoutShape& shape, const LinkModel& intra,
                          const LinkModel& inter);

}  // namespace strata::study
