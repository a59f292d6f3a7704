/* How real processes live, under the interposer on the simulated runtime: handles passed
 * between threads, destroyed while another thread executes them, created and destroyed for
 * ever, processes that fork, exit together, or exit from a signal handler. Run by
 * process_life.rs of intercept/cufft and intercept/hipfft. Each subcommand prints "ok ..."
 * and exits 0, or prints "FAIL ..." and exits 1.
 *
 *   process_life handoff T H R    T threads pass H handles (one thread at a time per handle),
 *                                 R executions each; counts ALLOC_FAILED and wrong results
 *   process_life destroy_race N   N trials: one thread executes a handle while another
 *                                 destroys it; then a plan of another shape must be made
 *   process_life reuse N          N creations and destroys in a row; a stale handle is refused
 *   process_life fork_exit N      N children that never call the API exit at once while
 *                                 the parent's threads hold the interposer's locks
 *   process_life fork_use         a child plans and executes (a fresh pool of its own)
 *   process_life exit_together N  N children each execute and exit at the same moment
 *   process_life signal_exit      a signal handler calls exit() while threads execute */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fft_api.h"

static int failures = 0;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                \
      printf(__VA_ARGS__);                                       \
      printf(" [last error: %s]\n", hfp_intercept_last_error()); \
      fflush(stdout);                                            \
      failures++;                                                \
    }                                                            \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* exec_checked on the caller's buffers (2n floats each): no allocation outside the
 * interposer, so a signal that lands in this thread's own code never finds it inside malloc. */
static result_t exec_into(handle_t plan, void *stream, int n, int seed, float *in, float *out, long *wrong) {
  double sr = 0, si = 0;
  for (int k = 0; k < n; k++) {
    in[2 * k] = (float)((k * 7 + seed) % 13) - 6.0f;
    in[2 * k + 1] = (float)((k * 3 + seed) % 5) - 2.0f;
    sr += in[2 * k];
    si += in[2 * k + 1];
    out[2 * k] = out[2 * k + 1] = 0;
  }
  result_t r = FFT(SetStream)(plan, stream);
  if (r == R_SUCCESS) r = FFT(ExecC2C)(plan, in, out, DIR_FORWARD);
  if (r == R_SUCCESS) {
    hfp_intercept_synchronize();
    if (fabs(out[0] - sr) > 1e-3 * (fabs(sr) + 1) || fabs(out[1] - si) > 1e-3 * (fabs(si) + 1)) (*wrong)++;
  }
  return r;
}

/* One C2C execution of `plan` (length n, batch 1) on `stream`, checked: bin 0 of a forward
 * transform is the sum of the input. Returns the call's result; *wrong counts bad values. */
static result_t exec_checked(handle_t plan, void *stream, int n, int seed, long *wrong) {
  float *in = malloc(sizeof(float) * 2 * n), *out = calloc(2 * (size_t)n, sizeof(float));
  double sr = 0, si = 0;
  for (int k = 0; k < n; k++) {
    in[2 * k] = (float)((k * 7 + seed) % 13) - 6.0f;
    in[2 * k + 1] = (float)((k * 3 + seed) % 5) - 2.0f;
    sr += in[2 * k];
    si += in[2 * k + 1];
  }
  result_t r = FFT(SetStream)(plan, stream);
  if (r == R_SUCCESS) r = FFT(ExecC2C)(plan, in, out, DIR_FORWARD);
  if (r == R_SUCCESS) {
    hfp_intercept_synchronize();
    if (fabs(out[0] - sr) > 1e-3 * (fabs(sr) + 1) || fabs(out[1] - si) > 1e-3 * (fabs(si) + 1)) (*wrong)++;
  }
  free(in);
  free(out);
  return r;
}

/* ---- handoff: handles passed between threads at a full ceiling ---- */

typedef struct {
  pthread_mutex_t lock;
  handle_t h;
  int n;
} shared_handle;

static shared_handle *shared;
static int shared_count;
static atomic_long alloc_failed, other_failed, wrong_values, execs_done;

typedef struct { int id, rounds; } handoff_arg;

