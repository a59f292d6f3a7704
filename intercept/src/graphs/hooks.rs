//! The graph calls of a GPU runtime (the CUDA driver, HIP), hooked: one set of hooks over one
//! table per API ([`Api`]: `graphs::cuda::API`, `graphs::hip::API`).
//!
//! Every entry point that can put a plan's kernels into a graph or an instantiation, or take
//! them out, has a hook here (one per exported name, `_v2`, `_ptsz` and `_spt` variants
//! included: `Api::variants`): it calls the real function and reports what it did to the
//! registry (`notify`). The interposers export the hooks under the runtime's names
//! ([`crate::graph_hooks!`]), so a program linked to the runtime reaches them, and their
//! `dlsym` gives them to a program that looks them up on the runtime's handle
//! (`crate::dlsym`). The CUDA runtime (static or shared) takes every driver function from
//! `cuGetProcAddress`, which is hooked too (as is `hipGetProcAddress`): when the function it
//! returns is one of the variants here, the caller gets the hook instead. A graph function it
//! returns that is *not* one of them (a runtime newer than the table) makes the interposer
//! blind (`observed::blind`): captured plans are then kept for the process's life, never
//! followed on a partial view.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use hipfft_pool::RawStream;

use crate::graphs::view::{Capture, CaptureView};
use crate::graphs::{notify, observed};

/// `CUresult`, `hipError_t`.
pub type CuResult = c_int;
type Ptr = *mut c_void;

