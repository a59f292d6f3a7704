/* fork_test.c: a process that forks while its pools are in use, through the C ABI on the
 * simulated runtime. In each child: a pool made before the fork refuses calls at once with
 * HFP_FORKED naming fork (never a timeout blaming a runtime call), hfp_pool_free of it returns
 * at once without touching the parent's threads, a pool made in the child (and the default
 * pool) works, with a ceiling of its own; a child that never calls the library exits at once.
 * The parent's pools keep working. Each child is reaped within 5 s or killed and counted.
 * Prints "fork_test: N passed, M failed"; exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static hfp_pool *make_pool(size_t ceiling) {
  hfp_config cfg;
  hfp_pool *pool = NULL;
  hfp_config_default(&cfg);
  cfg.runtime = "sim";
  cfg.capacity = ceiling;
  cfg.live_ceiling = ceiling;
  cfg.acquire_timeout_ms = 3000;
  if (hfp_pool_new(&cfg, &pool) != HFP_OK) return NULL;
  return pool;
}

/* One checked C2C execution of length n on `pool`: bin 0 is the sum of the inputs. */
static int exec_checked(hfp_pool *pool, int64_t n) {
  hfp_plan_desc d = check_c2c(n, 1);
  hfp_lease *l = NULL;
  if (hfp_acquire(pool, &d, &l) != HFP_OK) return 0;
  float *in = malloc(sizeof(float) * 2 * (size_t)n), *out = calloc(2 * (size_t)n, sizeof(float));
  void *work = malloc(hfp_lease_work_size(l) + 1);
  double sum = 0;
  for (int64_t k = 0; k < n; k++) {
    in[2 * k] = (float)(k % 7) - 3.0f;
    in[2 * k + 1] = 0;
    sum += in[2 * k];
  }
  int ok = hfp_lease_exec(l, NULL, in, out, HFP_FORWARD, work) == HFP_OK;
  ok = ok && hfp_pool_synchronize(pool, NULL) == HFP_OK;
  ok = ok && out[0] > sum - 1e-3 && out[0] < sum + 1e-3;
  hfp_lease_release(l);
  free(in);
  free(out);
  free(work);
  return ok;
}

static atomic_int stop;

/* Acquires and releases all the time: a fork lands while the pool's locks are taken. */
static void *busy(void *p) {
  hfp_pool *pool = p;
  for (int i = 0; !atomic_load(&stop); i++) check_touch(pool, 16 + i % 8, 1);
  return NULL;
}

/* Waits for `pid` up to 5 s (then kills it); 1 if it exited 0. *ms: how long it took. */
static int reap(pid_t pid, double started, double *ms) {
  int status = 0;
  while (now_ms() - started < 5000) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      *ms = now_ms() - started;
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  *ms = now_ms() - started;
  printf("FAIL child %d hung (killed after 5 s)\n", (int)pid);
  return 0;
}

/* The child's side: its exit status says what held. */
static int in_child(hfp_pool *inherited, int what) {
  double t0 = now_ms();
  hfp_plan_desc d = check_c2c(16, 1);
  hfp_lease *l = NULL;
  switch (what) {
    case 0: /* never calls the library */
      return 0;
    case 1: { /* the inherited pool refuses at once, naming fork */
      hfp_status s = hfp_acquire(inherited, &d, &l);
      int ok = s == HFP_FORKED && strstr(hfp_last_error_message(), "fork") != NULL && now_ms() - t0 < 100;
      if (!ok) printf("FAIL child: acquire on an inherited pool gave %s: %s\n", hfp_status_name(s), hfp_last_error_message());
      return ok ? 0 : 1;
    }
    case 2: /* freeing the inherited pool returns at once */
      hfp_pool_free(inherited);
      return now_ms() - t0 < 100 ? 0 : 1;
    case 3: { /* a pool of the child's own works, with a ceiling of its own */
      hfp_pool *own = make_pool(2);
      int ok = own != NULL && exec_checked(own, 48) && exec_checked(own, 40) && exec_checked(own, 32);
      ok = ok && check_metrics(own).peak_live <= 2;
      hfp_pool_free(own);
      return ok ? 0 : 1;
    }
    case 4: { /* the default pool is the child's own */
      hfp_pool *def = hfp_default_pool();
      return def != NULL && exec_checked(def, 24) ? 0 : 1;
    }
  }
  return 2;
}

int main(void) {
  setenv("HIPFFT_POOL_RUNTIME", "sim", 1);
  hfp_pool *pool = make_pool(4);
  CHECK(pool != NULL);
  if (!pool) return check_summary("fork_test");
  CHECK(exec_checked(pool, 64));
  CHECK(exec_checked(hfp_default_pool(), 64)); /* the parent's default pool exists */
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, pool);
  /* a lease held across the fork */
  hfp_plan_desc held_desc = check_c2c(100, 1);
  hfp_lease *held = NULL;
  CHECK(hfp_acquire(pool, &held_desc, &held) == HFP_OK);
  double slowest = 0;
  for (int round = 0; round < 10; round++) {
    for (int what = 0; what <= 4; what++) {
      double t0 = now_ms(), ms = 0;
      fflush(stdout); /* the child's copy of the buffer would print it again */
      pid_t pid = fork();
      if (pid == 0) exit(in_child(pool, what)); /* exit(): the atexit handlers run, as in a real child */
      int ok = reap(pid, t0, &ms);
      if (!ok) printf("FAIL child case %d (round %d)\n", what, round);
      CHECK(ok);
      if (ms > slowest) slowest = ms;
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  hfp_lease_release(held);
  CHECK(exec_checked(pool, 64)); /* the parent's pool works after its children */
  printf("slowest child: %.1f ms\n", slowest);
  hfp_pool_free(pool);
  return check_summary("fork_test");
}
