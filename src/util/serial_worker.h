// One helper thread that runs jobs one at a time, in the order they were submitted: the
// copies of activation offloading run on it while the calling thread computes. Each job gets
// a ticket; waiting for a ticket waits for that job and every job before it.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace strata {

class SerialWorker {
 public:
  using Ticket = uint64_t;
  SerialWorker();
  ~SerialWorker();  // runs the jobs still queued, then joins
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  Ticket submit(std::function<void()> job);
  // Returns once job `t` and all earlier ones have run; rethrows the first exception a job threw.
  void wait(Ticket t);
  void wait_all() { wait(submitted_); }

 private:
  void run();

  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<std::function<void()>> queue_;
  Ticket submitted_ = 0, finished_ = 0;  // tickets count from 1; 0 is "nothing"
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace strata
