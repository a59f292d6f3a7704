/* The FFT plan API the test programs use, declared here (no vendor header is needed): the
 * cuFFT spelling by default, the hipFFT one with -DAPI_HIPFFT. Each prototype is copied from
 * cufft.h / cufftXt.h / hipfft.h; the two APIs share their enum values.
 *
 * The macros give the programs one vocabulary: FFT(Create) is cufftCreate or hipfftCreate,
 * handle_t is cufftHandle (int) or hipfftHandle (a pointer), R_OK is CUFFT_SUCCESS or
 * HIPFFT_SUCCESS, and so on. */
#ifndef FFT_API_H
#define FFT_API_H

#include <stddef.h>

typedef enum {
  R_SUCCESS = 0, R_INVALID_PLAN = 1, R_ALLOC_FAILED = 2, R_INVALID_TYPE = 3, R_INVALID_VALUE = 4,
  R_INTERNAL_ERROR = 5, R_EXEC_FAILED = 6, R_SETUP_FAILED = 7, R_INVALID_SIZE = 8,
  R_NO_WORKSPACE = 13, R_NOT_SUPPORTED = 16
} result_t;

enum { T_R2C = 0x2a, T_C2R = 0x2c, T_C2C = 0x29, T_D2Z = 0x6a, T_Z2D = 0x6c, T_Z2Z = 0x69 };
enum { DIR_FORWARD = -1, DIR_INVERSE = 1 };
/* cudaDataType / hipDataType */
enum { DT_R_32F = 0, DT_R_64F = 1, DT_R_16F = 2, DT_C_32F = 4, DT_C_64F = 5, DT_C_16F = 6 };

#ifdef API_HIPFFT
typedef struct hipfftHandle_t *handle_t; /* typedef struct hipfftHandle_t* hipfftHandle; */
#define FFT(name) hipfft##name
#define API_NAME "hipfft"
#else
typedef int handle_t; /* typedef int cufftHandle; */
#define FFT(name) cufft##name
#define API_NAME "cufft"
#endif
typedef void *stream_t;

result_t FFT(Create)(handle_t *plan);
result_t FFT(Destroy)(handle_t plan);
result_t FFT(Plan1d)(handle_t *plan, int nx, int type, int batch);
result_t FFT(Plan2d)(handle_t *plan, int nx, int ny, int type);
result_t FFT(Plan3d)(handle_t *plan, int nx, int ny, int nz, int type);
result_t FFT(PlanMany)(handle_t *plan, int rank, int *n, int *inembed, int istride, int idist, int *onembed,
                       int ostride, int odist, int type, int batch);
result_t FFT(MakePlan1d)(handle_t plan, int nx, int type, int batch, size_t *workSize);
result_t FFT(MakePlan2d)(handle_t plan, int nx, int ny, int type, size_t *workSize);
result_t FFT(MakePlan3d)(handle_t plan, int nx, int ny, int nz, int type, size_t *workSize);
result_t FFT(MakePlanMany)(handle_t plan, int rank, int *n, int *inembed, int istride, int idist, int *onembed,
                           int ostride, int odist, int type, int batch, size_t *workSize);
result_t FFT(MakePlanMany64)(handle_t plan, int rank, long long *n, long long *inembed, long long istride,
                             long long idist, long long *onembed, long long ostride, long long odist, int type,
                             long long batch, size_t *workSize);
result_t FFT(XtMakePlanMany)(handle_t plan, int rank, long long *n, long long *inembed, long long istride,
                             long long idist, int inputtype, long long *onembed, long long ostride, long long odist,
                             int outputtype, long long batch, size_t *workSize, int executiontype);
result_t FFT(GetSize)(handle_t plan, size_t *workSize);
result_t FFT(GetSize1d)(handle_t plan, int nx, int type, int batch, size_t *workSize);
result_t FFT(GetSizeMany64)(handle_t plan, int rank, long long *n, long long *inembed, long long istride,
                            long long idist, long long *onembed, long long ostride, long long odist, int type,
                            long long batch, size_t *workSize);
result_t FFT(SetAutoAllocation)(handle_t plan, int autoAllocate);
result_t FFT(SetWorkArea)(handle_t plan, void *workArea);
result_t FFT(SetStream)(handle_t plan, stream_t stream);
result_t FFT(ExecC2C)(handle_t plan, void *idata, void *odata, int direction);
result_t FFT(ExecR2C)(handle_t plan, void *idata, void *odata);
result_t FFT(ExecC2R)(handle_t plan, void *idata, void *odata);
result_t FFT(ExecZ2Z)(handle_t plan, void *idata, void *odata, int direction);
result_t FFT(ExecD2Z)(handle_t plan, void *idata, void *odata);
result_t FFT(ExecZ2D)(handle_t plan, void *idata, void *odata);
result_t FFT(XtExec)(handle_t plan, void *input, void *output, int direction);
result_t FFT(GetVersion)(int *version);
result_t FFT(XtSetCallback)(handle_t plan, void **callback_routine, int cbType, void **caller_info);

/* The interposer's own (both libraries). */
int hfp_intercept_synchronize(void);
const char *hfp_intercept_last_error(void);
long hfp_intercept_sim_live_handles(void);
long hfp_intercept_sim_peak_live_handles(void);
long hfp_intercept_sim_created(void);
long hfp_intercept_virtual_handles_live(void);
int hfp_intercept_stream_create(void **stream);
int hfp_intercept_write_metrics(const char *path);
/* The simulated runtime's graph calls, shaped as the CUDA and HIP ones (0 or -1). */
int hfp_intercept_sim_begin_capture(void *stream);
int hfp_intercept_sim_end_capture(void *stream, void **graph);
int hfp_intercept_sim_graph_create(void **graph);
int hfp_intercept_sim_graph_destroy(void *graph);
int hfp_intercept_sim_graph_get_nodes(void *graph, void **nodes, size_t *count);
int hfp_intercept_sim_node_type(void *node); /* 0 kernel, 1 child graph, 2 host, 3 copy, 4 empty */
int hfp_intercept_sim_kernel_node_get_params(void *node, void **func, void **args);
int hfp_intercept_sim_kernel_node_set_params(void *node, void *func, void *args);
int hfp_intercept_sim_graph_add_kernel_node(void **node, void *graph, void **deps, size_t ndeps, void *func, void *args);
int hfp_intercept_sim_graph_add_child_graph_node(void **node, void *graph, void **deps, size_t ndeps, void *child);
int hfp_intercept_sim_child_graph_node_get_graph(void *node, void **graph);
int hfp_intercept_sim_graph_add_empty_node(void **node, void *graph, void **deps, size_t ndeps);
int hfp_intercept_sim_graph_clone(void **clone, void *graph);
int hfp_intercept_sim_graph_instantiate(void **exec, void *graph);
int hfp_intercept_sim_graph_exec_update(void *exec, void *graph); /* 0 updated, 1 topologies differ */
int hfp_intercept_sim_graph_exec_kernel_node_set_params(void *exec, void *node, void *func, void *args);
int hfp_intercept_sim_graph_launch(void *exec, void *stream);
int hfp_intercept_sim_graph_exec_destroy(void *exec);
int hfp_intercept_sim_live_graphs(size_t *graphs, size_t *execs);
long hfp_intercept_sim_violations(void);
long hfp_intercept_sim_settings_calls(void);

#endif
