/* warmup_test.c: the manifest and the warm-up through the C ABI: a pool's working
 * set saved with hfp_pool_save_manifest, made again before the first call by
 * hfp_pool_warm_up and by HIPFFT_POOL_WARMUP at hfp_pool_from_env, and the errors named.
 * argv[1]: a scratch path for the manifest; argv[2]: where the default pool's manifest goes at
 * exit (HIPFFT_POOL_MANIFEST_OUT). Prints "warmup_test: N passed, M failed";
 * exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


static hfp_pool *private_pool(size_t capacity) {
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = capacity;
  cfg.live_ceiling = capacity;
  cfg.ceiling_scope = HFP_CEILING_PRIVATE;
  CHECK(hfp_pool_new(&cfg, &pool) == HFP_OK);
  return pool;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *path = argv[1];
  size_t made = 0;

  /* Record: three shapes, one of them three times. */
  hfp_pool *a = private_pool(8);
  CHECK(check_touch(a, 8, 2) == HFP_OK && check_touch(a, 8, 2) == HFP_OK && check_touch(a, 8, 2) == HFP_OK);
  CHECK(check_touch(a, 16, 2) == HFP_OK && check_touch(a, 32, 2) == HFP_OK);
  CHECK(hfp_pool_save_manifest(a, path) == HFP_OK);
  hfp_pool_free(a);

  /* Warm up a fresh pool: the three plans are made; the first calls are hits. */
  hfp_pool *b = private_pool(8);
  CHECK(hfp_pool_warm_up(b, path, &made) == HFP_OK);
  CHECK(made == 3);
  CHECK(check_metrics(b).creations == 3 && check_metrics(b).cached == 3);
  CHECK(check_touch(b, 8, 2) == HFP_OK && check_touch(b, 16, 2) == HFP_OK && check_touch(b, 32, 2) == HFP_OK);
  CHECK(check_metrics(b).misses == 0 && check_metrics(b).creations == 3);
  /* No warm-up was started by the environment for this pool. */
  CHECK(hfp_pool_wait_warm_up(b, 0, &made) == HFP_OK && made == SIZE_MAX);
  /* Errors name what is wrong. */
  CHECK(hfp_pool_warm_up(b, NULL, &made) == HFP_INVALID_ARGUMENT);
  CHECK(strstr(hfp_last_error_message(), "`path`") != NULL);
  CHECK(hfp_pool_warm_up(b, "/nonexistent/plans.json", NULL) == HFP_INVALID_ARGUMENT);
  CHECK(strstr(hfp_last_error_message(), "/nonexistent/plans.json") != NULL);
  CHECK(hfp_pool_save_manifest(b, "/nonexistent/dir/plans.json") == HFP_INVALID_ARGUMENT);
  CHECK(strstr(hfp_last_error_message(), "/nonexistent/dir/plans.json") != NULL);
  CHECK(hfp_pool_save_manifest(NULL, path) == HFP_INVALID_ARGUMENT);
  CHECK(hfp_pool_wait_warm_up(b, 0, NULL) == HFP_INVALID_ARGUMENT);
  hfp_pool_free(b);

  /* From the environment: the warm-up runs in the background; wait for it. */
  setenv("HIPFFT_POOL_RUNTIME", "sim", 1);
  setenv("HIPFFT_POOL_CAPACITY", "2", 1);
  setenv("HIPFFT_POOL_WARMUP", path, 1);
  hfp_pool *c = NULL;
  CHECK(hfp_pool_from_env(&c) == HFP_OK);
  if (c) {
    CHECK(hfp_pool_wait_warm_up(c, 10000, &made) == HFP_OK);
    CHECK(made == 2); /* capacity 2: the two most valuable */
    CHECK(check_metrics(c).cached == 2);
    CHECK(check_touch(c, 8, 2) == HFP_OK && check_metrics(c).misses == 0); /* 8 had the most uses */
    hfp_pool_free(c);
  }

  /* The default pool is never freed: its manifest is written at exit (argv[2]). */
  if (argc > 2) {
    setenv("HIPFFT_POOL_MANIFEST_OUT", argv[2], 1);
    hfp_pool *d = hfp_default_pool();
    CHECK(d != NULL);
    if (d) CHECK(check_touch(d, 128, 2) == HFP_OK);
  }

  return check_summary("warmup_test");
}