const SUCCESS: CuResult = 0;
/// `CUDA_ERROR_NOT_FOUND`, `hipErrorNotFound`.
const ERROR_NOT_FOUND: CuResult = 500;
/// Node types both APIs number alike (kernel, child graph).
const NODE_KERNEL: c_int = 0;
const NODE_GRAPH: c_int = 4;
/// `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`, `hipGraphInstantiateFlagDeviceLaunch`.
const INSTANTIATE_DEVICE_LAUNCH: u64 = 4;
/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`, `hipStreamCaptureStatusActive`.
const CAPTURE_ACTIVE: c_int = 1;

/// The names of the runtime functions a capture view calls.
pub struct ViewNames {
    pub capture_info_v3: Option<&'static CStr>,
    pub capture_info_v2: &'static CStr,
    pub deps_v2: Option<&'static CStr>,
    pub deps_v1: &'static CStr,
    pub node_type: &'static CStr,
    pub kernel_params_v2: Option<&'static CStr>,
    pub kernel_params_v1: &'static CStr,
    pub child_graph: &'static CStr,
    pub graph_nodes: &'static CStr,
}

/// One runtime's graph API, as the hooks need it.
pub struct Api {
    /// For messages ("CUDA driver", "HIP runtime").
    pub name: &'static str,
    /// The mapped library's file-name prefix (`libcuda.so`, `libamdhip64.so`).
    pub library: &'static str,
    /// Sonames to find it by.
    pub sonames: &'static [&'static CStr],
    /// The hooked entry points, by exported name (a hook's index is its place here).
    pub variants: &'static [&'static str],
    /// The real function behind each variant (0: not known yet).
    pub real: &'static [AtomicUsize],
    /// Base names (no `_v2`, `_ptsz`, `_spt`) of functions that can move a plan's kernels.
    pub relevant: &'static [&'static str],
    /// Prefixes of the names the proc address hook looks at.
    pub proc_prefixes: &'static [&'static str],
    /// Offset of `func` in the kernel node parameters.
    pub kernel_func: usize,
    /// Offset of the kernel handle in the `_v2` kernel node parameters, if the API has one.
    pub kernel_kern: Option<usize>,
    /// The conditional node's type value, if the API has conditional nodes.
    pub node_conditional: Option<c_int>,
    pub view_names: ViewNames,
    pub handle: OnceLock<usize>,
    pub view: OnceLock<Option<DriverView>>,
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

/// The runtime library, as the process loaded it (by soname, or the mapped object whose file
/// name starts with the API's prefix).
fn library(api: &Api) -> Ptr {
    *api.handle.get_or_init(|| {
        for soname in api.sonames {
            // SAFETY: RTLD_NOLOAD takes a reference on an object already mapped.
            let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if !h.is_null() {
                return h as usize;
            }
        }
        let names = crate::real::Names { var: "", stem: api.library, not: &[], sonames: &[] };
        if let Some(path) = crate::real::find_mapped(&names).and_then(|p| std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).ok()) {
            // SAFETY: as above.
            let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if !h.is_null() {
                return h as usize;
            }
        }
        // SAFETY: the runtime library the process would load for its own calls.
        api.sonames.first().map_or(0, |s| unsafe { libc::dlopen(s.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) } as usize)
    }) as Ptr
}

/// The runtime's real function `name` (never a hook).
fn driver(api: &Api, name: &CStr) -> usize {
    let h = library(api);
    if h.is_null() {
        return 0;
    }
    // SAFETY: a dlopen handle and a C string.
    let p = unsafe { crate::dlsym::lookup(h, name) } as usize;
    if crate::dlsym::own_export(name).is_some_and(|o| o as usize == p) { 0 } else { p }
}

/// The real function of variant `i` of `api`.
fn real(api: &Api, i: usize) -> usize {
    match api.real[i].load(Ordering::Acquire) {
        0 => {
            let name = std::ffi::CString::new(api.variants[i]).expect("no NUL in names");
            let p = driver(api, &name);
            if p != 0 {
                api.real[i].store(p, Ordering::Release);
            }
            p
        }
        p => p,
    }
}

/// `dlsym` handed out our hook for `name` in place of the real `found`: the hook calls it.
pub fn note_real(name: &CStr, found: Ptr) {
    if let Ok(n) = name.to_str() {
        for api in [&crate::graphs::cuda::API, &crate::graphs::hip::API] {
            if let Some(i) = api.variants.iter().position(|v| *v == n) {
                let _ = api.real[i].compare_exchange(0, found as usize, Ordering::AcqRel, Ordering::Acquire);
            }
        }
    }
}

/// Calls `f` unless the real function is missing (then `ERROR_NOT_FOUND`).
macro_rules! call_real {
    ($api:expr, $i:expr, fn($($t:ty),*), $($a:expr),*) => {{
        let p = real($api, $i);
        if p == 0 {
            ERROR_NOT_FOUND
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

/// The kernel identities in a kernel node's parameters: `func`, and (in the layouts that
/// have one) the kernel handle.
///
/// # Safety
/// `p` is null or points at `api`'s kernel node parameters (`v2`: the `_v2` layout).
unsafe fn kernel_ids(api: &Api, p: *const u8, v2: bool) -> Vec<usize> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the layout's offsets (`Api::kernel_func`, `Api::kernel_kern`).
    let (func, kern) = unsafe {
        (
            p.add(api.kernel_func).cast::<usize>().read_unaligned(),
            match (v2, api.kernel_kern) {
                (true, Some(at)) => p.add(at).cast::<usize>().read_unaligned(),
                _ => 0,
            },
        )
    };
    [func, kern].into_iter().filter(|v| *v != 0).collect()
}

/// What generic node parameters (`CUgraphNodeParams`, `hipGraphNodeParams`) add: the
/// node's type, its kernel's identities, or the child graph it embeds.
///
/// # Safety
/// `p` is null or points at `api`'s generic node parameters.
unsafe fn node_params(api: &Api, p: *const u8) -> (c_int, Vec<usize>, usize) {
    if p.is_null() {
        return (-1, Vec::new(), 0);
    }
    // SAFETY: `type` leads the struct; the union starts at 16 (after `int reserved0[3]`),
    // holding the newest kernel parameter layout.
    unsafe {
        let t = p.cast::<c_int>().read_unaligned();
        match t {
            NODE_KERNEL => (t, kernel_ids(api, p.add(16), true), 0),
            NODE_GRAPH => (t, Vec::new(), p.add(16).cast::<usize>().read_unaligned()),
            _ => (t, Vec::new(), 0),
        }
    }
}

/// The capture in progress on `stream`, through the real runtime.
fn capture_of(api: &'static Api, stream: Ptr) -> Option<Capture> {
    // SAFETY: the caller's stream, passed to a call that takes it.
    shared(api).ok().and_then(|v| unsafe { v.capture(RawStream(stream as usize)) }.ok().flatten())
}

fn begun(api: &'static Api, stream: Ptr) {
    if let Some(c) = capture_of(api, stream) {
        observed::begun(stream as usize, c.id);
    }
}

/// `cuStreamBeginCapture` (one argument; also its `_ptsz`).
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn begin_capture_v1(api: &'static Api, i: usize, stream: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr), stream);
    if r == SUCCESS {
        report(|| begun(api, stream));
    }
    r
}

/// `cuStreamBeginCapture_v2(stream, mode)` (also its `_ptsz`).
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn begin_capture_v2(api: &'static Api, i: usize, stream: Ptr, mode: c_int) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, c_int), stream, mode);
    if r == SUCCESS {
        report(|| begun(api, stream));
    }
    r
}

/// `cuStreamBeginCaptureToGraph(stream, graph, deps, edges, n, mode)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn begin_capture_to_graph(api: &'static Api, i: usize, stream: Ptr, graph: Ptr, deps: Ptr, edges: Ptr, n: usize, mode: c_int) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, Ptr, Ptr, usize, c_int), stream, graph, deps, edges, n, mode);
    if r == SUCCESS {
        report(|| begun(api, stream));
    }
    r
}

