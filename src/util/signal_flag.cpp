#include "util/signal_flag.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>

namespace strata {

namespace {

constexpr int kRouted[] = {SIGTERM, SIGUSR1, SIGINT};

std::atomic<unsigned> g_active{0};  // bit `sig` set: SIGNAL `sig` is counted, not acted on
volatile std::sig_atomic_t g_count = 0;
volatile std::sig_atomic_t g_first = 0;
static_assert(std::atomic<unsigned>::is_always_lock_free, "read in a signal handler");

extern "C" void on_signal(int sig) {
  if (g_active.load() & (1u << sig)) {
    if (g_first == 0) g_first = sig;
    g_count = g_count + 1;
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

int SignalFlag::count() const { return g_count; }
int SignalFlag::first_signal() const { return g_first; }

void deliver_signals_to_an_idle_thread() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kRouted) {
    install(s);
    sigaddset(&set, s);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    for (;;) pause();
  }).detach();
}

}  // namespace strata
