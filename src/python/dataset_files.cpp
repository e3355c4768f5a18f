// Datasets a script holds in memory (lists of dicts, dicts of lists or numpy arrays, a
// datasets.Dataset's columns) reach the data pipeline as a JSON Lines file written here,
// column by column in C++: the same readers, checks and batches as a file given by path,
// so both give the same run. Numeric columns are read through the buffer protocol (numpy,
// Arrow) without a Python object per value.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "io/files.h"
#include "python/bindings.h"
#include "util/error.h"

namespace strata::python {

namespace {

// A Python value (str, int, float, bool, None, list of those, nested) as JSON.
nlohmann::json value_json(const py::handle& v, const std::string& where) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    nlohmann::json a = nlohmann::json::array();
    for (const py::handle& e : v) a.push_back(value_json(e, where));
    return a;
  }
  if (py::hasattr(v, "item") && py::hasattr(v, "dtype")) return value_json(v.attr("item")(), where);  // numpy scalars
  if (py::hasattr(v, "tolist")) return value_json(v.attr("tolist")(), where);                         // numpy rows
  fail(where, ": a value of type ", py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>(),
       "; expected str, int, float, bool, None or a list of them");
}

// One column's values as JSON, from a buffer of numbers (1-D: a value per row; 2-D: a list
// per row) or any sequence.
std::vector<nlohmann::json> column_json(const py::handle& values, const std::string& where) {
  std::vector<nlohmann::json> out;
  if (py::isinstance<py::buffer>(values) && !py::isinstance<py::bytes>(values) && !py::isinstance<py::str>(values)) {
    const py::buffer_info b = py::reinterpret_borrow<py::buffer>(values).request();
    const std::string f = b.format;
    const bool floating = f == "f" || f == "d", integer = f.size() == 1 && std::strchr("bBhHiIlLqQ?", f[0]);
    if ((floating || integer) && (b.ndim == 1 || b.ndim == 2)) {
      const py::ssize_t rows = b.shape[0], cols = b.ndim == 2 ? b.shape[1] : 1;
      auto at = [&](py::ssize_t r, py::ssize_t c) -> nlohmann::json {
        const char* p = static_cast<const char*>(b.ptr) + r * b.strides[0] + (b.ndim == 2 ? c * b.strides[1] : 0);
        switch (f[0]) {
          case 'f': return static_cast<double>(*reinterpret_cast<const float*>(p));
          case 'd': return *reinterpret_cast<const double*>(p);
          case '?': return *reinterpret_cast<const bool*>(p);
          case 'b': return *reinterpret_cast<const int8_t*>(p);
          case 'B': return *reinterpret_cast<const uint8_t*>(p);
          case 'h': return *reinterpret_cast<const int16_t*>(p);
          case 'H': return *reinterpret_cast<const uint16_t*>(p);
          case 'i': return *reinterpret_cast<const int32_t*>(p);
          case 'I': return *reinterpret_cast<const uint32_t*>(p);
          case 'l': case 'q': return *reinterpret_cast<const int64_t*>(p);
          default: return *reinterpret_cast<const uint64_t*>(p);
        }
      };
      out.reserve(static_cast<size_t>(rows));
      for (py::ssize_t r = 0; r < rows; ++r) {
        if (b.ndim == 1) {
          out.push_back(at(r, 0));
          continue;
        }
        nlohmann::json row = nlohmann::json::array();
        for (py::ssize_t c = 0; c < cols; ++c) row.push_back(at(r, c));
        out.push_back(std::move(row));
      }
      return out;
    }
    if (py::hasattr(values, "tolist")) return column_json(values.attr("tolist")(), where);  // strings, objects
  }
  if (!py::isinstance<py::sequence>(values) || py::isinstance<py::str>(values))
    fail(where, ": expected a list or a 1-D / 2-D array of values, got ",
         py::str(py::type::handle_of(values).attr("__name__")).cast<std::string>());
  for (const py::handle& v : values) out.push_back(value_json(v, where));
  return out;
}

}  // namespace

void bind_dataset_files(py::module_& m) {
  // Writes `columns` ((name, values) pairs, all of one length) to `path` as JSON Lines, one
  // object per row, atomically. `what` names the dataset in errors ("train_dataset").
  m.def(
      "write_jsonl",
      [](const std::string& path, const std::vector<std::pair<std::string, py::object>>& columns,
         const std::string& what) {
        if (columns.empty()) fail(what, ": the dataset has no columns");
        std::vector<std::vector<nlohmann::json>> values;
        for (const auto& [name, v] : columns) {
          values.push_back(column_json(v, what + "['" + name + "']"));
          if (values.back().size() != values.front().size())
            fail(what, ": column '", name, "' has ", values.back().size(), " rows, column '", columns.front().first,
                 "' has ", values.front().size());
        }
        if (values.front().empty()) fail(what, ": the dataset has no rows");
        std::string text;
        {
          py::gil_scoped_release nogil;
          for (size_t r = 0; r < values.front().size(); ++r) {
            nlohmann::json row = nlohmann::json::object();
            for (size_t c = 0; c < columns.size(); ++c) row[columns[c].first] = std::move(values[c][r]);
            text += row.dump();
            text += '\n';
          }
          io::write_file_atomic(path, text);
        }
        return values.front().size();
      },
      py::arg("path"), py::arg("columns"), py::arg("what"));
}

}  // namespace strata::python
