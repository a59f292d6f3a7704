/* A program written against the cuFFT (or, with -DAPI_HIPFFT, the hipFFT) plan API, as a
 * framework would call it, run by the c_programs.rs tests of intercept/cufft and intercept/hipfft on the simulated runtime
 * (device memory is host memory there). Each subcommand prints "ok ..." lines and exits 0,
 * or prints "FAIL ..." and exits 1.
 *
 *   fft_sim numerics     every typed exec and the Xt calls against a naive DFT
 *   fft_sim handles N    N virtual handles of distinct shapes, executed in rounds
 *   fft_sim threads T    T threads, each with its own stream and handles
 *   fft_sim errors       bad arguments give the library's codes and a message
 *   fft_sim worksizes    the work size reported at plan time is the real one, and is used
 *   fft_sim memo         a plan call for a descriptor seen before makes no plan (ceiling 1)
 *   fft_sim capture N    executions captured into graphs (the sim's capture model), N handles
 *   fft_sim mlx SHAPES [CACHE]  MLX 0.32.2's CUDA FFT pattern (fft.cu, device.cpp): a plan
 *                        cache of CACHE virtual handles (an evicted one destroyed at once), each step set-stream, set-work-area, then one exec
 *                        captured into its own graph; graphs launched only at a commit every
 *                        few ops, so a step's input is the output of a graph not yet run */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fft_api.h"

static int failures = 0;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf(" [last error: %s]\n", hfp_intercept_last_error()); \
      failures++;                                 \
    }                                             \
  } while (0)

#define OK(call) CHECK((call) == R_SUCCESS, "%s", #call)

/* ---- reference: a naive multi-dimensional DFT in double precision ---- */

typedef struct { double re, im; } cplx;

static unsigned long long rng = 88172645463325252ULL;
static double rnd(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (double)(rng % 2000001) / 1000000.0 - 1.0;
}

/* x: `batch` grids of dims[0] x ... x dims[rank-1]; sign -1 forward, +1 inverse (unnormalized). */
static void dft(const cplx *x, cplx *y, const int *dims, int rank, int batch, int sign) {
  int total = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  for (int b = 0; b < batch; b++) {
    for (int k = 0; k < total; k++) {
      int kk[3] = {0, 0, 0}, rem = k;
      for (int d = rank - 1; d >= 0; d--) { kk[d] = rem % dims[d]; rem /= dims[d]; }
      double sr = 0, si = 0;
      for (int j = 0; j < total; j++) {
        int jj[3] = {0, 0, 0}, r2 = j;
        for (int d = rank - 1; d >= 0; d--) { jj[d] = r2 % dims[d]; r2 /= dims[d]; }
        double ph = 0;
        for (int d = 0; d < rank; d++) ph += (double)kk[d] * jj[d] / dims[d];
        ph *= sign * 2.0 * M_PI;
        const cplx v = x[b * total + j];
        sr += v.re * cos(ph) - v.im * sin(ph);
        si += v.re * sin(ph) + v.im * cos(ph);
      }
      y[b * total + k].re = sr;
      y[b * total + k].im = si;
    }
  }
}

/* Relative L2 error of `got` (interleaved, float or double) against `want`. */
static double rel_err(const void *got, int dbl, const double *want, int count) {
  double num = 0, den = 0;
  for (int i = 0; i < count; i++) {
    double g = dbl ? ((const double *)got)[i] : ((const float *)got)[i];
    num += (g - want[i]) * (g - want[i]);
    den += want[i] * want[i];
  }
  return sqrt(num / (den > 0 ? den : 1));
}

static int is_double(int t) { return t == T_Z2Z || t == T_D2Z || t == T_Z2D; }

/* One transform of type t on dims/batch through `plan`, checked against the DFT. */
static void check_transform(handle_t plan, int t, const int *dims, int rank, int batch, int direction, int xt,
                            const char *what) {
  int total = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  int last = dims[rank - 1], half = last / 2 + 1, total_half = total / last * half;
  int dbl = is_double(t), esz = dbl ? 8 : 4;
  cplx *x = calloc((size_t)total * batch, sizeof(cplx)), *y = calloc((size_t)total * batch, sizeof(cplx));
  double *want = calloc((size_t)total * batch * 2, sizeof(double));
  void *in = calloc((size_t)total * batch * 2, esz), *out = calloc((size_t)total * batch * 2, esz);
  int want_count = 0;
  if (t == T_C2C || t == T_Z2Z) {
    for (int i = 0; i < total * batch; i++) { x[i].re = rnd(); x[i].im = rnd(); }
    for (int i = 0; i < total * batch; i++) {
      if (dbl) { ((double *)in)[2 * i] = x[i].re; ((double *)in)[2 * i + 1] = x[i].im; }
      else { ((float *)in)[2 * i] = (float)x[i].re; ((float *)in)[2 * i + 1] = (float)x[i].im; }
    }
    dft(x, y, dims, rank, batch, direction);
    for (int i = 0; i < total * batch; i++) { want[2 * i] = y[i].re; want[2 * i + 1] = y[i].im; }
    want_count = 2 * total * batch;
  } else if (t == T_R2C || t == T_D2Z) {
    for (int i = 0; i < total * batch; i++) { x[i].re = rnd(); x[i].im = 0; }
    for (int i = 0; i < total * batch; i++) {
      if (dbl) ((double *)in)[i] = x[i].re; else ((float *)in)[i] = (float)x[i].re;
    }
    dft(x, y, dims, rank, batch, -1);
    /* keep the first last/2+1 points of each innermost row */
    int o = 0;
    for (int i = 0; i < total * batch; i++) {
      if (i % last < half) { want[o++] = y[i].re; want[o++] = y[i].im; }
    }
    want_count = o;
  } else { /* C2R, Z2D: input is the spectrum of a real signal */
    for (int i = 0; i < total * batch; i++) { x[i].re = rnd(); x[i].im = 0; }
    cplx *spec = calloc((size_t)total * batch, sizeof(cplx));
    dft(x, spec, dims, rank, batch, -1);
    int o = 0;
    for (int i = 0; i < total * batch; i++) {
      if (i % last < half) {
        if (dbl) { ((double *)in)[o] = spec[i].re; ((double *)in)[o + 1] = spec[i].im; }
        else { ((float *)in)[o] = (float)spec[i].re; ((float *)in)[o + 1] = (float)spec[i].im; }
        o += 2;
      }
    }
    /* the unnormalized inverse of the forward transform is total * x */
    for (int i = 0; i < total * batch; i++) want[i] = x[i].re * total;
    want_count = total * batch;
    free(spec);
  }
  (void)total_half;
  result_t r;
  if (xt) r = FFT(XtExec)(plan, in, out, direction);
  else if (t == T_C2C) r = FFT(ExecC2C)(plan, in, out, direction);
  else if (t == T_Z2Z) r = FFT(ExecZ2Z)(plan, in, out, direction);
  else if (t == T_R2C) r = FFT(ExecR2C)(plan, in, out);
  else if (t == T_D2Z) r = FFT(ExecD2Z)(plan, in, out);
  else if (t == T_C2R) r = FFT(ExecC2R)(plan, in, out);
  else r = FFT(ExecZ2D)(plan, in, out);
  CHECK(r == R_SUCCESS, "%s: exec returned %d", what, r);
  CHECK(hfp_intercept_synchronize() == 0, "%s: synchronize", what);
  double e = rel_err(out, dbl, want, want_count);
  double tol = dbl ? 1e-9 : 1e-4;
  CHECK(e < tol, "%s: relative error %g above %g", what, e, tol);
  if (r == R_SUCCESS && e < tol) printf("ok %s (relative error %.2g)\n", what, e);
  free(x); free(y); free(want); free(in); free(out);
}

