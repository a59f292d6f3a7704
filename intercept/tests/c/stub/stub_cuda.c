/* A stand-in libcuda.so.1 for the interposer's dlsym and cuGetProcAddress hooks: the graph
 * entry points count their calls and do nothing else; cuGetProcAddress hands out the
 * exported ones, and for "cuGraphAddNode" at version 99000 (a driver newer than the
 * interposer knows) a function it does not export. */
#include <stdint.h>
#include <string.h>

static int launches, exec_destroys, add_nodes, hidden_calls;

int cuGraphLaunch(void *exec, void *stream) { (void)exec; (void)stream; launches++; return 0; }
int cuGraphExecDestroy(void *exec) { (void)exec; exec_destroys++; return 0; }
int cuGraphAddNode(void **node, void *g, void *deps, size_t n, void *params) {
  (void)g; (void)deps; (void)n; (void)params;
  *node = (void *)0x1234;
  add_nodes++;
  return 0;
}
static int hidden_add_node(void **node, void *g, void *deps, size_t n, void *params) {
  (void)g; (void)deps; (void)n; (void)params;
  *node = (void *)0x5678;
  hidden_calls++;
  return 0;
}
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }

static void *lookup(const char *s, int version) {
  if (!strcmp(s, "cuGraphLaunch")) return (void *)cuGraphLaunch;
  if (!strcmp(s, "cuGraphExecDestroy")) return (void *)cuGraphExecDestroy;
  if (!strcmp(s, "cuGraphAddNode")) return version >= 99000 ? (void *)hidden_add_node : (void *)cuGraphAddNode;
  if (!strcmp(s, "cuDeviceGet")) return (void *)cuDeviceGet;
  return NULL;
}
int cuGetProcAddress_v2(const char *s, void **pfn, int version, uint64_t flags, int *status) {
  (void)flags;
  *pfn = lookup(s, version);
  if (status) *status = *pfn ? 0 : 1;
  return *pfn ? 0 : 500;
}
int cuGetProcAddress(const char *s, void **pfn, int version, uint64_t flags) {
  (void)flags;
  *pfn = lookup(s, version);
  return *pfn ? 0 : 500;
}
int stub_cuda_launches(void) { return launches; }
int stub_cuda_exec_destroys(void) { return exec_destroys; }
int stub_cuda_add_nodes(void) { return add_nodes; }
int stub_cuda_hidden_calls(void) { return hidden_calls; }
