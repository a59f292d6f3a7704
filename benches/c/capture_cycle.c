/* MLX's cuFFT call pattern, without MLX: the 26-shape probe cycle (data/probe-shapes.json)
 * through the cuFFT API, natively or with the interposer preloaded, on an NVIDIA GPU.
 *
 * Per transform it makes the calls MLX 0.32.2's CUDA backend makes (mlx/backend/cuda/fft.cu):
 * cufftSetStream and cufftSetWorkArea outside the capture, then cufftXtExec inside a stream
 * capture (cudaStreamCaptureModeGlobal) whose graph becomes a child node of the cycle's graph;
 * the cycle's graph is instantiated, launched and waited for (MLX's commit). Modes:
 *   eager  the same calls with no capture (PyTorch's and CuPy's pattern);
 *   graph  as above, the 26 handles made once (MLX's cache holding the set);
 *   churn  graph, but every transform gets a fresh handle (create, SetAutoAllocation(0),
 *          XtMakePlanMany), destroyed once its graph has run (MLX at a small cache, which
 *          destroys an evicted plan when its last execution completed).
 * Every cycle's outputs are checked against a double-precision DFT on the CPU (the probe's
 * bar: 1e-5 relative to the largest reference value); a wrong value is reported and counted.
 *
 * Prints one JSON line per mode: us per transform (cycle wall / 26, median over the cycles),
 * the median host ns of each cuFFT call, and the count of wrong outputs.
 *
 *   nvcc -O2 -o capture_cycle benches/c/capture_cycle.c -lcufft      (or cc ... -lcudart -lcufft)
 *   ./capture_cycle [--mode eager|graph|churn] [--cycles N]
 *   LD_PRELOAD=target/release/libhipfft_pool_cufft.so ./capture_cycle ...
 */
#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_shapes.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define FK(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { \
    fprintf(stderr, "FAIL %s:%d %s: cufftResult %d\n", __FILE__, __LINE__, #x, (int)r_); exit(1); } } while (0)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n ? v[n / 2] : 0;
}

/* Input and output extents in floats (a complex value is two). */
struct slot {
  const struct shape *s;
  float *host_in, *host_ref, *host_out;
  float *pristine, *in, *out, *work; /* device; `in` is refilled from `pristine` (C2R overwrites it) */
  size_t work_size;
  cufftHandle h;
};

static void make_plan(struct slot *sl) {
  const struct shape *s = sl->s;
  long long n = s->n, ie = s->kind == C2R ? n / 2 + 1 : n, oe = s->kind == R2C ? n / 2 + 1 : n;
  cudaDataType it = s->kind == R2C ? CUDA_R_32F : CUDA_C_32F, ot = s->kind == C2R ? CUDA_R_32F : CUDA_C_32F;
  cudaDataType et = s->kind == R2C ? CUDA_R_32F : CUDA_C_32F;
  FK(cufftCreate(&sl->h));
  FK(cufftSetAutoAllocation(sl->h, 0));
  FK(cufftXtMakePlanMany(sl->h, 1, &n, &ie, 1, ie, it, &oe, 1, oe, ot, s->batch, &sl->work_size, et));
}

static void setup(struct slot *sl, const struct shape *s, unsigned seed) {
  memset(sl, 0, sizeof *sl);
  sl->s = s;
  size_t ni = in_floats(s), no = out_floats(s);
  sl->host_in = malloc(ni * 4);
  sl->host_ref = malloc(no * 4);
  sl->host_out = malloc(no * 4);
  probe_fill_input(s, sl->host_in, seed);
  probe_reference(s, sl->host_in, sl->host_ref);
  CK(cudaMalloc((void **)&sl->pristine, ni * 4));
  CK(cudaMalloc((void **)&sl->in, ni * 4));
  CK(cudaMalloc((void **)&sl->out, no * 4));
  CK(cudaMemcpy(sl->pristine, sl->host_in, ni * 4, cudaMemcpyHostToDevice));
}

/* Wrong outputs of one slot (the probe's bar: 1e-5 relative to the largest reference value,
 * scaled by log2(n) for float accumulation). */
static int check(struct slot *sl) {
  size_t no = out_floats(sl->s);
  CK(cudaMemcpy(sl->host_out, sl->out, no * 4, cudaMemcpyDeviceToHost));
  double peak = 0;
  for (size_t i = 0; i < no; i++) peak = fmax(peak, fabs(sl->host_ref[i]));
  double tol = 1e-5 * fmax(1, log2(sl->s->n)) * fmax(peak, 1e-30);
  int bad = 0;
  for (size_t i = 0; i < no; i++)
    if (!(fabs(sl->host_out[i] - sl->host_ref[i]) <= tol)) bad++;
  return bad;
}

struct timing { double *set_stream, *set_work, *exec, *cycle; int calls, cycles; };

