#include "util/signal_flag.h"

#include <csignal>

namespace strata {

namespace {

volatile std::sig_atomic_t g_count = 0;
volatile std::sig_atomic_t g_first = 0;

extern "C" void on_signal(int sig) {
  if (g_first == 0) g_first = sig;
  g_count = g_count + 1;
}

}  // namespace

SignalFlag::SignalFlag(std::initializer_list<int> signals) : signals_(signals) {
  g_count = 0;
  g_first = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and waits in progress continue; the owner polls the flag
  for (int s : signals_) sigaction(s, &sa, nullptr);
}

SignalFlag::~SignalFlag() {
  for (int s : signals_) std::signal(s, SIG_DFL);
}

int SignalFlag::count() const { return g_count; }
int SignalFlag::first_signal() const { return g_first; }

}  // namespace strata
