/* panic_test.c: a runtime that panics inside plan creation, through the C ABI. Run with
 * HIPFFT_POOL_SIM_PANIC_CREATE_EVERY=2: the second creation panics. The
 * panic comes back as HFP_INTERNAL_ERROR with a message, and leaves no slot, key or flight
 * behind: the next miss on that key makes its plan at once instead of waiting out the
 * timeout, and freeing the pool does not wait either. Prints
 * "panic_test: N passed, M failed"; exits non-zero on any failure. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"


static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = 4;
  cfg.live_ceiling = 4;
  cfg.ceiling_scope = HFP_CEILING_PRIVATE;
  cfg.acquire_timeout_ms = 3000;
  cfg.shutdown_timeout_ms = 3000;
  if (hfp_pool_new(&cfg, &pool) != HFP_OK) {
    printf("FAIL pool: %s\n", hfp_last_error_message());
    return 1;
  }
  hfp_plan_desc a = check_c2c(8, 1), b = check_c2c(16, 1);
  hfp_lease *l = NULL;
  CHECK(hfp_acquire(pool, &a, &l) == HFP_OK); /* creation 1 */
  hfp_lease_release(l);
  l = NULL;
  CHECK(hfp_acquire(pool, &b, &l) == HFP_INTERNAL_ERROR); /* creation 2 panics */
  CHECK(l == NULL);
  CHECK(strstr(hfp_last_error_message(), "panicked") != NULL);
  hfp_metrics m = check_metrics(pool);
  CHECK(m.live == 1 && m.creating == 0); /* the slot came back, nothing is left creating */
  double t0 = now_s();
  CHECK(hfp_acquire(pool, &b, &l) == HFP_OK); /* creation 3: at once, no flight to wait for */
  CHECK(now_s() - t0 < 1.0);
  hfp_lease_release(l);
  CHECK(check_metrics(pool).live == 2);
  t0 = now_s();
  hfp_pool_free(pool);
  CHECK(now_s() - t0 < 1.0); /* shutdown does not wait out its timeout */
  return check_summary("panic_test");
}
