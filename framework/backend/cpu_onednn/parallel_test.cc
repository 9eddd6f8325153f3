// parallel.h's loops: every index exactly once and every team member once,
// on this thread without a team below the threshold and on two threads
// above it.

#include "framework/backend/cpu_onednn/parallel.h"

#include <omp.h>

#include <atomic>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace onednn {
namespace {

TEST(Parallel, ForEachIndexRunsEveryIndexOnce) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  for (bool parallel : {false, true})
    for (int64_t count : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> seen(count);
      std::atomic<int> outside_caller{0};
      const int caller = omp_get_thread_num();
      ForEachIndex(parallel, count, [&](int64_t i) {
        seen[i]++;
        if (!parallel && (omp_in_parallel() || omp_get_thread_num() != caller)) outside_caller++;
      });
      for (int64_t i = 0; i < count; ++i) EXPECT_EQ(seen[i].load(), 1) << "index " << i << " count " << count;
      EXPECT_EQ(outside_caller.load(), 0) << "a serial loop entered OpenMP";
    }
  omp_set_num_threads(threads);
}

TEST(Parallel, OnTeamGivesEachMemberItsIndex) {
  for (int threads : {1, 2}) {
    std::vector<std::atomic<int>> seen(threads);
    std::atomic<int> teams_of_other_size{0};
    OnTeam(threads, [&](int64_t t, int64_t team) {
      seen[t]++;
      if (team != threads) teams_of_other_size++;
      if (threads == 1 && omp_in_parallel()) teams_of_other_size++;
    });
    for (int t = 0; t < threads; ++t) EXPECT_EQ(seen[t].load(), 1) << t;
    EXPECT_EQ(teams_of_other_size.load(), 0);
  }
}

}  // namespace
}  // namespace onednn
}  // namespace tvlab