/// `cuStreamEndCapture(stream, &graph)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn end_capture(api: &'static Api, i: usize, stream: Ptr, graph: *mut Ptr) -> CuResult {
    let id = if notify::captures_held() { capture_of(api, stream).map(|c| c.id) } else { None };
    let r = call_real!(api, i, fn(Ptr, *mut Ptr), stream, graph);
    report(|| {
        observed::ended(stream as usize);
        if let Some(id) = id {
            // SAFETY: written by the driver on success.
            let g = (r == SUCCESS && !graph.is_null()).then(|| unsafe { *graph } as usize);
            notify::capture_ended(id, g);
        }
    });
    r
}

/// The hook of `graph_destroy`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn graph_destroy(api: &'static Api, i: usize, graph: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr), graph);
    if r == SUCCESS {
        report(|| notify::graph_destroyed(graph as usize));
    }
    r
}

/// The hook of `graph_clone`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn graph_clone(api: &'static Api, i: usize, clone: *mut Ptr, graph: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr), clone, graph);
    if r == SUCCESS {
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
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn instantiate_legacy(api: &'static Api, i: usize, exec: *mut Ptr, graph: Ptr, err: *mut Ptr, log: *mut c_char, size: usize) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, *mut Ptr, *mut c_char, usize), exec, graph, err, log, size);
    if r == SUCCESS {
        instantiated(exec, graph, 0);
    }
    r
}

/// The hook of `instantiate_with_flags`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn instantiate_with_flags(api: &'static Api, i: usize, exec: *mut Ptr, graph: Ptr, flags: u64) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, u64), exec, graph, flags);
    if r == SUCCESS {
        instantiated(exec, graph, flags);
    }
    r
}

/// `cuGraphInstantiateWithParams(exec, graph, params)`: `flags` leads the parameters.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn instantiate_with_params(api: &'static Api, i: usize, exec: *mut Ptr, graph: Ptr, params: *mut u64) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, *mut u64), exec, graph, params);
    if r == SUCCESS {
        // SAFETY: the caller's parameters, read after the call.
        let flags = if params.is_null() { 0 } else { unsafe { params.read_unaligned() } };
        instantiated(exec, graph, flags);
    }
    r
}

