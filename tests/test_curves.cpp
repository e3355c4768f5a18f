// report_to's curves: the TFRecord framing and its CRCs, TensorBoard events read back, the
// CSV log, and warnings printed above the progress bar instead of through it.
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "io/tfrecord.h"
#include "test_util_fs.h"
#include "train/csv_log.h"
#include "train/progress.h"
#include "train/tensorboard_log.h"
#include "util/console.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::ScratchDir;

TEST(Curves, Crc32cMatchesTheCheckValue) {
  EXPECT_EQ(io::crc32c("123456789"), 0xe3069283u);  // CRC-32C's published check value
  EXPECT_EQ(io::crc32c(""), 0u);
  const uint32_t c = io::crc32c("abc");
  EXPECT_EQ(io::masked_crc32c("abc"), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(Curves, TfRecordsRoundTripAndDamageIsFound) {
  const ScratchDir dir;
  const std::string path = dir.path("r.tfrecord");
  test::write_text(path, io::tfrecord_frame("first") + io::tfrecord_frame("") + io::tfrecord_frame("third record"));
  EXPECT_EQ(io::read_tfrecords(path), (std::vector<std::string>{"first", "", "third record"}));
  std::string bytes = test::read_text(path);
  bytes[12 + 2] ^= 1;  // a bit of the first record's data
  test::write_text(path, bytes);
  test::expect_error([&] { io::read_tfrecords(path); }, {"r.tfrecord", "record at byte 0", "data's CRC"});
  bytes[12 + 2] ^= 1;
  bytes[3] ^= 1;  // the length
  test::write_text(path, bytes);
  test::expect_error([&] { io::read_tfrecords(path); }, {"length's CRC"});
  bytes[3] ^= 1;
  test::write_text(path, bytes.substr(0, bytes.size() - 2));
  test::expect_error([&] { io::read_tfrecords(path); }, {"truncated"});
}

TEST(Curves, TensorBoardEventsReadBackWithHfTags) {
  const ScratchDir dir;
  std::string path;
  {
    TensorBoardLog log(dir.path("runs/x"));
    path = log.path();
    log.write(json{{"loss", 0.6931}, {"learning_rate", 1e-4}, {"epoch", 0.5}, {"step", 10}}, 10);
    log.write(json{{"eval_loss", 0.25}, {"eval_f1", 0.875}, {"best", "checkpoint-20"}, {"step", 20}}, 20);
  }
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  const std::vector<TensorBoardScalar> s = read_tensorboard_scalars(path);
  ASSERT_EQ(s.size(), 5u);  // the string is not a curve, and step is the x axis
  std::map<std::string, TensorBoardScalar> by_tag;
  for (const auto& x : s) by_tag[x.tag] = x;
  EXPECT_FLOAT_EQ(by_tag.at("train/loss").value, 0.6931f);
  EXPECT_FLOAT_EQ(by_tag.at("train/learning_rate").value, 1e-4f);
  EXPECT_FLOAT_EQ(by_tag.at("train/epoch").value, 0.5f);
  EXPECT_EQ(by_tag.at("train/loss").step, 10);
  EXPECT_FLOAT_EQ(by_tag.at("eval/loss").value, 0.25f);
  EXPECT_FLOAT_EQ(by_tag.at("eval/f1").value, 0.875f);
  EXPECT_EQ(by_tag.at("eval/f1").step, 20);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_NEAR(by_tag.at("eval/f1").wall_time, now, 60);
}

TEST(Curves, CsvAddsColumnsForNewKeysAndKeepsTheirOrder) {
  const ScratchDir dir;
  const std::string path = dir.path("trainer_log.csv");
  CsvLog csv(path);
  std::vector<json> history;
  auto log = [&](json e) {
    history.push_back(e);
    csv.write(e, history);
  };
  log({{"step", 2}, {"epoch", 0.5}, {"loss", 0.7}, {"learning_rate", 1e-3}});
  log({{"step", 4}, {"epoch", 1.0}, {"loss", 0.6}, {"learning_rate", 5e-4}});
  EXPECT_EQ(test::read_text(path), "step,epoch,learning_rate,loss\n2,0.5,0.001,0.7\n4,1.0,0.0005,0.6\n");
  log({{"step", 4}, {"epoch", 1.0}, {"eval_loss", 0.5}, {"eval_note", "a, \"b\""}});
  log({{"step", 6}, {"epoch", 1.5}, {"loss", 0.5}, {"learning_rate", 0.0}});
  EXPECT_EQ(test::read_text(path),
            "step,epoch,learning_rate,loss,eval_loss,eval_note\n2,0.5,0.001,0.7,,\n4,1.0,0.0005,0.6,,\n"
            "4,1.0,,,0.5,\"a, \"\"b\"\"\"\n6,1.5,0.0,0.5,,\n");
  // After a resume the log starts from the checkpoint's history: one table again.
  CsvLog resumed(path);
  history.resize(2);
  history.push_back({{"step", 6}, {"epoch", 1.5}, {"loss", 0.45}, {"learning_rate", 0.0}});
  resumed.write(history.back(), history);
  EXPECT_EQ(test::read_text(path), "step,epoch,learning_rate,loss\n2,0.5,0.001,0.7\n4,1.0,0.0005,0.6\n6,1.5,0.0,0.45\n");
}

// On a terminal, a warning clears the bar, prints on its own line and draws the bar again.
TEST(Curves, WarningsPrintAboveTheProgressBar) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(slave, STDERR_FILENO);
  {
    Progress bar(4, false);
    bar.update(2, "loss 0.5");
    console_warning("disk nearly full");
    bar.update(3, "loss 0.4");
    bar.finish();
  }
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(slave);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(master);
  const size_t bar = out.find(" 50%|");
  const size_t warning = out.find("\r\033[Kwarning: disk nearly full\r\n");
  ASSERT_NE(bar, std::string::npos) << out;
  ASSERT_NE(warning, std::string::npos) << out;
  EXPECT_LT(bar, warning);
  // The same bar, redrawn right after the warning's line, then the next update.
  EXPECT_EQ(out.find("\r 50%|", warning), warning + std::string("\r\033[Kwarning: disk nearly full\r\n").size()) << out;
  EXPECT_NE(out.find(" 75%|", warning), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