int main(int argc, char **argv) {
  const char *mode = "graph";
  int cycles = 200, warmup = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    else if (!strcmp(argv[i], "--cycles") && i + 1 < argc) cycles = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
    else { fprintf(stderr, "usage: %s [--mode eager|graph|churn] [--cycles N] [--warmup N]\n", argv[0]); return 2; }
  }
  int eager = !strcmp(mode, "eager"), churn = !strcmp(mode, "churn");
  if (!eager && !churn && strcmp(mode, "graph")) { fprintf(stderr, "unknown mode %s\n", mode); return 2; }
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  struct slot sl[NSHAPES];
  for (int i = 0; i < NSHAPES; i++) {
    setup(&sl[i], &SHAPES[i], 1000 + i);
    make_plan(&sl[i]);
    CK(cudaMalloc((void **)&sl[i].work, sl[i].work_size ? sl[i].work_size : 16));
  }
  int total = warmup + cycles, calls = total * NSHAPES;
  struct timing t = {calloc(calls, 8), calloc(calls, 8), calloc(calls, 8), calloc(total, 8), 0, 0};
  cufftHandle *doomed = calloc(NSHAPES, sizeof *doomed);
  long wrong = 0, wrong_cycles = 0;
  for (int c = 0; c < total; c++) {
    double c0 = now_ns();
    cudaGraph_t cyc = NULL;
    if (!eager) CK(cudaGraphCreate(&cyc, 0));
    cudaGraphNode_t prev = NULL;
    int ndoomed = 0;
    for (int i = 0; i < NSHAPES; i++) {
      struct slot *s = &sl[i];
      if (churn) {
        doomed[ndoomed++] = s->h;
        make_plan(s);
      }
      double a = now_ns();
      FK(cufftSetStream(s->h, st));
      double b = now_ns();
      FK(cufftSetWorkArea(s->h, s->work));
      double d = now_ns();
      if (!eager) CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      CK(cudaMemcpyAsync(s->in, s->pristine, in_floats(s->s) * 4, cudaMemcpyDeviceToDevice, st));
      int dir = s->s->kind == C2R ? CUFFT_INVERSE : CUFFT_FORWARD;
      double e = now_ns();
      FK(cufftXtExec(s->h, s->in, s->out, dir));
      double f = now_ns();
      if (!eager) {
        cudaGraph_t g;
        CK(cudaStreamEndCapture(st, &g));
        cudaGraphNode_t node;
        CK(cudaGraphAddChildGraphNode(&node, cyc, prev ? &prev : NULL, prev ? 1 : 0, g));
        CK(cudaGraphDestroy(g));
        prev = node;
      }
      t.set_stream[t.calls] = b - a;
      t.set_work[t.calls] = d - b;
      t.exec[t.calls] = f - e;
      t.calls++;
    }
    if (!eager) {
      cudaGraphExec_t ex;
      CK(cudaGraphInstantiate(&ex, cyc, 0));
      CK(cudaGraphLaunch(ex, st));
      CK(cudaStreamSynchronize(st));
      CK(cudaGraphExecDestroy(ex));
      CK(cudaGraphDestroy(cyc));
    } else {
      CK(cudaStreamSynchronize(st));
    }
    /* MLX destroys an evicted plan once its last execution completed. */
    for (int k = 0; k < ndoomed; k++) FK(cufftDestroy(doomed[k]));
    t.cycle[c] = (now_ns() - c0) / NSHAPES / 1e3;
    int bad_here = 0;
    for (int i = 0; i < NSHAPES; i++) {
      int bad = check(&sl[i]);
      if (bad && wrong < 20)
        fprintf(stderr, "WRONG cycle %d shape %d (kind %d n %d batch %d): %d of %zu values\n", c, i, SHAPES[i].kind,
                SHAPES[i].n, SHAPES[i].batch, bad, out_floats(&SHAPES[i]));
      wrong += bad;
      bad_here |= bad != 0;
    }
    wrong_cycles += bad_here;
  }
  for (int i = 0; i < NSHAPES; i++) FK(cufftDestroy(sl[i].h));
  CK(cudaStreamSynchronize(st));
  int skip = warmup * NSHAPES;
  const char *pre = getenv("LD_PRELOAD");
  printf("{\"mode\": \"%s\", \"preload\": \"%s\", \"capture_policy\": \"%s\", \"ceiling\": \"%s\", \"cycles\": %d, "
         "\"us_per_call_median\": %.2f, \"set_stream_ns\": %.0f, \"set_work_area_ns\": %.0f, \"exec_ns\": %.0f, "
         "\"wrong_values\": %ld, \"wrong_cycles\": %ld}\n",
         mode, pre ? pre : "", getenv("HIPFFT_POOL_CAPTURE") ? getenv("HIPFFT_POOL_CAPTURE") : "",
         getenv("HIPFFT_POOL_LIVE_CEILING") ? getenv("HIPFFT_POOL_LIVE_CEILING") : "", cycles,
         median(t.cycle + warmup, cycles), median(t.set_stream + skip, t.calls - skip),
         median(t.set_work + skip, t.calls - skip), median(t.exec + skip, t.calls - skip), wrong, wrong_cycles);
  return wrong ? 3 : 0;
}
