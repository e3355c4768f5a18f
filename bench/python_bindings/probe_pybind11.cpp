// The binding probe in pybind11; probe_nanobind.cpp is the same module in nanobind, call for
// call. Each call stands for one kind that strata._strata makes (src/python/): run.sh times
// them from Python, and times the build and size of this file (docs/python_bindings.md).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace {

// An options dict's values (TrainingArguments keywords); bool first, or True would read as 1.
using Value = std::variant<bool, int64_t, double, std::string>;
using Options = std::map<std::string, Value>;

// One buffer of 1e6 floats that every array shares, as numpy shares strata's PredictionArrays:
// an array holds the buffer alive through its owner, and nothing is copied.
using Buffer = std::shared_ptr<std::vector<float>>;
Buffer buffer() {
  static const Buffer b = std::make_shared<std::vector<float>>(1000000, 1.0f);
  return b;
}

// (d) a numpy array over the buffer; the capsule owns a reference to it.
py::array_t<float> view(std::vector<py::ssize_t> shape) {
  auto* owner = new Buffer(buffer());
  py::capsule release(owner, [](void* p) { delete static_cast<Buffer*>(p); });
  return py::array_t<float>(std::move(shape), (*owner)->data(), release);
}

// (d') strata's route today: an object with the buffer protocol, which np.asarray wraps.
struct Shared {
  Buffer owner;
  std::vector<py::ssize_t> shape;
};

}  // namespace

PYBIND11_MODULE(probe_pybind11, m) {
  m.def("noop", [] {});                                                                      // (a)
  m.def("scalar", [](const std::string& s, int n) { return double(s.size()) * n; },          // (b)
        py::arg("name"), py::arg("n"));
  m.def("options", [](const Options& o) { return o; }, py::arg("options"));                 // (c)
  m.def("array1d", [] { return view({1000000}); });                                         // (d)
  m.def("array2d", [] { return view({1000, 1000}); });
  py::class_<Shared>(m, "Shared", py::buffer_protocol()).def_buffer([](Shared& s) {         // (d')
    std::vector<py::ssize_t> strides(s.shape.size());
    py::ssize_t stride = sizeof(float);
    for (size_t i = s.shape.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= s.shape[i];
    }
    return py::buffer_info(s.owner->data(), sizeof(float), py::format_descriptor<float>::format(),
                           static_cast<py::ssize_t>(s.shape.size()), s.shape, strides, /*readonly=*/true);
  });
  m.def("shared2d", [] { return Shared{buffer(), {1000, 1000}}; });
  // (e) C++ calls Python back n times, holding the GIL only around each call, as the Trainer
  // calls the callbacks' dispatcher from its loop (src/python/session.cpp).
  m.def(
      "callbacks",
      [](const py::object& callback, int n) {
        int stops = 0;
        py::gil_scoped_release nogil;
        for (int i = 0; i < n; ++i) {
          py::gil_scoped_acquire gil;
          stops += callback(i).cast<bool>();
        }
        return stops;
      },
      py::arg("callback"), py::arg("n"));
}
