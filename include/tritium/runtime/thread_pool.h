// A small pool of worker threads for work that is independent per item:
// compiling the configs of one autotuning (tile IR -> PTX -> ptxas) at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tritium::runtime {

/// Worker threads that run submitted tasks in submission order. A task
/// that throws does not stop the pool: the first exception is kept and
/// rethrown by wait(). The destructor finishes the queued tasks and joins.
class ThreadPool {
public:
  /// `numThreads` workers; 0 means one per hardware thread. When no thread
  /// can be started at all, submit() runs tasks on the caller's thread.
  explicit ThreadPool(unsigned numThreads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  void submit(std::function<void()> task);
  /// Blocks until every task submitted so far has finished; rethrows the
  /// first exception a task threw since the last wait().
  void wait();
  unsigned size() const { return (unsigned)workers_.size(); }

  /// Threads a pool of `numThreads` gets: 0 -> hardware threads (at least 1).
  static unsigned resolve(unsigned numThreads);

private:
  void work();
  void runTask(std::function<void()> &task);

  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> queue_;
  std::mutex mu_;
  std::condition_variable wake_; // a task was queued, or the pool stops
  std::condition_variable idle_; // a task finished
  size_t pending_ = 0;           // queued + running
  bool stopping_ = false;
  std::exception_ptr firstError_;
};

/// Calls fn(i) for every i in [0, n), spread over at most `numThreads`
/// threads (0: one per hardware thread; never more than n), and returns
/// when all calls have finished. With n <= 1 or one thread, runs on the
/// caller's thread. Rethrows the first exception fn threw (the other calls
/// still run).
void parallelFor(size_t n, unsigned numThreads, const std::function<void(size_t)> &fn);

} // namespace tritium::runtime
