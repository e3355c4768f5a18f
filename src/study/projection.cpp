#include "study/projection.h"

#include <algorithm>

namespace strata::study {

StepEstimate project_step(double compute_s, double gradient_bytes, const LayoutShape& s, const LinkModel& intra,
                          const LinkModel& inter) {
  StepEstimate e;
  const double oversubscription =
      s.shared_cores > 0 ? std::max(1.0, static_cast<double>(s.world()) * s.threads_per_rank / s.shared_cores) : 1.0;
  e.compute_s = compute_s * oversubscription;
  e.comm_s = allreduce_seconds(s.instances > 1 ? inter : intra, gradient_bytes, s.world());
  return e;
}

}  // namespace strata::study
