/* The least any cuFFT interposer can cost: a preload that forwards MLX's three per-transform
 * calls (cufftSetStream, cufftSetWorkArea, cufftXtExec) to the next library and counts them.
 * MLX run with it against MLX run natively is the price of the hop itself (one more PLT
 * call, a function pointer, a counter), which no work on the pool's path can remove; MLX run
 * through the pool's interposer against it is what the pool's own path costs.
 *
 *   gcc -O2 -shared -fPIC -o /tmp/forward_preload.so scripts/probes/forward_preload.c -ldl
 *   FORWARD_COUNTS_OUT=/tmp/c.txt LD_PRELOAD=/tmp/forward_preload.so python3 app.py
 *
 * At exit it writes the three counts to FORWARD_COUNTS_OUT (when set, and only in a process
 * that made such a call: the launchers before the program, `env`, `timeout`, `taskset`, load
 * the preload too and exit after it). No file, and the run did not go through the preload.
 *
 * Built with -DFORWARD_NOTHING it defines none of the three: a preload that is only loaded
 * (what preloading itself costs a process); it then writes the file in a python process.
 * (scripts/mlx-pairs-device.sh builds both, its `fwd` and `empty` arms: HFP_FWD=1.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

typedef int cufftHandle;
typedef int cufftResult;
typedef void *cudaStream_t;

static unsigned long n_stream, n_area, n_exec;

#ifndef FORWARD_NOTHING
/* The process's libcufft: MLX's extension loads it RTLD_LOCAL, out of RTLD_NEXT's reach, so
 * the mapped copy is found by name (as the pool's interposer does, intercept/src/real.rs) and
 * bound with RTLD_NOLOAD. */
static int find_cufft(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libcufft.so", 11) == 0) {
        *(const char **)data = info->dlpi_name;
        return 1;
    }
    return 0;
}

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        const char *path = NULL;
        dl_iterate_phdr(find_cufft, &path);
        void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        f = lib ? dlsym(lib, name) : NULL;
    }
    if (!f) {
        fprintf(stderr, "forward_preload: %s found neither after the preload nor in a mapped libcufft\n", name);
        abort();
    }
    return f;
}

/* cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream); */
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
    static cufftResult (*f)(cufftHandle, cudaStream_t);
    cufftResult (*g)(cufftHandle, cudaStream_t) = __atomic_load_n(&f, __ATOMIC_RELAXED);
    if (!g) {
        g = (cufftResult (*)(cufftHandle, cudaStream_t))next("cufftSetStream");
        __atomic_store_n(&f, g, __ATOMIC_RELAXED); /* every thread finds the same address */
    }
    __atomic_fetch_add(&n_stream, 1, __ATOMIC_RELAXED);
    return g(plan, stream);
}

/* cufftResult cufftSetWorkArea(cufftHandle plan, void *workArea); */
cufftResult cufftSetWorkArea(cufftHandle plan, void *area) {
    static cufftResult (*f)(cufftHandle, void *);
    cufftResult (*g)(cufftHandle, void *) = __atomic_load_n(&f, __ATOMIC_RELAXED);
    if (!g) {
        g = (cufftResult (*)(cufftHandle, void *))next("cufftSetWorkArea");
        __atomic_store_n(&f, g, __ATOMIC_RELAXED); /* every thread finds the same address */
    }
    __atomic_fetch_add(&n_area, 1, __ATOMIC_RELAXED);
    return g(plan, area);
}

/* cufftResult cufftXtExec(cufftHandle plan, void *input, void *output, int direction); */
cufftResult cufftXtExec(cufftHandle plan, void *in, void *out, int direction) {
    static cufftResult (*f)(cufftHandle, void *, void *, int);
    cufftResult (*g)(cufftHandle, void *, void *, int) = __atomic_load_n(&f, __ATOMIC_RELAXED);
    if (!g) {
        g = (cufftResult (*)(cufftHandle, void *, void *, int))next("cufftXtExec");
        __atomic_store_n(&f, g, __ATOMIC_RELAXED); /* every thread finds the same address */
    }
    __atomic_fetch_add(&n_exec, 1, __ATOMIC_RELAXED);
    return g(plan, in, out, direction);
}

#endif

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("FORWARD_COUNTS_OUT");
    if (!path) return;
#ifdef FORWARD_NOTHING
    if (strncmp(program_invocation_short_name, "python", 6) != 0) return;
#else
    if (n_stream + n_area + n_exec == 0) return;
#endif
    FILE *o = fopen(path, "w");
    if (!o) return;
    fprintf(o, "{\"process\": \"%s\", \"cufftSetStream\": %lu, \"cufftSetWorkArea\": %lu, \"cufftXtExec\": %lu}\n",
            program_invocation_short_name, n_stream, n_area, n_exec);
    fclose(o);
}