/// `cuGraphExecUpdate(exec, graph, &error node, &result)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_update_v1(api: &'static Api, i: usize, exec: Ptr, graph: Ptr, err: *mut Ptr, result: *mut c_int) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, *mut Ptr, *mut c_int), exec, graph, err, result);
    report(|| notify::updated(exec as usize, graph as usize, r == SUCCESS));
    r
}

/// `cuGraphExecUpdate_v2(exec, graph, &result info)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_update_v2(api: &'static Api, i: usize, exec: Ptr, graph: Ptr, info: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, Ptr), exec, graph, info);
    report(|| notify::updated(exec as usize, graph as usize, r == SUCCESS));
    r
}

/// The hook of `exec_destroy`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_destroy(api: &'static Api, i: usize, exec: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr), exec);
    if r == SUCCESS {
        report(|| notify::exec_destroyed(exec as usize));
    }
    r
}

/// The hook of `launch`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn launch(api: &'static Api, i: usize, exec: Ptr, stream: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr), exec, stream);
    if r == SUCCESS {
        report(|| {
            if notify::any_held() {
                let into = capture_of(api, stream).map(|c| c.graph);
                notify::launched(exec as usize, RawStream(stream as usize), into);
            }
        });
    }
    r
}

/// `cuGraphAddKernelNode` (`v2`: the `_v2` parameter layout).
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn add_kernel_node(api: &'static Api, i: usize, v2: bool, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, n, params);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: the caller's parameters of that layout; the node written on success.
        report(|| notify::kernel_added(graph as usize, unsafe { *node } as usize, &unsafe { kernel_ids(api, params, v2) }));
    }
    r
}

/// The hook of `kernel_node_set_params`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn kernel_node_set_params(api: &'static Api, i: usize, v2: bool, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, *const u8), node, params);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: the caller's parameters of that layout.
        report(|| notify::kernel_set(node as usize, &unsafe { kernel_ids(api, params, v2) }));
    }
    r
}

/// The hook of `exec_kernel_node_set_params`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_kernel_node_set_params(api: &'static Api, i: usize, v2: bool, exec: Ptr, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, *const u8), exec, node, params);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: as above.
        report(|| notify::exec_kernel_set(exec as usize, &unsafe { kernel_ids(api, params, v2) }));
    }
    r
}

/// The hook of `add_child_graph_node`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn add_child_graph_node(api: &'static Api, i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, child: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, Ptr, usize, Ptr), node, graph, deps, n, child);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: the node written on success.
        report(|| notify::child_added(graph as usize, unsafe { *node } as usize, child as usize));
    }
    r
}

/// The hook of `child_graph_node_get_graph`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn child_graph_node_get_graph(api: &'static Api, i: usize, node: Ptr, graph: *mut Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, *mut Ptr), node, graph);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: written on success.
        report(|| notify::embedded(node as usize, unsafe { *graph } as usize));
    }
    r
}

/// The hook of `exec_child_graph_node_set_params`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_child_graph_node_set_params(api: &'static Api, i: usize, exec: Ptr, node: Ptr, child: Ptr) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, Ptr), exec, node, child);
    if r == SUCCESS && notify::any_held() {
        report(|| notify::exec_child_set(exec as usize, child as usize));
    }
    r
}

