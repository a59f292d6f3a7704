/* MLX 0.32.2's CUDA command encoder around cuFFT, without MLX, to find what breaks when plans
 * are destroyed soon after use (docs/frameworks.md: MLX natively at MLX_CUDA_FFT_CACHE_SIZE=8
 * dies of "illegal instruction" / "illegal memory access"; through the pool at ceiling 12 it
 * fails the same ways).
 *
 * What it repeats of mlx/backend/cuda/{device.cpp,fft.cu}:
 * - each transform: a plan from an LRU cache of --cache plans (cufftCreate,
 *   cufftSetAutoAllocation(0), cufftSetStream, cufftXtMakePlanMany on a miss), cufftSetStream
 *   and cufftSetWorkArea, then cufftXtExec alone inside a stream capture in global mode;
 * - a capture of one node is copied into the buffer's graph as a kernel node
 *   (cuGraphKernelNodeGetParams + cuGraphAddKernelNode: --extract 1, MLX's way), any other
 *   capture becomes a child graph node;
 * - every --ops transforms the buffer is committed: its graph keyed by topology, a cached exec
 *   of that key updated with cudaGraphExecUpdate (--update 1, MLX's way) or instantiated, the
 *   exec cache cleared past 100 entries, the exec launched;
 * - an evicted plan is destroyed once the last buffer that used it completed, by a worker
 *   thread (--worker 1: MLX's completion handlers; capture mode relaxed with --relaxed 1, the
 *   pool's destroyer) or by the main thread between transforms (--worker 0).
 * Every output of every transform is checked against a double-precision DFT (the probe's bar,
 * scaled by log2 n). --cache 0 keeps every plan (MLX at cache 128 on this cycle).
 *
 * Build on the device machine and run (natively, or with the interposer preloaded):
 *   gcc -O2 -o /tmp/mep scripts/probes/mlx_encoder_pattern.c -I/usr/local/cuda/include \
 *     -L/usr/local/cuda/lib64 -lcufft -lcudart -lcuda -lpthread -lm
 *   /tmp/mep --cache 8 --extract 1 --update 1 --buffers 300
 * Prints one RESULT line; exit 0 when every value was right, 3 on wrong values, 1 on a CUDA
 * or cuFFT error (named on stderr).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../benches/c/probe_shapes.h"
#define MAX_OPS 64
#define INFLIGHT 3
#define EXEC_CACHE 100

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "FAIL line %d %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); \
    printf("RESULT error at line %d: %s\n", __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define DK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    const char *m_ = "?"; cuGetErrorString(r_, &m_); \
    fprintf(stderr, "FAIL line %d %s: %s\n", __LINE__, #x, m_); \
    printf("RESULT error at line %d: %s\n", __LINE__, m_); exit(1); } } while (0)
#define FK(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { \
    fprintf(stderr, "FAIL line %d %s: cufftResult %d\n", __LINE__, #x, (int)r_); \
    printf("RESULT error at line %d: cufftResult %d\n", __LINE__, (int)r_); exit(1); } } while (0)

static int opt_cache = 8, opt_extract = 1, opt_update = 1, opt_ops = 20, opt_buffers = 300;
static int opt_worker = 1, opt_relaxed = 1, opt_extra = 0, opt_keep_one = 0, opt_check = 1, opt_trace = 0;
/* --set-inside 1: cufftSetStream and cufftSetWorkArea inside the capture, right before the
 * execution (what an interposer that binds the real plan at execution does); --typed 1: the
 * typed cufftExec* instead of cufftXtExec. */
static int opt_set_inside = 0, opt_typed = 0;
static long kernel_nodes = 0, child_graphs = 0;


/* Per shape: the input (host and a pristine device copy) and its double-precision DFT. */
struct data { float *host_in, *ref, *pristine; double tol; };
static struct data DATA[NSHAPES];

