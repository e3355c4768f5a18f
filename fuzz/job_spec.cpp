// A `strata job` spec of arbitrary bytes: the YAML, every key and value check, then the
// training configuration the job would run (training_config with the job's distribution and
// hyperparameters merged in), validated as `strata train` validates its config.
#include <cstddef>
#include <cstdint>
#include <string>

#include "jobs/job_spec.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const strata::jobs::JobSpec spec = strata::jobs::parse_job_spec(text, "job.yaml");
    strata::jobs::effective_training_config(spec, {{"output_dir", "out/fuzz"}});
  } catch (const strata::Error&) {
  }
  return 0;
}
