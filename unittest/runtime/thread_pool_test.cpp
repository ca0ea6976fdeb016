// runtime::ThreadPool and parallelFor (lib/runtime/thread_pool.cpp).
#include "tritium/runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using tritium::runtime::parallelFor;
using tritium::runtime::ThreadPool;

TEST(ThreadPool, RunsEveryTaskAndWaits) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  std::atomic<int> sum{0};
  for (int i = 1; i <= 100; ++i)
    pool.submit([&sum, i] { sum += i; });
  pool.wait();
  EXPECT_EQ(sum.load(), 5050);
  pool.submit([&sum] { sum += 1; }); // reusable after wait()
  pool.wait();
  EXPECT_EQ(sum.load(), 5051);
}

TEST(ThreadPool, AThrowingTaskDoesNotStopTheOthers) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i)
    pool.submit([&done, i] {
      if (i == 5)
        throw std::runtime_error("task 5 failed");
      ++done;
    });
  EXPECT_THROW(pool.wait(), std::runtime_error);
  EXPECT_EQ(done.load(), 19);
  pool.wait(); // the error was reported once
}

TEST(ThreadPool, DestructorDrainsTheQueue) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 50; ++i)
      pool.submit([&done] { ++done; });
  }
  EXPECT_EQ(done.load(), 50);
}

TEST(ParallelFor, CoversEveryIndexOnce) {
  for (unsigned threads : {0u, 1u, 2u, 7u}) {
    std::vector<std::atomic<int>> hits(37);
    parallelFor(hits.size(), threads, [&](size_t i) { ++hits[i]; });
    for (auto &h : hits)
      EXPECT_EQ(h.load(), 1) << threads << " threads";
  }
  parallelFor(0, 4, [](size_t) { FAIL() << "no work expected"; });
}

TEST(ParallelFor, UsesSeveralThreadsAndRethrows) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> done{0};
  EXPECT_THROW(parallelFor(16, 4,
                           [&](size_t i) {
                             {
                               std::lock_guard<std::mutex> g(mu);
                               ids.insert(std::this_thread::get_id());
                             }
                             std::this_thread::sleep_for(std::chrono::milliseconds(2));
                             if (i == 3)
                               throw std::runtime_error("job 3");
                             ++done;
                           }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 15);
  EXPECT_GT(ids.size(), 1u);
}
