// strata._strata: the C++ core for python/strata. The package's Python files hold the HF and
// SageMaker shapes (Trainer, TrainingArguments, Estimator); everything they compute is here,
// in the same libraries the command line runs (docs/python.md).
#include <pybind11/pybind11.h>

#include "core/exit_status.h"
#include "python/bindings.h"
#include "util/error.h"

PYBIND11_MODULE(_strata, m) {
  namespace py = pybind11;
  m.doc() = "strata's C++ core (use the strata package: strata.Trainer, strata.TrainingArguments)";
  m.attr("__version__") = STRATA_PROJECT_VERSION;
  m.attr("version_string") = STRATA_VERSION;  // what `strata --version` prints
  m.attr("EXIT_INTERRUPTED") = strata::kExitInterrupted;
  static py::exception<strata::Error> error(m, "StrataError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const strata::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  strata::python::bind_training_arguments(m);
  strata::python::bind_session(m);
  strata::python::bind_dataset_files(m);
}