static const int TYPES[6] = {T_C2C, T_R2C, T_C2R, T_Z2Z, T_D2Z, T_Z2D};
static const char *type_name(int t) {
  switch (t) {
    case T_C2C: return "C2C"; case T_R2C: return "R2C"; case T_C2R: return "C2R";
    case T_Z2Z: return "Z2Z"; case T_D2Z: return "D2Z"; default: return "Z2D";
  }
}

static int numerics(void) {
  char what[128];
  for (int ti = 0; ti < 6; ti++) {
    int t = TYPES[ti];
    /* Plan1d (auto-allocation on: the interposer supplies the work area) */
    handle_t p;
    int n1[1] = {24};
    OK(FFT(Plan1d)(&p, 24, t, 3));
    snprintf(what, sizeof what, "%s Plan1d n=24 batch=3 auto-allocated", type_name(t));
    check_transform(p, t, n1, 1, 3, DIR_FORWARD, 0, what);
    if (t == T_C2C || t == T_Z2Z) {
      snprintf(what, sizeof what, "%s Plan1d inverse", type_name(t));
      check_transform(p, t, n1, 1, 3, DIR_INVERSE, 0, what);
    }
    OK(FFT(Destroy)(p));
    /* Plan2d, Plan3d */
    int n2[2] = {6, 10};
    OK(FFT(Plan2d)(&p, 6, 10, t));
    snprintf(what, sizeof what, "%s Plan2d 6x10", type_name(t));
    check_transform(p, t, n2, 2, 1, DIR_FORWARD, 0, what);
    OK(FFT(Destroy)(p));
    int n3[3] = {3, 4, 6};
    OK(FFT(Plan3d)(&p, 3, 4, 6, t));
    snprintf(what, sizeof what, "%s Plan3d 3x4x6", type_name(t));
    check_transform(p, t, n3, 3, 1, DIR_FORWARD, 0, what);
    OK(FFT(Destroy)(p));
    /* Create + SetAutoAllocation(0) + MakePlanMany64 + SetWorkArea: the framework path */
    OK(FFT(Create)(&p));
    OK(FFT(SetAutoAllocation)(p, 0));
    long long nl[1] = {40};
    size_t ws = 0;
    OK(FFT(MakePlanMany64)(p, 1, nl, NULL, 1, 0, NULL, 1, 0, t, 5, &ws));
    void *area = ws ? malloc(ws) : NULL;
    OK(FFT(SetWorkArea)(p, area));
    int n40[1] = {40};
    snprintf(what, sizeof what, "%s MakePlanMany64 n=40 batch=5, own work area of %zu bytes", type_name(t), ws);
    check_transform(p, t, n40, 1, 5, DIR_FORWARD, 0, what);
    OK(FFT(Destroy)(p));
    free(area);
    /* PlanMany with explicit packed embeds */
    int nm[2] = {4, 8};
    int half = 8 / 2 + 1;
    int cplx_side = (t == T_C2C || t == T_Z2Z) ? 8 : half;
    int in_last = (t == T_C2R || t == T_Z2D) ? cplx_side : 8, out_last = (t == T_R2C || t == T_D2Z) ? cplx_side : 8;
    int ie[2] = {4, in_last}, oe[2] = {4, out_last};
    OK(FFT(PlanMany)(&p, 2, nm, ie, 1, 4 * in_last, oe, 1, 4 * out_last, t, 2));
    snprintf(what, sizeof what, "%s PlanMany 4x8 batch=2 with embeds", type_name(t));
    check_transform(p, t, nm, 2, 2, DIR_FORWARD, 0, what);
    OK(FFT(Destroy)(p));
  }
  /* the Xt calls: XtMakePlanMany + XtExec, as MLX and PyTorch call them */
  struct { int in, out, exec, t; } xt[6] = {
    {DT_R_32F, DT_C_32F, DT_R_32F, T_R2C}, {DT_C_32F, DT_R_32F, DT_C_32F, T_C2R}, {DT_C_32F, DT_C_32F, DT_C_32F, T_C2C},
    {DT_R_64F, DT_C_64F, DT_R_64F, T_D2Z}, {DT_C_64F, DT_R_64F, DT_C_64F, T_Z2D}, {DT_C_64F, DT_C_64F, DT_C_64F, T_Z2Z}};
  for (int i = 0; i < 6; i++) {
    handle_t p;
    OK(FFT(Create)(&p));
    OK(FFT(SetAutoAllocation)(p, 0));
    long long n = 30, ie = xt[i].t == T_C2R || xt[i].t == T_Z2D ? 16 : 30, oe = xt[i].t == T_R2C || xt[i].t == T_D2Z ? 16 : 30;
    size_t ws = 0;
    OK(FFT(XtMakePlanMany)(p, 1, &n, &ie, 1, ie, xt[i].in, &oe, 1, oe, xt[i].out, 4, &ws, xt[i].exec));
    void *area = malloc(ws + 1);
    OK(FFT(SetWorkArea)(p, area));
    int dims[1] = {30};
    snprintf(what, sizeof what, "Xt %s n=30 batch=4", type_name(xt[i].t));
    int dir = xt[i].t == T_C2R || xt[i].t == T_Z2D ? DIR_INVERSE : DIR_FORWARD;
    check_transform(p, xt[i].t, dims, 1, 4, dir, 1, what);
    if (xt[i].t == T_C2C || xt[i].t == T_Z2Z) {
      snprintf(what, sizeof what, "Xt %s inverse", type_name(xt[i].t));
      check_transform(p, xt[i].t, dims, 1, 4, DIR_INVERSE, 1, what);
    }
    OK(FFT(Destroy)(p));
    free(area);
  }
  int v = 0;
  OK(FFT(GetVersion)(&v));
  CHECK(v > 0, "GetVersion gave %d", v);
  return failures;
}

