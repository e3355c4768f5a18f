// strata._strata.Session: a cli::TrainerSession driven from Python. While C++ trains, the GIL
// is released; it is taken back only to run the script's callbacks and compute_metrics and,
// after every step, to let Python see Ctrl-C (PyErr_CheckSignals). Arrays go to numpy
// without copying, through the buffer protocol (any numpy version reads them).
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "cli/trainer_session.h"
#include "io/python_json.h"
#include "python/bindings.h"
#include "python/training_arguments.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::python {

namespace {

// MPI starts once per process: every session of the process shares the ranks.
cli::Ranks& process_ranks(double timeout_s) {
  static std::optional<cli::Ranks> ranks;
  if (!ranks) ranks = cli::join_ranks(timeout_s);
  return *ranks;
}

// Unwinds the Trainer when Python code it called raised; the exception itself is rethrown
// to the script once C++ has returned (PythonCalls::rethrow).
struct PythonRaised {};

// What Python gave the session to call back: the callbacks' dispatcher and compute_metrics.
class PythonCalls final : public TrainerCallback {
 public:
  PythonCalls(py::object dispatch, std::set<std::string> events, py::object compute_metrics)
      : dispatch_(std::move(dispatch)), events_(std::move(events)), compute_metrics_(std::move(compute_metrics)) {}
  ~PythonCalls() override {
    py::gil_scoped_acquire gil;
    dispatch_ = py::object();
    compute_metrics_ = py::object();
  }

  void on_event(TrainerEvent event, const TrainerState& state, const nlohmann::json& payload,
                TrainerControl& control) override {
    if (dispatch_.is_none() || !events_.count(event_name(event))) return;
    std::fflush(stdout);  // C++'s lines before the callback's
    py::gil_scoped_acquire gil;
    call([&] {
      const py::object stop = dispatch_(event_name(event), state.hf_json().dump(), payload.dump());
      if (stop.cast<bool>()) control.should_training_stop = true;
    });
  }

  bool interrupt_requested() override {
    if (ctrl_c_) return true;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return false;
    // Python's SIGINT handler raised KeyboardInterrupt (or another handler raised): the step
    // is done; the Trainer checkpoints and stops, and the script gets KeyboardInterrupt then.
    PyErr_Clear();
    return true;
  }

  nlohmann::json metrics(PredictionArrays arrays);
  void clear_interrupt() { ctrl_c_ = false; }
  bool wants_metrics() const { return !compute_metrics_.is_none(); }

  void rethrow() {
    if (!raised_) return;
    py::error_already_set e = std::move(*raised_);
    raised_.reset();
    throw e;
  }

 private:
  template <typename F>
  void call(F&& f) {
    try {
      f();
    } catch (py::error_already_set& e) {
      // Ctrl-C while Python code ran: the same orderly stop as one that comes while C++ runs.
      if (e.matches(PyExc_KeyboardInterrupt)) {
        ctrl_c_ = true;
        return;
      }
      raised_.emplace(std::move(e));
      throw PythonRaised{};
    } catch (const py::cast_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
      raised_.emplace();
      throw PythonRaised{};
    }
  }

  py::object dispatch_;
  std::set<std::string> events_;
  py::object compute_metrics_;
  std::optional<py::error_already_set> raised_;
  bool ctrl_c_ = false;
};

// One array of a PredictionArrays, shared with numpy (which holds this object alive).
struct Array {
  std::shared_ptr<const PredictionArrays> owner;
  void* data;
  bool is_float;
  std::vector<int64_t> shape;
};

py::object array_of(const std::shared_ptr<const PredictionArrays>& a, const void* data, bool is_float,
                    const std::vector<int64_t>& shape) {
  if (shape.empty()) return py::none();
  return py::cast(Array{a, const_cast<void*>(data), is_float, shape});
}

// (predictions, label_ids), numpy-ready; label_ids None without labels.
py::tuple to_python(PredictionArrays&& arrays) {
  auto a = std::make_shared<const PredictionArrays>(std::move(arrays));
  py::object labels = a->int_labels.empty() ? array_of(a, a->float_labels.data(), true, a->labels_shape)
                                            : array_of(a, a->int_labels.data(), false, a->labels_shape);
  return py::make_tuple(array_of(a, a->predictions.data(), true, a->predictions_shape), labels);
}

nlohmann::json PythonCalls::metrics(PredictionArrays arrays) {
  std::fflush(stdout);
  py::gil_scoped_acquire gil;
  nlohmann::json out;
  call([&] {
    const py::tuple t = to_python(std::move(arrays));  // numpy may keep them past this call
    out = nlohmann::json::parse(compute_metrics_(t[0], t[1]).cast<std::string>());
  });
  return out;
}

cli::Mode mode_of(const std::string& name) {
  if (name == "train") return cli::Mode::Train;
  if (name == "evaluate") return cli::Mode::Evaluate;
  if (name == "predict") return cli::Mode::Predict;
  fail("mode '", name, "': expected train, evaluate or predict");
}

class Session {
 public:
  Session(const std::vector<std::pair<std::string, std::string>>& options, const std::string& mode,
          py::object dispatch, std::set<std::string> events, py::object compute_metrics)
      : calls_(std::move(dispatch), std::move(events), std::move(compute_metrics)) {
    const TrainingArguments a = parse_arguments(options);
    cli::Ranks& ranks = process_ranks(a.ddp_timeout);
    world_size_ = ranks.world->size();
    guarded([&] {
      py::gil_scoped_release nogil;
      session_ = std::make_unique<cli::TrainerSession>(a, mode_of(mode), ranks);
    });
    session_->trainer().set_callback(&calls_);
    if (calls_.wants_metrics())
      session_->trainer().set_compute_metrics([this](PredictionArrays p) { return calls_.metrics(std::move(p)); });
  }

