/* A "framework extension": linked against libcufft (the stub), loaded by cuda_mode.c with
 * dlopen(RTLD_LOCAL) as Python loads an extension, so its libcufft is mapped but not global. */
#include <stdio.h>
#include <stdlib.h>

int cufftCreate(int *h);
int cufftDestroy(int h);
int cufftSetAutoAllocation(int h, int a);
int cufftSetStream(int h, void *s);
int cufftSetWorkArea(int h, void *w);
int cufftXtMakePlanMany(int plan, int rank, long long *n, long long *inembed, long long istride, long long idist,
                        int inputtype, long long *onembed, long long ostride, long long odist, int outputtype,
                        long long batch, size_t *workSize, int executiontype);
int cufftXtExec(int plan, void *in, void *out, int direction);
int cufftGetVersion(int *v);
int stub_cufft_live(void);
int stub_cufft_execs(void);
int stub_cufft_reentry(void);
int cudaStreamCreateWithFlags(void **s, unsigned f);
void stub_begin_capture(void);
void stub_end_capture(void);
int stub_graph_launch(void);
void stub_graph_reset(void);
int stub_mode_exchanges(void);
long hfp_intercept_virtual_handles_live(void);
int hfp_intercept_write_metrics(const char *path);

#define CK(x) do { int r_ = (x); if (r_) { printf("FAIL %s = %d\n", #x, r_); return 1; } } while (0)
#define EXPECT(c) do { if (!(c)) { printf("FAIL %s\n", #c); return 1; } } while (0)

int plugin_run(const char *unused) {
  (void)unused;
  int v = 0;
  CK(cufftGetVersion(&v));
  EXPECT(v == 4242); /* the interposer found the stub mapped RTLD_LOCAL and forwarded */
  printf("ok cufftGetVersion forwarded to the RTLD_LOCAL library: %d\n", v);
  void *s = NULL;
  CK(cudaStreamCreateWithFlags(&s, 1));
  int h[8];
  size_t ws = 0;
  for (int i = 0; i < 8; i++) {
    CK(cufftCreate(&h[i]));
    EXPECT(h[i] >= 0x40000000); /* a virtual handle, not the stub's small int */
    CK(cufftSetAutoAllocation(h[i], 0));
    long long n = 64, ie = 64, oe = 33;
    CK(cufftXtMakePlanMany(h[i], 1, &n, &ie, 1, 64, 0 /*R_32F*/, &oe, 1, 33, 4 /*C_32F*/, 2, &ws, 0));
  }
  EXPECT(ws == 64 * 2 * 8); /* the stub's work size: the real one */
  printf("ok 8 virtual handles, one real plan; work size %zu from the real library\n", ws);
  EXPECT(stub_cufft_reentry() >= 1);
  printf("ok the real library's call to its own exported cufftSetAutoAllocation came back to it (%d)\n", stub_cufft_reentry());
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  void *area = malloc(ws);
  for (int i = 0; i < 8; i++) {
    CK(cufftSetStream(h[i], s));
    CK(cufftSetWorkArea(h[i], area));
    CK(cufftXtExec(h[i], in, out, -1));
  }
  EXPECT(out[0] == 1.0f && stub_cufft_execs() == 8);
  printf("ok 8 executions reached the real library\n");
  /* capture: the stream is set before the capture begins, the exec is captured */
  CK(cufftSetStream(h[0], s));
  stub_begin_capture();
  CK(cufftXtExec(h[0], in, out, -1));
  stub_end_capture();
  int nodes = stub_graph_launch();
  EXPECT(nodes == 0);
  stub_graph_reset();
  printf("ok a captured execution added no node to the graph\n");
  /* an executed handle keeps its lease for the next execution on its stream (sticky), so a
     capture finds it at hand */
  stub_begin_capture();
  CK(cufftXtExec(h[1], in, out, -1));
  stub_end_capture();
  stub_graph_launch();
  /* a captured exec on a plan the pool still caches (made by the plan call, nothing
     prepared) takes it, but with auto-allocation on and no work area it is refused
     (NOT_SUPPORTED): nothing is allocated inside the capture */
  int hx;
  CK(cufftCreate(&hx));
  long long nx = 128, iex = 128, oex = 65;
  CK(cufftXtMakePlanMany(hx, 1, &nx, &iex, 1, 128, 0, &oex, 1, 65, 4, 1, &ws, 0));
  stub_begin_capture();
  int r = cufftXtExec(hx, in, out, -1);
  stub_end_capture();
  EXPECT(r == 16);
  CK(cufftDestroy(hx));
  printf("ok a captured execution needing an allocation -> %d\n", r);
  EXPECT(stub_mode_exchanges() > 0);
  for (int i = 0; i < 8; i++) CK(cufftDestroy(h[i]));
  EXPECT(hfp_intercept_virtual_handles_live() == 0);
  /* under `auto` (or `pin`) the plan captured above stays resident after every handle on it
     was destroyed: a new handle of its descriptor is captured on it, with no node added */
  int hy;
  CK(cufftCreate(&hy));
  CK(cufftSetAutoAllocation(hy, 0));
  long long ny = 64, iey = 64, oey = 33;
  CK(cufftXtMakePlanMany(hy, 1, &ny, &iey, 1, 64, 0, &oey, 1, 33, 4, 2, &ws, 0));
  CK(cufftSetStream(hy, s));
  CK(cufftSetWorkArea(hy, area));
  stub_begin_capture();
  CK(cufftXtExec(hy, in, out, -1));
  stub_end_capture();
  stub_graph_launch();
  stub_graph_reset();
  CK(cufftXtExec(hy, in, out, -1)); /* outside a capture, on the same plan */
  CK(cufftDestroy(hy));
  free(area);
  printf("ok cuda mode\n");
  return 0;
}