/* N handles of distinct shapes (every one its own plan), executed in `rounds` rounds. */
static int handles(int count, int rounds) {
  handle_t *h = calloc(count, sizeof(handle_t));
  for (int i = 0; i < count; i++) {
    CHECK(FFT(Plan1d)(&h[i], 16 + i, T_C2C, 2) == R_SUCCESS, "Plan1d handle %d", i);
  }
  long live = hfp_intercept_virtual_handles_live();
  CHECK(live == count, "%ld virtual handles live, expected %d", live, count);
  char what[96];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < count; i++) {
      int dims[1] = {16 + i};
      if (i % 17 == 0) { /* check the numbers of some, run the rest */
        snprintf(what, sizeof what, "round %d handle %d C2C n=%d", r, i, 16 + i);
        check_transform(h[i], T_C2C, dims, 1, 2, DIR_FORWARD, 0, what);
      } else {
        float *buf = calloc((size_t)(16 + i) * 2 * 2, sizeof(float));
        CHECK(FFT(ExecC2C)(h[i], buf, buf, DIR_FORWARD) == R_SUCCESS, "exec handle %d", i);
        hfp_intercept_synchronize();
        free(buf);
      }
    }
  }
  CHECK(hfp_intercept_synchronize() == 0, "synchronize");
  printf("ok %d handles, %d rounds; sim live %ld, sim peak %ld\n", count, rounds, hfp_intercept_sim_live_handles(),
         hfp_intercept_sim_peak_live_handles());
  for (int i = 0; i < count; i++) OK(FFT(Destroy)(h[i]));
  CHECK(hfp_intercept_virtual_handles_live() == 0, "handles left");
  free(h);
  return failures;
}

typedef struct { int id, handles, rounds, errors; } worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  void *stream = NULL;
  if (hfp_intercept_stream_create(&stream) != 0) { a->errors++; return NULL; }
  handle_t *h = calloc(a->handles, sizeof(handle_t));
  for (int i = 0; i < a->handles; i++) {
    /* shapes overlap between threads: several virtual handles share one real plan */
    int n = 32 + (i + a->id) % 24;
    if (FFT(Create)(&h[i]) != R_SUCCESS || FFT(SetAutoAllocation)(h[i], 0) != R_SUCCESS) a->errors++;
    size_t ws = 0;
    if (FFT(MakePlan1d)(h[i], n, T_R2C, 3, &ws) != R_SUCCESS) a->errors++;
  }
  for (int r = 0; r < a->rounds; r++) {
    for (int i = 0; i < a->handles; i++) {
      int n = 32 + (i + a->id) % 24, half = n / 2 + 1;
      float *in = malloc(sizeof(float) * n * 3), *out = calloc((size_t)half * 2 * 3, sizeof(float));
      size_t ws = 0;
      FFT(GetSize)(h[i], &ws);
      void *area = malloc(ws + 1);
      for (int k = 0; k < n * 3; k++) in[k] = (float)((k * 7 + r + a->id) % 13) - 6.0f;
      if (FFT(SetStream)(h[i], stream) != R_SUCCESS || FFT(SetWorkArea)(h[i], area) != R_SUCCESS) a->errors++;
      if (FFT(ExecR2C)(h[i], in, out) != R_SUCCESS) a->errors++;
      hfp_intercept_synchronize();
      /* bin 0 of each batch is the sum of its inputs */
      for (int b = 0; b < 3; b++) {
        double s = 0;
        for (int k = 0; k < n; k++) s += in[b * n + k];
        if (fabs(out[b * half * 2] - s) > 1e-3 * (fabs(s) + 1)) a->errors++;
      }
      free(in); free(out); free(area);
    }
  }
  for (int i = 0; i < a->handles; i++) if (FFT(Destroy)(h[i]) != R_SUCCESS) a->errors++;
  free(h);
  return NULL;
}

static int threads(int count) {
  pthread_t t[64];
  worker_arg a[64];
  if (count > 64) count = 64;
  for (int i = 0; i < count; i++) {
    a[i] = (worker_arg){.id = i, .handles = 16, .rounds = 4, .errors = 0};
    pthread_create(&t[i], NULL, worker, &a[i]);
  }
  int errors = 0;
  for (int i = 0; i < count; i++) { pthread_join(t[i], NULL); errors += a[i].errors; }
  CHECK(errors == 0, "%d errors in the threads", errors);
  if (errors == 0) printf("ok %d threads x 16 handles x 4 rounds; sim peak %ld\n", count, hfp_intercept_sim_peak_live_handles());
  return failures;
}

static int expect(result_t got, result_t want, const char *needle, const char *what) {
  const char *msg = hfp_intercept_last_error();
  CHECK(got == want, "%s: returned %d, expected %d", what, got, want);
  CHECK(needle == NULL || strstr(msg, needle) != NULL, "%s: message lacks \"%s\": %s", what, needle, msg);
  if (got == want && (needle == NULL || strstr(msg, needle))) printf("ok %s -> %d: %s\n", what, got, msg);
  return got == want;
}

static int errors(void) {
  handle_t p;
  float buf[256] = {0};
  expect(FFT(Plan1d)(&p, 0, T_C2C, 1), R_INVALID_SIZE, "n[0]", "zero length");
  expect(FFT(Plan1d)(&p, 16, T_C2C, 0), R_INVALID_SIZE, "batch", "zero batch");
  expect(FFT(Plan1d)(&p, 16, 0x77, 1), R_INVALID_TYPE, "0x77", "unknown type");
  int n0[2] = {8, 0};
  expect(FFT(PlanMany)(&p, 2, n0, NULL, 1, 0, NULL, 1, 0, T_C2C, 1), R_INVALID_SIZE, "n[1]", "zero length in PlanMany");
  expect(FFT(PlanMany)(&p, 4, n0, NULL, 1, 0, NULL, 1, 0, T_C2C, 1), R_INVALID_SIZE, "rank", "rank 4");
  /* a destroyed handle */
  OK(FFT(Plan1d)(&p, 16, T_C2C, 1));
  OK(FFT(Destroy)(p));
  expect(FFT(ExecC2C)(p, buf, buf, DIR_FORWARD), R_INVALID_PLAN, "destroyed", "exec on a destroyed handle");
  expect(FFT(Destroy)(p), R_INVALID_PLAN, "destroyed", "double destroy");
  expect(FFT(SetStream)(p, NULL), R_INVALID_PLAN, "destroyed", "set stream on a destroyed handle");
  /* a C2C exec on an R2C plan */
  OK(FFT(Plan1d)(&p, 16, T_R2C, 1));
  expect(FFT(ExecC2C)(p, buf, buf, DIR_FORWARD), R_INVALID_VALUE, "plan is R2C", "C2C exec on an R2C plan");
  expect(FFT(ExecZ2D)(p, buf, buf), R_INVALID_VALUE, "plan is R2C", "Z2D exec on an R2C plan");
  OK(FFT(Destroy)(p));
  /* a bad direction, null buffers */
  OK(FFT(Plan1d)(&p, 16, T_C2C, 1));
  expect(FFT(ExecC2C)(p, buf, buf, 0), R_INVALID_VALUE, "direction", "direction 0");
  expect(FFT(ExecC2C)(p, NULL, buf, DIR_FORWARD), R_INVALID_VALUE, "idata", "null input");
  /* callbacks are not virtualized */
  expect(FFT(XtSetCallback)(p, NULL, 0, NULL), R_NOT_SUPPORTED, "XtSetCallback", "callback");
  OK(FFT(Destroy)(p));
  /* null work area with auto-allocation off (the sim gives plans above 8 points a work area) */
  OK(FFT(Create)(&p));
  OK(FFT(SetAutoAllocation)(p, 0));
  size_t ws = 0;
  OK(FFT(MakePlan1d)(p, 64, T_C2C, 2, &ws));
  CHECK(ws > 0, "work size %zu", ws);
  expect(FFT(ExecC2C)(p, buf, buf, DIR_FORWARD), R_NO_WORKSPACE, "no work area", "null work area, auto-allocation off");
  OK(FFT(SetWorkArea)(p, NULL));
  expect(FFT(ExecC2C)(p, buf, buf, DIR_FORWARD), R_NO_WORKSPACE, "no work area", "SetWorkArea(NULL), auto-allocation off");
  OK(FFT(Destroy)(p));
  /* exec before any plan */
  OK(FFT(Create)(&p));
  expect(FFT(ExecC2C)(p, buf, buf, DIR_FORWARD), R_INVALID_PLAN, "no plan", "exec before a plan");
  OK(FFT(Destroy)(p));
  /* a handle never made */
#ifdef API_HIPFFT
  handle_t bogus = (handle_t)(void *)0x1234;
#else
  handle_t bogus = 7;
#endif
  expect(FFT(Destroy)(bogus), R_INVALID_PLAN, "not a handle", "unknown handle");
  expect(FFT(Create)(NULL), R_INVALID_VALUE, "handle", "null out-pointer");
  /* Xt in half precision: not served by the pool */
  OK(FFT(Create)(&p));
  long long n = 16;
  expect(FFT(XtMakePlanMany)(p, 1, &n, NULL, 1, 16, DT_C_16F, NULL, 1, 16, DT_C_16F, 1, &ws, DT_C_16F), R_NOT_SUPPORTED,
         "half", "half-precision Xt plan");
  OK(FFT(Destroy)(p));
  return failures;
}

