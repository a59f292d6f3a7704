//! The CUDA driver's graph calls, hooked, and its view of a capture in progress.
//!
//! Every driver entry point that can put a plan's kernels into a graph or an instantiation,
//! or take them out, has a hook here ([`VARIANTS`], one per exported name, `_v2` and `_ptsz`
//! variants included): it calls the real function and reports what it did to the registry
//! (`notify`). The cuFFT interposer exports them under the driver's names
//! ([`crate::cuda_graph_hooks!`]), so a program linked to libcuda reaches them, and its
//! `dlsym` gives them to a program that looks them up on libcuda (`crate::dlsym`). The CUDA
//! runtime (static or shared) takes every driver function from `cuGetProcAddress`, which is
//! hooked too: when the function it returns is one of the variants here, the caller gets the
//! hook instead. A graph function it returns that is *not* one of them (a driver newer than
//! this table) makes the interposer blind (`observed::blind`): captured plans are then kept
//! for the process's life, never followed on a partial view.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use hipfft_pool::RawStream;

use crate::graphs::view::{Capture, CaptureView};
use crate::graphs::{notify, observed};

/// `CUresult`.
pub type CuResult = c_int;
type Ptr = *mut c_void;

const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_NOT_FOUND: CuResult = 500;
/// `CU_GRAPH_NODE_TYPE_KERNEL`, `_GRAPH`, `_CONDITIONAL`.
const NODE_KERNEL: c_int = 0;
const NODE_GRAPH: c_int = 4;
const NODE_CONDITIONAL: c_int = 13;
/// `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`.
const INSTANTIATE_DEVICE_LAUNCH: u64 = 4;
/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`.
const CAPTURE_ACTIVE: c_int = 1;

/// The driver's hooked entry points, by exported name. A hook's index is its place here.
pub const VARIANTS: &[&str] = &[
    "cuStreamBeginCapture",
    "cuStreamBeginCapture_v2",
    "cuStreamBeginCapture_ptsz",
    "cuStreamBeginCapture_v2_ptsz",
    "cuStreamBeginCaptureToGraph",
    "cuStreamBeginCaptureToGraph_ptsz",
    "cuStreamEndCapture",
    "cuStreamEndCapture_ptsz",
    "cuGraphDestroy",
    "cuGraphClone",
    "cuGraphInstantiate",
    "cuGraphInstantiate_v2",
    "cuGraphInstantiateWithFlags",
    "cuGraphInstantiateWithParams",
    "cuGraphInstantiateWithParams_ptsz",
    "cuGraphExecUpdate",
    "cuGraphExecUpdate_v2",
    "cuGraphExecDestroy",
    "cuGraphLaunch",
    "cuGraphLaunch_ptsz",
    "cuGraphAddKernelNode",
    "cuGraphAddKernelNode_v2",
    "cuGraphKernelNodeSetParams",
    "cuGraphKernelNodeSetParams_v2",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphExecKernelNodeSetParams_v2",
    "cuGraphAddChildGraphNode",
    "cuGraphChildGraphNodeGetGraph",
    "cuGraphExecChildGraphNodeSetParams",
    "cuGraphAddNode",
    "cuGraphAddNode_v2",
    "cuGraphNodeSetParams",
    "cuGraphExecNodeSetParams",
    "cuGetProcAddress",
    "cuGetProcAddress_v2",
];

/// Base names (without `_v2`, `_ptsz`) of driver functions that can move a plan's kernels:
/// one of these that `cuGetProcAddress` hands out as something no hook stands for blinds
/// the interposer.
const RELEVANT: &[&str] = &[
    "cuStreamBeginCapture",
    "cuStreamBeginCaptureToGraph",
    "cuStreamEndCapture",
    "cuGraphDestroy",
    "cuGraphClone",
    "cuGraphInstantiate",
    "cuGraphInstantiateWithFlags",
    "cuGraphInstantiateWithParams",
    "cuGraphExecUpdate",
    "cuGraphExecDestroy",
    "cuGraphLaunch",
    "cuGraphAddKernelNode",
    "cuGraphKernelNodeSetParams",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphAddChildGraphNode",
    "cuGraphChildGraphNodeGetGraph",
    "cuGraphExecChildGraphNodeSetParams",
    "cuGraphAddNode",
    "cuGraphNodeSetParams",
    "cuGraphExecNodeSetParams",
    "cuGraphExecGraphNodeSetParams",
    "cuGraphConditionalHandleCreate",
];

/// The index of `name` in [`VARIANTS`].
pub const fn index(name: &str) -> usize {
    let mut i = 0;
    while i < VARIANTS.len() {
        if const_eq(VARIANTS[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("not a hooked driver variant")
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The real function behind each variant (0: not known yet).
static REAL: [AtomicUsize; VARIANTS.len()] = [const { AtomicUsize::new(0) }; VARIANTS.len()];

/// libcuda, as the process loaded it.
fn libcuda() -> Ptr {
    static H: OnceLock<usize> = OnceLock::new();
    *H.get_or_init(|| {
        // SAFETY: RTLD_NOLOAD takes a reference on an object already mapped; if none is, the
        // driver library of this name is what the process would load for its CUDA calls.
        unsafe {
            let mut h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
            if h.is_null() {
                h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
            }
            h as usize
        }
    }) as Ptr
}

/// The real driver function `name` (never a hook).
fn driver(name: &CStr) -> usize {
    let h = libcuda();
    if h.is_null() {
        return 0;
    }
    // SAFETY: a dlopen handle and a C string.
    let p = unsafe { crate::dlsym::lookup(h, name) } as usize;
    if crate::dlsym::own_export(name).is_some_and(|o| o as usize == p) { 0 } else { p }
}

/// The real function of variant `i`.
fn real(i: usize) -> usize {
    match REAL[i].load(Ordering::Acquire) {
        0 => {
            let name = std::ffi::CString::new(VARIANTS[i]).expect("no NUL in names");
            let p = driver(&name);
            if p != 0 {
                REAL[i].store(p, Ordering::Release);
            }
            p
        }
        p => p,
    }
}

/// `dlsym` handed out our hook for `name` in place of the real `found`: the hook calls it.
pub fn note_real(name: &CStr, found: Ptr) {
    if let Ok(n) = name.to_str() {
        if let Some(i) = VARIANTS.iter().position(|v| *v == n) {
            let _ = REAL[i].compare_exchange(0, found as usize, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// Calls `f` unless the real function is missing (then `CUDA_ERROR_NOT_FOUND`).
macro_rules! call_real {
    ($i:expr, fn($($t:ty),*), $($a:expr),*) => {{
        let p = real($i);
        if p == 0 {
            CUDA_ERROR_NOT_FOUND
        } else {
            // SAFETY: the driver's function of this variant's C signature, passed the
            // caller's arguments unchanged.
            let f: unsafe extern "C" fn($($t),*) -> CuResult = unsafe { std::mem::transmute::<usize, _>(p) };
            unsafe { f($($a),*) }
        }
    }};
}

/// Runs a report to the registry without ever unwinding into the driver's caller.
fn report(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}

/// The kernel identities in a `CUDA_KERNEL_NODE_PARAMS` (`func`, and `kern` in the `_v2`
/// layout).
///
/// # Safety
/// `p` is null or points at parameters of that layout.
unsafe fn kernel_ids(p: *const u8, v2: bool) -> Vec<usize> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: `func` leads both layouts; `kern` is at 56 in `_v2` (func, grid x3, block x3,
    // shared memory, kernelParams, extra, kern).
    let (func, kern) = unsafe { ((p as *const usize).read_unaligned(), if v2 { p.add(56).cast::<usize>().read_unaligned() } else { 0 }) };
    [func, kern].into_iter().filter(|v| *v != 0).collect()
}

/// What a `CUgraphNodeParams` adds: its kernel's identities, or the child graph it embeds.
///
/// # Safety
/// `p` is null or points at a `CUgraphNodeParams`.
unsafe fn node_params(p: *const u8) -> (c_int, Vec<usize>, usize) {
    if p.is_null() {
        return (-1, Vec::new(), 0);
    }
    // SAFETY: `type` leads the struct; the union starts at 16.
    unsafe {
        let t = p.cast::<c_int>().read_unaligned();
        match t {
            NODE_KERNEL => (t, kernel_ids(p.add(16), true), 0),
            NODE_GRAPH => (t, Vec::new(), p.add(16).cast::<usize>().read_unaligned()),
            _ => (t, Vec::new(), 0),
        }
    }
}

/// The capture in progress on `stream`, through the real driver.
fn capture_of(stream: Ptr) -> Option<Capture> {
    // SAFETY: the caller's stream, passed to a driver call that takes it.
    DRIVER_VIEW.get_or_init(DriverView::load).as_ref().and_then(|v| unsafe { v.capture(RawStream(stream as usize)) }.ok().flatten())
}

fn begun(stream: Ptr) {
    if let Some(c) = capture_of(stream) {
        observed::begun(stream as usize, c.id);
    }
}

/// `cuStreamBeginCapture` (one argument; also its `_ptsz`).
pub unsafe fn begin_capture_v1(i: usize, stream: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr), stream);
    if r == CUDA_SUCCESS {
        report(|| begun(stream));
    }
    r
}

/// `cuStreamBeginCapture_v2(stream, mode)` (also its `_ptsz`).
pub unsafe fn begin_capture_v2(i: usize, stream: Ptr, mode: c_int) -> CuResult {
    let r = call_real!(i, fn(Ptr, c_int), stream, mode);
    if r == CUDA_SUCCESS {
        report(|| begun(stream));
    }
    r
}

/// `cuStreamBeginCaptureToGraph(stream, graph, deps, edges, n, mode)`.
pub unsafe fn begin_capture_to_graph(i: usize, stream: Ptr, graph: Ptr, deps: Ptr, edges: Ptr, n: usize, mode: c_int) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, Ptr, Ptr, usize, c_int), stream, graph, deps, edges, n, mode);
    if r == CUDA_SUCCESS {
        report(|| begun(stream));
    }
    r
}

/// `cuStreamEndCapture(stream, &graph)`.
pub unsafe fn end_capture(i: usize, stream: Ptr, graph: *mut Ptr) -> CuResult {
    let id = if notify::captures_held() { capture_of(stream).map(|c| c.id) } else { None };
    let r = call_real!(i, fn(Ptr, *mut Ptr), stream, graph);
    report(|| {
        observed::ended(stream as usize);
        if let Some(id) = id {
            // SAFETY: written by the driver on success.
            let g = (r == CUDA_SUCCESS && !graph.is_null()).then(|| unsafe { *graph } as usize);
            notify::capture_ended(id, g);
        }
    });
    r
}

pub unsafe fn graph_destroy(i: usize, graph: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr), graph);
    if r == CUDA_SUCCESS {
        report(|| notify::graph_destroyed(graph as usize));
    }
    r
}

pub unsafe fn graph_clone(i: usize, clone: *mut Ptr, graph: Ptr) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr), clone, graph);
    if r == CUDA_SUCCESS {
        // SAFETY: written by the driver on success.
        report(|| notify::graph_cloned(graph as usize, unsafe { *clone } as usize));
    }
    r
}

fn instantiated(exec: *mut Ptr, graph: Ptr, flags: u64) {
    // SAFETY: written by the driver on success.
    report(|| notify::instantiated(unsafe { *exec } as usize, graph as usize, flags & INSTANTIATE_DEVICE_LAUNCH != 0));
}

/// `cuGraphInstantiate` / `_v2` (exec, graph, error node, log buffer, its size).
pub unsafe fn instantiate_legacy(i: usize, exec: *mut Ptr, graph: Ptr, err: *mut Ptr, log: *mut c_char, size: usize) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, *mut Ptr, *mut c_char, usize), exec, graph, err, log, size);
    if r == CUDA_SUCCESS {
        instantiated(exec, graph, 0);
    }
    r
}

pub unsafe fn instantiate_with_flags(i: usize, exec: *mut Ptr, graph: Ptr, flags: u64) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, u64), exec, graph, flags);
    if r == CUDA_SUCCESS {
        instantiated(exec, graph, flags);
    }
    r
}

/// `cuGraphInstantiateWithParams(exec, graph, params)`: `flags` leads the parameters.
pub unsafe fn instantiate_with_params(i: usize, exec: *mut Ptr, graph: Ptr, params: *mut u64) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, *mut u64), exec, graph, params);
    if r == CUDA_SUCCESS {
        // SAFETY: the caller's parameters, read after the call.
        let flags = if params.is_null() { 0 } else { unsafe { params.read_unaligned() } };
        instantiated(exec, graph, flags);
    }
    r
}

/// `cuGraphExecUpdate(exec, graph, &error node, &result)`.
pub unsafe fn exec_update_v1(i: usize, exec: Ptr, graph: Ptr, err: *mut Ptr, result: *mut c_int) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, *mut Ptr, *mut c_int), exec, graph, err, result);
    report(|| notify::updated(exec as usize, graph as usize, r == CUDA_SUCCESS));
    r
}

/// `cuGraphExecUpdate_v2(exec, graph, &result info)`.
pub unsafe fn exec_update_v2(i: usize, exec: Ptr, graph: Ptr, info: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, Ptr), exec, graph, info);
    report(|| notify::updated(exec as usize, graph as usize, r == CUDA_SUCCESS));
    r
}

pub unsafe fn exec_destroy(i: usize, exec: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr), exec);
    if r == CUDA_SUCCESS {
        report(|| notify::exec_destroyed(exec as usize));
    }
    r
}

pub unsafe fn launch(i: usize, exec: Ptr, stream: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr), exec, stream);
    if r == CUDA_SUCCESS {
        report(|| {
            if notify::any_held() {
                let into = capture_of(stream).map(|c| c.graph);
                notify::launched(exec as usize, RawStream(stream as usize), into);
            }
        });
    }
    r
}

/// `cuGraphAddKernelNode` (`v2`: the `_v2` parameter layout).
pub unsafe fn add_kernel_node(i: usize, v2: bool, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, n, params);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: the caller's parameters of that layout; the node written on success.
        report(|| notify::kernel_added(graph as usize, unsafe { *node } as usize, &unsafe { kernel_ids(params, v2) }));
    }
    r
}

pub unsafe fn kernel_node_set_params(i: usize, v2: bool, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(Ptr, *const u8), node, params);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: the caller's parameters of that layout.
        report(|| notify::kernel_set(node as usize, &unsafe { kernel_ids(params, v2) }));
    }
    r
}

pub unsafe fn exec_kernel_node_set_params(i: usize, v2: bool, exec: Ptr, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, *const u8), exec, node, params);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: as above.
        report(|| notify::exec_kernel_set(exec as usize, &unsafe { kernel_ids(params, v2) }));
    }
    r
}

pub unsafe fn add_child_graph_node(i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, child: Ptr) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, Ptr, usize, Ptr), node, graph, deps, n, child);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: the node written on success.
        report(|| notify::child_added(graph as usize, unsafe { *node } as usize, child as usize));
    }
    r
}

pub unsafe fn child_graph_node_get_graph(i: usize, node: Ptr, graph: *mut Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr, *mut Ptr), node, graph);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: written on success.
        report(|| notify::embedded(node as usize, unsafe { *graph } as usize));
    }
    r
}

pub unsafe fn exec_child_graph_node_set_params(i: usize, exec: Ptr, node: Ptr, child: Ptr) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, Ptr), exec, node, child);
    if r == CUDA_SUCCESS && notify::any_held() {
        report(|| notify::exec_child_set(exec as usize, child as usize));
    }
    r
}

/// What `cuGraphAddNode` / `_v2` added: a kernel, a child graph, or a conditional node whose
/// body graphs the graph now owns.
///
/// # Safety
/// `params` points at the `CUgraphNodeParams` the call took; `node` was written.
unsafe fn added_node(graph: Ptr, node: *mut Ptr, params: *const u8) {
    // SAFETY: the caller's contract.
    let (t, ids, child) = unsafe { node_params(params) };
    // SAFETY: written by the driver on success.
    let n = if node.is_null() { 0 } else { (unsafe { *node }) as usize };
    match t {
        NODE_KERNEL => notify::kernel_added(graph as usize, n, &ids),
        NODE_GRAPH => notify::child_added(graph as usize, n, child),
        NODE_CONDITIONAL => {
            // `phGraph_out` (at 16 + 24) lists `size` (at 16 + 12) body graphs.
            // SAFETY: the conditional parameters' layout, written by the driver.
            unsafe {
                let size = params.add(28).cast::<c_uint>().read_unaligned() as usize;
                let bodies = params.add(40).cast::<*const Ptr>().read_unaligned();
                for k in 0..if bodies.is_null() { 0 } else { size } {
                    notify::owned_by(graph as usize, *bodies.add(k) as usize);
                }
            }
        }
        _ => {}
    }
}

pub unsafe fn add_node_v1(i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, n, params);
    if r == CUDA_SUCCESS {
        // SAFETY: as `added_node` requires.
        report(|| unsafe { added_node(graph, node, params) });
    }
    r
}

pub unsafe fn add_node_v2(i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, edges: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(*mut Ptr, Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, edges, n, params);
    if r == CUDA_SUCCESS {
        // SAFETY: as `added_node` requires.
        report(|| unsafe { added_node(graph, node, params) });
    }
    r
}

pub unsafe fn node_set_params(i: usize, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(Ptr, *const u8), node, params);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: the caller's `CUgraphNodeParams`.
        let (t, ids, _) = unsafe { node_params(params) };
        match t {
            NODE_KERNEL => report(|| notify::kernel_set(node as usize, &ids)),
            // A child graph set on a node of a graph: not followed.
            NODE_GRAPH | NODE_CONDITIONAL => observed::blind("cuGraphNodeSetParams on a child or conditional node"),
            _ => {}
        }
    }
    r
}

pub unsafe fn exec_node_set_params(i: usize, exec: Ptr, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(i, fn(Ptr, Ptr, *const u8), exec, node, params);
    if r == CUDA_SUCCESS && notify::any_held() {
        // SAFETY: the caller's `CUgraphNodeParams`.
        let (t, ids, child) = unsafe { node_params(params) };
        match t {
            NODE_KERNEL => report(|| notify::exec_kernel_set(exec as usize, &ids)),
            NODE_GRAPH => report(|| notify::exec_child_set(exec as usize, child)),
            NODE_CONDITIONAL => observed::blind("cuGraphExecNodeSetParams on a conditional node"),
            _ => {}
        }
    }
    r
}

/// What `cuGetProcAddress` handed out for `symbol`: the hook standing for that very function
/// when there is one; for a graph function with none, the real one (and the interposer goes
/// blind).
fn hand_out(symbol: *const c_char, pfn: *mut Ptr) {
    if symbol.is_null() || pfn.is_null() {
        return;
    }
    // SAFETY: written by the driver on success.
    let found = unsafe { *pfn };
    if found.is_null() {
        return;
    }
    // SAFETY: the caller's C string.
    let name = unsafe { CStr::from_ptr(symbol) };
    let Ok(s) = name.to_str() else { return };
    if !(s.starts_with("cuGraph") || s.starts_with("cuStream") || s.starts_with("cuGetProcAddress")) {
        return;
    }
    let found_at = found as usize;
    // Already a hook (a library that takes its own exported names' addresses gets ours).
    if crate::dlsym::is_own(found) {
        return;
    }
    for (i, v) in VARIANTS.iter().enumerate() {
        if real(i) == found_at {
            let Ok(c) = std::ffi::CString::new(*v) else { return };
            if let Some(hook) = crate::dlsym::own_export(&c) {
                // SAFETY: the caller's out-pointer.
                unsafe { *pfn = hook };
            }
            return;
        }
    }
    let base = s.trim_end_matches("_ptsz").trim_end_matches("_ptds");
    let base = base.strip_suffix("_v2").or_else(|| base.strip_suffix("_v3")).unwrap_or(base);
    if RELEVANT.contains(&base) {
        observed::blind(&format!("cuGetProcAddress handed out a {s} that no hook stands for"));
    }
}

/// `cuGetProcAddress(symbol, &pfn, version, flags)`.
pub unsafe fn get_proc_address_v1(i: usize, symbol: *const c_char, pfn: *mut Ptr, version: c_int, flags: u64) -> CuResult {
    let r = call_real!(i, fn(*const c_char, *mut Ptr, c_int, u64), symbol, pfn, version, flags);
    if r == CUDA_SUCCESS {
        report(|| hand_out(symbol, pfn));
    }
    r
}

/// `cuGetProcAddress_v2(symbol, &pfn, version, flags, &status)`.
pub unsafe fn get_proc_address_v2(i: usize, symbol: *const c_char, pfn: *mut Ptr, version: c_int, flags: u64, status: *mut c_int) -> CuResult {
    let r = call_real!(i, fn(*const c_char, *mut Ptr, c_int, u64, *mut c_int), symbol, pfn, version, flags, status);
    if r == CUDA_SUCCESS {
        report(|| hand_out(symbol, pfn));
    }
    r
}

/// The driver functions the capture view calls (real ones, never hooks).
struct DriverView {
    capture_info_v3: Option<unsafe extern "C" fn(Ptr, *mut c_int, *mut u64, *mut Ptr, *mut *const Ptr, *mut *const c_void, *mut usize) -> CuResult>,
    capture_info_v2: Option<unsafe extern "C" fn(Ptr, *mut c_int, *mut u64, *mut Ptr, *mut *const Ptr, *mut usize) -> CuResult>,
    deps_v2: Option<unsafe extern "C" fn(Ptr, *mut Ptr, *mut c_void, *mut usize) -> CuResult>,
    deps_v1: Option<unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CuResult>,
    node_type: unsafe extern "C" fn(Ptr, *mut c_int) -> CuResult,
    kernel_params_v2: Option<unsafe extern "C" fn(Ptr, *mut u8) -> CuResult>,
    kernel_params_v1: Option<unsafe extern "C" fn(Ptr, *mut u8) -> CuResult>,
    child_graph: unsafe extern "C" fn(Ptr, *mut Ptr) -> CuResult,
    graph_nodes: unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CuResult,
}

static DRIVER_VIEW: OnceLock<Option<DriverView>> = OnceLock::new();

impl DriverView {
    fn load() -> Option<DriverView> {
        /// The real driver function `name`, as the function-pointer type `T`.
        fn f<T: Copy>(name: &CStr) -> Option<T> {
            let p = driver(name);
            // SAFETY: `T` is that function's C signature (declared on each field above).
            (p != 0).then(|| unsafe { std::mem::transmute_copy::<usize, T>(&p) })
        }
        let v = DriverView {
            capture_info_v3: f(c"cuStreamGetCaptureInfo_v3"),
            capture_info_v2: f(c"cuStreamGetCaptureInfo_v2"),
            deps_v2: f(c"cuGraphNodeGetDependencies_v2"),
            deps_v1: f(c"cuGraphNodeGetDependencies"),
            node_type: f(c"cuGraphNodeGetType")?,
            kernel_params_v2: f(c"cuGraphKernelNodeGetParams_v2"),
            kernel_params_v1: f(c"cuGraphKernelNodeGetParams"),
            child_graph: f(c"cuGraphChildGraphNodeGetGraph")?,
            graph_nodes: f(c"cuGraphGetNodes")?,
        };
        let complete = (v.capture_info_v3.is_some() || v.capture_info_v2.is_some())
            && (v.deps_v2.is_some() || v.deps_v1.is_some())
            && (v.kernel_params_v2.is_some() || v.kernel_params_v1.is_some());
        complete.then_some(v)
    }
}

fn cu(call: &str, r: CuResult) -> Result<(), String> {
    if r == CUDA_SUCCESS { Ok(()) } else { Err(format!("{call} returned CUresult {r}")) }
}

impl CaptureView for DriverView {
    unsafe fn capture(&self, stream: RawStream) -> Result<Option<Capture>, String> {
        let s = stream.0 as Ptr;
        let (mut status, mut id, mut graph, mut deps, mut n) = (0, 0u64, std::ptr::null_mut(), std::ptr::null(), 0usize);
        // SAFETY: the caller's stream; the out-pointers are ours.
        let r = unsafe {
            match (self.capture_info_v3, self.capture_info_v2) {
                (Some(f), _) => f(s, &mut status, &mut id, &mut graph, &mut deps, std::ptr::null_mut(), &mut n),
                (None, Some(f)) => f(s, &mut status, &mut id, &mut graph, &mut deps, &mut n),
                (None, None) => return Ok(None),
            }
        };
        cu("cuStreamGetCaptureInfo", r)?;
        if status != CAPTURE_ACTIVE {
            return Ok(None);
        }
        // SAFETY: the driver's array of `n` nodes, valid until the next capture call on the stream.
        let tail = if deps.is_null() { Vec::new() } else { (0..n).map(|i| unsafe { *deps.add(i) } as usize).collect() };
        Ok(Some(Capture { id, graph: graph as usize, tail }))
    }

    unsafe fn deps(&self, node: usize) -> Result<Vec<usize>, String> {
        let n = node as Ptr;
        let mut count = 0usize;
        // SAFETY: a live node; the first call only counts, the second fills our buffer.
        unsafe {
            match (self.deps_v2, self.deps_v1) {
                (Some(f), _) => {
                    cu("cuGraphNodeGetDependencies_v2", f(n, std::ptr::null_mut(), std::ptr::null_mut(), &mut count))?;
                    let mut out = vec![std::ptr::null_mut(); count];
                    cu("cuGraphNodeGetDependencies_v2", f(n, out.as_mut_ptr(), std::ptr::null_mut(), &mut count))?;
                    Ok(out.into_iter().take(count).map(|p| p as usize).collect())
                }
                (None, Some(f)) => {
                    cu("cuGraphNodeGetDependencies", f(n, std::ptr::null_mut(), &mut count))?;
                    let mut out = vec![std::ptr::null_mut(); count];
                    cu("cuGraphNodeGetDependencies", f(n, out.as_mut_ptr(), &mut count))?;
                    Ok(out.into_iter().take(count).map(|p| p as usize).collect())
                }
                (None, None) => Err("no cuGraphNodeGetDependencies".into()),
            }
        }
    }

    unsafe fn kernel(&self, node: usize) -> Result<Vec<usize>, String> {
        let n = node as Ptr;
        let mut t = -1;
        // SAFETY: a live node.
        cu("cuGraphNodeGetType", unsafe { (self.node_type)(n, &mut t) })?;
        if t != NODE_KERNEL {
            return Ok(Vec::new());
        }
        // Room for the largest layout (`_v2`: 72 bytes), aligned.
        let mut params = [0u64; 16];
        let p = params.as_mut_ptr().cast::<u8>();
        // SAFETY: a kernel node; the driver writes one parameter struct into our buffer.
        unsafe {
            match (self.kernel_params_v2, self.kernel_params_v1) {
                (Some(f), _) => {
                    cu("cuGraphKernelNodeGetParams_v2", f(n, p))?;
                    Ok(kernel_ids(p, true))
                }
                (None, Some(f)) => {
                    cu("cuGraphKernelNodeGetParams", f(n, p))?;
                    Ok(kernel_ids(p, false))
                }
                (None, None) => Err("no cuGraphKernelNodeGetParams".into()),
            }
        }
    }

    unsafe fn embedded(&self, node: usize) -> Result<Option<usize>, String> {
        let n = node as Ptr;
        let mut t = -1;
        // SAFETY: a live node.
        cu("cuGraphNodeGetType", unsafe { (self.node_type)(n, &mut t) })?;
        if t != NODE_GRAPH {
            return Ok(None);
        }
        let mut g = std::ptr::null_mut();
        // SAFETY: a child graph node.
        cu("cuGraphChildGraphNodeGetGraph", unsafe { (self.child_graph)(n, &mut g) })?;
        Ok(Some(g as usize))
    }

    unsafe fn nodes(&self, graph: usize) -> Result<Vec<usize>, String> {
        let g = graph as Ptr;
        let mut count = 0usize;
        // SAFETY: a live graph; count, then fill our buffer.
        unsafe {
            cu("cuGraphGetNodes", (self.graph_nodes)(g, std::ptr::null_mut(), &mut count))?;
            let mut out = vec![std::ptr::null_mut(); count];
            cu("cuGraphGetNodes", (self.graph_nodes)(g, out.as_mut_ptr(), &mut count))?;
            Ok(out.into_iter().take(count).map(|p| p as usize).collect())
        }
    }
}

/// A view of the driver for the engine (its own instance; the hooks share a static one).
struct SharedView;

impl CaptureView for SharedView {
    unsafe fn capture(&self, stream: RawStream) -> Result<Option<Capture>, String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { shared()?.capture(stream) }
    }
    unsafe fn deps(&self, node: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared()?.deps(node) }
    }
    unsafe fn kernel(&self, node: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared()?.kernel(node) }
    }
    unsafe fn embedded(&self, node: usize) -> Result<Option<usize>, String> {
        // SAFETY: as above.
        unsafe { shared()?.embedded(node) }
    }
    unsafe fn nodes(&self, graph: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared()?.nodes(graph) }
    }
}

fn shared() -> Result<&'static DriverView, String> {
    DRIVER_VIEW.get_or_init(DriverView::load).as_ref().ok_or_else(|| "the CUDA driver lacks the graph calls a capture view needs".into())
}

/// The driver's capture view, if libcuda has what it needs.
pub fn view() -> Option<Box<dyn CaptureView>> {
    shared().ok().map(|_| Box::new(SharedView) as Box<dyn CaptureView>)
}

/// Defines the driver's hooked entry points in the calling (cdylib) crate, under the
/// driver's names ([`VARIANTS`]), each calling its hook here.
#[macro_export]
macro_rules! cuda_graph_hooks {
    () => {
        $crate::cuda_graph_hooks!(@ begin1 cuStreamBeginCapture, cuStreamBeginCapture_ptsz);
        $crate::cuda_graph_hooks!(@ begin2 cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz);
        $crate::cuda_graph_hooks!(@ to_graph cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz);
        $crate::cuda_graph_hooks!(@ end cuStreamEndCapture, cuStreamEndCapture_ptsz);
        $crate::cuda_graph_hooks!(@ one graph_destroy cuGraphDestroy);
        $crate::cuda_graph_hooks!(@ one exec_destroy cuGraphExecDestroy);
        $crate::cuda_graph_hooks!(@ legacy cuGraphInstantiate, cuGraphInstantiate_v2);
        $crate::cuda_graph_hooks!(@ launch cuGraphLaunch, cuGraphLaunch_ptsz);
        $crate::cuda_graph_hooks!(@ params cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz);
        $crate::cuda_graph_hooks!(@ kernel false cuGraphAddKernelNode, cuGraphKernelNodeSetParams, cuGraphExecKernelNodeSetParams);
        $crate::cuda_graph_hooks!(@ kernel true cuGraphAddKernelNode_v2, cuGraphKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams_v2);

        /// CUresult cuGraphClone(CUgraph *clone, CUgraph original).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphClone(clone: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphClone");
            // SAFETY: the caller's arguments, passed on.
            unsafe { $crate::graphs::cuda::graph_clone(I, clone, graph) }
        }

        /// CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphInstantiateWithFlags(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, flags: u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphInstantiateWithFlags");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::instantiate_with_flags(I, exec, graph, flags) }
        }

        /// CUresult cuGraphExecUpdate(CUgraphExec, CUgraph, CUgraphNode *errorNode, CUgraphExecUpdateResult *result).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphExecUpdate(exec: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, err: *mut *mut ::std::ffi::c_void, result: *mut ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphExecUpdate");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::exec_update_v1(I, exec, graph, err, result) }
        }

        /// CUresult cuGraphExecUpdate_v2(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *info).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphExecUpdate_v2(exec: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, info: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphExecUpdate_v2");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::exec_update_v2(I, exec, graph, info) }
        }

        /// CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph, const CUgraphNode *deps, size_t n, CUgraph child).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphAddChildGraphNode(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, child: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphAddChildGraphNode");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::add_child_graph_node(I, node, graph, deps, n, child) }
        }

        /// CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode, CUgraph *graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphChildGraphNodeGetGraph(node: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphChildGraphNodeGetGraph");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::child_graph_node_get_graph(I, node, graph) }
        }

        /// CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec, CUgraphNode, CUgraph child).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphExecChildGraphNodeSetParams(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, child: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphExecChildGraphNodeSetParams");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::exec_child_graph_node_set_params(I, exec, node, child) }
        }

        /// CUresult cuGraphAddNode(CUgraphNode *node, CUgraph, const CUgraphNode *deps, size_t n, CUgraphNodeParams *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphAddNode(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphAddNode");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::add_node_v1(I, node, graph, deps, n, params) }
        }

        /// CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n, CUgraphNodeParams *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphAddNode_v2(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, edges: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphAddNode_v2");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::add_node_v2(I, node, graph, deps, edges, n, params) }
        }

        /// CUresult cuGraphNodeSetParams(CUgraphNode, CUgraphNodeParams *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphNodeSetParams(node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphNodeSetParams");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::node_set_params(I, node, params) }
        }

        /// CUresult cuGraphExecNodeSetParams(CUgraphExec, CUgraphNode, CUgraphNodeParams *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGraphExecNodeSetParams(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGraphExecNodeSetParams");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::exec_node_set_params(I, exec, node, params) }
        }

        /// CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGetProcAddress(symbol: *const ::std::ffi::c_char, pfn: *mut *mut ::std::ffi::c_void, version: ::std::ffi::c_int, flags: u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGetProcAddress");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::get_proc_address_v1(I, symbol, pfn, version, flags) }
        }

        /// CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *status).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn cuGetProcAddress_v2(symbol: *const ::std::ffi::c_char, pfn: *mut *mut ::std::ffi::c_void, version: ::std::ffi::c_int, flags: u64, status: *mut ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index("cuGetProcAddress_v2");
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::get_proc_address_v2(I, symbol, pfn, version, flags, status) }
        }
    };
    (@ begin1 $($name:ident),*) => { $(
        /// CUresult cuStreamBeginCapture(CUstream).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: the caller's arguments, passed on.
            unsafe { $crate::graphs::cuda::begin_capture_v1(I, stream) }
        }
    )* };
    (@ begin2 $($name:ident),*) => { $(
        /// CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, mode: ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::begin_capture_v2(I, stream, mode) }
        }
    )* };
    (@ to_graph $($name:ident),*) => { $(
        /// CUresult cuStreamBeginCaptureToGraph(CUstream, CUgraph, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, edges: *mut ::std::ffi::c_void, n: usize, mode: ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::begin_capture_to_graph(I, stream, graph, deps, edges, n, mode) }
        }
    )* };
    (@ end $($name:ident),*) => { $(
        /// CUresult cuStreamEndCapture(CUstream, CUgraph *graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::end_capture(I, stream, graph) }
        }
    )* };
    (@ one $hook:ident $name:ident) => {
        /// CUresult (one handle).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(h: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::$hook(I, h) }
        }
    };
    (@ legacy $($name:ident),*) => { $(
        /// CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph, CUgraphNode *errorNode, char *logBuffer, size_t bufferSize).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, err: *mut *mut ::std::ffi::c_void, log: *mut ::std::ffi::c_char, size: usize) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::instantiate_legacy(I, exec, graph, err, log, size) }
        }
    )* };
    (@ launch $($name:ident),*) => { $(
        /// CUresult cuGraphLaunch(CUgraphExec, CUstream).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::launch(I, exec, stream) }
        }
    )* };
    (@ params $($name:ident),*) => { $(
        /// CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, params: *mut u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::instantiate_with_params(I, exec, graph, params) }
        }
    )* };
    (@ kernel $v2:literal $add:ident, $set:ident, $exec_set:ident) => {
        /// CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph, const CUgraphNode *deps, size_t n, const CUDA_KERNEL_NODE_PARAMS *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $add(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($add));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::add_kernel_node(I, $v2, node, graph, deps, n, params) }
        }

        /// CUresult cuGraphKernelNodeSetParams(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set(node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($set));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::kernel_node_set_params(I, $v2, node, params) }
        }

        /// CUresult cuGraphExecKernelNodeSetParams(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *params).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $exec_set(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::cuda::index(stringify!($exec_set));
            // SAFETY: as above.
            unsafe { $crate::graphs::cuda::exec_kernel_node_set_params(I, $v2, exec, node, params) }
        }
    };
}
