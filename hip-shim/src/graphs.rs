//! HIP's stream capture and graph calls over the simulated runtime's graph model
//! (`SimRuntime::begin_capture` ... `graph_launch`), so that programs written against HIP's
//! graph API run on the shim and the interposer's graph hooks can be tested through real
//! symbol interposition. With the CUDA backend these return `hipErrorNotSupported`.
//!
//! Kernel node parameters are `hipKernelNodeParams` (blockDim at 0, extra at 16, func at 24,
//! gridDim at 32, kernelParams at 48, sharedMemBytes at 56): the sim's function goes in
//! `func` and its argument record in `kernelParams`.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use hipfft_pool::RawStream;
use hipfft_pool::runtime::hip::sys::hip_error as he;
use hipfft_pool::runtime::sim::{SimKernel, SimNodeKind, SimRuntime};

use super::{SIM, backend, guard, hip_status};

/// `hipGraphExecUpdateResult`: success, and a changed topology.
const UPDATE_SUCCESS: c_int = 0;
const UPDATE_TOPOLOGY_CHANGED: c_int = 2;
/// `hipErrorGraphExecUpdateFailure`, `hipErrorNotSupported`.
const ERROR_UPDATE_FAILURE: c_int = 910;
const ERROR_NOT_SUPPORTED: c_int = 801;

thread_local! {
    /// The tail `hipStreamGetCaptureInfo_v2` last handed out on this thread (valid, as HIP's,
    /// until the next capture call).
    static TAIL: RefCell<Vec<*mut c_void>> = const { RefCell::new(Vec::new()) };
}

/// Runs `body` on the simulated backend; another backend has no graphs here.
fn sim_call(name: &'static str, body: impl FnOnce(&Arc<SimRuntime>) -> Result<c_int, hipfft_pool::Error>) -> c_int {
    guard(name, he::hipErrorUnknown, || {
        let _ = backend();
        match SIM.get() {
            Some(sim) => body(sim).unwrap_or_else(|e| hip_status(&e)),
            None => ERROR_NOT_SUPPORTED,
        }
    })
}

fn h(p: *mut c_void) -> u64 {
    p as usize as u64
}

fn p(v: u64) -> *mut c_void {
    v as usize as *mut c_void
}

/// # Safety
/// `deps` is null or valid for `n` reads.
unsafe fn deps_of(deps: *const *mut c_void, n: usize) -> Vec<u64> {
    // SAFETY: the caller's contract.
    (0..if deps.is_null() { 0 } else { n }).map(|i| h(unsafe { *deps.add(i) })).collect()
}

/// The kernel in `hipKernelNodeParams`.
///
/// # Safety
/// `params` points at a `hipKernelNodeParams`.
unsafe fn kernel_of(params: *const u8) -> SimKernel {
    // SAFETY: the layout's `func` and `kernelParams`.
    unsafe {
        SimKernel {
            function: params.add(24).cast::<usize>().read_unaligned() as u64,
            args: params.add(48).cast::<usize>().read_unaligned() as u64,
        }
    }
}

/// # Safety
/// `out` is null or valid for one write of `T`.
unsafe fn put<T>(out: *mut T, v: T) -> c_int {
    if out.is_null() {
        return he::hipErrorInvalidValue;
    }
    // SAFETY: the caller's contract.
    unsafe { out.write(v) };
    he::hipSuccess
}

/// `hipError_t hipStreamIsCapturing(hipStream_t, hipStreamCaptureStatus*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamIsCapturing(stream: *mut c_void, status: *mut c_int) -> c_int {
    sim_call("hipStreamIsCapturing", |sim| {
        let active = sim.capture_info(RawStream(stream as usize))?.is_some();
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(status, c_int::from(active)) })
    })
}