static int worksizes(void) {
  handle_t p;
  OK(FFT(Create)(&p));
  OK(FFT(SetAutoAllocation)(p, 0));
  size_t made = 0, probed = 0, got = 0, many = 0;
  OK(FFT(GetSize1d)(p, 100, T_Z2Z, 3, &probed));
  OK(FFT(MakePlan1d)(p, 100, T_Z2Z, 3, &made));
  OK(FFT(GetSize)(p, &got));
  long long n = 100;
  OK(FFT(GetSizeMany64)(p, 1, &n, NULL, 1, 100, NULL, 1, 100, T_Z2Z, 3, &many));
  /* The simulated runtime's work size for a plan above 8 points: points * batch * 2 * real bytes. */
  size_t sim = 100 * 3 * 2 * 8;
  CHECK(made == sim && probed == sim && got == sim && many == sim, "work sizes %zu %zu %zu %zu, sim %zu", made, probed,
        got, many, sim);
  if (made == sim) printf("ok work size %zu reported by MakePlan1d, GetSize1d, GetSize, GetSizeMany64\n", made);
  /* an area of exactly that size is used */
  void *area = malloc(made);
  OK(FFT(SetWorkArea)(p, area));
  int dims[1] = {100};
  check_transform(p, T_Z2Z, dims, 1, 3, DIR_FORWARD, 0, "Z2Z n=100 batch=3 in an area of exactly the work size");
  OK(FFT(Destroy)(p));
  free(area);
  /* a tiny plan needs none */
  OK(FFT(Create)(&p));
  OK(FFT(SetAutoAllocation)(p, 0));
  OK(FFT(MakePlan1d)(p, 8, T_C2C, 1, &made));
  CHECK(made == 0, "n=8 work size %zu", made);
  int d8[1] = {8};
  check_transform(p, T_C2C, d8, 1, 1, DIR_FORWARD, 0, "C2C n=8 needs no work area");
  OK(FFT(Destroy)(p));
  return failures;
}

/* A plan call for a descriptor seen before needs no slot: run under a ceiling of 1, where
 * the one slot is held by another descriptor's plan, it makes nothing (the sim's own count)
 * and reports the size the first call did; the handle's execution then makes the plan and
 * runs right in an area of that size. */
static int memo(void) {
  handle_t a, b, c;
  size_t wa = 0, wb = 0, wc = 0;
  OK(FFT(Create)(&a));
  OK(FFT(SetAutoAllocation)(a, 0));
  OK(FFT(MakePlan1d)(a, 100, T_Z2Z, 3, &wa));
  OK(FFT(Create)(&b));
  OK(FFT(SetAutoAllocation)(b, 0));
  OK(FFT(MakePlan1d)(b, 64, T_Z2Z, 2, &wb));
  long before = hfp_intercept_sim_created();
  OK(FFT(Create)(&c));
  OK(FFT(SetAutoAllocation)(c, 0));
  OK(FFT(MakePlan1d)(c, 100, T_Z2Z, 3, &wc));
  long after = hfp_intercept_sim_created();
  CHECK(before == 2, "two descriptors made two plans (%ld)", before);
  CHECK(wc == wa && wa == 100 * 3 * 2 * 8, "work sizes %zu and %zu", wa, wc);
  CHECK(after == before, "the plan call for a descriptor seen before made a plan (%ld -> %ld)", before, after);
  void *area = malloc(wc);
  OK(FFT(SetWorkArea)(c, area));
  int dims[1] = {100};
  check_transform(c, T_Z2Z, dims, 1, 3, DIR_FORWARD, 0, "Z2Z n=100 batch=3 on a remembered work size");
  CHECK(hfp_intercept_sim_created() == after + 1, "the execution made the plan (%ld)", hfp_intercept_sim_created());
  CHECK(hfp_intercept_sim_peak_live_handles() <= 1, "sim peak %ld over the ceiling of 1", hfp_intercept_sim_peak_live_handles());
  OK(FFT(Destroy)(a));
  OK(FFT(Destroy)(b));
  OK(FFT(Destroy)(c));
  free(area);
  if (failures == 0) printf("ok a remembered work size of %zu made no plan at a full ceiling\n", wc);
  return failures;
}

/* ---- The graph API the capture and MLX programs drive: by default the simulated runtime's,
 * exported by the interposer (HIPFFT_POOL_RUNTIME=sim); with -DGRAPHS_HIP, HIP's own, linked
 * from the HIP runtime (hip-shim over its simulated backend), whose calls the preloaded
 * interposer's hooks see as a framework's. ---- */
