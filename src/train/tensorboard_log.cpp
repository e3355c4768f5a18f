#include "train/tensorboard_log.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "io/tfrecord.h"
#include "tensorboard_event.pb.h"
#include "util/error.h"

namespace strata {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

std::string tensorboard_tag(const std::string& key) {
  if (key.starts_with("eval_")) return "eval/" + key.substr(5);
  if (key.starts_with("test_")) return "test/" + key.substr(5);
  return "train/" + key;
}

TensorBoardLog::TensorBoardLog(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const double t = now_seconds();
  char name[64];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.", static_cast<long long>(t));
  path_ = (std::filesystem::path(dir) / cat(name, host_name(), ".", getpid())).string();
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) fail(path_, ": cannot create the TensorBoard event file: ", std::strerror(errno));
  tensorboard::Event version;
  version.set_wall_time(t);
  version.set_file_version("brain.Event:2");  // what TensorBoard's loader expects first
  append(version.SerializeAsString());
}

TensorBoardLog::~TensorBoardLog() {
  if (file_) std::fclose(file_);
}

void TensorBoardLog::append(const std::string& event_bytes) {
  const std::string record = io::tfrecord_frame(event_bytes);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    fail(path_, ": cannot write a TensorBoard event: ", std::strerror(errno));
}

void TensorBoardLog::write(const nlohmann::json& entry, int64_t step) {
  const double t = now_seconds();
  for (const auto& [key, value] : entry.items()) {
    if (key == "step" || !value.is_number()) continue;
    tensorboard::Event event;
    event.set_wall_time(t);
    event.set_step(step);
    tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tensorboard_tag(key));
    v->set_simple_value(value.get<float>());
    append(event.SerializeAsString());
  }
}

std::vector<TensorBoardScalar> read_tensorboard_scalars(const std::string& path) {
  const std::vector<std::string> records = io::read_tfrecords(path);
  std::vector<TensorBoardScalar> out;
  for (size_t i = 0; i < records.size(); ++i) {
    tensorboard::Event event;
    if (!event.ParseFromString(records[i])) fail(path, ": record ", i, " is not an Event protocol buffer");
    if (i == 0 && event.file_version().rfind("brain.Event:", 0) != 0)
      fail(path, ": the first event is not a file version (got '", event.file_version(), "')");
    if (!event.has_summary()) continue;
    for (const tensorboard::Summary::Value& v : event.summary().value())
      if (v.has_simple_value()) out.push_back({v.tag(), event.step(), event.wall_time(), v.simple_value()});
  }
  return out;
}

}  // namespace strata