  // {"metrics": {...}} or {"interrupted": {"checkpoint", "step", "signal"}}; a non-empty
  // `resume_from_checkpoint` resumes from it (a directory or "latest").
  std::string train(const std::string& resume_from_checkpoint) {
    data::DataLoader* data = session_->train_data();
    if (!data) fail("this Trainer has no train_dataset to train on");
    if (!resume_from_checkpoint.empty()) session_->trainer().set_resume_from_checkpoint(resume_from_checkpoint);
    nlohmann::json out;
    calls_.clear_interrupt();
    guarded([&] {
      py::gil_scoped_release nogil;
      try {
        out["metrics"] = session_->trainer().train(*data, session_->eval_data(), session_->eval_task());
      } catch (const TrainingInterrupted& t) {
        out["interrupted"] = {{"checkpoint", t.checkpoint}, {"step", t.step}, {"signal", t.signal_number}};
      }
    });
    return out.dump();
  }

  // (metrics JSON, predictions, label_ids); `file` empty: the split the session was made with.
  py::tuple pass(const std::string& file, const std::string& split, bool arrays) {
    const bool eval = split == "eval";
    std::optional<cli::ExtraSplit> extra;
    data::DataLoader* data = eval ? session_->eval_data() : session_->test_data();
    const EvalTask* task = eval ? session_->eval_task() : session_->test_task();
    Trainer::PassResult r;
    guarded([&] {
      py::gil_scoped_release nogil;
      if (!file.empty()) {
        extra = session_->load_split(file, eval ? cli::Mode::Evaluate : cli::Mode::Predict);
        data = extra->loader.get();
        task = extra->task;
      }
      if (!data) fail("no ", eval ? "eval_dataset" : "test_dataset", " to ", eval ? "evaluate" : "predict", " on");
      r = session_->trainer().predict(*data, eval ? "eval" : "test", task, arrays);
    });
    if (!arrays) return py::make_tuple(r.metrics.dump(), py::none(), py::none());
    PredictionArrays a;
    guarded([&] { a = r.outputs->arrays(); });
    const py::tuple t = to_python(std::move(a));
    return py::make_tuple(r.metrics.dump(), t[0], t[1]);
  }

  void save_model(const std::string& dir) {
    guarded([&] {
      py::gil_scoped_release nogil;
      session_->trainer().save_model(dir);
    });
  }

  void log(const std::string& entry) {
    guarded([&] { session_->trainer().log(nlohmann::json::parse(entry)); });
  }

  std::string state() const { return session_->trainer().state().hf_json().dump(); }
  int rank() const { return session_->world().rank(); }
  int world_size() const { return world_size_; }

 private:
  // Runs f with the stop signals routed to the idle thread; Python's exception from a callback
  // comes back as itself. With several ranks an error stops the whole job (as `strata train`
  // does): the other ranks would wait forever.
  template <typename F>
  void guarded(F&& f) {
    const SignalsOffThisThread signals;  // Ctrl-C and SIGTERM reach Python's flag, not our system calls
    try {
      try {
        f();
      } catch (const PythonRaised&) {
        if (world_size_ > 1) {
          py::gil_scoped_acquire gil;
          try {
            calls_.rethrow();
          } catch (py::error_already_set& e) {
            abort_job(e.what());
          }
        }
        calls_.rethrow();
      }
      std::fflush(stdout);
    } catch (const Error& e) {
      std::fflush(stdout);
      if (world_size_ > 1) abort_job(e.what());
      throw;
    }
  }

  [[noreturn]] void abort_job(const std::string& what) {
    cli::Ranks& ranks = process_ranks(0);
    ranks.world->abort(cat("strata: rank ", ranks.world->rank(), ": error: ", what), 1);
    std::abort();
  }

  PythonCalls calls_;
  int world_size_ = 1;
  std::unique_ptr<cli::TrainerSession> session_;
};

}  // namespace

void bind_session(py::module_& m) {
  py::class_<Array>(m, "Array", py::buffer_protocol())
      .def_buffer([](Array& a) {
        const py::ssize_t item = a.is_float ? sizeof(float) : sizeof(int64_t);
        std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end()), strides(shape.size());
        py::ssize_t stride = item;
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        return py::buffer_info(a.data, item,
                               a.is_float ? py::format_descriptor<float>::format()
                                          : py::format_descriptor<int64_t>::format(),
                               static_cast<py::ssize_t>(shape.size()), shape, strides, /*readonly=*/true);
      });
  py::class_<Session>(m, "Session")
      .def(py::init<const std::vector<std::pair<std::string, std::string>>&, const std::string&, py::object,
                    std::set<std::string>, py::object>(),
           py::arg("options"), py::arg("mode"), py::arg("dispatch"), py::arg("events"), py::arg("compute_metrics"))
      .def("train", &Session::train, py::arg("resume_from_checkpoint") = "")
      .def("pass_", &Session::pass, py::arg("file"), py::arg("split"), py::arg("arrays"))
      .def("save_model", &Session::save_model, py::arg("dir"))
      .def("log", &Session::log, py::arg("entry"))
      .def("state", &Session::state)
      .def_property_readonly("rank", &Session::rank)
      .def_property_readonly("world_size", &Session::world_size);
}

}  // namespace strata::python
