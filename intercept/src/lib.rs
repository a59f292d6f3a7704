//! The core of hipfft-pool's preloadable interposers.
//!
//! Two libraries export a framework-facing FFT plan API over this crate:
//! `libhipfft_pool_cufft.so` (cuFFT, `intercept/cufft/`) and `libhipfft_pool_hipfft.so`
//! (hipFFT with AMD's pointer handles, `intercept/hipfft/`). Each is a small cdylib of
//! `#[no_mangle]` functions written with [`export!`]; everything they do lives here:
//!
//! - [`engine`]: virtual handles, each execution leased from one process-wide [`hipfft_pool::PlanPool`];
//! - [`entry`]: the panic boundary, the re-entrancy guard, the one-time log of each failure;
//! - [`real`]: finding the real library, including one a Python extension loaded `RTLD_LOCAL`;
//! - [`cuda`]: the pool's runtime over that very libcufft and the CUDA runtime;
//! - [`capture`]: executions on a stream that is capturing a graph: how their plans are held;
//! - [`dlsym`]: the interposers' `dlsym`, which serves their functions to programs that look
//!   up libcuda's or libcufft's on handles of their own;
//! - [`graphs`]: the graphs that can still run a plan, followed through hooks of the
//!   runtime's graph calls;
//! - [`handle_values`]: the values handed out as handles, reused over a long life;
//! - [`arena`]: work areas for handles that leave allocation to the library;
//! - [`profile`]: the interposer's own host time in the process it serves (opt-in);
//! - [`process`]: what every file may read: the API this process loaded, the sim switch,
//!   the failure and capture counters (a leaf, so no file below the engine reaches up to it).
//!
//! The `hfp_intercept_*` functions below are exported by both libraries ([`export_common!`]).

pub mod arena;
pub mod capture;
pub mod codes;
pub mod cuda;
pub mod dlsym;
pub mod engine;
pub mod entry;
pub mod graphs;
pub mod handle_values;
pub mod process;
pub mod profile;
pub mod real;

use std::ffi::{c_char, c_int, c_long, c_void};

pub use codes::{Fail, Flavor, code, data_type};
pub use hipfft_pool::track_forks;
pub use engine::{Engine, ExecKind, PlanRequest, engine};