/// What `cuGraphAddNode` / `_v2` added: a kernel, a child graph, or a conditional node whose
/// body graphs the graph now owns.
///
/// # Safety
/// `params` points at the `CUgraphNodeParams` the call took; `node` was written.
unsafe fn added_node(api: &Api, graph: Ptr, node: *mut Ptr, params: *const u8) {
    // SAFETY: the caller's contract.
    let (t, ids, child) = unsafe { node_params(api, params) };
    // SAFETY: written by the driver on success.
    let n = if node.is_null() { 0 } else { (unsafe { *node }) as usize };
    match t {
        NODE_KERNEL => notify::kernel_added(graph as usize, n, &ids),
        NODE_GRAPH => notify::child_added(graph as usize, n, child),
        t if Some(t) == api.node_conditional => {
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

/// The hook of `add_node_v1`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn add_node_v1(api: &'static Api, i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, n, params);
    if r == SUCCESS {
        // SAFETY: as `added_node` requires.
        report(|| unsafe { added_node(api, graph, node, params) });
    }
    r
}

/// The hook of `add_node_v2`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn add_node_v2(api: &'static Api, i: usize, node: *mut Ptr, graph: Ptr, deps: Ptr, edges: Ptr, n: usize, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(*mut Ptr, Ptr, Ptr, Ptr, usize, *const u8), node, graph, deps, edges, n, params);
    if r == SUCCESS {
        // SAFETY: as `added_node` requires.
        report(|| unsafe { added_node(api, graph, node, params) });
    }
    r
}

/// The hook of `node_set_params`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn node_set_params(api: &'static Api, i: usize, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, *const u8), node, params);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: the caller's `CUgraphNodeParams`.
        let (t, ids, _) = unsafe { node_params(api, params) };
        match t {
            NODE_KERNEL => report(|| notify::kernel_set(node as usize, &ids)),
            // A child graph set on a node of a graph: not followed.
            t if t == NODE_GRAPH || Some(t) == api.node_conditional => observed::blind("a child or conditional node's parameters set"),
            _ => {}
        }
    }
    r
}

/// The hook of `exec_node_set_params`'s variants.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn exec_node_set_params(api: &'static Api, i: usize, exec: Ptr, node: Ptr, params: *const u8) -> CuResult {
    let r = call_real!(api, i, fn(Ptr, Ptr, *const u8), exec, node, params);
    if r == SUCCESS && notify::any_held() {
        // SAFETY: the caller's `CUgraphNodeParams`.
        let (t, ids, child) = unsafe { node_params(api, params) };
        match t {
            NODE_KERNEL => report(|| notify::exec_kernel_set(exec as usize, &ids)),
            NODE_GRAPH => report(|| notify::exec_child_set(exec as usize, child)),
            t if Some(t) == api.node_conditional => observed::blind("a conditional node's parameters set on an instantiation"),
            _ => {}
        }
    }
    r
}

/// What `cuGetProcAddress` (`hipGetProcAddress`) handed out for `symbol`: the hook standing
/// for that very function when there is one; for a graph function with none, the real one
/// (and the interposer goes blind).
fn hand_out(api: &Api, symbol: *const c_char, pfn: *mut Ptr) {
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
    if !api.proc_prefixes.iter().any(|p| s.starts_with(p)) {
        return;
    }
    let found_at = found as usize;
    // Already a hook (a library that takes its own exported names' addresses gets ours).
    if crate::dlsym::is_own(found) {
        return;
    }
    for (i, v) in api.variants.iter().enumerate() {
        if real(api, i) == found_at {
            let Ok(c) = std::ffi::CString::new(*v) else { return };
            if let Some(hook) = crate::dlsym::own_export(&c) {
                // SAFETY: the caller's out-pointer.
                unsafe { *pfn = hook };
            }
            return;
        }
    }
    let base = s.trim_end_matches("_ptsz").trim_end_matches("_ptds").trim_end_matches("_spt");
    let base = base.strip_suffix("_v2").or_else(|| base.strip_suffix("_v3")).unwrap_or(base);
    if api.relevant.contains(&base) {
        observed::blind(&format!("the runtime's proc address lookup handed out a {s} that no hook stands for"));
    }
}

