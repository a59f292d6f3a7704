/* lease_check_cost.c: the cost of the C ABI's lease checks. Times
 * N hfp_acquire + hfp_lease_release pairs on a cached plan (the hit path through the C
 * ABI, on the simulated runtime), best of R rounds, and prints ns per pair with the check
 * switch as the environment set it. Run it twice, with and without
 * HIPFFT_POOL_DEBUG_CHECKS=1 (scripts/lease-check-cost.sh does). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hipfft_pool.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = 4;
  cfg.live_ceiling = 4;
  cfg.ceiling_scope = HFP_CEILING_PRIVATE;
  if (hfp_pool_new(&cfg, &pool) != HFP_OK) {
    fprintf(stderr, "pool: %s\n", hfp_last_error_message());
    return 1;
  }
  hfp_plan_desc d;
  memset(&d, 0, sizeof d);
  d.transform = HFP_C2C;
  d.rank = 1;
  d.n[0] = 256;
  d.batch = 1;
  double best = 1e30;
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
      hfp_lease *l = NULL;
      if (hfp_acquire(pool, &d, &l) != HFP_OK || hfp_lease_release(l) != HFP_OK) {
        fprintf(stderr, "acquire/release: %s\n", hfp_last_error_message());
        return 1;
      }
    }
    double per = (now_ns() - t0) / (double)n;
    if (per < best) best = per;
  }
  printf("{\"debug_checks\": %d, \"pairs\": %ld, \"rounds\": %d, \"best_ns_per_acquire_release\": %.1f}\n",
         hfp_debug_checks_enabled(), n, rounds, best);
  hfp_pool_free(pool);
  return 0;
}
