/* How a process reaches the CUDA driver's graph calls and cuFFT: a preload that logs, for
 * the interposer's design (docs/design.md, "Graphs that hold plans" and "Reaching
 * frameworks that load cuFFT themselves").
 *
 * It interposes dlsym (forwarding to the real one through dlvsym) and logs every name looked
 * up on a handle whose result lies in libcuda or libcufft, and wraps cuGetProcAddress (v1 and
 * _v2) to log every driver entry point the CUDA runtime asks for (symbol, version, flags). At
 * exit it prints one line per name with its count to stderr, prefixed `REACH`.
 *
 * Only for looking: it forwards dlsym(RTLD_NEXT, ...) from our frame, which changes what
 * RTLD_NEXT means for the caller; the interposer proper does not (intercept/src/dlsym.rs).
 *
 *   gcc -O2 -shared -fPIC -o /tmp/reach.so scripts/probes/driver_reach.c -ldl -lpthread
 *   LD_PRELOAD=/tmp/reach.so PROGRAM 2>&1 | grep REACH
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*gpa1_t)(const char *, void **, int, uint64_t);
typedef int (*gpa2_t)(const char *, void **, int, uint64_t, int *);
typedef void *(*dlsym_t)(void *, const char *);

static dlsym_t real_dlsym;
static gpa1_t real_gpa1;
static gpa2_t real_gpa2;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define MAXN 4096
static struct { char name[96]; char how[8]; int version; unsigned long long flags; long n; } seen[MAXN];
static int nseen;

static void note(const char *how, const char *name, int version, unsigned long long flags) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i].name, name) && !strcmp(seen[i].how, how) && seen[i].version == version && seen[i].flags == flags) {
      seen[i].n++;
      pthread_mutex_unlock(&lock);
      return;
    }
  if (nseen < MAXN) {
    snprintf(seen[nseen].name, sizeof seen[nseen].name, "%s", name);
    snprintf(seen[nseen].how, sizeof seen[nseen].how, "%s", how);
    seen[nseen].version = version;
    seen[nseen].flags = flags;
    seen[nseen].n = 1;
    nseen++;
  }
  pthread_mutex_unlock(&lock);
}

static void init(void) {
  if (!real_dlsym) real_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real_dlsym) real_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static int gpa1(const char *s, void **p, int v, uint64_t f) {
  note("gpa1", s, v, f);
  return real_gpa1(s, p, v, f);
}

static int gpa2(const char *s, void **p, int v, uint64_t f, int *st) {
  note("gpa2", s, v, f);
  return real_gpa2(s, p, v, f, st);
}

static const char *object_of(void *addr) {
  Dl_info info;
  if (addr && dladdr(addr, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

void *dlsym(void *handle, const char *name) {
  init();
  void *r = real_dlsym(handle, name);
  if (!r || handle == RTLD_NEXT || handle == RTLD_DEFAULT) return r;
  const char *obj = object_of(r);
  const char *base = strrchr(obj, '/') ? strrchr(obj, '/') + 1 : obj;
  if (!strncmp(base, "libcuda.so", 10)) {
    note("dlsym-cu", name, 0, 0);
    if (!strcmp(name, "cuGetProcAddress")) { real_gpa1 = (gpa1_t)r; return (void *)gpa1; }
    if (!strcmp(name, "cuGetProcAddress_v2")) { real_gpa2 = (gpa2_t)r; return (void *)gpa2; }
  } else if (!strncmp(base, "libcufft.so", 11) || !strncmp(base, "libcudart.so", 12) || !strncmp(base, "libhipfft", 9)) {
    char tag[64];
    snprintf(tag, sizeof tag, "dlsym:%.40s", base);
    note("dlsym-fft", name, 0, 0);
    (void)tag;
  }
  return r;
}

__attribute__((destructor)) static void report(void) {
  for (int i = 0; i < nseen; i++)
    fprintf(stderr, "REACH %s %s v%d f%llu x%ld\n", seen[i].how, seen[i].name, seen[i].version, seen[i].flags, seen[i].n);
  fprintf(stderr, "REACH total %d names\n", nseen);
}