/// `cuGetProcAddress(symbol, &pfn, version, flags)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn get_proc_address_v1(api: &'static Api, i: usize, symbol: *const c_char, pfn: *mut Ptr, version: c_int, flags: u64) -> CuResult {
    let r = call_real!(api, i, fn(*const c_char, *mut Ptr, c_int, u64), symbol, pfn, version, flags);
    if r == SUCCESS {
        report(|| hand_out(api, symbol, pfn));
    }
    r
}

/// `cuGetProcAddress_v2(symbol, &pfn, version, flags, &status)`.
///
/// # Safety
/// The runtime function's C contract for these arguments, which are passed on unchanged;
/// `i` is the variant's index in `api.variants`.
pub unsafe fn get_proc_address_v2(api: &'static Api, i: usize, symbol: *const c_char, pfn: *mut Ptr, version: c_int, flags: u64, status: *mut c_int) -> CuResult {
    let r = call_real!(api, i, fn(*const c_char, *mut Ptr, c_int, u64, *mut c_int), symbol, pfn, version, flags, status);
    if r == SUCCESS {
        report(|| hand_out(api, symbol, pfn));
    }
    r
}

/// The runtime functions the capture view calls (real ones, never hooks).
pub struct DriverView {
    capture_info_v3: Option<unsafe extern "C" fn(Ptr, *mut c_int, *mut u64, *mut Ptr, *mut *const Ptr, *mut *const c_void, *mut usize) -> CuResult>,
    capture_info_v2: Option<unsafe extern "C" fn(Ptr, *mut c_int, *mut u64, *mut Ptr, *mut *const Ptr, *mut usize) -> CuResult>,
    deps_v2: Option<unsafe extern "C" fn(Ptr, *mut Ptr, *mut c_void, *mut usize) -> CuResult>,
    deps_v1: Option<unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CuResult>,
    node_type: unsafe extern "C" fn(Ptr, *mut c_int) -> CuResult,
    kernel_params_v2: Option<unsafe extern "C" fn(Ptr, *mut u8) -> CuResult>,
    kernel_params_v1: Option<unsafe extern "C" fn(Ptr, *mut u8) -> CuResult>,
    child_graph: unsafe extern "C" fn(Ptr, *mut Ptr) -> CuResult,
    graph_nodes: unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CuResult,
    kernel_func: usize,
    kernel_kern: Option<usize>,
}

impl DriverView {
    fn load(api: &Api) -> Option<DriverView> {
        /// The real function `name`, as the function-pointer type `T`.
        fn f<T: Copy>(api: &Api, name: Option<&CStr>) -> Option<T> {
            let p = driver(api, name?);
            // SAFETY: `T` is that function's C signature (declared on each field above).
            (p != 0).then(|| unsafe { std::mem::transmute_copy::<usize, T>(&p) })
        }
        let n = &api.view_names;
        let v = DriverView {
            capture_info_v3: f(api, n.capture_info_v3),
            capture_info_v2: f(api, Some(n.capture_info_v2)),
            deps_v2: f(api, n.deps_v2),
            deps_v1: f(api, Some(n.deps_v1)),
            node_type: f(api, Some(n.node_type))?,
            kernel_params_v2: f(api, n.kernel_params_v2),
            kernel_params_v1: f(api, Some(n.kernel_params_v1)),
            child_graph: f(api, Some(n.child_graph))?,
            graph_nodes: f(api, Some(n.graph_nodes))?,
            kernel_func: api.kernel_func,
            kernel_kern: api.kernel_kern,
        };
        let complete = (v.capture_info_v3.is_some() || v.capture_info_v2.is_some())
            && (v.deps_v2.is_some() || v.deps_v1.is_some())
            && (v.kernel_params_v2.is_some() || v.kernel_params_v1.is_some());
        complete.then_some(v)
    }
}