#ifdef GRAPHS_HIP
typedef struct { unsigned x, y, z; } hip_dim3;
typedef struct { hip_dim3 blockDim; void **extra; void *func; hip_dim3 gridDim; void **kernelParams; unsigned sharedMemBytes; } hip_kernel_params;
int hipStreamBeginCapture(void *stream, int mode);
int hipStreamEndCapture(void *stream, void **graph);
int hipGraphCreate(void **graph, unsigned flags);
int hipGraphDestroy(void *graph);
int hipGraphGetNodes(void *graph, void **nodes, size_t *n);
int hipGraphNodeGetType(void *node, int *type);
int hipGraphKernelNodeGetParams(void *node, hip_kernel_params *params);
int hipGraphAddKernelNode(void **node, void *graph, void **deps, size_t n, const hip_kernel_params *params);
int hipGraphAddChildGraphNode(void **node, void *graph, void **deps, size_t n, void *child);
int hipGraphChildGraphNodeGetGraph(void *node, void **graph);
int hipGraphInstantiate(void **exec, void *graph, void **err, char *log, size_t size);
int hipGraphExecUpdate(void *exec, void *graph, void **err, int *result);
int hipGraphLaunch(void *exec, void *stream);
int hipGraphExecDestroy(void *exec);
long hipShimViolations(void);
long hipShimSettingsCalls(void);
long hipShimPeakLivePlans(void);
int hipShimLiveGraphs(size_t *graphs, size_t *execs);
static int g_ok(int r) { return r == 0 ? 0 : -1; }
static int g_begin_capture(void *s) { return g_ok(hipStreamBeginCapture(s, 0)); }
static int g_end_capture(void *s, void **g) { return g_ok(hipStreamEndCapture(s, g)); }
static int g_graph_create(void **g) { return g_ok(hipGraphCreate(g, 0)); }
static int g_graph_destroy(void *g) { return g_ok(hipGraphDestroy(g)); }
static int g_graph_get_nodes(void *g, void **nodes, size_t *n) { return g_ok(hipGraphGetNodes(g, nodes, n)); }
static int g_node_type(void *node) {
  int t = -1;
  if (hipGraphNodeGetType(node, &t)) return -1;
  return t == 0 ? 0 : t == 4 ? 1 : t == 3 ? 2 : t == 1 ? 3 : 4;
}
static int g_kernel_node_get_params(void *node, void **func, void **args) {
  hip_kernel_params p;
  memset(&p, 0, sizeof p);
  int r = hipGraphKernelNodeGetParams(node, &p);
  *func = p.func;
  *args = (void *)p.kernelParams;
  return g_ok(r);
}
static int g_graph_add_kernel_node(void **node, void *g, void **deps, size_t n, void *func, void *args) {
  hip_kernel_params p;
  memset(&p, 0, sizeof p);
  p.func = func;
  p.kernelParams = (void **)args;
  return g_ok(hipGraphAddKernelNode(node, g, deps, n, &p));
}
static int g_graph_add_child_graph_node(void **node, void *g, void **deps, size_t n, void *child) { return g_ok(hipGraphAddChildGraphNode(node, g, deps, n, child)); }
static int g_child_graph_node_get_graph(void *node, void **g) { return g_ok(hipGraphChildGraphNodeGetGraph(node, g)); }
static int g_graph_instantiate(void **exec, void *g) { return g_ok(hipGraphInstantiate(exec, g, NULL, NULL, 0)); }
static int g_graph_exec_update(void *exec, void *g) {
  int result = -1;
  int r = hipGraphExecUpdate(exec, g, NULL, &result);
  return r == 0 ? 0 : r == 910 ? 1 : -1;
}
static int g_graph_launch(void *exec, void *s) { return g_ok(hipGraphLaunch(exec, s)); }
static int g_graph_exec_destroy(void *exec) { return g_ok(hipGraphExecDestroy(exec)); }
static int g_live_graphs(size_t *g, size_t *e) { return g_ok(hipShimLiveGraphs(g, e)); }
static long g_violations(void) { return hipShimViolations(); }
static long g_settings_calls(void) { return hipShimSettingsCalls(); }
static long g_peak_live_handles(void) { return hipShimPeakLivePlans(); }
#else
#define g_begin_capture hfp_intercept_sim_begin_capture
#define g_end_capture hfp_intercept_sim_end_capture
#define g_graph_create hfp_intercept_sim_graph_create
#define g_graph_destroy hfp_intercept_sim_graph_destroy
#define g_graph_get_nodes hfp_intercept_sim_graph_get_nodes
#define g_node_type hfp_intercept_sim_node_type
#define g_kernel_node_get_params hfp_intercept_sim_kernel_node_get_params
#define g_graph_add_kernel_node hfp_intercept_sim_graph_add_kernel_node
#define g_graph_add_child_graph_node hfp_intercept_sim_graph_add_child_graph_node
#define g_child_graph_node_get_graph hfp_intercept_sim_child_graph_node_get_graph
#define g_graph_instantiate hfp_intercept_sim_graph_instantiate
#define g_graph_exec_update hfp_intercept_sim_graph_exec_update
#define g_graph_launch hfp_intercept_sim_graph_launch
#define g_graph_exec_destroy hfp_intercept_sim_graph_exec_destroy
#define g_live_graphs hfp_intercept_sim_live_graphs
#define g_violations hfp_intercept_sim_violations
#define g_settings_calls hfp_intercept_sim_settings_calls
#define g_peak_live_handles hfp_intercept_sim_peak_live_handles
#endif

/* One C2C n-point transform of `batch` rows through `plan` on `stream`, captured into a graph
 * that is instantiated and launched twice; the output is checked after each launch. */
static void captured(handle_t plan, void *stream, int n, int batch, const char *what) {
  int dims[1] = {n};
  cplx *x = calloc((size_t)n * batch, sizeof(cplx)), *y = calloc((size_t)n * batch, sizeof(cplx));
  float *in = calloc((size_t)n * batch * 2, sizeof(float)), *out = calloc((size_t)n * batch * 2, sizeof(float));
  double *want = calloc((size_t)n * batch * 2, sizeof(double));
  for (int i = 0; i < n * batch; i++) {
    x[i].re = rnd(); x[i].im = rnd();
    in[2 * i] = (float)x[i].re; in[2 * i + 1] = (float)x[i].im;
  }
  dft(x, y, dims, 1, batch, -1);
  for (int i = 0; i < n * batch; i++) { want[2 * i] = y[i].re; want[2 * i + 1] = y[i].im; }
  OK(FFT(SetStream)(plan, stream)); /* outside the capture: the interposer prepares the plan */
  CHECK(g_begin_capture(stream) == 0, "%s: begin capture", what);
  CHECK(FFT(ExecC2C)(plan, in, out, DIR_FORWARD) == R_SUCCESS, "%s: captured exec", what);
  void *graph = NULL, *exec = NULL;
  CHECK(g_end_capture(stream, &graph) == 0, "%s: end capture", what);
  hfp_intercept_synchronize();
  CHECK(out[0] == 0.0f && out[1] == 0.0f, "%s: the transform ran before its graph was launched", what);
  CHECK(g_graph_instantiate(&exec, graph) == 0, "%s: instantiate", what);
  for (int launch = 0; launch < 2; launch++) {
    memset(out, 0, sizeof(float) * n * batch * 2);
    CHECK(g_graph_launch(exec, stream) == 0, "%s: launch", what);
    CHECK(hfp_intercept_synchronize() == 0, "%s: synchronize", what);
    double e = rel_err(out, 0, want, n * batch * 2);
    CHECK(e < 1e-4, "%s: launch %d relative error %g", what, launch, e);
  }
  CHECK(g_graph_exec_destroy(exec) == 0, "%s: destroy the instantiation", what);
  CHECK(g_graph_destroy(graph) == 0, "%s: destroy the graph", what);
  free(x); free(y); free(in); free(out); free(want);
}

