/* abi_test.c: calls every entry point of hipfft_pool.h, error paths included, on the
 * simulated runtime (device memory is host memory there, so malloc'ed buffers work and a
 * NULL stream is the null stream). Prints "abi_test: N passed, M failed"; exits non-zero
 * on any failure. */
#define _POSIX_C_SOURCE 200809L
#include "hipfft_pool.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed;

static void check(int ok, const char *what, int line) {
  if (ok) {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "FAIL line %d: %s\n  last error: %s\n", line, what, hfp_last_error_message());
  }
}
#define CHECK(cond) check((cond) != 0, #cond, __LINE__)

/* `call` returns `want`, and on failure the message contains `text`. */
static void expect(hfp_status got, hfp_status want, const char *text, const char *what, int line) {
  const char *msg = hfp_last_error_message();
  int ok = got == want && (want == HFP_OK || text == NULL || strstr(msg, text) != NULL);
  if (!ok) {
    fprintf(stderr, "  got %s, want %s containing \"%s\"\n", hfp_status_name((int)got), hfp_status_name((int)want),
            text ? text : "");
  }
  check(ok, what, line);
}
#define EXPECT_OK(call) expect((call), HFP_OK, NULL, #call, __LINE__)
#define EXPECT_ERR(call, status, text) expect((call), (status), (text), #call, __LINE__)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static hfp_plan_desc packed(int transform, int64_t n, int64_t batch) {
  hfp_plan_desc d;
  memset(&d, 0, sizeof d);
  d.transform = transform;
  d.rank = 1;
  d.n[0] = n;
  d.batch = batch;
  return d;
}

static hfp_pool *sim_pool(size_t capacity, size_t ceiling, uint64_t timeout_ms, int scope) {
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = capacity;
  cfg.live_ceiling = ceiling;
  cfg.acquire_timeout_ms = timeout_ms;
  cfg.ceiling_scope = scope;
  cfg.shutdown_timeout_ms = 200;
  EXPECT_OK(hfp_pool_new(&cfg, &pool));
  return pool;
}

/* ---- a naive DFT in double: out[k] = sum_j in[j] e^{sign 2 pi i jk/n} ---- */
static void naive_dft(const float *in, double *out, int n, int sign, int real_input) {
  const double pi = 3.14159265358979323846;
  int k, j;
  for (k = 0; k < n; k++) {
    double re = 0, im = 0;
    for (j = 0; j < n; j++) {
      double a = sign * 2 * pi * (double)((long)j * k % n) / n;
      double xr = real_input ? in[j] : in[2 * j], xi = real_input ? 0 : in[2 * j + 1];
      re += xr * cos(a) - xi * sin(a);
      im += xr * sin(a) + xi * cos(a);
    }
    out[2 * k] = re;
    out[2 * k + 1] = im;
  }
}

/* Relative L2 error of `count` complex outputs against the reference. */
static double rel_err(const float *got, const double *want, int count) {
  double num = 0, den = 0;
  int i;
  for (i = 0; i < 2 * count; i++) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return sqrt(num / (den > 0 ? den : 1));
}