fn cu(call: &str, r: CuResult) -> Result<(), String> {
    if r == SUCCESS { Ok(()) } else { Err(format!("{call} returned error {r}")) }
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
                    cu("the kernel node parameters (_v2)", f(n, p))?;
                    Ok(ids_at(p, self.kernel_func, self.kernel_kern))
                }
                (None, Some(f)) => {
                    cu("the kernel node parameters", f(n, p))?;
                    Ok(ids_at(p, self.kernel_func, None))
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

/// `api`'s view, shared by its hooks and the engine.
struct SharedView(&'static Api);

impl CaptureView for SharedView {
    unsafe fn capture(&self, stream: RawStream) -> Result<Option<Capture>, String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { shared(self.0)?.capture(stream) }
    }
    unsafe fn deps(&self, node: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared(self.0)?.deps(node) }
    }
    unsafe fn kernel(&self, node: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared(self.0)?.kernel(node) }
    }
    unsafe fn embedded(&self, node: usize) -> Result<Option<usize>, String> {
        // SAFETY: as above.
        unsafe { shared(self.0)?.embedded(node) }
    }
    unsafe fn nodes(&self, graph: usize) -> Result<Vec<usize>, String> {
        // SAFETY: as above.
        unsafe { shared(self.0)?.nodes(graph) }
    }
}