/* A C2C plan with auto-allocation off and a work area of its own, as frameworks make them. */
static handle_t own_area_plan(int n, int batch, void **area) {
  handle_t p;
  size_t ws = 0;
  OK(FFT(Create)(&p));
  OK(FFT(SetAutoAllocation)(p, 0));
  OK(FFT(MakePlan1d)(p, n, T_C2C, batch, &ws));
  *area = malloc(ws + 1);
  OK(FFT(SetWorkArea)(p, *area));
  return p;
}

static int capture(int count) {
  void *stream = NULL;
  handle_t p;
  OK(FFT(Create)(&p)); /* the runtime exists from the first call on */
  CHECK(hfp_intercept_stream_create(&stream) == 0, "stream");
  /* 1: one handle, captured and launched twice */
  void *area = NULL;
  p = own_area_plan(32, 2, &area);
  captured(p, stream, 32, 2, "one handle");
  OK(FFT(Destroy)(p));
  free(area);
  /* an auto-allocated area cannot live as long as the graph: refused */
  OK(FFT(Plan1d)(&p, 32, T_C2C, 2));
  OK(FFT(SetStream)(p, stream));
  float abuf[128] = {0};
  CHECK(g_begin_capture(stream) == 0, "begin");
  result_t ra = FFT(ExecC2C)(p, abuf, abuf, DIR_FORWARD);
  void *agraph = NULL;
  g_end_capture(stream, &agraph);
  g_graph_destroy(agraph);
  expect(ra, R_NOT_SUPPORTED, "auto-allocated work area", "captured exec with auto-allocation");
  OK(FFT(Destroy)(p));
  /* 2: a plan neither prepared nor cached is refused, never created inside the capture
        (the plan call cached it; plans of 32 other shapes evict it, at any ceiling here) */
  OK(FFT(Create)(&p));
  OK(FFT(SetStream)(p, stream));
  OK(FFT(MakePlan1d)(p, 48, T_C2C, 1, NULL));
  for (int i = 0; i < 32; i++) {
    size_t ws;
    OK(FFT(GetSize1d)(p, 1000 + i, T_C2C, 1, &ws));
  }
  float buf[96] = {0};
  CHECK(g_begin_capture(stream) == 0, "begin");
  result_t r = FFT(ExecC2C)(p, buf, buf, DIR_FORWARD);
  void *graph = NULL;
  g_end_capture(stream, &graph);
  g_graph_destroy(graph);
  expect(r, R_INTERNAL_ERROR, "capturing a graph", "captured exec with no plan prepared");
  OK(FFT(Destroy)(p));
  /* 2b: a plan not prepared (no stream or area set since the plan call) but still cached
        serves the capture: the pool hands out a cached plan without making one */
  {
    int n = 56;
    float *in = calloc(2 * (size_t)n, sizeof(float)), *out = calloc(2 * (size_t)n, sizeof(float));
    void *work = malloc(1 << 20);
    double sum = 0;
    for (int k = 0; k < n; k++) { in[2 * k] = (float)(k % 5) - 2.0f; sum += in[2 * k]; }
    OK(FFT(Create)(&p));
    OK(FFT(SetAutoAllocation)(p, 0));
    OK(FFT(SetWorkArea)(p, work));
    OK(FFT(SetStream)(p, stream));
    OK(FFT(MakePlan1d)(p, n, T_C2C, 1, NULL));
    void *g = NULL, *e = NULL;
    CHECK(g_begin_capture(stream) == 0, "begin");
    CHECK(FFT(ExecC2C)(p, in, out, DIR_FORWARD) == R_SUCCESS, "captured exec on a cached plan");
    CHECK(g_end_capture(stream, &g) == 0, "end capture");
    CHECK(g_graph_instantiate(&e, g) == 0, "instantiate");
    CHECK(g_graph_launch(e, stream) == 0, "launch");
    CHECK(hfp_intercept_synchronize() == 0, "synchronize");
    CHECK(fabs(out[0] - sum) < 1e-3 * (fabs(sum) + 1), "captured exec on a cached plan: bin 0 %g, want %g", out[0], sum);
    CHECK(g_graph_exec_destroy(e) == 0 && g_graph_destroy(g) == 0, "destroy");
    OK(FFT(Destroy)(p));
    free(in); free(out); free(work);
  }
  /* 3: `count` handles of distinct shapes, each captured, launched, then destroyed (as a
        framework drops a plan once the work using it completed), under a small ceiling */
  char what[64];
  for (int i = 0; i < count; i++) {
    p = own_area_plan(20 + i, 2, &area);
    snprintf(what, sizeof what, "handle %d (n=%d)", i, 20 + i);
    captured(p, stream, 20 + i, 2, what);
    OK(FFT(Destroy)(p));
    free(area);
  }
  hfp_intercept_synchronize();
  long v = g_violations();
  CHECK(v == 0, "the simulated runtime recorded %ld misuses (a plan made, destroyed or an event recorded inside a capture, or a graph run on a destroyed plan)", v);
  if (failures == 0) printf("ok %d captured handles; sim peak %ld, no misuse\n", count, g_peak_live_handles());
  return failures;
}

/* ---- MLX's pattern ---- */

/* Ops per command buffer: 3, or FFT_SIM_OPS_PER_COMMIT (MLX_MAX_OPS_PER_BUFFER; more
 * distinct plans in one buffer need more of the ceiling). Kept instantiations: 16, or
 * FFT_SIM_EXEC_CACHE (MLX_CUDA_GRAPH_CACHE_SIZE). */
enum { MLX_MAX_OPS = 16, MLX_MAX_TEMPS = 4 * MLX_MAX_OPS, MLX_MAX_SHAPES = 64, MLX_MAX_EXECS = 64 };

typedef struct { int n, rank, batch; handle_t h; size_t ws; int made; long used; } mlx_plan;
typedef struct {
  void *graph; /* the command buffer's graph */
  void *last;  /* its last node: the next depends on it */
  void *temps[MLX_MAX_TEMPS];
  int ntemps;
  /* per op: final output, its reference, whether every call of it succeeded */
  float *out[MLX_MAX_OPS];
  double *want[MLX_MAX_OPS];
  int len[MLX_MAX_OPS], ok[MLX_MAX_OPS], nops;
} mlx_buffer;
typedef struct { char key[256]; void *exec; long used; } mlx_exec;

/* What a run found: values right, values wrong (never allowed), calls that failed with a
 * message naming the ceiling, and those that failed without one (never allowed). */
static long mlx_right, mlx_wrong, mlx_clear, mlx_unclear;
static double mlx_slowest_failure_ms;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A library call of an op: `r` its result, `t0` when it started. A failure must say what
 * to raise, and come at once rather than after the whole acquire timeout. */
static int mlx_call(result_t r, double t0, const char *what) {
  if (r == R_SUCCESS) return 1;
  double took = now_ms() - t0;
  if (took > mlx_slowest_failure_ms) mlx_slowest_failure_ms = took;
  const char *m = hfp_intercept_last_error();
  if (strstr(m, "HIPFFT_POOL_LIVE_CEILING")) {
    mlx_clear++;
  } else {
    mlx_unclear++;
    printf("FAIL %s returned %d without naming the ceiling: %s\n", what, (int)r, m);
  }
  return 0;
}