static void reference(int si) {
  struct data *d = &DATA[si];
  double peak = probe_reference(&SHAPES[si], d->host_in, d->ref);
  d->tol = 1e-5 * fmax(1, log2(SHAPES[si].n)) * fmax(peak, 1e-30);
}

static void setup_data(int si) {
  const struct shape *s = &SHAPES[si];
  struct data *d = &DATA[si];
  size_t ni = in_floats(s), no = out_floats(s);
  d->host_in = malloc(ni * 4);
  d->ref = malloc(no * 4);
  probe_fill_input(s, d->host_in, 1000 + si);
  reference(si);
  CK(cudaMalloc((void **)&d->pristine, ni * 4));
  CK(cudaMemcpy(d->pristine, d->host_in, ni * 4, cudaMemcpyHostToDevice));
}

/* The plan cache: an LRU of opt_cache plans keyed by shape; an evicted plan lives on while a
 * buffer in flight holds it (MLX's shared_ptr held by the completion handler). */
struct plan { cufftHandle h; size_t work; int shape, holds, evicted; unsigned long used; };
#define MAX_PLANS 4096
static struct plan PLANS[MAX_PLANS];
static int nplans;
static unsigned long tick;
static long creations, destroys;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void destroy_plan(struct plan *p) {
  FK(cufftDestroy(p->h));
  destroys++;
  *p = PLANS[--nplans]; /* caller holds the lock; the moved plan keeps its fields */
}

/* The plan for shape `si`, held once more; returned by value, as the worker may move plans
 * in the table as soon as the lock is let go. */
static struct plan get_plan(int si, cudaStream_t st) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nplans; i++)
    if (!PLANS[i].evicted && PLANS[i].shape == si) {
      PLANS[i].used = ++tick;
      PLANS[i].holds++;
      struct plan hit = PLANS[i];
      pthread_mutex_unlock(&lock);
      return hit;
    }
  if (nplans == MAX_PLANS) { fprintf(stderr, "too many plans\n"); exit(1); }
  const struct shape *s = &SHAPES[si];
  long long n = s->n, ie = s->kind == C2R ? n / 2 + 1 : n, oe = s->kind == R2C ? n / 2 + 1 : n;
  cudaDataType it = s->kind == R2C ? CUDA_R_32F : CUDA_C_32F, ot = s->kind == C2R ? CUDA_R_32F : CUDA_C_32F;
  cudaDataType et = s->kind == R2C ? CUDA_R_32F : CUDA_C_32F;
  struct plan p = {0};
  p.shape = si;
  FK(cufftCreate(&p.h));
  FK(cufftSetAutoAllocation(p.h, 0));
  FK(cufftSetStream(p.h, st));
  FK(cufftXtMakePlanMany(p.h, 1, &n, &ie, 1, ie, it, &oe, 1, oe, ot, s->batch, &p.work, et));
  creations++;
  p.used = ++tick;
  p.holds = 1;
  PLANS[nplans++] = p;
  if (opt_cache > 0) {
    int live = 0;
    for (int i = 0; i < nplans; i++) live += !PLANS[i].evicted;
    if (live > opt_cache) {
      int lru = -1;
      for (int i = 0; i < nplans - 1; i++) /* the last is the new plan */
        if (!PLANS[i].evicted && (lru < 0 || PLANS[i].used < PLANS[lru].used)) lru = i;
      PLANS[lru].evicted = 1;
      /* The cache's reference drops; a plan no buffer holds is destroyed here, inline. */
      if (PLANS[lru].holds == 0) destroy_plan(&PLANS[lru]);
    }
  }
  pthread_mutex_unlock(&lock);
  return p;
}

/* A buffer in flight: its exec, the plans it holds, where its outputs are. */
struct buffer {
  int used, nops, shapes[MAX_OPS];
  int plan_shapes[MAX_OPS]; /* the plans it holds, by shape (plans move in the table) */
  cufftHandle plan_handles[MAX_OPS];
  cudaEvent_t done;
  cudaGraphExec_t own_exec; /* --update 0: this buffer's exec, destroyed when it completed */
  float *in[MAX_OPS], *out[MAX_OPS];
  void *work[MAX_OPS];
};
static struct buffer BUF[INFLIGHT];
static size_t max_in, max_out, max_work;
static long wrong_values, wrong_ops, checked_ops;
static float *host_out;