/// `hipError_t hipStreamGetCaptureInfo_v2(hipStream_t, hipStreamCaptureStatus*, unsigned long long* id, hipGraph_t* graph, const hipGraphNode_t** deps, size_t* n)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamGetCaptureInfo_v2(
    stream: *mut c_void,
    status: *mut c_int,
    id: *mut u64,
    graph: *mut *mut c_void,
    deps: *mut *const *mut c_void,
    n: *mut usize,
) -> c_int {
    sim_call("hipStreamGetCaptureInfo_v2", |sim| {
        let c = sim.capture_info(RawStream(stream as usize))?;
        // SAFETY: the caller's out-pointers (each may be null, as HIP allows).
        unsafe {
            if !status.is_null() {
                *status = c_int::from(c.is_some());
            }
            if let Some(c) = c {
                if !id.is_null() {
                    *id = c.id;
                }
                if !graph.is_null() {
                    *graph = p(c.graph);
                }
                let ptr = TAIL.with(|t| {
                    let mut t = t.borrow_mut();
                    *t = c.tail.iter().map(|x| p(*x)).collect();
                    t.as_ptr()
                });
                if !deps.is_null() {
                    *deps = ptr;
                }
                if !n.is_null() {
                    *n = c.tail.len();
                }
            }
        }
        Ok(he::hipSuccess)
    })
}

/// `hipError_t hipStreamBeginCapture(hipStream_t, hipStreamCaptureMode)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamBeginCapture(stream: *mut c_void, _mode: c_int) -> c_int {
    sim_call("hipStreamBeginCapture", |sim| sim.begin_capture(RawStream(stream as usize)).map(|()| he::hipSuccess))
}

/// `hipError_t hipStreamEndCapture(hipStream_t, hipGraph_t*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamEndCapture(stream: *mut c_void, graph: *mut *mut c_void) -> c_int {
    sim_call("hipStreamEndCapture", |sim| {
        let g = sim.end_capture(RawStream(stream as usize))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(graph, p(g)) })
    })
}

/// `hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode*)`: the sim knows no
/// modes; the value is left as it is.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipThreadExchangeStreamCaptureMode(mode: *mut c_int) -> c_int {
    guard("hipThreadExchangeStreamCaptureMode", he::hipErrorUnknown, || if mode.is_null() { he::hipErrorInvalidValue } else { he::hipSuccess })
}

/// `hipError_t hipLaunchHostFunc(hipStream_t, hipHostFn_t, void*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipLaunchHostFunc(stream: *mut c_void, f: Option<unsafe extern "C" fn(*mut c_void)>, data: *mut c_void) -> c_int {
    guard("hipLaunchHostFunc", he::hipErrorUnknown, || {
        let (Some(b), Some(f)) = (backend(), f) else { return he::hipErrorInvalidValue };
        // SAFETY: the caller's promise: `data` stays valid for every run of `f`.
        let call = unsafe { hipfft_pool::HostCall::new(f, data) };
        // SAFETY: the caller's stream.
        match unsafe { b.launch_host_fn(RawStream(stream as usize), call) } {
            Ok(()) => he::hipSuccess,
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipGraphCreate(hipGraph_t*, unsigned int flags)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphCreate(graph: *mut *mut c_void, _flags: c_uint) -> c_int {
    // SAFETY: the caller's out-pointer.
    sim_call("hipGraphCreate", |sim| Ok(unsafe { put(graph, p(sim.graph_create())) }))
}

/// `hipError_t hipGraphDestroy(hipGraph_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphDestroy(graph: *mut c_void) -> c_int {
    sim_call("hipGraphDestroy", |sim| sim.graph_destroy(h(graph)).map(|()| he::hipSuccess))
}

/// `hipError_t hipGraphGetNodes(hipGraph_t, hipGraphNode_t* nodes, size_t* n)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphGetNodes(graph: *mut c_void, nodes: *mut *mut c_void, n: *mut usize) -> c_int {
    sim_call("hipGraphGetNodes", |sim| {
        if n.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        let all = sim.graph_nodes(h(graph))?;
        // SAFETY: the caller's buffers (`*n` entries when `nodes` is given).
        unsafe {
            if nodes.is_null() {
                *n = all.len();
            } else {
                let k = (*n).min(all.len());
                for (i, v) in all.iter().take(k).enumerate() {
                    *nodes.add(i) = p(*v);
                }
                *n = k;
            }
        }
        Ok(he::hipSuccess)
    })
}

/// `hipError_t hipGraphNodeGetType(hipGraphNode_t, hipGraphNodeType*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphNodeGetType(node: *mut c_void, t: *mut c_int) -> c_int {
    sim_call("hipGraphNodeGetType", |sim| {
        let v = match sim.graph_node_kind(h(node))? {
            SimNodeKind::Kernel => 0,
            SimNodeKind::Copy => 1,
            SimNodeKind::Host => 3,
            SimNodeKind::Graph => 4,
            SimNodeKind::Empty => 5,
        };
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(t, v) })
    })
}

