#include "jobs/job_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "io/files.h"
#include "util/error.h"

namespace strata::jobs {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNames[] = {"Starting", "Training", "Interrupted", "Uploading", "Completed",
                                  "Failed", "Stopped", "MaxRuntimeExceeded", "MaxWaitTimeExceeded"};

// An exclusive flock on <dir>/.lock for the scope.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    const std::string p = (fs::path(dir) / ".lock").string();
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(p, ": cannot open the job's lock file: ", std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

const char* status_name(JobStatus s) { return kNames[static_cast<int>(s)]; }

std::optional<JobStatus> parse_status(const std::string& name) {
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (name == kNames[i]) return static_cast<JobStatus>(i);
  return std::nullopt;
}

bool is_final(JobStatus s) {
  return s == JobStatus::Completed || s == JobStatus::Failed || s == JobStatus::Stopped ||
         s == JobStatus::MaxRuntimeExceeded || s == JobStatus::MaxWaitTimeExceeded;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string iso_time(double t) {
  const auto secs = static_cast<time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char date[32], buf[48];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf, sizeof buf, "%s.%03dZ", date, std::min(999, static_cast<int>((t - static_cast<double>(secs)) * 1000)));
  return buf;
}

void check_job_name(const std::string& n, const std::string& where) {
  const bool ok = !n.empty() && n.size() <= 63 && std::isalnum(static_cast<unsigned char>(n.front())) &&
                  std::isalnum(static_cast<unsigned char>(n.back())) &&
                  std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
  if (!ok)
    fail(where, ": job name '", n, "' is not valid: 1 to 63 letters, digits and hyphens, starting and ending with a "
         "letter or digit");
}

std::string JobRecord::path(const std::string& rel) const { return (fs::path(dir_) / rel).string(); }

std::string JobRecord::attempt_log_dir(int attempt) const { return path("logs/attempt-" + std::to_string(attempt)); }

bool JobRecord::exists() const { return fs::exists(path("status.json")); }

nlohmann::json JobRecord::status() const {
  const std::string p = path("status.json");
  return fs::exists(p) ? io::read_json_file(p) : nlohmann::json::object();
}

std::optional<JobStatus> JobRecord::current() const {
  const nlohmann::json s = status();
  return s.contains("status") ? parse_status(s["status"].get<std::string>()) : std::nullopt;
}

void JobRecord::update(const std::function<void(nlohmann::json&)>& change) const {
  const DirLock lock(dir_);
  nlohmann::json s = status();
  change(s);
  s["updated"] = iso_time(now_seconds());
  io::write_file_atomic(path("status.json"), s.dump(2) + "\n");
}

void JobRecord::set_status(JobStatus st, const std::string& message) const {
  update([&](nlohmann::json& s) {
    s["status"] = status_name(st);
    if (!message.empty()) s["message"] = message;
    else s.erase("message");
  });
  nlohmann::json f = {{"status", status_name(st)}};
  event(message.empty() ? std::string(status_name(st)) : cat(status_name(st), ": ", message), f);
}

void JobRecord::event(const std::string& message, nlohmann::json fields) const {
  nlohmann::json e = {{"time", iso_time(now_seconds())}, {"event", message}};
  e.update(fields);
  const std::string line = e.dump() + "\n";
  // One write of one line with O_APPEND: lines from several writers never interleave.
  const std::string p = path("events.jsonl");
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail(p, ": cannot open: ", std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) fail(p, ": cannot append an event: ", std::strerror(errno));
}

std::vector<nlohmann::json> JobRecord::events(size_t* offset) const {
  std::vector<nlohmann::json> out;
  std::ifstream in(path("events.jsonl"), std::ios::binary);
  if (offset) in.seekg(static_cast<std::streamoff>(*offset));
  // Only whole lines: a line being appended right now is read next time.
  for (std::string line; std::getline(in, line) && !in.eof();) {
    if (offset) *offset += line.size() + 1;
    if (!line.empty()) out.push_back(nlohmann::json::parse(line, nullptr, false));
  }
  return out;
}

void JobRecord::request(const std::string& what) const {
  fs::create_directories(path("requests"));
  io::write_file_atomic(path("requests/" + what), iso_time(now_seconds()) + "\n");
}

bool JobRecord::has_request(const std::string& what) const { return fs::exists(path("requests/" + what)); }

bool JobRecord::take_request(const std::string& what) const {
  std::error_code ec;
  return fs::remove(path("requests/" + what), ec);
}

std::vector<std::string> list_job_dirs(const std::string& output_path) {
  std::vector<std::pair<std::string, std::string>> found;  // (created, dir)
  if (!fs::is_directory(output_path)) return {};
  for (const auto& e : fs::directory_iterator(output_path)) {
    const JobRecord r(e.path().string());
    if (!e.is_directory() || !r.exists()) continue;
    found.emplace_back(r.status().value("created", std::string()), e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [created, dir] : found) out.push_back(dir);
  return out;
}

}  // namespace strata::jobs
