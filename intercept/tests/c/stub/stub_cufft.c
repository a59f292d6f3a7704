/* A stand-in libcufft.so.12 for tests without a GPU: handles are small ints, as cuFFT's are;
 * an "execution" copies the input to the output and counts. cufftMakePlanMany64 calls the
 * library's own exported cufftSetAutoAllocation (through the PLT, as real libraries may), so
 * under LD_PRELOAD that call reaches the interposer first: it must come back here. */
#include <stddef.h>
#include <string.h>

static int next_handle = 0, live = 0, execs = 0, reentry_ok = 0, last_auto = -1;

int cufftCreate(int *h) { *h = ++next_handle; live++; return 0; }
int cufftSetAutoAllocation(int h, int a) { (void)h; last_auto = a; reentry_ok++; return 0; }
int cufftMakePlanMany64(int h, int rank, long long *n, long long *ie, long long is, long long id, long long *oe,
                        long long os, long long od, int type, long long batch, size_t *work) {
  (void)ie; (void)is; (void)id; (void)oe; (void)os; (void)od; (void)type;
  if (h <= 0 || h > next_handle) return 1;
  /* a nested call to an exported name of this library */
  if (cufftSetAutoAllocation(h, last_auto) != 0) return 5;
  long long points = 1;
  for (int i = 0; i < rank; i++) points *= n[i];
  *work = (size_t)(points * batch * 8);
  return 0;
}
int cufftSetStream(int h, void *s) { (void)h; (void)s; return 0; }
int cufftSetWorkArea(int h, void *w) { (void)h; (void)w; return 0; }
static int copy(int h, void *i, void *o, size_t bytes) {
  if (h <= 0 || h > next_handle) return 1;
  memcpy(o, i, bytes);
  execs++;
  return 0;
}
int cufftExecC2C(int h, void *i, void *o, int d) { (void)d; return copy(h, i, o, 8); }
int cufftExecZ2Z(int h, void *i, void *o, int d) { (void)d; return copy(h, i, o, 16); }
int cufftExecR2C(int h, void *i, void *o) { return copy(h, i, o, 4); }
int cufftExecC2R(int h, void *i, void *o) { return copy(h, i, o, 4); }
int cufftExecD2Z(int h, void *i, void *o) { return copy(h, i, o, 8); }
int cufftExecZ2D(int h, void *i, void *o) { return copy(h, i, o, 8); }
int cufftDestroy(int h) { if (h <= 0 || h > next_handle) return 1; live--; return 0; }
int cufftGetVersion(int *v) { *v = 4242; return 0; }
int cufftGetProperty(int t, int *v) { *v = t == 0 ? 42 : 0; return 0; }
int stub_cufft_live(void) { return live; }
int stub_cufft_execs(void) { return execs; }
int stub_cufft_reentry(void) { return reentry_ok; }
