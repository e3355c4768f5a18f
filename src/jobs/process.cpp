#include "jobs/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace strata::jobs {

namespace {

int decode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// In the child, after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const ProcessOptions& o, int out_fd) {
  setsid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // exec keeps the mask: start from none blocked
  for (int sig : o.ignored_signals) ::signal(sig, SIG_IGN);
  const std::vector<std::string>& env = o.env;
  if (out_fd >= 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
  }
  for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const char* msg = "strata job: cannot run ";
  (void)!write(STDERR_FILENO, msg, std::strlen(msg));
  (void)!write(STDERR_FILENO, args[0], std::strlen(args[0]));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

}  // namespace

Process Process::start(const std::vector<std::string>& argv, const ProcessOptions& o) {
  if (argv.empty()) fail("strata job: empty command");
  int fd = -1;
  if (!o.log_path.empty()) {
    fd = ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) fail(o.log_path, ": cannot open for the log: ", std::strerror(errno));
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) fail("strata job: fork failed: ", std::strerror(errno));
  if (pid == 0) exec_child(argv, o, fd);
  if (fd >= 0) ::close(fd);
  Process p;
  p.pid_ = pid;
  return p;
}

void Process::signal(int sig) const {
  if (!status_) ::kill(pid_, sig);
}

void Process::kill_session() const {
  // The session id is field 6 of /proc/<pid>/stat, after the command name in parentheses.
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (rest >> state >> ppid >> pgrp >> session && session == pid_) ::kill(std::stoi(name), SIGKILL);
  }
}

std::optional<int> Process::poll() {
  if (status_) return status_;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = decode(status);
  return status_;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("strata job: pipe failed: ", std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) fail("strata job: fork failed: ", std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    exec_child(argv, {}, -1);
  }
  ::close(fds[1]);
  CommandResult r{0, ""};
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = decode(status);
  return r;
}

bool on_path(const std::string& program) {
  namespace fs = std::filesystem;
  auto executable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); };
  if (program.find('/') != std::string::npos) return executable(program);
  const char* path = std::getenv("PATH");
  for (std::string_view rest = path ? path : ""; !rest.empty();) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    if (!dir.empty() && executable(fs::path(dir) / program)) return true;
    if (colon == std::string::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return false;
}

}  // namespace strata::jobs
