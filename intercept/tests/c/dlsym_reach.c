/* The interposer's dlsym, as a program that loads the CUDA driver and cuFFT itself would
 * meet it (the CUDA runtime, XLA): run with the interposer preloaded and the stand-ins of
 * tests/c/stub/ (libcuda.so.1, libcufft.so.12) on the library path. Prints "ok ..." lines
 * and exits 0, or "FAIL ..." and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures;
#define EXPECT(c, ...) do { if (!(c)) { printf("FAIL %s: ", #c); printf(__VA_ARGS__); printf("\n"); failures++; } } while (0)

/* The file the function at `p` lives in. */
static const char *home(void *p) {
  Dl_info info;
  return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "(none)";
}
static int ours(void *p) { return strstr(home(p), "hipfft_pool_cufft") != NULL; }

typedef int (*gpa2_t)(const char *, void **, int, uint64_t, int *);
typedef int (*gpa1_t)(const char *, void **, int, uint64_t);
typedef int (*launch_t)(void *, void *);
typedef int (*destroy_t)(void *);
typedef int (*add_node_t)(void **, void *, void *, size_t, void *);
typedef int (*count_t)(void);

int main(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  EXPECT(cuda != NULL, "%s", dlerror());
  if (!cuda) return 1;
  count_t launches = (count_t)dlsym(cuda, "stub_cuda_launches");
  count_t destroys = (count_t)dlsym(cuda, "stub_cuda_exec_destroys");
  count_t hidden = (count_t)dlsym(cuda, "stub_cuda_hidden_calls");
  EXPECT(launches && !ours((void *)launches), "a name the interposer does not export stays the library's");

  /* The CUDA runtime's way: cuGetProcAddress from the driver's handle, then every entry point from it. */
  gpa2_t gpa = (gpa2_t)dlsym(cuda, "cuGetProcAddress_v2");
  EXPECT(gpa && ours((void *)gpa), "cuGetProcAddress_v2 from libcuda's handle is the interposer's (%s)", home((void *)gpa));
  void *p = NULL;
  int st = -1;
  EXPECT(gpa("cuGraphLaunch", &p, 12000, 0, &st) == 0 && st == 0, "cuGetProcAddress cuGraphLaunch");
  EXPECT(ours(p), "cuGraphLaunch handed out by cuGetProcAddress is the interposer's hook (%s)", home(p));
  EXPECT(((launch_t)p)((void *)0x10, (void *)0x20) == 0 && launches() == 1, "the hook calls the driver's cuGraphLaunch");
  EXPECT(gpa("cuDeviceGet", &p, 12000, 0, &st) == 0 && !ours(p), "a function no hook stands for is the driver's own");
  gpa1_t gpa1 = (gpa1_t)dlsym(cuda, "cuGetProcAddress");
  EXPECT(gpa1 && ours((void *)gpa1), "cuGetProcAddress (v1) is hooked too");
  EXPECT(gpa1("cuGraphExecDestroy", &p, 11040, 0) == 0 && ours(p), "the v1 hook hands out hooks");
  EXPECT(((destroy_t)p)((void *)0x10) == 0 && destroys() == 1, "and they reach the driver");

  /* A driver's own lookups by name (XLA's driver stubs, a framework's dlsym). */
  destroy_t d = (destroy_t)dlsym(cuda, "cuGraphExecDestroy");
  EXPECT(ours((void *)d) && d((void *)0x11) == 0 && destroys() == 2, "cuGraphExecDestroy by dlsym is the hook, which reaches the driver");

  /* A graph function the interposer cannot stand for: handed out as it is (the interposer goes blind, and says so). */
  EXPECT(gpa("cuGraphAddNode", &p, 99000, 0, &st) == 0 && !ours(p), "an unknown variant of a graph function stays the driver's");
  void *node = NULL;
  EXPECT(((add_node_t)p)(&node, (void *)1, NULL, 0, NULL) == 0 && hidden() == 1, "and works");

  /* XLA's way with cuFFT: its own dlopen of libcufft.so.12 and dlsym on that handle. */
  void *fft = dlopen("libcufft.so.12", RTLD_LAZY | RTLD_LOCAL);
  EXPECT(fft != NULL, "%s", dlerror());
  if (fft) {
    void *create = dlsym(fft, "cufftCreate");
    EXPECT(ours(create), "cufftCreate from XLA's own handle on libcufft is the interposer's (%s)", home(create));
    int (*version)(int *) = (int (*)(int *))dlsym(fft, "cufftGetVersion");
    int v = 0;
    EXPECT(ours((void *)version) && version(&v) == 0 && v == 4242, "cufftGetVersion is the interposer's, forwarding to the library (%d)", v);
  }

  /* RTLD_DEFAULT and RTLD_NEXT keep their meaning (they depend on the caller). */
  EXPECT(dlsym(RTLD_DEFAULT, "puts") != NULL, "RTLD_DEFAULT");
  EXPECT(ours(dlsym(RTLD_DEFAULT, "cufftCreate")), "RTLD_DEFAULT finds the preloaded interposer first");
  void *next_puts = dlsym(RTLD_NEXT, "puts");
  EXPECT(next_puts != NULL && strstr(home(next_puts), "libc.so"), "RTLD_NEXT from the program finds libc's puts (%s)", home(next_puts));
  EXPECT(dlsym(RTLD_NEXT, "no_such_function_anywhere") == NULL, "RTLD_NEXT of nothing is null");

  if (failures == 0) printf("ok dlsym reach\n");
  return failures ? 1 : 0;
}
