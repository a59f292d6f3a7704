/* A program that knows nothing of hipfft-pool: it finds cuFFT's functions at run time with
 * dlsym(RTLD_DEFAULT), as it would find a libcufft loaded by a framework, and makes, runs and
 * destroys 40 plans. Under `hipfft-pool run` the preloaded interposer provides them.
 * argv[1]: the exit status to end with; argv[2]: how many children (fork) do the same first,
 * each exiting 0, so that the pool serves a process tree. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*plan1d_fn)(int *, int, int, int);
typedef int (*exec_fn)(int, void *, void *, int);
typedef int (*destroy_fn)(int);
typedef int (*sync_fn)(void);

static int work(void) {
  plan1d_fn plan1d = (plan1d_fn)dlsym(RTLD_DEFAULT, "cufftPlan1d");
  exec_fn exec = (exec_fn)dlsym(RTLD_DEFAULT, "cufftExecC2C");
  destroy_fn destroy = (destroy_fn)dlsym(RTLD_DEFAULT, "cufftDestroy");
  sync_fn sync = (sync_fn)dlsym(RTLD_DEFAULT, "hfp_intercept_synchronize");
  if (!plan1d || !exec || !destroy || !sync) { printf("FAIL no cuFFT in the process\n"); return 100; }
  int h[40];
  for (int i = 0; i < 40; i++) {
    if (plan1d(&h[i], 16 + i, 0x29, 1)) { printf("FAIL plan %d\n", i); return 101; }
  }
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 40; i++) {
      float *b = calloc((size_t)(16 + i) * 2, sizeof(float));
      b[0] = 1.0f;
      if (exec(h[i], b, b, -1)) { printf("FAIL exec %d\n", i); return 102; }
      sync();
      if (b[2 * (15 + i)] != 1.0f) { printf("FAIL transform %d\n", i); return 103; }
      free(b);
    }
  }
  for (int i = 0; i < 40; i++) destroy(h[i]);
  return 0;
}

int main(int argc, char **argv) {
  int children = argc > 2 ? atoi(argv[2]) : 0;
  for (int c = 0; c < children; c++) {
    pid_t pid = fork();
    if (pid == 0) exit(work());
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { printf("FAIL child %d\n", c); return 104; }
  }
  int r = work();
  if (r) return r;
  printf("ok 40 plans through the interposer\n");
  return argc > 1 ? atoi(argv[1]) : 0;
}
