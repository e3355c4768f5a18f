#include "train/log_reporters.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "train/csv_log.h"
#include "train/tensorboard_log.h"

namespace strata {

namespace {

// HF's default logging_dir: output_dir/runs/<Mon DD_HH-MM-SS>_<host> (local time).
std::string default_tensorboard_dir(const std::string& output_dir) {
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%b%d_%H-%M-%S", std::localtime(&now));
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return (std::filesystem::path(output_dir) / "runs" / (std::string(when) + "_" + host)).string();
}

class TensorBoardReporter : public LogReporter {
 public:
  explicit TensorBoardReporter(const std::string& dir) : log_(dir) {}
  void log(const nlohmann::json& entry, const std::vector<nlohmann::json>&) override {
    log_.write(entry, entry.value("step", int64_t{0}));
  }

 private:
  TensorBoardLog log_;
};

class CsvReporter : public LogReporter {
 public:
  explicit CsvReporter(const std::string& path) : csv_(path) {}
  void log(const nlohmann::json& entry, const std::vector<nlohmann::json>& history) override {
    csv_.write(entry, history);
  }

 private:
  CsvLog csv_;
};

bool wants(const TrainingArguments& a, const std::string& name) {
  const auto& r = a.report_to;
  if (std::find(r.begin(), r.end(), "none") != r.end()) return false;
  return std::find(r.begin(), r.end(), "all") != r.end() || std::find(r.begin(), r.end(), name) != r.end();
}

}  // namespace

const std::vector<std::string>& supported_report_to() {
  static const std::vector<std::string> names = {"tensorboard", "csv"};
  return names;
}

std::vector<std::unique_ptr<LogReporter>> make_log_reporters(const TrainingArguments& a, const std::string& log_dir) {
  std::vector<std::unique_ptr<LogReporter>> out;
  if (wants(a, "tensorboard"))
    out.push_back(std::make_unique<TensorBoardReporter>(a.logging_dir.empty() ? default_tensorboard_dir(a.output_dir)
                                                                              : a.logging_dir));
  if (wants(a, "csv")) out.push_back(std::make_unique<CsvReporter>((std::filesystem::path(log_dir) / "trainer_log.csv").string()));
  return out;
}

}  // namespace strata
