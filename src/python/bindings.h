// The module strata._strata (python/strata is the package around it): one bind_* per part.
// Python sees strata::Error as strata.StrataError (a ValueError) with strata's message.
#pragma once
#include <pybind11/pybind11.h>

namespace strata::python {

namespace py = pybind11;

void bind_training_arguments(py::module_& m);  // training_arguments.cpp
void bind_session(py::module_& m);             // session.cpp
void bind_dataset_files(py::module_& m);       // dataset_files.cpp

}  // namespace strata::python