/// Defines exported C functions that return the library's result code (`int`).
///
/// Each expands to a `#[no_mangle] extern "C"` function that first takes the re-entrancy
/// route (a call made from inside the interposer goes to the real function of the same name,
/// at the same C signature), then runs the body behind the panic boundary. The body is an
/// expression of type `Result<(), Fail>`.
#[macro_export]
macro_rules! export {
    ($flavor:expr; $( $(#[$meta:meta])* fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block )*) => { $(
        $(#[$meta])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> ::std::ffi::c_int {
            type Real = unsafe extern "C" fn($($ty),*) -> ::std::ffi::c_int;
            static REAL: ::std::sync::OnceLock<usize> = ::std::sync::OnceLock::new();
            match $crate::entry::reentry($flavor, stringify!($name), &REAL) {
                $crate::entry::Route::Serve => {}
                $crate::entry::Route::Forward(addr) => {
                    // SAFETY: `addr` is the real library's function of this name, and this
                    // export copies that function's C signature.
                    let real = unsafe { ::std::mem::transmute::<usize, Real>(addr) };
                    // SAFETY: the caller's arguments, passed on unchanged.
                    return unsafe { real($($arg),*) };
                }
                $crate::entry::Route::Refuse(code) => return code,
            }
            $crate::entry::serve($flavor, stringify!($name), move || -> ::std::result::Result<(), $crate::Fail> { $body })
        }
    )* };
}

/// Writes `value` through an out-pointer argument named `name`, refusing a null one.
///
/// # Safety
/// `ptr` is null or valid for one write of `T`.
pub unsafe fn write_out<T>(ptr: *mut T, name: &str, value: T) -> Result<(), Fail> {
    if ptr.is_null() {
        return Err(Fail::invalid(name, "null pointer"));
    }
    // SAFETY: non-null, and valid for a write by the caller's contract.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Defines the `hfp_intercept_*` functions both libraries export, in the calling crate
/// (its own objects are exported; everything linked from archives is hidden by
/// `--exclude-libs,ALL`, which keeps the pool's `hfp_*` C ABI out of the interposers).
#[macro_export]
macro_rules! export_common {
    ($flavor:expr) => {
        /// Counts forks from the moment the library is loaded (`hipfft_pool::track_forks`): a
        /// child forked before the process's first FFT call is still known as a child, and
        /// writes its files to paths of its own.
        #[used]
        #[unsafe(link_section = ".init_array")]
        static HFP_TRACK_FORKS_AT_LOAD: extern "C" fn() = {
            extern "C" fn track() {
                $crate::track_forks();
            }
            track
        };

        /// int hfp_intercept_synchronize(void): waits until every execution enqueued through
        /// the interposer has completed; 0 on success, -1 on failure (see hfp_intercept_last_error).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_synchronize() -> ::std::ffi::c_int {
            $crate::synchronize()
        }

        /// const char *hfp_intercept_last_error(void): this thread's last failure message.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_last_error() -> *const ::std::ffi::c_char {
            $crate::last_error()
        }

        /// long hfp_intercept_sim_live_handles(void): the simulated runtime's own live count; -1 off the sim.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_live_handles() -> ::std::ffi::c_long {
            $crate::sim_live_handles()
        }

        /// long hfp_intercept_sim_peak_live_handles(void): the simulated runtime's own peak; -1 off the sim.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_peak_live_handles() -> ::std::ffi::c_long {
            $crate::sim_peak_live_handles()
        }

        /// long hfp_intercept_sim_created(void): plans the simulated runtime ever made; -1 off the sim.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_created() -> ::std::ffi::c_long {
            $crate::sim_count(|s| s.created_total() as usize)
        }

        /// long hfp_intercept_virtual_handles_live(void): virtual handles alive; -1 before any call.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_virtual_handles_live() -> ::std::ffi::c_long {
            $crate::virtual_handles_live()
        }

        /// int hfp_intercept_stream_create(void **stream): a stream of the interposer's runtime.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_stream_create(stream: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::stream_create($flavor, stream) }
        }

        /// int hfp_intercept_sim_begin_capture(void *stream): starts a graph capture on the
        /// simulated runtime (tests of captured executions); 0 or -1. The graph calls below
        /// are the sim's, reported to the interposer as the CUDA and HIP hooks report the
        /// real runtime's (`graphs::sim`).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_begin_capture(stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::begin_capture($flavor, stream)
        }

        /// int hfp_intercept_sim_end_capture(void *stream, void **graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_end_capture(stream: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::end_capture($flavor, stream, graph) }
        }

        /// int hfp_intercept_sim_graph_create(void **graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_create(graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_create($flavor, graph) }
        }

        /// int hfp_intercept_sim_graph_destroy(void *graph).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_graph_destroy(graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::graph_destroy($flavor, graph)
        }

        /// int hfp_intercept_sim_graph_get_nodes(void *graph, void **nodes, size_t *count).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_get_nodes(graph: *mut ::std::ffi::c_void, nodes: *mut *mut ::std::ffi::c_void, count: *mut usize) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_get_nodes($flavor, graph, nodes, count) }
        }

        /// int hfp_intercept_sim_node_type(void *node): 0 kernel, 1 child graph, 2 host, 3 copy, 4 empty; -1.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_node_type(node: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::node_type($flavor, node)
        }

        /// int hfp_intercept_sim_kernel_node_get_params(void *node, void **func, void **args).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_kernel_node_get_params(node: *mut ::std::ffi::c_void, func: *mut *mut ::std::ffi::c_void, args: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::kernel_node_get_params($flavor, node, func, args) }
        }

        /// int hfp_intercept_sim_kernel_node_set_params(void *node, void *func, void *args).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_kernel_node_set_params(node: *mut ::std::ffi::c_void, func: *mut ::std::ffi::c_void, args: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::kernel_node_set_params($flavor, node, func, args)
        }

        /// int hfp_intercept_sim_graph_add_kernel_node(void **node, void *graph, void **deps, size_t ndeps, void *func, void *args).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_add_kernel_node(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *const *mut ::std::ffi::c_void, ndeps: usize, func: *mut ::std::ffi::c_void, args: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_add_kernel_node($flavor, node, graph, deps, ndeps, func, args) }
        }

        /// int hfp_intercept_sim_graph_add_child_graph_node(void **node, void *graph, void **deps, size_t ndeps, void *child).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_add_child_graph_node(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *const *mut ::std::ffi::c_void, ndeps: usize, child: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_add_child_graph_node($flavor, node, graph, deps, ndeps, child) }
        }

        /// int hfp_intercept_sim_child_graph_node_get_graph(void *node, void **graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_child_graph_node_get_graph(node: *mut ::std::ffi::c_void, graph: *mut *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::child_graph_node_get_graph($flavor, node, graph) }
        }

        /// int hfp_intercept_sim_graph_add_empty_node(void **node, void *graph, void **deps, size_t ndeps).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_add_empty_node(node: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void, deps: *const *mut ::std::ffi::c_void, ndeps: usize) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_add_empty_node($flavor, node, graph, deps, ndeps) }
        }

        /// int hfp_intercept_sim_graph_clone(void **clone, void *graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_clone(clone: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_clone($flavor, clone, graph) }
        }

        /// int hfp_intercept_sim_graph_instantiate(void **exec, void *graph).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_graph_instantiate(exec: *mut *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::graph_instantiate($flavor, exec, graph) }
        }

        /// int hfp_intercept_sim_graph_exec_update(void *exec, void *graph): 0 updated, 1 the topologies differ, -1.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_graph_exec_update(exec: *mut ::std::ffi::c_void, graph: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::graph_exec_update($flavor, exec, graph)
        }

        /// int hfp_intercept_sim_graph_exec_kernel_node_set_params(void *exec, void *node, void *func, void *args).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_graph_exec_kernel_node_set_params(exec: *mut ::std::ffi::c_void, node: *mut ::std::ffi::c_void, func: *mut ::std::ffi::c_void, args: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::graph_exec_kernel_node_set_params($flavor, exec, node, func, args)
        }

        /// int hfp_intercept_sim_graph_launch(void *exec, void *stream).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_graph_launch(exec: *mut ::std::ffi::c_void, stream: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::graph_launch($flavor, exec, stream)
        }

        /// int hfp_intercept_sim_graph_exec_destroy(void *exec).
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_graph_exec_destroy(exec: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::graphs::sim::graph_exec_destroy($flavor, exec)
        }

        /// int hfp_intercept_sim_live_graphs(size_t *graphs, size_t *execs): the sim's own counts.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_sim_live_graphs(graphs: *mut usize, execs: *mut usize) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::graphs::sim::live_graphs($flavor, graphs, execs) }
        }

        /// long hfp_intercept_sim_violations(void): misuses the simulated runtime recorded; -1 off the sim.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_violations() -> ::std::ffi::c_long {
            $crate::sim_count(|s| s.violations().len())
        }

        /// long hfp_intercept_sim_settings_calls(void): SetStream and SetWorkArea calls the
        /// simulated runtime's plans received; -1 off the sim.
        #[unsafe(no_mangle)]
        pub extern "C" fn hfp_intercept_sim_settings_calls() -> ::std::ffi::c_long {
            $crate::sim_count(|s| s.settings_calls() as usize)
        }

        /// int hfp_intercept_write_metrics(const char *path): the metrics JSON, now.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn hfp_intercept_write_metrics(path: *const ::std::ffi::c_char) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::write_metrics($flavor, path) }
        }
    };
}

