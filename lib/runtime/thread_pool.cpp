// See include/tritium/runtime/thread_pool.h.
#include "tritium/runtime/thread_pool.h"

#include <algorithm>
#include <system_error>

namespace tritium::runtime {

unsigned ThreadPool::resolve(unsigned numThreads) {
  if (numThreads > 0)
    return numThreads;
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(unsigned numThreads) {
  unsigned n = resolve(numThreads);
  workers_.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error &) {
      break; // out of threads: work with those that started (or none)
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void ThreadPool::runTask(std::function<void()> &task) {
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> g(mu_);
  if (error && !firstError_)
    firstError_ = error;
  if (--pending_ == 0)
    idle_.notify_all();
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(mu_);
    ++pending_;
    if (!workers_.empty()) {
      queue_.push_back(std::move(task));
      wake_.notify_one();
      return;
    }
  }
  runTask(task);
}

void ThreadPool::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return pending_ == 0; });
  if (firstError_) {
    std::exception_ptr e = firstError_;
    firstError_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Queued tasks still run when the pool stops: the destructor drains.
      if (queue_.empty())
        return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    runTask(task);
  }
}

void parallelFor(size_t n, unsigned numThreads, const std::function<void(size_t)> &fn) {
  unsigned threads = (unsigned)std::min<size_t>(ThreadPool::resolve(numThreads), n);
  if (threads <= 1) {
    std::exception_ptr first;
    for (size_t i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!first)
          first = std::current_exception();
      }
    }
    if (first)
      std::rethrow_exception(first);
    return;
  }
  ThreadPool pool(threads);
  for (size_t i = 0; i < n; ++i)
    pool.submit([&fn, i] { fn(i); });
  pool.wait();
}

} // namespace tritium::runtime
