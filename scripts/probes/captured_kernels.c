/* What a captured cuFFT execution leaves in a graph, for the interposer's graph tracking
 * (docs/design.md, "Graphs that hold plans"): the nodes one cufftExec adds under capture,
 * their types, and each kernel node's function and kernel handles, for
 *   - two plans of one descriptor (are the functions per plan?),
 *   - one plan forward and inverse, in place and out of place (do the functions vary?),
 *   - a plan destroyed and another of its descriptor made (are the handles reused?),
 *   - the tail nodes cuStreamGetCaptureInfo reports after the execution, and whether walking
 *     their dependencies back to the tail before it finds exactly the nodes the execution added.
 *
 *   nvcc -O2 -o /tmp/ck scripts/probes/captured_kernels.c -lcufft -lcuda
 *   /tmp/ck
 */
#include <dlfcn.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("FAIL %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define DK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *m_ = "?"; cuGetErrorString(r_, &m_); printf("FAIL %s: %s\n", #x, m_); exit(1); } } while (0)
#define FK(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { printf("FAIL %s: %d\n", #x, (int)r_); exit(1); } } while (0)

static cudaStream_t st;
static void *buf_a, *buf_b, *work;

/* Captures one execution of `h` and prints what it added. */
static void capture(const char *label, cufftHandle h, int type, int inplace, int dir) {
  CUgraph g;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  /* the tail before the execution: nothing yet */
  CUstreamCaptureStatus status;
  cuuint64_t id;
  CUgraph cg;
  const CUgraphNode *deps;
  size_t ndeps;
  DK(cuStreamGetCaptureInfo(st, &status, &id, &cg, &deps, NULL, &ndeps));
  size_t before = ndeps;
  void *out = inplace ? buf_a : buf_b;
  if (type == CUFFT_C2C) FK(cufftExecC2C(h, buf_a, out, dir));
  else if (type == CUFFT_R2C) FK(cufftExecR2C(h, buf_a, out));
  else FK(cufftExecC2R(h, buf_a, out));
  DK(cuStreamGetCaptureInfo(st, &status, &id, &cg, &deps, NULL, &ndeps));
  size_t tail = ndeps;
  CK(cudaStreamEndCapture(st, (cudaGraph_t *)&g));
  size_t n = 0;
  DK(cuGraphGetNodes(g, NULL, &n));
  CUgraphNode nodes[64];
  if (n > 64) n = 64;
  DK(cuGraphGetNodes(g, nodes, &n));
  printf("%-34s capture id %llu graph %p: %zu nodes (tail before %zu, after %zu):", label, (unsigned long long)id, (void *)g, n, before, tail);
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType t;
    DK(cuGraphNodeGetType(nodes[i], &t));
    if (t == CU_GRAPH_NODE_TYPE_KERNEL) {
      CUDA_KERNEL_NODE_PARAMS_v2 p;
      memset(&p, 0, sizeof p);
      DK(cuGraphKernelNodeGetParams(nodes[i], &p));
      const char *name = "?";
      cuFuncGetName(&name, p.func);
      printf(" K[func %p kern %p grid %u %s]", (void *)p.func, (void *)p.kern, p.gridDimX, name);
    } else {
      printf(" T%d", (int)t);
    }
  }
  printf("\n");
  DK(cuGraphDestroy(g));
}

/* Whether cuGetProcAddress hands out the very functions libcuda exports (the interposer
 * recognises a driver function by its address): for each name, version and flag, the
 * exported variant whose address it returned, or "none". */
static void proc_addresses(void) {
  static const char *names[] = {"cuGraphLaunch", "cuGraphExecUpdate", "cuGraphInstantiate", "cuGraphAddKernelNode",
                                "cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphAddNode", "cuStreamGetCaptureInfo",
                                "cuGraphKernelNodeGetParams", "cuGraphInstantiateWithParams", "cuGetProcAddress"};
  static const char *suffixes[] = {"", "_v2", "_v3", "_ptsz", "_v2_ptsz", "_v3_ptsz", "WithFlags", "_ptds"};
  static const int versions[] = {11040, 12000, 12030, 13000};
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++)
      for (int fl = 0; fl <= 2; fl += 2) {
        void *p = NULL;
        CUdriverProcAddressQueryResult st;
        CUresult r = cuGetProcAddress(names[i], &p, versions[v], fl, &st);
        const char *match = "none";
        char buf[128];
        static char found[128];
        for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes && p; k++) {
          snprintf(buf, sizeof buf, "%s%s", names[i], suffixes[k]);
          if (h && dlsym(h, buf) == p) { snprintf(found, sizeof found, "%s", buf); match = found; break; }
        }
        printf("PROC %s v%d flags %d: r %d status %d -> %s\n", names[i], versions[v], fl, (int)r, (int)st, p ? match : "null");
      }
}