static void *handoff_worker(void *p) {
  handoff_arg *a = p;
  void *stream = NULL;
  if (hfp_intercept_stream_create(&stream) != 0) { atomic_fetch_add(&other_failed, 1); return NULL; }
  long wrong = 0;
  for (int r = 0; r < a->rounds; r++) {
    /* each round a different handle: every handle goes from thread to thread */
    shared_handle *s = &shared[(a->id * 5 + r) % shared_count];
    pthread_mutex_lock(&s->lock);
    result_t res = exec_checked(s->h, stream, s->n, a->id + r, &wrong);
    pthread_mutex_unlock(&s->lock);
    if (res == R_ALLOC_FAILED) atomic_fetch_add(&alloc_failed, 1);
    else if (res != R_SUCCESS) atomic_fetch_add(&other_failed, 1);
    else atomic_fetch_add(&execs_done, 1);
  }
  atomic_fetch_add(&wrong_values, wrong);
  return NULL;
}

static int handoff(int threads, int handles, int rounds) {
  pthread_t t[64];
  handoff_arg a[64];
  if (threads > 64) threads = 64;
  shared = calloc(handles, sizeof *shared);
  shared_count = handles;
  for (int i = 0; i < handles; i++) {
    pthread_mutex_init(&shared[i].lock, NULL);
    shared[i].n = 32 + 8 * i; /* a shape each: more shapes than the ceiling holds */
    CHECK(FFT(Plan1d)(&shared[i].h, shared[i].n, T_C2C, 1) == R_SUCCESS, "Plan1d %d", i);
  }
  double t0 = now_ms();
  for (int i = 0; i < threads; i++) {
    a[i] = (handoff_arg){.id = i, .rounds = rounds};
    pthread_create(&t[i], NULL, handoff_worker, &a[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  double ms = now_ms() - t0;
  printf("handoff: %d threads, %d handles, %ld execs, %ld ALLOC_FAILED, %ld other failures, %ld wrong, %.1f ms\n",
         threads, handles, atomic_load(&execs_done), atomic_load(&alloc_failed), atomic_load(&other_failed),
         atomic_load(&wrong_values), ms);
  CHECK(atomic_load(&alloc_failed) == 0, "%ld executions got ALLOC_FAILED", atomic_load(&alloc_failed));
  CHECK(atomic_load(&other_failed) == 0, "%ld executions failed otherwise", atomic_load(&other_failed));
  CHECK(atomic_load(&wrong_values) == 0, "%ld wrong results", atomic_load(&wrong_values));
  CHECK(atomic_load(&execs_done) == (long)threads * rounds, "%ld of %d executions", atomic_load(&execs_done),
        threads * rounds);
  for (int i = 0; i < handles; i++) CHECK(FFT(Destroy)(shared[i].h) == R_SUCCESS, "Destroy %d", i);
  return failures;
}

/* ---- destroy_race: a handle destroyed while another thread executes it ---- */

typedef struct { handle_t h; int n; atomic_int started; } race_arg;

/* Executes the handle until it is destroyed under it (the caller breaks cuFFT's contract
 * here; the pool must still lose nothing). */
static void *race_exec(void *p) {
  race_arg *a = p;
  float *buf = calloc(2 * (size_t)a->n, sizeof(float));
  for (int i = 0; i < 100000; i++) {
    if (FFT(ExecC2C)(a->h, buf, buf, DIR_FORWARD) != R_SUCCESS) break;
    atomic_store(&a->started, 1);
  }
  atomic_store(&a->started, 1); /* also when the first execution failed */
  hfp_intercept_synchronize(); /* the executions enqueued on the buffer end before it goes */
  free(buf);
  return NULL;
}

static int destroy_race(int trials) {
  int stranded = 0;
  for (int t = 0; t < trials; t++) {
    race_arg a = {.n = 64 + t % 7};
    if (FFT(Plan1d)(&a.h, a.n, T_C2C, 1) != R_SUCCESS) { /* the slot is gone */
      stranded++;
      continue;
    }
    atomic_store(&a.started, 0);
    pthread_t th;
    pthread_create(&th, NULL, race_exec, &a);
    while (!atomic_load(&a.started)) {}
    for (volatile int spin = 0; spin < (t % 5) * 500; spin++) {}
    FFT(Destroy)(a.h);
    pthread_join(th, NULL);
    /* Another shape: at a ceiling of 1 it needs the slot the raced handle's plan held. */
    handle_t other;
    long wrong = 0;
    result_t r = FFT(Plan1d)(&other, 200 + t % 3, T_C2C, 1), made = r;
    if (r == R_SUCCESS) r = exec_checked(other, NULL, 200 + t % 3, t, &wrong);
    if (r != R_SUCCESS || wrong) stranded++;
    if (made == R_SUCCESS) FFT(Destroy)(other);
  }
  printf("destroy_race: %d trials, %d ended without a slot; virtual handles live %ld\n", trials, stranded,
         hfp_intercept_virtual_handles_live());
  CHECK(stranded == 0, "%d of %d trials found no slot after a destroy raced an execution", stranded, trials);
  CHECK(hfp_intercept_virtual_handles_live() == 0, "virtual handles left");
  return failures;
}

/* ---- reuse: handle values over a long life ---- */

static int reuse(long count) {
  handle_t first, h;
  long wrong = 0;
  CHECK(FFT(Plan1d)(&first, 16, T_C2C, 1) == R_SUCCESS, "Plan1d");
  CHECK(FFT(Destroy)(first) == R_SUCCESS, "Destroy");
  double t0 = now_ms();
  for (long i = 0; i < count; i++) {
    if (FFT(Create)(&h) != R_SUCCESS) {
      CHECK(0, "Create failed after %ld handles", i);
      break;
    }
    if (h == first) {
      /* a value may come back, never while a stale copy could still be taken for it */
      CHECK(i >= (1L << 20), "the first handle's value came back after %ld creations", i);
    }
    if (FFT(Destroy)(h) != R_SUCCESS) {
      CHECK(0, "Destroy failed after %ld handles", i);
      break;
    }
  }
  double ms = now_ms() - t0;
  /* the stale handle: refused, never taken for a live one */
  handle_t live;
  CHECK(FFT(Plan1d)(&live, 16, T_C2C, 1) == R_SUCCESS, "Plan1d after the loop");
  if (live != first) {
    size_t ws;
    CHECK(FFT(GetSize)(first, &ws) == R_INVALID_PLAN, "a destroyed handle's value was accepted");
  }
  CHECK(exec_checked(live, NULL, 16, 1, &wrong) == R_SUCCESS && wrong == 0, "an execution after the loop");
  CHECK(FFT(Destroy)(live) == R_SUCCESS, "Destroy");
  printf("reuse: %ld creations and destroys in %.0f ms\n", count, ms);
  return failures;
}

/* ---- fork: children that never call the API, and one that does ---- */

static atomic_int stop_busy;

/* Executes and destroys handles for ever: the interposer's locks are taken and let go
 * all the time, so a fork lands while one is held. */
static void *busy(void *p) {
  int id = (int)(long)p;
  long wrong = 0;
  void *stream = NULL;
  float in[2 * 40], out[2 * 40];
  hfp_intercept_stream_create(&stream);
  for (int r = 0; !atomic_load(&stop_busy); r++) {
    handle_t h;
    int n = 16 + (id * 3 + r) % 24;
    if (FFT(Plan1d)(&h, n, T_C2C, 1) != R_SUCCESS) continue;
    exec_into(h, stream, n, r, in, out, &wrong);
    FFT(Destroy)(h);
  }
  return (void *)wrong;
}

/* Waits for `pid` until `ms`; kills it if it is still there. Returns 1 if it exited 0 in time. */
static int reap(pid_t pid, double ms, int *hung) {
  double until = now_ms() + ms;
  int status = 0;
  while (now_ms() < until) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    usleep(1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  (*hung)++;
  return 0;
}

static int fork_exit(int children) {
  pthread_t t[4];
  atomic_store(&stop_busy, 0);
  for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, busy, (void *)i);
  usleep(20000);
  int hung = 0, bad = 0;
  double slowest = 0;
  for (int c = 0; c < children; c++) {
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) exit(0); /* the child never calls the API */
    if (!reap(pid, 5000, &hung)) bad++;
    double ms = now_ms() - t0;
    if (ms > slowest) slowest = ms;
  }
  atomic_store(&stop_busy, 1);
  long wrong = 0;
  for (int i = 0; i < 4; i++) {
    void *w;
    pthread_join(t[i], &w);
    wrong += (long)w;
  }
  printf("fork_exit: %d children, %d hung, %d failed, slowest %.1f ms\n", children, hung, bad, slowest);
  CHECK(hung == 0, "%d children hung in exit()", hung);
  CHECK(bad == 0, "%d children did not exit 0", bad);
  CHECK(wrong == 0, "%ld wrong results in the parent", wrong);
  return failures;
}

static int fork_use(void) {
  pthread_t t[2];
  atomic_store(&stop_busy, 0);
  for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, (void *)i);
  usleep(20000);
  int hung = 0, bad = 0;
  double slowest = 0;
  for (int c = 0; c < 8; c++) {
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
      /* the child plans, executes and checks on a pool of its own */
      long wrong = 0;
      handle_t h;
      int ok = FFT(Plan1d)(&h, 48, T_C2C, 1) == R_SUCCESS;
      if (ok) ok = exec_checked(h, NULL, 48, c, &wrong) == R_SUCCESS && wrong == 0;
      if (ok) ok = FFT(Destroy)(h) == R_SUCCESS;
      if (!ok) printf("FAIL child %d: %s\n", c, hfp_intercept_last_error());
      fflush(stdout);
      exit(ok ? 0 : 1);
    }
    if (!reap(pid, 5000, &hung)) bad++;
    double ms = now_ms() - t0;
    if (ms > slowest) slowest = ms;
  }
  atomic_store(&stop_busy, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("fork_use: 8 children, %d hung, %d failed, slowest %.1f ms\n", hung, bad, slowest);
  CHECK(hung == 0 && bad == 0, "%d hung, %d failed", hung, bad);
  return failures;
}

/* ---- exit_together: many processes that each used the API exit at once ---- */

static int exit_together(int children) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return 1;
  pid_t pids[256];
  if (children > 256) children = 256;
  for (int c = 0; c < children; c++) {
    pids[c] = fork();
    if (pids[c] == 0) {
      close(pipefd[1]);
      long wrong = 0;
      handle_t h;
      int ok = FFT(Plan1d)(&h, 32 + c % 5, T_C2C, 1) == R_SUCCESS;
      for (int r = 0; ok && r < 5 + c; r++) ok = exec_checked(h, NULL, 32 + c % 5, r, &wrong) == R_SUCCESS;
      char b;
      (void)!read(pipefd[0], &b, 1); /* all exit when the parent closes the pipe */
      exit(ok && wrong == 0 ? 0 : 1);
    }
  }
  close(pipefd[0]);
  usleep(100000);
  close(pipefd[1]);
  int hung = 0, bad = 0;
  for (int c = 0; c < children; c++)
    if (!reap(pids[c], 10000, &hung)) bad++;
  printf("exit_together: %d children, %d hung, %d failed\n", children, hung, bad);
  CHECK(hung == 0 && bad == 0, "%d hung, %d failed", hung, bad);
  return failures;
}

