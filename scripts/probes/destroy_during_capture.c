/* Is a cuFFT plan destroyed on one thread safe while another thread captures a graph?
 *
 * MLX captures each cufftXtExec with cudaStreamCaptureModeGlobal on its main thread, and
 * destroys cuFFT plans on its completion-handler thread (natively) or the pool destroys them
 * on its own thread (through the interposer). Under the global mode CUDA prohibits
 * "potentially unsafe" calls such as cudaFree from every thread while any capture is open.
 *
 * Thread A: capture one forward C2C exec of a plan made beforehand, instantiate, launch,
 * synchronize, check against the result of the same plan run without capture; repeated.
 * Thread B: create and destroy plans of other sizes, in the capture mode given by argv[1]:
 *   global    B keeps the default mode (as MLX's worker and the pool's threads do today)
 *   relaxed   B calls cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureModeRelaxed) first
 *   none      B does nothing (the control)
 * Prints one RESULT line; exit 0 when every capture, launch and check succeeded.
 *
 *   gcc -O2 -pthread -o /tmp/ddc scripts/probes/destroy_during_capture.c \
 *     -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufft -lcudart
 *   for m in none global relaxed; do /tmp/ddc $m 2000; done
 */
#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int stop;
static const char *mode;
static int b_errors, b_cycles;

static void *churn(void *arg) {
  (void)arg;
  if (!strcmp(mode, "none")) return NULL;
  cudaSetDevice(0);
  if (!strcmp(mode, "relaxed")) {
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&m);
  }
  static const int sizes[] = {100, 127, 256, 500, 1000, 2048, 333, 4096};
  for (int i = 0; !stop; i++) {
    cufftHandle p;
    size_t work;
    long long n[1] = {sizes[i % 8]};
    if (cufftCreate(&p) != CUFFT_SUCCESS) { b_errors++; continue; }
    if (cufftXtMakePlanMany(p, 1, n, n, 1, n[0], CUDA_C_32F, n, 1, n[0], CUDA_C_32F, 4, &work, CUDA_C_32F) != CUFFT_SUCCESS)
      b_errors++;
    if (cufftDestroy(p) != CUFFT_SUCCESS) b_errors++;
    b_cycles++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "global";
  int iters = argc > 2 ? atoi(argv[2]) : 2000;
  const int n = 1024, batch = 8, total = n * batch;
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float2 *h = malloc(sizeof(float2) * total), *ref = malloc(sizeof(float2) * total), *got = malloc(sizeof(float2) * total);
  for (int i = 0; i < total; i++) h[i] = (float2){(float)sin(i * 0.37), (float)cos(i * 0.11)};
  float2 *din, *dout;
  void *work;
  cudaMalloc((void **)&din, sizeof(float2) * total);
  cudaMalloc((void **)&dout, sizeof(float2) * total);
  cudaMalloc(&work, 64 << 20);
  cudaMemcpy(din, h, sizeof(float2) * total, cudaMemcpyHostToDevice);
  cufftHandle plan;
  size_t ws;
  long long nn[1] = {n};
  cufftCreate(&plan);
  cufftSetAutoAllocation(plan, 0);
  cufftXtMakePlanMany(plan, 1, nn, nn, 1, n, CUDA_C_32F, nn, 1, n, CUDA_C_32F, batch, &ws, CUDA_C_32F);
  cufftSetStream(plan, s);
  cufftSetWorkArea(plan, work);
  cufftXtExec(plan, din, dout, CUFFT_FORWARD);
  cudaStreamSynchronize(s);
  cudaMemcpy(ref, dout, sizeof(float2) * total, cudaMemcpyDeviceToHost);
  pthread_t t;
  pthread_create(&t, NULL, churn, NULL);
  int capture_errors = 0, launch_errors = 0, wrong = 0, done = 0;
  char first[256] = "";
  for (int it = 0; it < iters; it++) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t e = NULL;
    cudaMemsetAsync(dout, 0, sizeof(float2) * total, s);
    cudaError_t r = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cufftResult fr = cufftXtExec(plan, din, dout, CUFFT_FORWARD);
    cudaError_t r2 = cudaStreamEndCapture(s, &g);
    if (r != cudaSuccess || fr != CUFFT_SUCCESS || r2 != cudaSuccess) {
      if (!capture_errors)
        snprintf(first, sizeof first, "iteration %d: begin %s, exec %d, end %s", it, cudaGetErrorString(r), fr,
                 cudaGetErrorString(r2));
      capture_errors++;
      cudaGetLastError();
      if (g) cudaGraphDestroy(g);
      continue;
    }
    r = cudaGraphInstantiate(&e, g, 0);
    if (r == cudaSuccess) r = cudaGraphLaunch(e, s);
    if (r == cudaSuccess) r = cudaStreamSynchronize(s);
    if (r != cudaSuccess) {
      if (!launch_errors) snprintf(first, sizeof first, "iteration %d: launch %s", it, cudaGetErrorString(r));
      launch_errors++;
      if (r == cudaErrorIllegalInstruction || r == cudaErrorIllegalAddress || r == cudaErrorLaunchFailure) break;
      cudaGetLastError();
    } else {
      cudaMemcpy(got, dout, sizeof(float2) * total, cudaMemcpyDeviceToHost);
      for (int i = 0; i < total; i++)
        if (fabsf(got[i].x - ref[i].x) > 1e-3f || fabsf(got[i].y - ref[i].y) > 1e-3f) { wrong++; break; }
    }
    if (e) cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    done++;
  }
  stop = 1;
  pthread_join(t, NULL);
  printf("RESULT {\"mode\": \"%s\", \"iterations\": %d, \"capture_errors\": %d, \"launch_errors\": %d, \"wrong\": %d, "
         "\"churn_cycles\": %d, \"churn_errors\": %d, \"first\": \"%s\"}\n",
         mode, done, capture_errors, launch_errors, wrong, b_cycles, b_errors, first);
  return capture_errors || launch_errors || wrong ? 1 : 0;
}
