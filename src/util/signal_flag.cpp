#include "util/signal_flag.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

namespace strata {

namespace {

constexpr int kRouted[] = {SIGTERM, SIGUSR1, SIGINT};

// Atomics, not volatile sig_atomic_t: the handler runs on the idle signal thread, and
// sig_atomic_t only orders a handler with the thread it interrupted (ThreadSanitizer reported
// the trainer's read of the count racing with the handler's write).
std::atomic<unsigned> g_active{0};  // bit `sig` set: SIGNAL `sig` is counted, not acted on
std::atomic<int> g_count{0};
std::atomic<int> g_first{0};
static_assert(std::atomic<unsigned>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "used in a signal handler");

extern "C" void on_signal(int sig) {
  if (g_active.load() & (1u << sig)) {
    int none = 0;
    g_first.compare_exchange_strong(none, sig);
    g_count.fetch_add(1);
    return;
  }
  // Not asked for: the default action, once this handler returns (the signal is blocked
  // while it runs).
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install(int sig) {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and waits in progress continue; the owner polls the flag
  sigaction(sig, &sa, nullptr);
}

}  // namespace

SignalFlag::SignalFlag(std::initializer_list<int> signals) {
  g_count = 0;
  g_first = 0;
  unsigned bits = 0;
  for (int s : signals) bits |= 1u << s;
  g_active = bits;
  for (int s : signals) install(s);
}

SignalFlag::~SignalFlag() {
  if (g_count == 0) g_active = 0;
}

int SignalFlag::count() const { return g_count.load(); }
int SignalFlag::first_signal() const { return g_first.load(); }

namespace {

sigset_t routed_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kRouted) sigaddset(&set, s);
  return set;
}

// Once per process: a thread that blocks none of the routed signals and does nothing else,
// so the kernel hands them to it while the threads that compute block them.
void start_idle_signal_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::thread([] {
      const sigset_t set = routed_set();
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      for (;;) pause();
    }).detach();
  });
}

}  // namespace

void deliver_signals_to_an_idle_thread() {
  for (int s : kRouted) install(s);
  const sigset_t set = routed_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  start_idle_signal_thread();
}

SignalsOffThisThread::SignalsOffThisThread() {
  start_idle_signal_thread();
  const sigset_t set = routed_set();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

SignalsOffThisThread::~SignalsOffThisThread() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace strata