/* ---- signal_exit: exit() called by a signal handler on a thread inside the interposer ---- */

static void on_signal(int sig) {
  (void)sig;
  exit(0);
}

static int signal_exit(void) {
  signal(SIGUSR1, on_signal);
  pthread_t t[4];
  atomic_store(&stop_busy, 0);
  for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, busy, (void *)i);
  srand((unsigned)getpid());
  usleep(5000 + rand() % 20000);
  /* interrupt a worker wherever it is (inside the interposer most of the time) */
  pthread_kill(t[rand() % 4], SIGUSR1);
  sleep(20); /* the handler's exit() ends the process long before this */
  printf("FAIL the signal handler's exit() did not end the process\n");
  return 1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *cmd = argc > 1 ? argv[1] : "";
  long n = argc > 2 ? atol(argv[2]) : 0;
  int f;
  if (!strcmp(cmd, "handoff")) f = handoff(n ? n : 16, argc > 3 ? atoi(argv[3]) : 6, argc > 4 ? atoi(argv[4]) : 64);
  else if (!strcmp(cmd, "destroy_race")) f = destroy_race(n ? n : 30);
  else if (!strcmp(cmd, "reuse")) f = reuse(n ? n : 1L << 20);
  else if (!strcmp(cmd, "fork_exit")) f = fork_exit(n ? n : 100);
  else if (!strcmp(cmd, "fork_use")) f = fork_use();
  else if (!strcmp(cmd, "exit_together")) f = exit_together(n ? n : 30);
  else if (!strcmp(cmd, "signal_exit")) f = signal_exit();
  else { printf("FAIL unknown subcommand %s\n", cmd); return 2; }
  printf("%s %s: %d failures\n", f ? "FAIL" : "ok", cmd, f);
  return f ? 1 : 0;
}
