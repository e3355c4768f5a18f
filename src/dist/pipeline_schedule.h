// The order in which one pipeline stage runs the forwards and backwards of the micro-batches
// of one batch (pure arithmetic, no MPI; train/pipeline_step.h runs it):
//
//   simple       GPipe: every forward, then every backward. A stage holds all m micro-batches'
//                saved activations at once.
//   interleaved  1F1B (PipeDream-Flush, Megatron's default): stage s of p runs p-s-1 warm-up
//                forwards, then alternates one forward and one backward, then drains the
//                remaining backwards. At most p-s micro-batches are in flight on stage s.
//
// Both run backwards in micro-batch order 0..m-1, so they accumulate gradients in the same
// order and give the same result; both idle (p-1)/(m+p-1) of the time when every stage takes
// the same time per micro-batch (the pipeline bubble).
#pragma once
#include <string>
#include <vector>

namespace strata::dist {

enum class PipelineKind { Simple, Interleaved };
// "simple" or "interleaved" (SageMaker's `pipeline` values); anything else throws strata::Error.
PipelineKind parse_pipeline_kind(const std::string& name);

struct PipeOp {
  enum Kind { Forward, Backward } kind;
  int micro;
  bool operator==(const PipeOp&) const = default;
};

std::vector<PipeOp> pipeline_schedule(PipelineKind kind, int stages, int stage, int micro_batches);

// The most micro-batches whose forward has run and whose backward has not, on `stage`: the
// number of saved-activation sets the stage keeps.
int max_in_flight(PipelineKind kind, int stages, int stage, int micro_batches);

// (p-1)/(m+p-1): the fraction of a step each stage idles when all stages take equal time.
double theoretical_bubble(int stages, int micro_batches);

}  // namespace strata::dist