/* Plans released by the worker are destroyed in the thread's own capture mode: global (MLX's
 * completion thread) with --relaxed 0; the rest of the worker's calls run relaxed. */
static __thread int in_worker;
static void release_plans(struct buffer *b) {
  enum cudaStreamCaptureMode m = cudaStreamCaptureModeGlobal;
  if (in_worker && !opt_relaxed) CK(cudaThreadExchangeStreamCaptureMode(&m));
  pthread_mutex_lock(&lock);
  for (int i = 0; i < b->nops; i++)
    for (int k = 0; k < nplans; k++)
      if (PLANS[k].h == b->plan_handles[i]) {
        if (--PLANS[k].holds == 0 && PLANS[k].evicted) destroy_plan(&PLANS[k]);
        break;
      }
  pthread_mutex_unlock(&lock);
  if (in_worker && !opt_relaxed) CK(cudaThreadExchangeStreamCaptureMode(&m));
}

static void check_buffer(struct buffer *b, int index) {
  for (int i = 0; i < b->nops; i++) {
    int si = b->shapes[i];
    size_t no = out_floats(&SHAPES[si]);
    CK(cudaMemcpy(host_out, b->out[i], no * 4, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (size_t k = 0; k < no; k++)
      if (!(fabs(host_out[k] - DATA[si].ref[k]) <= DATA[si].tol)) bad++;
    checked_ops++;
    if (bad) {
      if (wrong_ops < 10)
        fprintf(stderr, "WRONG buffer %d op %d shape %d (kind %d n %d batch %d): %ld of %zu values\n", index, i,
                si, SHAPES[si].kind, SHAPES[si].n, SHAPES[si].batch, bad, no);
      wrong_ops++;
      wrong_values += bad;
    }
  }
}

/* The worker: buffers completed in order, their plans released (MLX's completion handlers). */
struct job { int slot, index; };
static struct job JOBS[INFLIGHT];
static int jobs_head, jobs_tail;
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cv = PTHREAD_COND_INITIALIZER;
static int stop;

static void complete(struct buffer *b, int index) {
  CK(cudaEventSynchronize(b->done));
  if (opt_check) check_buffer(b, index); /* --check 0: for timing only */
  release_plans(b);
  if (b->own_exec) { CK(cudaGraphExecDestroy(b->own_exec)); b->own_exec = NULL; }
}

static void *worker(void *arg) {
  (void)arg;
  in_worker = 1;
  enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
  CK(cudaThreadExchangeStreamCaptureMode(&m));
  for (;;) {
    pthread_mutex_lock(&jobs_lock);
    while (jobs_head == jobs_tail && !stop) pthread_cond_wait(&jobs_cv, &jobs_lock);
    if (jobs_head == jobs_tail && stop) { pthread_mutex_unlock(&jobs_lock); return NULL; }
    struct job j = JOBS[jobs_head % INFLIGHT];
    pthread_mutex_unlock(&jobs_lock);
    complete(&BUF[j.slot], j.index);
    pthread_mutex_lock(&jobs_lock);
    BUF[j.slot].used = 0;
    jobs_head++;
    pthread_cond_broadcast(&jobs_cv);
    pthread_mutex_unlock(&jobs_lock);
  }
}

struct cached { char key[4 * MAX_OPS + 32]; cudaGraphExec_t exec; };
static struct cached EXECS[EXEC_CACHE + 1];
static int nexecs;
static long updates, update_failures, instantiations;
static long update_reasons[16]; /* cudaGraphExecUpdateResult of the failed updates */
/* Lone kernels' functions: per shape the last plan's, and every function of a destroyed plan
 * (whether a new plan's kernel reuses a handle value, and whether plans of one shape share). */
static void *last_func[NSHAPES];
static long func_same_shape, func_new_shape;
static void noop_host(void *p) { (void)p; }

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--cache")) opt_cache = v;
    else if (!strcmp(argv[i], "--extract")) opt_extract = v;
    else if (!strcmp(argv[i], "--update")) opt_update = v;
    else if (!strcmp(argv[i], "--ops")) opt_ops = v;
    else if (!strcmp(argv[i], "--buffers")) opt_buffers = v;
    else if (!strcmp(argv[i], "--worker")) opt_worker = v;
    else if (!strcmp(argv[i], "--relaxed")) opt_relaxed = v;
    else if (!strcmp(argv[i], "--extra-node")) opt_extra = v;
    else if (!strcmp(argv[i], "--keep-one")) opt_keep_one = v;
    else if (!strcmp(argv[i], "--check")) opt_check = v;
    else if (!strcmp(argv[i], "--trace")) opt_trace = v;
    else if (!strcmp(argv[i], "--set-inside")) opt_set_inside = v;
    else if (!strcmp(argv[i], "--typed")) opt_typed = v;
    else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (opt_ops < 1 || opt_ops > MAX_OPS) { fprintf(stderr, "--ops: 1 to %d\n", MAX_OPS); return 2; }
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < NSHAPES; i++) {
    setup_data(i);
    if (in_floats(&SHAPES[i]) > max_in) max_in = in_floats(&SHAPES[i]);
    if (out_floats(&SHAPES[i]) > max_out) max_out = out_floats(&SHAPES[i]);
  }
  /* The largest work area, from plans made once and destroyed before the run. */
  for (int i = 0; i < NSHAPES; i++) {
    struct plan p = get_plan(i, st);
    if (p.work > max_work) max_work = p.work;
  }
  pthread_mutex_lock(&lock);
  while (nplans) destroy_plan(&PLANS[nplans - 1]);
  pthread_mutex_unlock(&lock);
  creations = destroys = 0;
  /* --keep-one 1: a second plan of every shape lives until exit (whether what a destroyed plan
   * takes with it is its own or shared by the plans of its shape). */
  cufftHandle kept[NSHAPES];
  for (int i = 0; opt_keep_one && i < NSHAPES; i++) {
    const struct shape *s = &SHAPES[i];
    long long n = s->n, ie = s->kind == C2R ? n / 2 + 1 : n, oe = s->kind == R2C ? n / 2 + 1 : n;
    size_t w;
    FK(cufftCreate(&kept[i]));
    FK(cufftSetAutoAllocation(kept[i], 0));
    FK(cufftXtMakePlanMany(kept[i], 1, &n, &ie, 1, ie, s->kind == R2C ? CUDA_R_32F : CUDA_C_32F, &oe, 1, oe,
                           s->kind == C2R ? CUDA_R_32F : CUDA_C_32F, s->batch, &w,
                           s->kind == R2C ? CUDA_R_32F : CUDA_C_32F));
  }
  /* --extra-node: a second node in every capture, after the transform (1: an event record
   * node, 2: a 4-byte memset node, 3: a host node that does nothing), so that no capture is a lone kernel. */
  cudaEvent_t extra_event;
  void *scratch;
  CK(cudaEventCreateWithFlags(&extra_event, cudaEventDisableTiming));
  CK(cudaMalloc(&scratch, 4));
  host_out = malloc(max_out * 4);
  for (int s = 0; s < INFLIGHT; s++) {
    CK(cudaEventCreateWithFlags(&BUF[s].done, cudaEventDisableTiming));
    for (int i = 0; i < opt_ops; i++) {
      CK(cudaMalloc((void **)&BUF[s].in[i], max_in * 4));
      CK(cudaMalloc((void **)&BUF[s].out[i], max_out * 4));
      CK(cudaMalloc(&BUF[s].work[i], max_work ? max_work : 256));
    }
  }
  pthread_t wt;
  if (opt_worker) pthread_create(&wt, NULL, worker, NULL);
  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  long op = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int bi = 0; bi < opt_buffers; bi++) {
    int slot = bi % INFLIGHT;
    if (opt_worker) {
      pthread_mutex_lock(&jobs_lock);
      while (BUF[slot].used) pthread_cond_wait(&jobs_cv, &jobs_lock);
      pthread_mutex_unlock(&jobs_lock);
    } else if (BUF[slot].used) {
      complete(&BUF[slot], bi - INFLIGHT);
      BUF[slot].used = 0;
    }
    struct buffer *b = &BUF[slot];
    b->nops = opt_ops;
    char key[sizeof EXECS[0].key];
    int kl = 0;
    for (int i = 0; i < opt_ops; i++, op++) {
      int si = (int)(op % NSHAPES);
      b->shapes[i] = si;
      struct plan p = get_plan(si, st);
      b->plan_handles[i] = p.h;
      if (!opt_set_inside) {
        FK(cufftSetStream(p.h, st));
        FK(cufftSetWorkArea(p.h, b->work[i]));
      }
      int dir = SHAPES[si].kind == C2R ? CUFFT_INVERSE : CUFFT_FORWARD;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      if (opt_set_inside) {
        FK(cufftSetStream(p.h, st));
        FK(cufftSetWorkArea(p.h, b->work[i]));
      }
      if (!opt_typed) FK(cufftXtExec(p.h, b->in[i], b->out[i], dir));
      else if (SHAPES[si].kind == R2C) FK(cufftExecR2C(p.h, (cufftReal *)b->in[i], (cufftComplex *)b->out[i]));
      else if (SHAPES[si].kind == C2R) FK(cufftExecC2R(p.h, (cufftComplex *)b->in[i], (cufftReal *)b->out[i]));
      else FK(cufftExecC2C(p.h, (cufftComplex *)b->in[i], (cufftComplex *)b->out[i], dir));
      if (opt_extra == 1) CK(cudaEventRecordWithFlags(extra_event, st, cudaEventRecordExternal));
      if (opt_extra == 2) CK(cudaMemsetAsync(scratch, 0, 4, st));
      if (opt_extra == 3) CK(cudaLaunchHostFunc(st, noop_host, NULL));
      cudaGraph_t g;
      CK(cudaStreamEndCapture(st, &g));
      size_t nn = 0;
      CK(cudaGraphGetNodes(g, NULL, &nn));
      cudaGraphNode_t node;
      if (opt_extract && nn == 1) {
        cudaGraphNode_t captured;
        CK(cudaGraphGetNodes(g, &captured, &nn));
        CUDA_KERNEL_NODE_PARAMS params;
        DK(cuGraphKernelNodeGetParams((CUgraphNode)captured, &params));
        void *f = params.func ? (void *)params.func : (void *)params.kern; /* a CUkernel when loaded from a library */
        if (last_func[si] && last_func[si] == f) func_same_shape++;
        else if (last_func[si]) func_new_shape++;
        last_func[si] = f;
        DK(cuGraphAddKernelNode((CUgraphNode *)&node, (CUgraph)graph, NULL, 0, &params));
        key[kl++] = 'K';
        kernel_nodes++;
      } else {
        CK(cudaGraphAddChildGraphNode(&node, graph, NULL, 0, g));
        key[kl++] = 'G';
        child_graphs++;
      }
      CK(cudaGraphDestroy(g));
    }
    snprintf(key + kl, sizeof key - kl, ".%d", opt_ops);
    cudaGraphExec_t exec = NULL;
    if (opt_update) {
      int found = -1;
      for (int k = 0; k < nexecs; k++)
        if (!strcmp(EXECS[k].key, key)) found = k;
      if (found >= 0) {
        cudaGraphExecUpdateResultInfo info;
        cudaGraphExecUpdate(EXECS[found].exec, graph, &info);
        updates++;
        /* --trace 1: every successful update, with its buffer's node types, on stderr (the
           last lines before a crash say which updates went through). */
        if (opt_trace && info.result == cudaGraphExecUpdateSuccess) fprintf(stderr, "buffer %d: update ok %s\n", bi, key);
        if (info.result != cudaGraphExecUpdateSuccess) {
          cudaGetLastError();
          update_failures++;
          update_reasons[info.result & 15]++;
          CK(cudaGraphExecDestroy(EXECS[found].exec));
          CK(cudaGraphInstantiate(&EXECS[found].exec, graph, 0));
          instantiations++;
        }
        exec = EXECS[found].exec;
      } else {
        if (nexecs == EXEC_CACHE) { /* MLX clears the whole cache past its size */
          for (int k = 0; k < nexecs; k++) CK(cudaGraphExecDestroy(EXECS[k].exec));
          nexecs = 0;
        }
        strcpy(EXECS[nexecs].key, key);
        CK(cudaGraphInstantiate(&EXECS[nexecs].exec, graph, 0));
        instantiations++;
        exec = EXECS[nexecs++].exec;
      }
    } else {
      CK(cudaGraphInstantiate(&exec, graph, 0));
      instantiations++;
      b->own_exec = exec;
    }
    /* Inputs refreshed (C2R overwrites its input) before the graph, in stream order. */
    for (int i = 0; i < opt_ops; i++)
      CK(cudaMemcpyAsync(b->in[i], DATA[b->shapes[i]].pristine, in_floats(&SHAPES[b->shapes[i]]) * 4,
                         cudaMemcpyDeviceToDevice, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(b->done, st));
    CK(cudaGraphDestroy(graph));
    CK(cudaGraphCreate(&graph, 0));
    b->used = 1;
    if (opt_worker) {
      pthread_mutex_lock(&jobs_lock);
      JOBS[jobs_tail % INFLIGHT] = (struct job){slot, bi};
      jobs_tail++;
      pthread_cond_broadcast(&jobs_cv);
      pthread_mutex_unlock(&jobs_lock);
    }
  }
  if (opt_worker) {
    pthread_mutex_lock(&jobs_lock);
    stop = 1;
    pthread_cond_broadcast(&jobs_cv);
    pthread_mutex_unlock(&jobs_lock);
    pthread_join(wt, NULL);
  } else {
    for (int k = 0; k < INFLIGHT; k++) {
      int bi = opt_buffers - INFLIGHT + k;
      if (bi >= 0 && BUF[bi % INFLIGHT].used) complete(&BUF[bi % INFLIGHT], bi);
    }
  }
  CK(cudaStreamSynchronize(st));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / ((double)opt_ops * opt_buffers);
  printf("RESULT cache %d extract %d update %d extra-node %d keep-one %d ops %d buffers %d worker %d relaxed %d "
         "preload %s: %ld ops checked, %ld wrong (%ld values); %ld creations, %ld destroys; %ld instantiations, "
         "%ld updates (%ld failed); %.2f us per op (checks %s)\n",
         opt_cache, opt_extract, opt_update, opt_extra, opt_keep_one, opt_ops, opt_buffers, opt_worker, opt_relaxed,
         getenv("LD_PRELOAD") ? "yes" : "no", checked_ops, wrong_ops, wrong_values, creations, destroys,
         instantiations, updates, update_failures, us, opt_check ? "on" : "off");
  printf("DETAIL failed updates by cudaGraphExecUpdateResult:");
  for (int k = 0; k < 16; k++)
    if (update_reasons[k]) printf(" %d:%ld", k, update_reasons[k]);
  printf("; a shape's lone kernel with its previous plan's function %ld times, a new function %ld times; "
         "captures copied as a kernel node %ld, as a child graph %ld; set-inside %d typed %d\n",
         func_same_shape, func_new_shape, kernel_nodes, child_graphs, opt_set_inside, opt_typed);
  return wrong_ops ? 3 : 0;
}
