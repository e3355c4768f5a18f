#include "dist/pipeline_schedule.h"

#include <algorithm>

#include "util/error.h"

namespace strata::dist {

PipelineKind parse_pipeline_kind(const std::string& name) {
  if (name == "simple") return PipelineKind::Simple;
  if (name == "interleaved") return PipelineKind::Interleaved;
  fail("pipeline is '", name, "'; expected simple (GPipe: all forwards, then all backwards) or interleaved "
       "(one forward, one backward)");
}

std::vector<PipeOp> pipeline_schedule(PipelineKind kind, int stages, int stage, int m) {
  STRATA_CHECK(stages >= 1 && stage >= 0 && stage < stages && m >= 0, "pipeline_schedule: stage ", stage, " of ",
               stages, ", ", m, " micro-batches");
  std::vector<PipeOp> ops;
  if (kind == PipelineKind::Simple) {
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Forward, i});
    for (int i = 0; i < m; ++i) ops.push_back({PipeOp::Backward, i});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, m);
  for (int i = 0; i < warmup; ++i) ops.push_back({PipeOp::Forward, i});
  for (int i = warmup; i < m; ++i) {
    ops.push_back({PipeOp::Forward, i});
    ops.push_back({PipeOp::Backward, i - warmup});
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back({PipeOp::Backward, i});
  return ops;
}

int max_in_flight(PipelineKind kind, int stages, int stage, int m) {
  return kind == PipelineKind::Simple ? m : std::min(m, stages - stage);
}

double theoretical_bubble(int stages, int m) {
  return static_cast<double>(stages - 1) / static_cast<double>(m + stages - 1);
}

}  // namespace strata::dist
