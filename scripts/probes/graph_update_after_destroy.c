/* Does a cached CUDA graph exec survive the destruction of the cuFFT plan it captured?
 *
 * MLX's CUDA backend captures each cufftXtExec into a graph, keys an instantiated
 * cudaGraphExec_t by the graph's topology and, on the next graph of that topology, calls
 * cudaGraphExecUpdate instead of instantiating anew. MLX destroys a plan only after the graph
 * that used it completed, yet natively at MLX_CUDA_FFT_CACHE_SIZE=8 it dies with "illegal
 * instruction" (docs/history/2026-12.md). This program repeats MLX's sequence without MLX:
 *
 *   for each size in turn: create a plan, capture one forward C2C exec into a graph, update the
 *   cached exec with it (or instantiate one), launch, synchronize, check against a host DFT,
 *   then destroy the plan (the way MLX's completion handler does).
 *
 * Modes (argv[1]):
 *   update   the cached exec is updated with each new graph (MLX's way)
 *   fresh    every graph is instantiated anew and its exec destroyed after the launch
 *   keep     like update, but no plan is destroyed before exit
 *   update-keep-one  like update, but one plan per size is kept alive until exit and a second
 *            plan of that size does the work (whether cuFFT's kernels are shared by plans)
 * Prints one RESULT line; exit 0 when every launch succeeded with correct values.
 *
 * Build and run on the device machine:
 *   gcc -O2 -o /tmp/gud scripts/probes/graph_update_after_destroy.c \
 *     -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufft -lcudart -lm
 *   for m in update fresh keep update-keep-one; do /tmp/gud $m 400; done
 */
#include <cuda_runtime.h>
#include <cufft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int sizes[] = {8, 16, 17, 32, 64, 100, 127, 128, 256, 257, 500, 512, 1000, 1024, 2048, 4096};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int check_cuda(cudaError_t e, const char *what, int iter) {
  if (e != cudaSuccess) {
    printf("iteration %d: %s failed: %s\n", iter, what, cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

static int make_plan(int n, cufftHandle *plan, size_t *work) {
  long long nn[1] = {n};
  if (cufftCreate(plan) != CUFFT_SUCCESS) return 1;
  if (cufftSetAutoAllocation(*plan, 0) != CUFFT_SUCCESS) return 1;
  return cufftXtMakePlanMany(*plan, 1, nn, nn, 1, n, CUDA_C_32F, nn, 1, n, CUDA_C_32F, 1, work, CUDA_C_32F) !=
         CUFFT_SUCCESS;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "update";
  int iters = argc > 2 ? atoi(argv[2]) : 400;
  int update = !strcmp(mode, "update") || !strcmp(mode, "keep") || !strcmp(mode, "update-keep-one");
  int destroy = strcmp(mode, "keep") != 0;
  int keep_one = !strcmp(mode, "update-keep-one");
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int maxn = 4096;
  float2 *hin = malloc(sizeof(float2) * maxn), *hout = malloc(sizeof(float2) * maxn);
  for (int i = 0; i < maxn; i++) hin[i] = (float2){(float)sin(i * 0.37), (float)cos(i * 0.11)};
  float2 *din, *dout;
  void *dwork;
  cudaMalloc((void **)&din, sizeof(float2) * maxn);
  cudaMalloc((void **)&dout, sizeof(float2) * maxn);
  cudaMalloc(&dwork, 64 << 20);
  cudaMemcpy(din, hin, sizeof(float2) * maxn, cudaMemcpyHostToDevice);
  cufftHandle kept[NSIZES * 2];
  int nkept = 0, keepers[NSIZES] = {0};
  cudaGraphExec_t exec = NULL;
  int updates = 0, update_failures = 0, instantiations = 0, wrong = 0, errors = 0, done = 0;
  double worst = 0;
  for (int it = 0; it < iters && !errors; it++) {
    int k = it % NSIZES, n = sizes[k];
    cufftHandle plan;
    size_t work = 0;
    if (keep_one && !keepers[k]) {
      cufftHandle keeper;
      if (make_plan(n, &keeper, &work)) { printf("keeper plan %d failed\n", n); return 2; }
      kept[nkept++] = keeper;
      keepers[k] = 1;
    }
    if (make_plan(n, &plan, &work)) { printf("iteration %d: plan %d failed\n", it, n); return 2; }
    cufftSetStream(plan, s);
    cufftSetWorkArea(plan, dwork);
    cudaGraph_t g;
    errors += check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture", it);
    cufftResult r = cufftXtExec(plan, din, dout, CUFFT_FORWARD);
    errors += check_cuda(cudaStreamEndCapture(s, &g), "end capture", it);
    if (r != CUFFT_SUCCESS) { printf("iteration %d: exec %d\n", it, r); return 2; }
    if (update && exec) {
      cudaGraphExecUpdateResultInfo info;
      cudaGraphExecUpdate(exec, g, &info);
      if (info.result == cudaGraphExecUpdateSuccess) {
        updates++;
      } else {
        cudaGetLastError();
        update_failures++;
        cudaGraphExecDestroy(exec);
        exec = NULL;
      }
    }
    if (!exec) {
      errors += check_cuda(cudaGraphInstantiate(&exec, g, 0), "instantiate", it);
      instantiations++;
    }
    errors += check_cuda(cudaGraphLaunch(exec, s), "launch", it);
    errors += check_cuda(cudaStreamSynchronize(s), "synchronize", it);
    cudaGraphDestroy(g);
    if (!update) { cudaGraphExecDestroy(exec); exec = NULL; }
    if (errors) break;
    cudaMemcpy(hout, dout, sizeof(float2) * n, cudaMemcpyDeviceToHost);
    double err = 0, mag = 0;
    for (int f = 0; f < n; f++) {
      double re = 0, im = 0;
      for (int t = 0; t < n; t++) {
        double a = -2 * M_PI * (double)f * t / n;
        re += hin[t].x * cos(a) - hin[t].y * sin(a);
        im += hin[t].x * sin(a) + hin[t].y * cos(a);
      }
      err = fmax(err, hypot(re - hout[f].x, im - hout[f].y));
      mag = fmax(mag, hypot(re, im));
    }
    double rel = err / (mag > 0 ? mag : 1);
    if (rel > worst) worst = rel;
    if (rel > 1e-4) wrong++;
    if (destroy) cufftDestroy(plan); else kept[nkept < NSIZES * 2 ? nkept++ : 0] = plan;
    done++;
  }
  printf("RESULT {\"mode\": \"%s\", \"launches\": %d, \"updates\": %d, \"update_failures\": %d, "
         "\"instantiations\": %d, \"wrong\": %d, \"errors\": %d, \"worst_rel\": %.3g}\n",
         mode, done, updates, update_failures, instantiations, wrong, errors, worst);
  return errors || wrong ? 1 : 0;
}
