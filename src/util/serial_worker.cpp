#include "util/serial_worker.h"

#include <utility>

namespace strata {

SerialWorker::SerialWorker() : thread_([this] { run(); }) {}

SerialWorker::~SerialWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

SerialWorker::Ticket SerialWorker::submit(std::function<void()> job) {
  Ticket t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
    t = ++submitted_;
  }
  wake_.notify_one();
  return t;
}

void SerialWorker::wait(Ticket t) {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ >= t; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void SerialWorker::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left to run
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr err;
    try {
      job();
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (err && !error_) error_ = err;
    ++finished_;
    done_.notify_all();
  }
}

}  // namespace strata