/// Waits until every execution enqueued through the interposer so far has completed
/// (each stream it was enqueued on is synchronized). Returns 0 on success, -1 on failure
/// (`hfp_intercept_last_error` says why). Before any FFT call it returns 0 at once.
pub fn synchronize() -> c_int {
    entry::serve_plain("hfp_intercept_synchronize", || match engine::flavor() {
        None => Ok(()),
        Some(f) => engine(f)?.synchronize(),
    })
}

/// The calling thread's last failure message ("" if none): the call, the library's code
/// by name and number, and the pool's message. Valid until the thread's next failure.
pub fn last_error() -> *const c_char {
    entry::last_message_ptr()
}

/// Handles alive on the simulated runtime right now (its own count, the ground truth the
/// tests check the ceiling against); -1 when not on the simulated runtime or before any call.
pub fn sim_live_handles() -> c_long {
    sim_count(|s| s.live_handles())
}

/// The most handles ever alive at once on the simulated runtime; -1 as above.
pub fn sim_peak_live_handles() -> c_long {
    sim_count(|s| s.peak_live_handles())
}

/// Applies `f` to the simulated runtime's counts; -1 off the sim.
pub fn sim_count(f: fn(&hipfft_pool::SimRuntime) -> usize) -> c_long {
    std::panic::catch_unwind(|| {
        let Some(fl) = engine::flavor() else { return -1 };
        match engine(fl).ok().and_then(|e| e.sim().cloned()) {
            Some(s) => f(&s) as c_long,
            None => -1,
        }
    })
    .unwrap_or(-1)
}

/// Virtual handles alive right now; -1 before any call.
pub fn virtual_handles_live() -> c_long {
    std::panic::catch_unwind(|| match engine::flavor().and_then(|f| engine(f).ok()) {
        Some(e) => e.virtual_handles_live() as c_long,
        None => -1,
    })
    .unwrap_or(-1)
}

/// Makes a stream of the runtime the interposer runs on (a non-blocking stream; on the
/// simulated runtime, a worker thread) and writes it to `*stream`. 0 on success, -1 on
/// failure. For tests that spread work over streams without linking a GPU runtime.
///
/// # Safety
/// `stream` is null or valid for one pointer write.
pub unsafe fn stream_create(flavor: Flavor, stream: *mut *mut c_void) -> c_int {
    entry::serve_plain("hfp_intercept_stream_create", || {
        let s = engine(flavor)?.stream_create()?;
        // SAFETY: the caller's contract.
        unsafe { write_out(stream, "stream", s.0 as *mut c_void) }
    })
}

/// Writes the metrics JSON (what `HIPFFT_POOL_METRICS_OUT` gets at exit) to `path` now.
/// 0 on success, -1 on failure.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
pub unsafe fn write_metrics(flavor: Flavor, path: *const c_char) -> c_int {
    entry::serve_plain("hfp_intercept_write_metrics", || {
        if path.is_null() {
            return Err(Fail::invalid("path", "null pointer"));
        }
        // SAFETY: the caller's contract.
        let p = unsafe { std::ffi::CStr::from_ptr(path) }.to_string_lossy().into_owned();
        let json = engine(flavor)?.metrics_json();
        std::fs::write(&p, json + "\n").map_err(|e| Fail::new(code::INTERNAL_ERROR, format!("{p}: {e}")))
    })
}

