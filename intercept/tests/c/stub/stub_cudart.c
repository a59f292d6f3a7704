/* A stand-in libcudart.so.13: one device, host memory, streams that run everything at once,
 * and a capture model: while stub_capturing is set, host functions are kept as "graph nodes"
 * that stub_graph_launch() runs. */
#include <stdlib.h>
#include <string.h>

typedef void (*host_fn)(void *);
int stub_capturing = 0;
static host_fn nodes_fn[1024];
static void *nodes_data[1024];
static int nodes = 0, host_fns_now = 0, mode_exchanges = 0;

int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaGetDevice(int *d) { *d = 0; return 0; }
int cudaSetDevice(int d) { return d == 0 ? 0 : 101; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return 0; }
int cudaFree(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int k) { (void)k; memcpy(d, s, n); return 0; }
int cudaMemcpyAsync(void *d, const void *s, size_t n, int k, void *st) { (void)k; (void)st; memcpy(d, s, n); return 0; }
int cudaStreamCreateWithFlags(void **s, unsigned f) { (void)f; *s = malloc(1); return 0; }
int cudaStreamSynchronize(void *s) { (void)s; return 0; }
int cudaStreamDestroy(void *s) { free(s); return 0; }
int cudaEventCreateWithFlags(void **e, unsigned f) { (void)f; *e = malloc(1); return 0; }
int cudaEventRecord(void *e, void *s) { (void)e; (void)s; return stub_capturing ? 900 : 0; }
int cudaEventQuery(void *e) { (void)e; return 0; }
int cudaEventSynchronize(void *e) { (void)e; return 0; }
int cudaEventDestroy(void *e) { free(e); return 0; }
int cudaStreamIsCapturing(void *s, int *status) { (void)s; *status = stub_capturing ? 1 : 0; return 0; }
int cudaLaunchHostFunc(void *s, host_fn f, void *data) {
  (void)s;
  if (stub_capturing) { nodes_fn[nodes] = f; nodes_data[nodes] = data; nodes++; }
  else { f(data); host_fns_now++; }
  return 0;
}
int cudaThreadExchangeStreamCaptureMode(int *m) { (void)m; mode_exchanges++; return 0; }
const char *cudaGetErrorName(int e) { return e == 900 ? "cudaErrorStreamCaptureUnsupported" : "cudaErrorStub"; }
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
/* test controls */
void stub_begin_capture(void) { stub_capturing = 1; }
void stub_end_capture(void) { stub_capturing = 0; }
int stub_graph_launch(void) { for (int i = 0; i < nodes; i++) nodes_fn[i](nodes_data[i]); return nodes; }
int stub_mode_exchanges(void) { return mode_exchanges; }
void stub_graph_reset(void) { nodes = 0; }
