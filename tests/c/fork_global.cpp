// fork_global.cpp: a C++ program with a global hfp::Pool (destroyed by static destructors at
// exit) that forks children which exit without using it, as a Python or shell launcher
// would. Each child must exit at once: its copy of the pool belongs to the parent (the
// parent's threads do not exist in the child), so the destructor lets it be. Prints
// "fork_global: N passed, M failed".
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hipfft_pool.hpp"

static hfp::Pool global_pool = [] {
  setenv("HIPFFT_POOL_RUNTIME", "sim", 1);
  hfp_config c = hfp::Pool::config();
  c.runtime = "sim";
  c.capacity = 4;
  c.live_ceiling = 4;
  return hfp::Pool(c);
}();

int main() {
  int passed = 0, failed = 0;
  {
    hfp_plan_desc d{};
    d.transform = HFP_C2C;
    d.rank = 1;
    d.n[0] = 32;
    d.batch = 1;
    hfp::Lease l = global_pool.acquire(d);  // the pool has a plan and its threads are running
    (void)l;
  }
  double slowest = 0;
  for (int i = 0; i < 20; i++) {
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) std::exit(0);  // static destructors run: ~Pool on the inherited pool
    int status = 0;
    waitpid(pid, &status, 0);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > slowest) slowest = ms;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && ms < 1000;
    ok ? passed++ : failed++;
    if (!ok) std::printf("FAIL child %d: status %d after %.0f ms\n", i, status, ms);
  }
  std::printf("slowest child: %.1f ms\n", slowest);
  std::printf("fork_global: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