/* MLX's plan cache, of `capacity` handles: a full cache destroys its least recently used
 * handle at once, even while an execution of it sits in a graph not yet launched, or in an
 * instantiation MLX keeps. NULL if the plan could not be made (a failure counted). */
static mlx_plan *mlx_get_plan(mlx_plan *cache, int capacity, int n, int rank, int batch) {
  static long clock = 0;
  clock++;
  for (int i = 0; i < MLX_MAX_SHAPES; i++)
    if (cache[i].made && cache[i].n == n && cache[i].rank == rank && cache[i].batch == batch) { cache[i].used = clock; return &cache[i]; }
  int made = 0, lru = -1;
  for (int i = 0; i < MLX_MAX_SHAPES; i++)
    if (cache[i].made) { made++; if (lru < 0 || cache[i].used < cache[lru].used) lru = i; }
  if (made >= capacity && lru >= 0) {
    OK(FFT(Destroy)(cache[lru].h));
    cache[lru].made = 0;
  }
  for (int i = 0; i < MLX_MAX_SHAPES; i++) {
    if (cache[i].made) continue;
    mlx_plan *p = &cache[i];
    p->n = n; p->rank = rank; p->batch = batch; p->used = clock;
    OK(FFT(Create)(&p->h));
    OK(FFT(SetAutoAllocation)(p->h, 0));
    long long ln[2] = {n, n}, emb[2] = {n, n}, dist = rank == 2 ? (long long)n * n : n;
    double t0 = now_ms();
    result_t r = FFT(XtMakePlanMany)(p->h, rank, ln, emb, 1, dist, DT_C_32F, emb, 1, dist, DT_C_32F, batch, &p->ws, DT_C_32F);
    if (!mlx_call(r, t0, "XtMakePlanMany")) {
      OK(FFT(Destroy)(p->h));
      return NULL;
    }
    p->made = 1;
    return p;
  }
  return NULL;
}

/* The topology of a graph, as MLX's subgraph_to_key writes it: K per kernel, (...) per child. */
static void mlx_key(void *graph, char *key, size_t room) {
  void *nodes[64];
  size_t n = 64;
  if (g_graph_get_nodes(graph, nodes, &n) != 0) n = 0;
  size_t at = strlen(key);
  for (size_t i = 0; i < n && at + 3 < room; i++) {
    int t = g_node_type(nodes[i]);
    if (t == 1) {
      void *child = NULL;
      key[at++] = '(';
      key[at] = 0;
      if (g_child_graph_node_get_graph(nodes[i], &child) == 0) mlx_key(child, key, room - 1);
      at = strlen(key);
      key[at++] = ')';
    } else {
      key[at++] = t == 0 ? 'K' : 'N';
    }
    key[at] = 0;
  }
}

/* One step as fft.cu's execute_fft does it: set stream, a fresh work area (a temporary of the
 * command buffer), set work area, then the exec inside a capture of its own, whose graph goes
 * into the buffer's: a lone kernel copied as a kernel node, anything else as a child graph. */
static int mlx_step(mlx_plan *p, void *stream, float *in, float *out, mlx_buffer *cb) {
  double t0 = now_ms();
  if (!mlx_call(FFT(SetStream)(p->h, stream), t0, "SetStream")) return 0;
  void *ws = p->ws ? malloc(p->ws) : NULL;
  if (ws) cb->temps[cb->ntemps++] = ws;
  t0 = now_ms();
  if (!mlx_call(FFT(SetWorkArea)(p->h, ws), t0, "SetWorkArea")) return 0;
  long settings = g_settings_calls();
  CHECK(g_begin_capture(stream) == 0, "begin capture");
  t0 = now_ms();
  int ran = mlx_call(FFT(XtExec)(p->h, in, out, DIR_FORWARD), t0, "XtExec");
  void *g = NULL;
  CHECK(g_end_capture(stream, &g) == 0, "end capture");
  if (!ran) {
    g_graph_destroy(g);
    return 0;
  }
  /* Stream and area were passed on to the real plan when they were set, outside the capture,
   * as natively: the capture holds the transform alone. (hip-shim applies a plan's settings
   * at each of its executions, whoever set them: not checked there.) */
#ifndef GRAPHS_HIP
  CHECK(g_settings_calls() == settings, "n=%d batch=%d: %ld SetStream/SetWorkArea calls inside the capture",
        p->n, p->batch, g_settings_calls() - settings);
#else
  (void)settings;
#endif
  void *nodes[8];
  size_t n = 8;
  CHECK(g_graph_get_nodes(g, nodes, &n) == 0, "nodes of the capture");
  void *node = NULL, **deps = cb->last ? &cb->last : NULL;
  if (n == 1 && g_node_type(nodes[0]) == 0) {
    void *func = NULL, *args = NULL;
    CHECK(g_kernel_node_get_params(nodes[0], &func, &args) == 0, "kernel params");
    CHECK(g_graph_add_kernel_node(&node, cb->graph, deps, deps ? 1 : 0, func, args) == 0, "copy the kernel");
  } else {
    CHECK(g_graph_add_child_graph_node(&node, cb->graph, deps, deps ? 1 : 0, g) == 0, "child graph");
  }
  cb->last = node;
  CHECK(g_graph_destroy(g) == 0, "destroy the capture's graph");
  return 1;
}

/* The commit: the buffer's graph updates the kept instantiation of its topology in place (or
 * a new one is made, the least recently used kept one destroyed past the cache's size), which
 * is launched; then every op's result is checked and the temporaries freed. */
static void mlx_commit(void *stream, mlx_buffer *cb, mlx_exec *execs, int exec_cache) {
  static long clock = 0;
  clock++;
  size_t n = 0;
  g_graph_get_nodes(cb->graph, NULL, &n);
  if (n > 0) {
    char key[256] = "";
    mlx_key(cb->graph, key, sizeof key);
    mlx_exec *e = NULL, *lru = NULL, *free_slot = NULL;
    for (int i = 0; i < exec_cache; i++) {
      if (!execs[i].exec) { if (!free_slot) free_slot = &execs[i]; continue; }
      if (!strcmp(execs[i].key, key)) e = &execs[i];
      if (!lru || execs[i].used < lru->used) lru = &execs[i];
    }
    if (e && g_graph_exec_update(e->exec, cb->graph) != 0) {
      CHECK(g_graph_exec_destroy(e->exec) == 0, "destroy a stale instantiation");
      e->exec = NULL;
    }
    if (!e || !e->exec) {
      if (!e) {
        e = free_slot ? free_slot : lru;
        if (e->exec) CHECK(g_graph_exec_destroy(e->exec) == 0, "destroy the oldest instantiation");
      }
      snprintf(e->key, sizeof e->key, "%s", key);
      CHECK(g_graph_instantiate(&e->exec, cb->graph) == 0, "instantiate");
    }
    e->used = clock;
    CHECK(g_graph_launch(e->exec, stream) == 0, "launch");
  }
  CHECK(hfp_intercept_synchronize() == 0, "synchronize");
  CHECK(g_graph_destroy(cb->graph) == 0, "destroy the buffer's graph");
  for (int o = 0; o < cb->nops; o++) {
    if (cb->ok[o]) {
      double err = rel_err(cb->out[o], 0, cb->want[o], cb->len[o]);
      if (err < 1e-4) {
        mlx_right++;
      } else {
        mlx_wrong++;
        printf("FAIL op of a command buffer: relative error %g\n", err);
      }
    }
    free(cb->out[o]); free(cb->want[o]);
  }
  for (int t = 0; t < cb->ntemps; t++) free(cb->temps[t]);
  memset(cb, 0, sizeof(*cb));
  g_graph_create(&cb->graph);
}

