// TensorBoard event files: a TFRecord file (io/tfrecord.h) of Event protocol buffers
// (proto/tensorboard_event.proto), the first holding the file version, then one scalar
// Summary per logged value, tagged as HF's TensorBoardCallback tags them (rewrite_logs):
// eval_f1 -> eval/f1, test_x -> test/x, anything else -> train/<key> (train/loss,
// train/learning_rate, train/epoch). Each event is flushed as written, so TensorBoard shows a
// run while it trains.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

class TensorBoardLog {
 public:
  // Creates `dir` and a new events.out.tfevents.<time>.<host>.<pid> file in it.
  explicit TensorBoardLog(const std::string& dir);
  ~TensorBoardLog();
  TensorBoardLog(const TensorBoardLog&) = delete;
  TensorBoardLog& operator=(const TensorBoardLog&) = delete;

  // One scalar event per number in `entry` but "step" (strings, e.g. a checkpoint path, are not curves).
  void write(const nlohmann::json& entry, int64_t step);
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& event_bytes);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// HF's tag of a logged key.
std::string tensorboard_tag(const std::string& key);

struct TensorBoardScalar {
  std::string tag;
  int64_t step;
  double wall_time;
  float value;
};
// The scalars of an event file, every record's CRCs checked (io::read_tfrecords); an error
// when the first event is not a file version.
std::vector<TensorBoardScalar> read_tensorboard_scalars(const std::string& path);

}  // namespace strata