fn shared(api: &'static Api) -> Result<&'static DriverView, String> {
    api.view.get_or_init(|| DriverView::load(api)).as_ref().ok_or_else(|| format!("the {} lacks the graph calls a capture view needs", api.name))
}

/// `api`'s capture view, if its runtime has what it needs.
pub fn view(api: &'static Api) -> Option<Box<dyn CaptureView>> {
    shared(api).ok().map(|_| Box::new(SharedView(api)) as Box<dyn CaptureView>)
}

/// The identities at offsets `func` (and `kern`) of parameters at `p`.
///
/// # Safety
/// `p` points at parameters of that layout.
unsafe fn ids_at(p: *const u8, func: usize, kern: Option<usize>) -> Vec<usize> {
    // SAFETY: the caller's contract.
    let (f, k) = unsafe { (p.add(func).cast::<usize>().read_unaligned(), kern.map_or(0, |at| p.add(at).cast::<usize>().read_unaligned())) };
    [f, k].into_iter().filter(|v| *v != 0).collect()
}


/// The index of `name` in `variants` (a const fn, for the exports' `const` indices).
pub const fn index(variants: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < variants.len() {
        if const_eq(variants[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("not a hooked variant")
}

/// Defines an API's hooked entry points in the calling (cdylib) crate under the runtime's
/// names, each calling its hook here: `graph_hooks!(API, VARIANTS; op: names; ...)`, where
/// `op` names the C signature (the same for both APIs' functions of one kind).
#[macro_export]
macro_rules! graph_hooks {
    ($api:path, $variants:path; $( $op:ident $([$flag:literal])? : $($name:ident),+ ; )*) => {
        $( $crate::graph_hooks!(@ $op [$($flag)?] $api, $variants; $($name),+); )*
    };
    (@ begin1 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(stream)`: begins a capture.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: the caller's arguments, passed on unchanged.
            unsafe { $crate::graphs::hooks::begin_capture_v1(&$api, I, stream) }
        }
    )+ };
    (@ begin2 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(stream, mode)`: begins a capture.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, mode: ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::begin_capture_v2(&$api, I, stream, mode) }
        }
    )+ };
    (@ to_graph [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(stream, graph, deps, edges, n, mode)`: begins a capture into a graph.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, edges: *mut ::std::ffi::c_void, n: usize, mode: ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::begin_capture_to_graph(&$api, I, stream, graph, deps, edges, n, mode) }
        }
    )+ };
    (@ end [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(stream, &graph)`: ends a capture.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::end_capture(&$api, I, stream, graph) }
        }
    )+ };
    (@ graph_destroy [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(graph)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::graph_destroy(&$api, I, graph) }
        }
    )+ };
    (@ exec_destroy [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_destroy(&$api, I, exec) }
        }
    )+ };
    (@ clone [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&clone, graph)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(clone: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::graph_clone(&$api, I, clone, graph) }
        }
    )+ };
    (@ legacy [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&exec, graph, &error node, log buffer, its size)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, err: *mut *mut ::std::ffi::c_void, log: *mut ::std::ffi::c_char, size: usize) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::instantiate_legacy(&$api, I, exec, graph, err, log, size) }
        }
    )+ };
    (@ flags [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&exec, graph, flags)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, flags: u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::instantiate_with_flags(&$api, I, exec, graph, flags) }
        }
    )+ };
    (@ params [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&exec, graph, instantiate params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, params: *mut u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::instantiate_with_params(&$api, I, exec, graph, params) }
        }
    )+ };
    (@ update_v1 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, graph, &error node, &result)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, err: *mut *mut ::std::ffi::c_void, result: *mut ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_update_v1(&$api, I, exec, graph, err, result) }
        }
    )+ };
    (@ update_v2 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, graph, &result info)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, info: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_update_v2(&$api, I, exec, graph, info) }
        }
    )+ };
    (@ launch [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, stream)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::launch(&$api, I, exec, stream) }
        }
    )+ };
    (@ add_kernel [$v2:literal] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&node, graph, deps, n, kernel params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::add_kernel_node(&$api, I, $v2, node, graph, deps, n, params) }
        }
    )+ };
    (@ set_kernel [$v2:literal] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(node, kernel params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::kernel_node_set_params(&$api, I, $v2, node, params) }
        }
    )+ };
    (@ exec_set_kernel [$v2:literal] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, node, kernel params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_kernel_node_set_params(&$api, I, $v2, exec, node, params) }
        }
    )+ };
    (@ add_child [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&node, graph, deps, n, child graph)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, child: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::add_child_graph_node(&$api, I, node, graph, deps, n, child) }
        }
    )+ };
    (@ child_graph [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(node, &graph)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::child_graph_node_get_graph(&$api, I, node, graph) }
        }
    )+ };
    (@ exec_child [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, node, child graph)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, child: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_child_graph_node_set_params(&$api, I, exec, node, child) }
        }
    )+ };
    (@ add_node_v1 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&node, graph, deps, n, node params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::add_node_v1(&$api, I, node, graph, deps, n, params) }
        }
    )+ };
    (@ add_node_v2 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(&node, graph, deps, edges, n, node params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *mut ::std::ffi::c_void, edges: *mut ::std::ffi::c_void, n: usize, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::add_node_v2(&$api, I, node, graph, deps, edges, n, params) }
        }
    )+ };
    (@ node_set [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(node, node params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::node_set_params(&$api, I, node, params) }
        }
    )+ };
    (@ exec_node_set [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(exec, node, node params)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, params: *const u8) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::exec_node_set_params(&$api, I, exec, node, params) }
        }
    )+ };
    (@ gpa_v1 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(symbol, &pfn, version, flags)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(symbol: *const ::std::ffi::c_char, pfn: *mut *mut ::std::ffi::c_void, version: ::std::ffi::c_int, flags: u64) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::get_proc_address_v1(&$api, I, symbol, pfn, version, flags) }
        }
    )+ };
    (@ gpa_v2 [] $api:path, $v:path; $($name:ident),+) => { $(
        /// `(symbol, &pfn, version, flags, &status)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(symbol: *const ::std::ffi::c_char, pfn: *mut *mut ::std::ffi::c_void, version: ::std::ffi::c_int, flags: u64, status: *mut ::std::ffi::c_int) -> ::std::ffi::c_int {
            const I: usize = $crate::graphs::hooks::index($v, stringify!($name));
            // SAFETY: as above.
            unsafe { $crate::graphs::hooks::get_proc_address_v2(&$api, I, symbol, pfn, version, flags, status) }
        }
    )+ };
}