static int env_int(const char *name, int fallback, int lo, int hi) {
  const char *v = getenv(name);
  int x = v ? atoi(v) : fallback;
  return x < lo || x > hi ? fallback : x;
}

static int mlx(int shapes, int capacity) {
  if (shapes < 1 || shapes > MLX_MAX_SHAPES) shapes = 20;
  if (capacity < 1 || capacity > MLX_MAX_SHAPES) capacity = MLX_MAX_SHAPES;
  int ops_per_commit = env_int("FFT_SIM_OPS_PER_COMMIT", 3, 1, MLX_MAX_OPS);
  int exec_cache = env_int("FFT_SIM_EXEC_CACHE", 16, 1, MLX_MAX_EXECS);
  int rounds = env_int("FFT_SIM_ROUNDS", 4, 1, 100);
  void *stream = NULL;
  handle_t first;
  OK(FFT(Create)(&first)); /* the runtime exists from the first call on */
  CHECK(hfp_intercept_stream_create(&stream) == 0, "stream");
  mlx_plan *cache = calloc(MLX_MAX_SHAPES, sizeof(mlx_plan));
  mlx_exec *execs = calloc(MLX_MAX_EXECS, sizeof(mlx_exec));
  mlx_buffer cb;
  memset(&cb, 0, sizeof(cb));
  g_graph_create(&cb.graph);
  long ops = 0;
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < shapes; k++) {
      /* a two-step op (fft2 over rows, as fftn runs one axis after the other): both steps
       * share one plan key, so one handle serves two captured executions of one buffer;
       * every fifth key is a 2-D plan (two kernels: its capture becomes a child graph) */
      int rank = k % 5 == 4 ? 2 : 1;
      int n = rank == 2 ? 4 + k % 3 : 8 + 2 * (k % 7), batch = 1 + k / 7;
      int points = rank == 2 ? n * n : n;
      int len = points * batch * 2;
      float *in = calloc((size_t)len, sizeof(float)), *mid = calloc((size_t)len, sizeof(float));
      float *out = calloc((size_t)len, sizeof(float));
      cplx *x = calloc((size_t)points * batch, sizeof(cplx)), *y = calloc((size_t)points * batch, sizeof(cplx));
      cplx *z = calloc((size_t)points * batch, sizeof(cplx));
      for (int i = 0; i < points * batch; i++) {
        x[i].re = rnd(); x[i].im = rnd();
        in[2 * i] = (float)x[i].re; in[2 * i + 1] = (float)x[i].im;
      }
      int dims[2] = {n, n};
      dft(x, y, dims, rank, batch, -1);
      dft(y, z, dims, rank, batch, -1);
      double *want = calloc((size_t)len, sizeof(double));
      for (int i = 0; i < points * batch; i++) { want[2 * i] = z[i].re; want[2 * i + 1] = z[i].im; }
      mlx_plan *p = mlx_get_plan(cache, capacity, n, rank, batch);
      int ok = p && mlx_step(p, stream, in, mid, &cb) && mlx_step(p, stream, mid, out, &cb);
      cb.temps[cb.ntemps++] = in;
      cb.temps[cb.ntemps++] = mid;
      cb.out[cb.nops] = out; cb.want[cb.nops] = want; cb.len[cb.nops] = len; cb.ok[cb.nops] = ok; cb.nops++;
      ops++;
      free(x); free(y); free(z);
      if (cb.nops == ops_per_commit) mlx_commit(stream, &cb, execs, exec_cache);
    }
  }
  mlx_commit(stream, &cb, execs, exec_cache);
  g_graph_destroy(cb.graph);
  for (int i = 0; i < MLX_MAX_EXECS; i++)
    if (execs[i].exec) CHECK(g_graph_exec_destroy(execs[i].exec) == 0, "destroy a kept instantiation");
  for (int i = 0; i < MLX_MAX_SHAPES; i++)
    if (cache[i].made) OK(FFT(Destroy)(cache[i].h));
  OK(FFT(Destroy)(first));
  CHECK(hfp_intercept_synchronize() == 0, "synchronize");
  free(cache);
  free(execs);
  size_t graphs = 0, insts = 0;
  CHECK(g_live_graphs(&graphs, &insts) == 0 && graphs == 0 && insts == 0,
        "%zu graphs and %zu instantiations left alive", graphs, insts);
  long v = g_violations();
  CHECK(v == 0, "the simulated runtime recorded %ld misuses", v);
  CHECK(mlx_wrong == 0, "%ld ops gave wrong values", mlx_wrong);
  CHECK(mlx_unclear == 0, "%ld calls failed without naming the ceiling", mlx_unclear);
  printf("mlx: %ld ops, %ld right, %ld wrong, %ld failed calls naming the ceiling, %ld not, slowest failure %.0f ms\n", ops,
         mlx_right, mlx_wrong, mlx_clear, mlx_unclear, mlx_slowest_failure_ms);
  if (failures == 0) printf("ok %ld MLX-pattern ops checked (cache %d); sim peak %ld, no misuse\n", mlx_right, capacity, g_peak_live_handles());
  return failures;
}

int main(int argc, char **argv) {
  const char *cmd = argc > 1 ? argv[1] : "numerics";
  int f;
  if (!strcmp(cmd, "numerics")) f = numerics();
  else if (!strcmp(cmd, "handles")) f = handles(argc > 2 ? atoi(argv[2]) : 128, argc > 3 ? atoi(argv[3]) : 3);
  else if (!strcmp(cmd, "threads")) f = threads(argc > 2 ? atoi(argv[2]) : 8);
  else if (!strcmp(cmd, "errors")) f = errors();
  else if (!strcmp(cmd, "worksizes")) f = worksizes();
  else if (!strcmp(cmd, "memo")) f = memo();
  else if (!strcmp(cmd, "capture")) f = capture(argc > 2 ? atoi(argv[2]) : 16);
  else if (!strcmp(cmd, "mlx")) f = mlx(argc > 2 ? atoi(argv[2]) : 20, argc > 3 ? atoi(argv[3]) : MLX_MAX_SHAPES);
  else { printf("FAIL unknown subcommand %s\n", cmd); return 2; }
  if (argc > 4 && hfp_intercept_write_metrics(argv[4]) != 0) { printf("FAIL metrics\n"); f++; }
  printf("%s %s: %d failures\n", f ? "FAIL" : "ok", cmd, f);
  return f ? 1 : 0;
}