/// `hipError_t hipGraphNodeGetDependencies(hipGraphNode_t, hipGraphNode_t* deps, size_t* n)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphNodeGetDependencies(node: *mut c_void, deps: *mut *mut c_void, n: *mut usize) -> c_int {
    sim_call("hipGraphNodeGetDependencies", |sim| {
        if n.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        let all = sim.graph_node_deps(h(node))?;
        // SAFETY: as in hipGraphGetNodes.
        unsafe {
            if deps.is_null() {
                *n = all.len();
            } else {
                let k = (*n).min(all.len());
                for (i, v) in all.iter().take(k).enumerate() {
                    *deps.add(i) = p(*v);
                }
                *n = k;
            }
        }
        Ok(he::hipSuccess)
    })
}

/// `hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t, hipKernelNodeParams*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphKernelNodeGetParams(node: *mut c_void, params: *mut u8) -> c_int {
    sim_call("hipGraphKernelNodeGetParams", |sim| {
        if params.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        let k = sim.kernel_node_params(h(node))?;
        // SAFETY: the caller's `hipKernelNodeParams` (64 bytes).
        unsafe {
            std::ptr::write_bytes(params, 0, 64);
            params.add(24).cast::<usize>().write_unaligned(k.function as usize);
            params.add(48).cast::<usize>().write_unaligned(k.args as usize);
        }
        Ok(he::hipSuccess)
    })
}

/// `hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t, const hipKernelNodeParams*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphKernelNodeSetParams(node: *mut c_void, params: *const u8) -> c_int {
    sim_call("hipGraphKernelNodeSetParams", |sim| {
        if params.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        // SAFETY: the caller's parameters.
        sim.kernel_node_set_params(h(node), unsafe { kernel_of(params) }).map(|()| he::hipSuccess)
    })
}

/// `hipError_t hipGraphAddKernelNode(hipGraphNode_t*, hipGraph_t, const hipGraphNode_t*, size_t, const hipKernelNodeParams*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphAddKernelNode(node: *mut *mut c_void, graph: *mut c_void, deps: *const *mut c_void, n: usize, params: *const u8) -> c_int {
    sim_call("hipGraphAddKernelNode", |sim| {
        if params.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        // SAFETY: the caller's dependencies and parameters.
        let (d, k) = unsafe { (deps_of(deps, n), kernel_of(params)) };
        let made = sim.graph_add_kernel_node(h(graph), &d, k)?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(node, p(made)) })
    })
}

/// `hipError_t hipGraphAddChildGraphNode(hipGraphNode_t*, hipGraph_t, const hipGraphNode_t*, size_t, hipGraph_t child)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphAddChildGraphNode(node: *mut *mut c_void, graph: *mut c_void, deps: *const *mut c_void, n: usize, child: *mut c_void) -> c_int {
    sim_call("hipGraphAddChildGraphNode", |sim| {
        // SAFETY: the caller's dependencies.
        let made = sim.graph_add_child_node(h(graph), &unsafe { deps_of(deps, n) }, h(child))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(node, p(made)) })
    })
}

/// `hipError_t hipGraphChildGraphNodeGetGraph(hipGraphNode_t, hipGraph_t*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphChildGraphNodeGetGraph(node: *mut c_void, graph: *mut *mut c_void) -> c_int {
    sim_call("hipGraphChildGraphNodeGetGraph", |sim| {
        let g = sim.child_graph_of(h(node))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(graph, p(g)) })
    })
}

/// `hipError_t hipGraphAddEmptyNode(hipGraphNode_t*, hipGraph_t, const hipGraphNode_t*, size_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphAddEmptyNode(node: *mut *mut c_void, graph: *mut c_void, deps: *const *mut c_void, n: usize) -> c_int {
    sim_call("hipGraphAddEmptyNode", |sim| {
        // SAFETY: the caller's dependencies.
        let made = sim.graph_add_empty_node(h(graph), &unsafe { deps_of(deps, n) })?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(node, p(made)) })
    })
}

/// `hipError_t hipGraphClone(hipGraph_t*, hipGraph_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphClone(clone: *mut *mut c_void, graph: *mut c_void) -> c_int {
    sim_call("hipGraphClone", |sim| {
        let c = sim.graph_clone(h(graph))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(clone, p(c)) })
    })
}

