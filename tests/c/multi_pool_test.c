/* multi_pool_test.c: several pools at the default process-wide ceiling, through the C ABI.
 * Its own process, so its first pool sets the ceiling (2). A pool whose
 * plans sit idle must not starve another: a miss in one pool reclaims an idle plan of
 * another sharing the ceiling; leased plans are never taken. Prints
 * "multi_pool_test: N passed, M failed"; exits non-zero on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


static hfp_pool *shared_pool(void) {
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = 2;
  cfg.live_ceiling = 2;
  cfg.acquire_timeout_ms = 300;
  cfg.ceiling_scope = HFP_CEILING_PROCESS_WIDE;
  cfg.shutdown_timeout_ms = 500;
  CHECK(hfp_pool_new(&cfg, &pool) == HFP_OK);
  return pool;
}

static size_t live(hfp_pool *p) { return check_metrics(p).live; }

int main(void) {
  hfp_pool *a = shared_pool(), *b = shared_pool(), *c = shared_pool();
  if (!a || !b || !c) return 1;
  CHECK(strcmp(hfp_pool_warnings(b), "") == 0); /* the same limit: nothing to say */

  /* Pool a fills the ceiling with two idle plans. */
  CHECK(check_touch(a, 8, 1) == HFP_OK && check_touch(a, 16, 1) == HFP_OK);
  CHECK(live(a) == 2);
  /* Two pools: b's miss reclaims one of a's idle plans instead of timing out. */
  CHECK(check_touch(b, 32, 1) == HFP_OK);
  CHECK(live(a) == 1 && live(b) == 1);
  /* Three pools: c's miss reclaims from a or b. */
  CHECK(check_touch(c, 64, 1) == HFP_OK);
  CHECK(live(a) + live(b) + live(c) == 2 && live(c) == 1);

  /* Leased plans are never reclaimed: a and b each hold a lease, c's miss times out. */
  hfp_plan_desc da = check_c2c(128, 1), db = check_c2c(256, 1), dc = check_c2c(512, 1);
  hfp_lease *la = NULL, *lb = NULL, *lc = NULL;
  CHECK(hfp_acquire(a, &da, &la) == HFP_OK);
  CHECK(hfp_acquire(b, &db, &lb) == HFP_OK);
  CHECK(hfp_acquire(c, &dc, &lc) == HFP_CEILING_TIMEOUT);
  CHECK(strstr(hfp_last_error_message(), "live-handle ceiling reached") != NULL);
  CHECK(live(a) == 1 && live(b) == 1 && live(c) == 0);
  /* Released, they are idle and c's miss reclaims one. */
  hfp_lease_release(la);
  hfp_lease_release(lb);
  CHECK(hfp_acquire(c, &dc, &lc) == HFP_OK);
  hfp_lease_release(lc);
  CHECK(live(a) + live(b) + live(c) == 2);

  hfp_pool_free(a);
  hfp_pool_free(b);
  hfp_pool_free(c);
  return check_summary("multi_pool_test");
}