static cufftHandle plan(int type, int n, int batch) {
  cufftHandle h;
  FK(cufftCreate(&h));
  FK(cufftSetAutoAllocation(h, 0));
  size_t ws = 0;
  long long nn = n;
  FK(cufftMakePlanMany64(h, 1, &nn, NULL, 1, 0, NULL, 1, 0, type, batch, &ws));
  FK(cufftSetStream(h, st));
  FK(cufftSetWorkArea(h, work));
  return h;
}

int main(void) {
  CK(cudaFree(0));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaMalloc(&buf_a, 64 << 20));
  CK(cudaMalloc(&buf_b, 64 << 20));
  CK(cudaMalloc(&work, 256 << 20));
  int v = 0;
  cuDriverGetVersion(&v);
  printf("driver %d\n", v);
  proc_addresses();
  cufftHandle a = plan(CUFFT_C2C, 256, 4), b = plan(CUFFT_C2C, 256, 4);
  capture("C2C 256x4 plan a fwd out", a, CUFFT_C2C, 0, CUFFT_FORWARD);
  capture("C2C 256x4 plan a fwd out again", a, CUFFT_C2C, 0, CUFFT_FORWARD);
  capture("C2C 256x4 plan a inv out", a, CUFFT_C2C, 0, CUFFT_INVERSE);
  capture("C2C 256x4 plan a fwd in place", a, CUFFT_C2C, 1, CUFFT_FORWARD);
  capture("C2C 256x4 plan b fwd out", b, CUFFT_C2C, 0, CUFFT_FORWARD);
  cufftHandle big = plan(CUFFT_C2C, 1 << 20, 1), odd = plan(CUFFT_C2C, 1000003, 1);
  capture("C2C 2^20 fwd", big, CUFFT_C2C, 0, CUFFT_FORWARD);
  capture("C2C 1000003 fwd", odd, CUFFT_C2C, 0, CUFFT_FORWARD);
  cufftHandle r = plan(CUFFT_R2C, 4096, 8), c = plan(CUFFT_C2R, 4096, 8);
  capture("R2C 4096x8", r, CUFFT_R2C, 0, 0);
  capture("C2R 4096x8", c, CUFFT_C2R, 0, 0);
  FK(cufftDestroy(a));
  cufftHandle a2 = plan(CUFFT_C2C, 256, 4);
  capture("C2C 256x4 plan a2 (a destroyed)", a2, CUFFT_C2C, 0, CUFFT_FORWARD);
  FK(cufftDestroy(b));
  FK(cufftDestroy(a2));
  cufftHandle a3 = plan(CUFFT_C2C, 256, 4);
  capture("C2C 256x4 plan a3 (a, b, a2 gone)", a3, CUFFT_C2C, 0, CUFFT_FORWARD);
  /* The runtime's graph calls, for the preload's log of what they reach in the driver. */
  cudaGraph_t parent, child;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  FK(cufftExecC2C(a3, buf_a, buf_b, CUFFT_FORWARD));
  CK(cudaStreamEndCapture(st, &child));
  CK(cudaGraphCreate(&parent, 0));
  cudaGraphNode_t node;
  CK(cudaGraphAddChildGraphNode(&node, parent, NULL, 0, child));
  CK(cudaGraphInstantiate(&exec, parent, 0));
  CK(cudaGraphLaunch(exec, st));
  cudaGraphExecUpdateResultInfo info;
  CK(cudaGraphExecUpdate(exec, parent, &info));
  CK(cudaGraphLaunch(exec, st));
  CK(cudaStreamSynchronize(st));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(parent));
  CK(cudaGraphDestroy(child));
  printf("RESULT ok\n");
  return 0;
}
