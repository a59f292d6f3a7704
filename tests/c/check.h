/* check.h: what the C test programs share: a CHECK that counts and prints the failing
 * condition with the library's last error, the summary line the Rust side reads
 * ("NAME: N passed, M failed"), a C2C descriptor, a pool's metrics, and an acquire that
 * releases at once. One translation unit per program: the counters are static (the helpers
 * are `static inline`, so a program need not use all of them). */
#ifndef HFP_TESTS_CHECK_H
#define HFP_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#include "hipfft_pool.h"

static int passed, failed;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (cond) {                                                                            \
      passed++;                                                                            \
    } else {                                                                               \
      failed++;                                                                            \
      printf("FAIL %s:%d: %s [%s]\n", __FILE__, __LINE__, #cond, hfp_last_error_message()); \
    }                                                                                      \
  } while (0)

/* Prints the summary line; the program's exit status. */
static inline int check_summary(const char *name) {
  printf("%s: %d passed, %d failed\n", name, passed, failed);
  return failed ? 1 : 0;
}

/* A packed single-precision C2C descriptor of length n. */
static inline hfp_plan_desc check_c2c(int64_t n, int64_t batch) {
  hfp_plan_desc d;
  memset(&d, 0, sizeof d);
  d.transform = HFP_C2C;
  d.rank = 1;
  d.n[0] = n;
  d.batch = batch;
  return d;
}

/* Every count of `p`, checked to succeed. */
static inline hfp_metrics check_metrics(hfp_pool *p) {
  hfp_metrics m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  CHECK(hfp_pool_metrics(p, &m) == HFP_OK);
  return m;
}

/* Acquires the C2C plan of length n and batch b and releases it at once (nothing executed). */
static inline hfp_status check_touch(hfp_pool *p, int64_t n, int64_t batch) {
  hfp_plan_desc d = check_c2c(n, batch);
  hfp_lease *l = NULL;
  hfp_status s = hfp_acquire(p, &d, &l);
  if (s == HFP_OK) hfp_lease_release(l);
  return s;
}

#endif
