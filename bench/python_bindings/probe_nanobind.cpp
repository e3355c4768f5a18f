// The binding probe in nanobind; probe_pybind11.cpp is the same module in pybind11, call for
// call. Each call stands for one kind that strata._strata makes (src/python/): run.sh times
// them from Python, and times the build and size of this file (docs/python_bindings.md).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

namespace nb = nanobind;

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

// (d) a numpy array over the buffer (Framework nb::numpy), or (d') nanobind's own array object
// (nb::array_api: the buffer protocol and DLPack), which np.asarray wraps; the capsule owns a
// reference to the buffer.
template <typename Framework>
nb::ndarray<Framework, float, nb::c_contig> view(std::vector<size_t> shape) {
  auto* owner = new Buffer(buffer());
  nb::capsule release(owner, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  return {(*owner)->data(), shape.size(), shape.data(), release};
}

}  // namespace

NB_MODULE(probe_nanobind, m) {
  m.def("noop", [] {});                                                                      // (a)
  m.def("scalar", [](const std::string& s, int n) { return double(s.size()) * n; },          // (b)
        nb::arg("name"), nb::arg("n"));
  m.def("options", [](const Options& o) { return o; }, nb::arg("options"));                 // (c)
  m.def("array1d", [] { return view<nb::numpy>({1000000}); });                              // (d)
  m.def("array2d", [] { return view<nb::numpy>({1000, 1000}); });
  m.def("shared2d", [] { return view<nb::array_api>({1000, 1000}); });                     // (d')
  // (e) C++ calls Python back n times, holding the GIL only around each call, as the Trainer
  // calls the callbacks' dispatcher from its loop (src/python/session.cpp).
  m.def(
      "callbacks",
      [](const nb::object& callback, int n) {
        int stops = 0;
        nb::gil_scoped_release nogil;
        for (int i = 0; i < n; ++i) {
          nb::gil_scoped_acquire gil;
          stops += nb::cast<bool>(callback(i));
        }
        return stops;
      },
      nb::arg("callback"), nb::arg("n"));
}