static void fill(float *x, size_t count, unsigned seed) {
  size_t i;
  for (i = 0; i < count; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static void test_basics(void) {
  int s;
  CHECK(strlen(hfp_version()) > 0);
  CHECK(hfp_last_error_message() != NULL);
  for (s = 0; s <= 8; s++) CHECK(strncmp(hfp_status_name(s), "HFP_", 4) == 0);
  CHECK(strcmp(hfp_status_name(HFP_CEILING_TIMEOUT), "HFP_CEILING_TIMEOUT") == 0);
  CHECK(strcmp(hfp_status_name(99), "HFP_UNKNOWN_STATUS") == 0);
  CHECK(strcmp(hfp_status_name(-1), "HFP_UNKNOWN_STATUS") == 0);
}

static void test_config_and_pools(void) {
  hfp_config cfg;
  hfp_pool *pool = (hfp_pool *)&cfg;
  EXPECT_ERR(hfp_config_default(NULL), HFP_INVALID_ARGUMENT, "`config`");
  EXPECT_OK(hfp_config_default(&cfg));
  CHECK(cfg.struct_size == sizeof(hfp_config));
  CHECK(cfg.capacity == 128 && cfg.live_ceiling == 0 && cfg.acquire_timeout_ms == 10000);
  CHECK(cfg.work_area_budget == 0 && cfg.runtime == NULL && cfg.ceiling_scope == HFP_CEILING_PROCESS_WIDE);

  EXPECT_ERR(hfp_pool_new(NULL, &pool), HFP_INVALID_ARGUMENT, "`config`");
  CHECK(pool == NULL); /* the out-pointer is cleared on failure */
  EXPECT_ERR(hfp_pool_new(&cfg, NULL), HFP_INVALID_ARGUMENT, "`out`");

  cfg.runtime = "sim";
  cfg.struct_size = HFP_CONFIG_MIN_SIZE - 1;
  EXPECT_ERR(hfp_pool_new(&cfg, &pool), HFP_INVALID_ARGUMENT, "`struct_size`");
  /* A first-version struct (no fields past `runtime`) is accepted. */
  cfg.struct_size = HFP_CONFIG_MIN_SIZE;
  EXPECT_OK(hfp_pool_new(&cfg, &pool));
  CHECK(pool != NULL);
  hfp_pool_free(pool);
  cfg.struct_size = sizeof cfg;

  cfg.runtime = "tpu";
  EXPECT_ERR(hfp_pool_new(&cfg, &pool), HFP_INVALID_ARGUMENT, "`runtime`");
  cfg.runtime = "sim";
  cfg.capacity = 4;
  cfg.live_ceiling = 2;
  cfg.ceiling_scope = HFP_CEILING_PRIVATE;
  EXPECT_ERR(hfp_pool_new(&cfg, &pool), HFP_INVALID_ARGUMENT, "`capacity`");
  cfg.ceiling_scope = 7;
  EXPECT_ERR(hfp_pool_new(&cfg, &pool), HFP_INVALID_ARGUMENT, "`ceiling_scope`");
  cfg.ceiling_scope = HFP_CEILING_PER_DEVICE;
  EXPECT_OK(hfp_pool_new(&cfg, &pool));
  hfp_pool_free(pool);

  /* A runtime that is not there (this build has no CUDA; a machine with it may pass). */
  hfp_config_default(&cfg);
  cfg.runtime = "cuda";
  {
    hfp_status st = hfp_pool_new(&cfg, &pool);
    CHECK(st == HFP_RUNTIME_UNAVAILABLE || st == HFP_OK);
    if (st == HFP_OK) hfp_pool_free(pool);
    else CHECK(strstr(hfp_last_error_message(), "unavailable") != NULL);
  }

  EXPECT_ERR(hfp_pool_from_env(NULL), HFP_INVALID_ARGUMENT, "`out`");
  EXPECT_OK(hfp_pool_from_env(&pool));
  CHECK(pool != NULL);
  hfp_pool_free(pool);
  hfp_pool_free(NULL); /* a no-op */
}

static void test_default_pool(void) {
  hfp_pool *p = hfp_default_pool();
  hfp_plan_desc d = packed(HFP_C2C, 8, 1);
  hfp_lease *l = NULL;
  CHECK(p != NULL);
  CHECK(hfp_default_pool() == p);
  CHECK(strcmp(hfp_pool_runtime(p), "sim") == 0);
  CHECK(hfp_pool_runtime(NULL) == NULL && strstr(hfp_last_error_message(), "`pool`") != NULL);
  hfp_pool_free(p); /* refused: the default pool is never freed */
  CHECK(strstr(hfp_last_error_message(), "never freed") != NULL);
  EXPECT_OK(hfp_acquire(p, &d, &l));
  EXPECT_OK(hfp_lease_release(l));
}

struct bad_desc {
  hfp_plan_desc d;
  const char *text;
};

static void test_descriptors(hfp_pool *pool) {
  static const int64_t small4[3] = {4, 4, 4}, zero[3] = {0, 0, 0}, big[3] = {16, 16, 16};
  struct bad_desc cases[32];
  int count = 0, i;
  hfp_lease *l = NULL;
  hfp_plan_desc d;
  hfp_metrics m;

#define CASE(expr, msg)            \
  do {                             \
    d = packed(HFP_C2C, 8, 2);     \
    expr;                          \
    cases[count].d = d;            \
    cases[count++].text = (msg);   \
  } while (0)
  CASE(d.rank = 0, "`rank` = 0");
  CASE(d.rank = 4, "`rank` = 4");
  /* The rank is checked before any embed is read: this pointer must never be touched. */
  CASE((d.rank = -1, d.inembed = (const int64_t *)(uintptr_t)8, d.onembed = d.inembed), "`rank` = -1");
  CASE(d.transform = 0x99, "`transform` = 0x99");
  CASE(d.device = -1, "`device` = -1");
  CASE(d.n[0] = 0, "`n[0]` = 0");
  CASE((d.rank = 3, d.n[1] = 0, d.n[2] = 4), "`n[1]` = 0");
  CASE((d.rank = 3, d.n[1] = 4, d.n[2] = -5), "`n[2]` = -5");
  CASE(d.batch = 0, "`batch` = 0");
  CASE(d.batch = -3, "`batch` = -3");
  CASE((d.inembed = small4, d.istride = 1, d.idist = 8), "`inembed[0]` = 4 is smaller");
  CASE((d.inembed = zero, d.istride = 1, d.idist = 8), "`inembed[0]` = 0");
  CASE((d.inembed = big, d.istride = 0, d.idist = 16), "`istride` = 0");
  CASE((d.inembed = big, d.istride = 1, d.idist = 0), "`idist` = 0");
  CASE((d.onembed = small4, d.ostride = 1, d.odist = 8), "`onembed[0]` = 4");
  CASE((d.onembed = big, d.ostride = 0, d.odist = 16), "`ostride` = 0");
  CASE((d.onembed = big, d.ostride = 1, d.odist = 0), "`odist` = 0");
  /* R2C n=8: the complex side holds 5 points, so an output embed of 4 is too small. */
  CASE((d.transform = HFP_R2C, d.onembed = small4, d.ostride = 1, d.odist = 5), "`onembed[0]` = 4");
  CASE((d.rank = 3, d.n[0] = (int64_t)1 << 40, d.n[1] = (int64_t)1 << 40, d.n[2] = (int64_t)1 << 40), "overflow");
  CASE((d.n[0] = 2, d.batch = INT64_MAX), "overflow");
  CASE((d.inembed = big, d.istride = INT64_MAX / 2, d.idist = 1), "overflow");
#undef CASE
  for (i = 0; i < count; i++) {
    l = (hfp_lease *)&d;
    expect(hfp_acquire(pool, &cases[i].d, &l), HFP_INVALID_DESCRIPTOR, cases[i].text, cases[i].text, __LINE__);
    CHECK(l == NULL);
  }

  d = packed(HFP_C2C, 8, 2);
  EXPECT_ERR(hfp_acquire(NULL, &d, &l), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_ERR(hfp_acquire(pool, NULL, &l), HFP_INVALID_ARGUMENT, "`desc`");
  EXPECT_ERR(hfp_acquire(pool, &d, NULL), HFP_INVALID_ARGUMENT, "`out`");

  /* Unused slots do not split the cache: the second acquire is a hit on the same plan. */
  {
    hfp_lease *a = NULL, *b = NULL;
    hfp_plan_desc d2 = d;
    d2.n[1] = 77;
    d2.n[2] = -1;
    d2.istride = 5; /* ignored: inembed is NULL */
    EXPECT_OK(hfp_acquire(pool, &d, &a));
    EXPECT_OK(hfp_acquire(pool, &d2, &b));
    CHECK(hfp_lease_plan(a) != NULL && hfp_lease_plan(a) == hfp_lease_plan(b));
    m.struct_size = sizeof m;
    EXPECT_OK(hfp_pool_metrics(pool, &m));
    CHECK(m.hits >= 1 && m.in_flight == 2);
    EXPECT_OK(hfp_lease_release(a));
    EXPECT_OK(hfp_lease_release(b));
  }
}

static void test_exec(hfp_pool *pool) {
  enum { N = 8, B = 2 };
  float in[2 * N * B], out[2 * N * B], rin[N * 3], rout[2 * (N / 2 + 1) * 3];
  double want[2 * N];
  hfp_plan_desc d = packed(HFP_C2C, N, B);
  hfp_lease *l = NULL;
  void *work;
  int b;

  EXPECT_ERR(hfp_lease_exec(NULL, NULL, in, out, HFP_FORWARD, NULL), HFP_INVALID_ARGUMENT, "`lease`");
  CHECK(hfp_lease_plan(NULL) == NULL);
  CHECK(hfp_lease_work_size(NULL) == 0);
  EXPECT_OK(hfp_lease_release(NULL));
  EXPECT_ERR(hfp_lease_release_after(NULL, NULL), HFP_INVALID_ARGUMENT, "`lease`");

  fill(in, 2 * N * B, 1);
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  CHECK(hfp_lease_plan(l) != NULL);
  work = malloc(hfp_lease_work_size(l) + 1);
  EXPECT_ERR(hfp_lease_exec(l, NULL, in, out, 0, work), HFP_INVALID_ARGUMENT, "`direction` = 0");
  EXPECT_ERR(hfp_lease_exec(l, NULL, in, out, 2, work), HFP_INVALID_ARGUMENT, "`direction` = 2");
  EXPECT_ERR(hfp_lease_exec(l, NULL, NULL, out, HFP_FORWARD, work), HFP_INVALID_ARGUMENT, "`input`");
  EXPECT_ERR(hfp_lease_exec(l, NULL, in, NULL, HFP_FORWARD, work), HFP_INVALID_ARGUMENT, "`output`");
  /* Forward, then inverse, each against the naive DFT. */
  EXPECT_OK(hfp_lease_exec(l, NULL, in, out, HFP_FORWARD, work));
  EXPECT_OK(hfp_pool_synchronize(pool, NULL));
  for (b = 0; b < B; b++) {
    naive_dft(in + 2 * N * b, want, N, -1, 0);
    CHECK(rel_err(out + 2 * N * b, want, N) <= 1e-5);
  }
  EXPECT_OK(hfp_lease_exec(l, NULL, in, out, HFP_INVERSE, work));
  EXPECT_OK(hfp_pool_synchronize(pool, NULL));
  for (b = 0; b < B; b++) {
    naive_dft(in + 2 * N * b, want, N, +1, 0);
    CHECK(rel_err(out + 2 * N * b, want, N) <= 1e-5);
  }
  EXPECT_OK(hfp_lease_release(l));
  free(work);

  /* R2C, batch 3: n/2+1 outputs per row; R2C only runs forward. */
  d = packed(HFP_R2C, N, 3);
  fill(rin, N * 3, 7);
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  work = malloc(hfp_lease_work_size(l) + 1);
  EXPECT_ERR(hfp_lease_exec(l, NULL, rin, rout, HFP_INVERSE, work), HFP_INVALID_ARGUMENT, "`direction`");
  EXPECT_OK(hfp_lease_exec(l, NULL, rin, rout, HFP_FORWARD, work));
  EXPECT_OK(hfp_pool_synchronize(pool, NULL));
  for (b = 0; b < 3; b++) {
    naive_dft(rin + N * b, want, N, -1, 1);
    CHECK(rel_err(rout + 2 * (N / 2 + 1) * b, want, N / 2 + 1) <= 1e-5);
  }
  EXPECT_OK(hfp_lease_release(l));
  free(work);

  /* C2R, batch 3, with and without a preserved input: same output, and only the plain
     execution overwrites its input (the sim does, as cuFFT and hipFFT do). */
  d = packed(HFP_C2R, N, 3);
  fill(rout, 2 * (N / 2 + 1) * 3, 11);
  for (b = 0; b < 3; b++) { /* Hermitian rows: real DC and Nyquist */
    rout[2 * (N / 2 + 1) * b + 1] = 0.0f;
    rout[2 * (N / 2 + 1) * b + 2 * (N / 2) + 1] = 0.0f;
  }
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  CHECK(hfp_lease_input_bytes(l) == sizeof rout);
  CHECK(hfp_lease_input_bytes(NULL) == 0);
  work = malloc(hfp_lease_work_size(l) + 1);
  {
    float kept[2 * (N / 2 + 1) * 3], scratch[2 * (N / 2 + 1) * 3], plain[N * 3];
    memcpy(kept, rout, sizeof rout);
    EXPECT_ERR(hfp_lease_exec_preserving_input(NULL, NULL, rout, rin, HFP_INVERSE, work, scratch), HFP_INVALID_ARGUMENT, "`lease`");
    EXPECT_ERR(hfp_lease_exec_preserving_input(l, NULL, rout, rin, HFP_INVERSE, work, NULL), HFP_INVALID_ARGUMENT, "`scratch`");
    EXPECT_ERR(hfp_lease_exec_preserving_input(l, NULL, rout, rout, HFP_INVERSE, work, scratch), HFP_INVALID_ARGUMENT, "in-place");
    EXPECT_ERR(hfp_lease_exec_preserving_input(l, NULL, rout, rin, HFP_INVERSE, work, rout), HFP_INVALID_ARGUMENT, "`scratch`");
    EXPECT_ERR(hfp_lease_exec_preserving_input(l, NULL, rout, rin, HFP_FORWARD, work, scratch), HFP_INVALID_ARGUMENT, "`direction`");
    EXPECT_OK(hfp_lease_exec_preserving_input(l, NULL, rout, rin, HFP_INVERSE, work, scratch));
    EXPECT_OK(hfp_pool_synchronize(pool, NULL));
    CHECK(memcmp(kept, rout, sizeof rout) == 0);
    for (b = 0; b < 3; b++) { /* the inverse of a Hermitian row: real, against the naive DFT */
      int k, m;
      double acc, worst = 0.0, norm = 0.0;
      for (m = 0; m < N; m++) {
        acc = 0.0;
        for (k = 0; k < N; k++) {
          int kk = k <= N / 2 ? k : N - k;
          double re = kept[2 * (N / 2 + 1) * b + 2 * kk], im = kept[2 * (N / 2 + 1) * b + 2 * kk + 1];
          double ang = 2.0 * 3.14159265358979323846 * k * m / N;
          if (k > N / 2) im = -im;
          acc += re * cos(ang) - im * sin(ang);
        }
        worst += (rin[N * b + m] - acc) * (rin[N * b + m] - acc);
        norm += acc * acc;
      }
      CHECK(sqrt(worst / norm) <= 1e-5);
    }
    EXPECT_OK(hfp_lease_exec(l, NULL, rout, plain, HFP_INVERSE, work));
    EXPECT_OK(hfp_pool_synchronize(pool, NULL));
    CHECK(memcmp(plain, rin, sizeof plain) == 0);
    CHECK(memcmp(kept, rout, sizeof rout) != 0);
  }
  EXPECT_OK(hfp_lease_release(l));
  free(work);

  /* A plan that needs a work area refuses a NULL one. */
  d = packed(HFP_C2C, 64, 1);
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  if (hfp_lease_work_size(l) > 0) {
    float big_in[128], big_out[128];
    fill(big_in, 128, 3);
    EXPECT_ERR(hfp_lease_exec(l, NULL, big_in, big_out, HFP_FORWARD, NULL), HFP_INVALID_ARGUMENT, "`work_area`");
  }
  EXPECT_OK(hfp_lease_release(l));
}

static int wait_idle(hfp_pool *pool) {
  hfp_metrics m;
  double end = now_ms() + 5000;
  m.struct_size = sizeof m;
  do {
    if (hfp_pool_metrics(pool, &m) != HFP_OK) return 0;
    if (m.in_flight == 0) return 1;
    {
      struct timespec t = {0, 1000000};
      nanosleep(&t, NULL);
    }
  } while (now_ms() < end);
  return 0;
}

static void test_release_after(hfp_pool *pool) {
  enum { N = 16 };
  float in[2 * N], out[2 * N];
  double want[2 * N];
  hfp_plan_desc d = packed(HFP_C2C, N, 1);
  hfp_lease *l = NULL;
  void *work;
  void *bogus = (void *)(uintptr_t)0x12345670;

  fill(in, 2 * N, 11);
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  work = malloc(hfp_lease_work_size(l) + 1);
  EXPECT_OK(hfp_lease_exec(l, NULL, in, out, HFP_FORWARD, work));
  /* An event cannot be recorded on a stream that does not exist: the lease stays ours. */
  EXPECT_ERR(hfp_lease_release_after(l, bogus), HFP_RUNTIME_ERROR, "hipEventRecord");
  CHECK(hfp_lease_work_size(l) == hfp_lease_work_size(l) && hfp_lease_plan(l) != NULL);
  EXPECT_OK(hfp_lease_release_after(l, NULL));
  EXPECT_OK(hfp_pool_synchronize(pool, NULL));
  naive_dft(in, want, N, -1, 0);
  CHECK(rel_err(out, want, N) <= 1e-5);
  CHECK(wait_idle(pool)); /* the completion thread released it */
  free(work);

  EXPECT_ERR(hfp_pool_synchronize(NULL, NULL), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_ERR(hfp_pool_synchronize(pool, bogus), HFP_RUNTIME_ERROR, "hipStreamSynchronize");

  /* A batch on the null stream takes the release_after path (the null stream names a
     different stream per thread); ending a batch with nothing in it is no error. */
  EXPECT_ERR(hfp_lease_release_in_batch(NULL, NULL), HFP_INVALID_ARGUMENT, "`lease`");
  EXPECT_ERR(hfp_pool_end_batch(NULL, NULL), HFP_INVALID_ARGUMENT, "`pool`");
  fill(in, 2 * N, 12);
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  work = malloc(hfp_lease_work_size(l) + 1);
  EXPECT_OK(hfp_lease_exec(l, NULL, in, out, HFP_FORWARD, work));
  EXPECT_OK(hfp_lease_release_in_batch(l, NULL));
  EXPECT_OK(hfp_pool_end_batch(pool, NULL));
  EXPECT_OK(hfp_pool_synchronize(pool, NULL));
  naive_dft(in, want, N, -1, 0);
  CHECK(rel_err(out, want, N) <= 1e-5);
  CHECK(wait_idle(pool));
  free(work);
}

static void test_metrics(hfp_pool *pool) {
  hfp_metrics m;
  size_t needed = 0;
  char small[10], *buf;
  memset(&m, 0, sizeof m);
  EXPECT_ERR(hfp_pool_metrics(NULL, &m), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_ERR(hfp_pool_metrics(pool, NULL), HFP_INVALID_ARGUMENT, "`out`");
  m.struct_size = 8;
  EXPECT_ERR(hfp_pool_metrics(pool, &m), HFP_INVALID_ARGUMENT, "`struct_size` = 8");
  m.struct_size = sizeof m;
  EXPECT_OK(hfp_pool_metrics(pool, &m));
  CHECK(m.struct_size == sizeof m && m.capacity == 16 && m.ceiling == 16);
  CHECK(m.creations >= 4 && m.misses >= 4 && m.live == m.cached && m.in_flight == 0);

  EXPECT_ERR(hfp_pool_metrics_text(NULL, NULL, 0, &needed), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_ERR(hfp_pool_metrics_text(pool, NULL, 0, NULL), HFP_INVALID_ARGUMENT, "`needed`");
  EXPECT_OK(hfp_pool_metrics_text(pool, NULL, 0, &needed)); /* a size query */
  CHECK(needed > 100);
  EXPECT_ERR(hfp_pool_metrics_text(pool, NULL, 10, &needed), HFP_INVALID_ARGUMENT, "`buf`");
  memset(small, 'x', sizeof small);
  EXPECT_ERR(hfp_pool_metrics_text(pool, small, sizeof small, &needed), HFP_BUFFER_TOO_SMALL, "truncated");
  CHECK(strlen(small) == sizeof small - 1); /* NUL-terminated anyway */
  buf = malloc(needed);
  EXPECT_OK(hfp_pool_metrics_text(pool, buf, needed, &needed));
  CHECK(strlen(buf) + 1 == needed);
  CHECK(strstr(buf, "hipfft_pool_capacity") != NULL);
  free(buf);
}

static void test_capacity_and_trim(hfp_pool *pool) {
  hfp_metrics m;
  m.struct_size = sizeof m;
  EXPECT_ERR(hfp_pool_set_capacity(NULL, 4), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_ERR(hfp_pool_set_capacity(pool, 0), HFP_INVALID_ARGUMENT, "`capacity`");
  EXPECT_ERR(hfp_pool_set_capacity(pool, 17), HFP_INVALID_ARGUMENT, "`capacity`");
  EXPECT_OK(hfp_pool_set_capacity(pool, 2));
  EXPECT_OK(hfp_pool_metrics(pool, &m));
  CHECK(m.capacity == 2 && m.cached <= 2);
  EXPECT_ERR(hfp_pool_trim(NULL), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_OK(hfp_pool_trim(pool));
  EXPECT_OK(hfp_pool_metrics(pool, &m));
  CHECK(m.cached == 0 && m.live == 0);
  EXPECT_OK(hfp_pool_set_capacity(pool, 16));
}

struct hook_state {
  int calls;
  hfp_lease *to_release; /* released by the hook when set */
};

static void flush_hook(void *ctx) {
  struct hook_state *s = ctx;
  s->calls++;
  if (s->to_release) {
    hfp_lease_release(s->to_release);
    s->to_release = NULL;
  }
}

static void test_ceiling_and_flush_hook(void) {
  hfp_pool *pool = sim_pool(1, 1, 50, HFP_CEILING_PRIVATE);
  hfp_plan_desc a = packed(HFP_C2C, 8, 1), b = packed(HFP_C2C, 16, 1);
  hfp_lease *held = NULL, *l = NULL;
  struct hook_state hs = {0, NULL};
  hfp_metrics m;
  double t0;
  m.struct_size = sizeof m;

  EXPECT_ERR(hfp_pool_set_flush_hook(NULL, flush_hook, &hs), HFP_INVALID_ARGUMENT, "`pool`");
  EXPECT_OK(hfp_pool_set_flush_hook(pool, flush_hook, &hs));
  EXPECT_OK(hfp_acquire(pool, &a, &held));
  /* One live handle, leased: the miss calls the hook once, waits ~50 ms and gives up. */
  t0 = now_ms();
  EXPECT_ERR(hfp_acquire(pool, &b, &l), HFP_CEILING_TIMEOUT, "live-handle ceiling reached");
  CHECK(now_ms() - t0 >= 40);
  CHECK(l == NULL && hs.calls == 1);
  EXPECT_OK(hfp_pool_metrics(pool, &m));
  CHECK(m.ceiling_timeouts == 1 && m.flush_hook_calls == 1 && m.ceiling == 1 && m.process_live == 1);

  /* A hook that releases the held lease lets the miss through. */
  hs.to_release = held;
  EXPECT_OK(hfp_acquire(pool, &b, &l));
  CHECK(hs.calls == 2 && hs.to_release == NULL);
  held = l;

  /* Cleared: no call, the timeout again. */
  EXPECT_OK(hfp_pool_set_flush_hook(pool, NULL, NULL));
  EXPECT_ERR(hfp_acquire(pool, &a, &l), HFP_CEILING_TIMEOUT, "HIPFFT_POOL_LIVE_CEILING");
  CHECK(hs.calls == 2);
  EXPECT_OK(hfp_lease_release(held));
  hfp_pool_free(pool);
}

static void test_shut_down(void) {
  hfp_pool *pool = sim_pool(4, 4, 1000, HFP_CEILING_PRIVATE);
  hfp_plan_desc d = packed(HFP_C2C, 8, 1);
  hfp_lease *l = NULL;
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  hfp_pool_free(pool); /* waits up to 200 ms for the lease, then leaves it to its release */
  /* The lease outlives its pool; release_after is refused and the lease stays ours. */
  EXPECT_ERR(hfp_lease_release_after(l, NULL), HFP_SHUT_DOWN, "shut down");
  CHECK(hfp_lease_plan(l) != NULL);
  EXPECT_OK(hfp_lease_release(l));
}

static void test_double_release(hfp_pool *pool) {
  hfp_plan_desc d = packed(HFP_C2C, 8, 1);
  hfp_lease *l = NULL;
  float buf[16];
  if (!hfp_debug_checks_enabled()) {
    printf("skipped the double-release check: debug checks are off (HIPFFT_POOL_DEBUG_CHECKS=1)\n");
    return;
  }
  EXPECT_OK(hfp_acquire(pool, &d, &l));
  EXPECT_OK(hfp_lease_release(l));
  EXPECT_ERR(hfp_lease_release(l), HFP_INVALID_ARGUMENT, "released twice");
  EXPECT_ERR(hfp_lease_release_after(l, NULL), HFP_INVALID_ARGUMENT, "released twice");
  EXPECT_ERR(hfp_lease_exec(l, NULL, buf, buf, HFP_FORWARD, NULL), HFP_INVALID_ARGUMENT, "released twice");
  CHECK(hfp_lease_plan(l) == NULL && hfp_lease_work_size(l) == 0);
  printf("double release detected: %s\n", hfp_last_error_message());
}

/* A process-wide ceiling asked for after the first pool set another is
 * visible to a C host (and printed to stderr), not only to a Rust tracing subscriber. */
static void test_warnings(void) {
  hfp_pool *p = sim_pool(1, 7, 100, HFP_CEILING_PROCESS_WIDE);
  if (p) {
    const char *w = hfp_pool_warnings(p);
    CHECK(w != NULL && strstr(w, "live_ceiling 7 asked") != NULL && strstr(w, "already set") != NULL);
    hfp_pool_free(p);
  }
  hfp_pool *q = sim_pool(1, 8, 100, HFP_CEILING_PRIVATE);
  if (q) {
    CHECK(strcmp(hfp_pool_warnings(q), "") == 0);
    hfp_pool_free(q);
  }
  CHECK(hfp_pool_warnings(NULL) == NULL && strstr(hfp_last_error_message(), "`pool`") != NULL);
}

int main(void) {
  hfp_pool *pool;
  setenv("HIPFFT_POOL_RUNTIME", "sim", 0);
  test_basics();
  test_config_and_pools();
  test_default_pool();
  test_warnings();
  pool = sim_pool(16, 16, 2000, HFP_CEILING_PRIVATE);
  if (pool) {
    test_descriptors(pool);
    test_exec(pool);
    test_release_after(pool);
    test_metrics(pool);
    test_capacity_and_trim(pool);
    test_double_release(pool);
    hfp_pool_free(pool);
  }
  test_ceiling_and_flush_hook();
  test_shut_down();
  printf("abi_test: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