/// `hipError_t hipGraphInstantiate(hipGraphExec_t*, hipGraph_t, hipGraphNode_t*, char*, size_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphInstantiate(exec: *mut *mut c_void, graph: *mut c_void, _err: *mut *mut c_void, _log: *mut c_char, _size: usize) -> c_int {
    sim_call("hipGraphInstantiate", |sim| {
        let e = sim.graph_instantiate(h(graph))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(exec, p(e)) })
    })
}

/// `hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t*, hipGraph_t, unsigned long long)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphInstantiateWithFlags(exec: *mut *mut c_void, graph: *mut c_void, _flags: u64) -> c_int {
    sim_call("hipGraphInstantiateWithFlags", |sim| {
        let e = sim.graph_instantiate(h(graph))?;
        // SAFETY: the caller's out-pointer.
        Ok(unsafe { put(exec, p(e)) })
    })
}

/// `hipError_t hipGraphExecUpdate(hipGraphExec_t, hipGraph_t, hipGraphNode_t* errorNode, hipGraphExecUpdateResult* result)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphExecUpdate(exec: *mut c_void, graph: *mut c_void, _err: *mut *mut c_void, result: *mut c_int) -> c_int {
    sim_call("hipGraphExecUpdate", |sim| {
        let took = sim.graph_exec_update(h(exec), h(graph))?;
        if !result.is_null() {
            // SAFETY: the caller's out-pointer.
            unsafe { *result = if took { UPDATE_SUCCESS } else { UPDATE_TOPOLOGY_CHANGED } };
        }
        Ok(if took { he::hipSuccess } else { ERROR_UPDATE_FAILURE })
    })
}

/// `hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t, hipGraphNode_t, const hipKernelNodeParams*)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphExecKernelNodeSetParams(exec: *mut c_void, node: *mut c_void, params: *const u8) -> c_int {
    sim_call("hipGraphExecKernelNodeSetParams", |sim| {
        if params.is_null() {
            return Ok(he::hipErrorInvalidValue);
        }
        // SAFETY: the caller's parameters.
        sim.graph_exec_kernel_node_set_params(h(exec), h(node), unsafe { kernel_of(params) }).map(|()| he::hipSuccess)
    })
}

/// `hipError_t hipGraphLaunch(hipGraphExec_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphLaunch(exec: *mut c_void, stream: *mut c_void) -> c_int {
    sim_call("hipGraphLaunch", |sim| sim.graph_launch(h(exec), RawStream(stream as usize)).map(|()| he::hipSuccess))
}

/// `hipError_t hipGraphExecDestroy(hipGraphExec_t)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphExecDestroy(exec: *mut c_void) -> c_int {
    sim_call("hipGraphExecDestroy", |sim| sim.graph_exec_destroy(h(exec)).map(|()| he::hipSuccess))
}

/// `long hipShimViolations(void)`: misuses the simulated backend recorded (each printed to
/// stderr when `HIP_SHIM_TRACE` is set); -1 on another backend.
#[unsafe(no_mangle)]
pub extern "C" fn hipShimViolations() -> std::ffi::c_long {
    let _ = backend();
    SIM.get().map_or(-1, |s| {
        let v = s.violations();
        if super::trace_on() {
            v.iter().for_each(|l| eprintln!("hip-shim: violation: {l}"));
        }
        v.len() as std::ffi::c_long
    })
}

/// `long hipShimPeakLivePlans(void)`: the simulated backend's peak of live plans; -1 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn hipShimPeakLivePlans() -> std::ffi::c_long {
    let _ = backend();
    SIM.get().map_or(-1, |s| s.peak_live_handles() as std::ffi::c_long)
}

/// `long hipShimSettingsCalls(void)`: SetStream/SetWorkArea calls the backend's plans got.
#[unsafe(no_mangle)]
pub extern "C" fn hipShimSettingsCalls() -> std::ffi::c_long {
    let _ = backend();
    SIM.get().map_or(-1, |s| s.settings_calls() as std::ffi::c_long)
}

/// `int hipShimLiveGraphs(size_t* graphs, size_t* execs)`: the simulated backend's own counts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipShimLiveGraphs(graphs: *mut usize, execs: *mut usize) -> c_int {
    sim_call("hipShimLiveGraphs", |sim| {
        let (g, e) = sim.live_graphs();
        // SAFETY: the caller's out-pointers.
        Ok(unsafe {
            put(graphs, g);
            put(execs, e)
        })
    })
}
