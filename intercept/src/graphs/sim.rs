//! The simulated runtime's graph calls, for test programs on `HIPFFT_POOL_RUNTIME=sim`: each
//! calls the sim (`SimRuntime::graph_*`) and reports what it did to the registry, exactly as
//! the CUDA and HIP hooks report the real runtime's calls. Exported by both interposers as
//! `hfp_intercept_sim_*` ([`crate::export_common!`]); each returns 0 on success and -1 on
//! failure (`hfp_intercept_last_error` says why), `graph_exec_update` 1 when the topologies
//! differ.
//!
//! Handles are the sim's numbers passed as pointers; functions and argument records too.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use hipfft_pool::runtime::sim::{SimKernel, SimNodeKind};
use hipfft_pool::{RawStream, SimRuntime};

use crate::codes::{Fail, Flavor, code};
use crate::entry::serve_plain;
use crate::graphs::{notify, observed};
use crate::{engine, write_out};

fn sim(flavor: Flavor) -> Result<Arc<SimRuntime>, Fail> {
    engine(flavor)?.sim().cloned().ok_or_else(|| Fail::new(code::SETUP_FAILED, "not on the simulated runtime (HIPFFT_POOL_RUNTIME=sim)"))
}

fn pool_err(e: hipfft_pool::Error) -> Fail {
    Fail::from_pool(&e)
}

fn h(p: *mut c_void) -> u64 {
    p as usize as u64
}

fn p(v: u64) -> *mut c_void {
    v as usize as *mut c_void
}

/// Reads `n` node handles from `deps` (null with 0).
///
/// # Safety
/// `deps` is null or valid for `n` reads.
unsafe fn deps_of(deps: *const *mut c_void, n: usize) -> Result<Vec<u64>, Fail> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if deps.is_null() {
        return Err(Fail::invalid("dependencies", format!("null with {n} dependencies")));
    }
    // SAFETY: the caller's contract.
    Ok((0..n).map(|i| h(unsafe { *deps.add(i) })).collect())
}

/// `begin_capture(stream)`.
pub fn begin_capture(flavor: Flavor, stream: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_begin_capture", || {
        let s = sim(flavor)?;
        let st = RawStream(stream as usize);
        s.begin_capture(st).map_err(pool_err)?;
        if let Some(c) = s.capture_info(st).map_err(pool_err)? {
            observed::begun(st.0, c.id);
        }
        Ok(())
    })
}

/// `end_capture(stream, &graph)`.
///
/// # Safety
/// `graph` is null or valid for one pointer write.
pub unsafe fn end_capture(flavor: Flavor, stream: *mut c_void, graph: *mut *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_end_capture", || {
        let s = sim(flavor)?;
        let st = RawStream(stream as usize);
        let id = s.capture_info(st).map_err(pool_err)?.map(|c| c.id);
        let r = s.end_capture(st);
        observed::ended(st.0);
        if let Some(id) = id {
            notify::capture_ended(id, r.as_ref().ok().map(|g| *g as usize));
        }
        // SAFETY: the caller's contract.
        unsafe { write_out(graph, "graph", p(r.map_err(pool_err)?)) }
    })
}

/// `graph_create(&graph)`.
///
/// # Safety
/// `graph` is null or valid for one pointer write.
pub unsafe fn graph_create(flavor: Flavor, graph: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    serve_plain("hfp_intercept_sim_graph_create", || unsafe { write_out(graph, "graph", p(sim(flavor)?.graph_create())) })
}

pub fn graph_destroy(flavor: Flavor, graph: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_destroy", || {
        sim(flavor)?.graph_destroy(h(graph)).map_err(pool_err)?;
        notify::graph_destroyed(graph as usize);
        Ok(())
    })
}

/// `graph_get_nodes(graph, nodes, &count)`: with `nodes` null, writes the count only; else
/// writes up to `*count` nodes and sets `*count` to how many it wrote.
///
/// # Safety
/// `count` is valid for a read and a write; `nodes` is null or valid for `*count` writes.
pub unsafe fn graph_get_nodes(flavor: Flavor, graph: *mut c_void, nodes: *mut *mut c_void, count: *mut usize) -> c_int {
    serve_plain("hfp_intercept_sim_graph_get_nodes", || {
        if count.is_null() {
            return Err(Fail::invalid("count", "null pointer"));
        }
        let all = sim(flavor)?.graph_nodes(h(graph)).map_err(pool_err)?;
        // SAFETY: the caller's contract.
        unsafe {
            if nodes.is_null() {
                *count = all.len();
            } else {
                let n = (*count).min(all.len());
                for (i, v) in all.iter().take(n).enumerate() {
                    *nodes.add(i) = p(*v);
                }
                *count = n;
            }
        }
        Ok(())
    })
}

/// `node_type(node)`: 0 kernel, 1 child graph, 2 host, 3 copy, 4 empty; -1 on failure.
pub fn node_type(flavor: Flavor, node: *mut c_void) -> c_int {
    let mut kind = -1;
    let r = serve_plain("hfp_intercept_sim_node_type", || {
        kind = match sim(flavor)?.graph_node_kind(h(node)).map_err(pool_err)? {
            SimNodeKind::Kernel => 0,
            SimNodeKind::Graph => 1,
            SimNodeKind::Host => 2,
            SimNodeKind::Copy => 3,
            SimNodeKind::Empty => 4,
        };
        Ok(())
    });
    if r == 0 { kind } else { -1 }
}

/// `kernel_node_get_params(node, &func, &args)`.
///
/// # Safety
/// `func` and `args` are null or valid for one pointer write each.
pub unsafe fn kernel_node_get_params(flavor: Flavor, node: *mut c_void, func: *mut *mut c_void, args: *mut *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_kernel_node_get_params", || {
        let k = sim(flavor)?.kernel_node_params(h(node)).map_err(pool_err)?;
        // SAFETY: the caller's contract.
        unsafe {
            write_out(func, "func", p(k.function))?;
            write_out(args, "args", p(k.args))
        }
    })
}

pub fn kernel_node_set_params(flavor: Flavor, node: *mut c_void, func: *mut c_void, args: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_kernel_node_set_params", || {
        sim(flavor)?.kernel_node_set_params(h(node), SimKernel { function: h(func), args: h(args) }).map_err(pool_err)?;
        notify::kernel_set(node as usize, &[func as usize]);
        Ok(())
    })
}

/// `graph_add_kernel_node(&node, graph, deps, ndeps, func, args)`.
///
/// # Safety
/// `node` is null or valid for one pointer write; `deps` null or valid for `ndeps` reads.
pub unsafe fn graph_add_kernel_node(
    flavor: Flavor,
    node: *mut *mut c_void,
    graph: *mut c_void,
    deps: *const *mut c_void,
    ndeps: usize,
    func: *mut c_void,
    args: *mut c_void,
) -> c_int {
    serve_plain("hfp_intercept_sim_graph_add_kernel_node", || {
        // SAFETY: the caller's contract.
        let d = unsafe { deps_of(deps, ndeps) }?;
        let n = sim(flavor)?.graph_add_kernel_node(h(graph), &d, SimKernel { function: h(func), args: h(args) }).map_err(pool_err)?;
        notify::kernel_added(graph as usize, n as usize, &[func as usize]);
        // SAFETY: the caller's contract.
        unsafe { write_out(node, "node", p(n)) }
    })
}

/// `graph_add_child_graph_node(&node, graph, deps, ndeps, child)`.
///
/// # Safety
/// As for [`graph_add_kernel_node`].
pub unsafe fn graph_add_child_graph_node(
    flavor: Flavor,
    node: *mut *mut c_void,
    graph: *mut c_void,
    deps: *const *mut c_void,
    ndeps: usize,
    child: *mut c_void,
) -> c_int {
    serve_plain("hfp_intercept_sim_graph_add_child_graph_node", || {
        // SAFETY: the caller's contract.
        let d = unsafe { deps_of(deps, ndeps) }?;
        let n = sim(flavor)?.graph_add_child_node(h(graph), &d, h(child)).map_err(pool_err)?;
        notify::child_added(graph as usize, n as usize, child as usize);
        // SAFETY: the caller's contract.
        unsafe { write_out(node, "node", p(n)) }
    })
}

/// `child_graph_node_get_graph(node, &graph)`.
///
/// # Safety
/// `graph` is null or valid for one pointer write.
pub unsafe fn child_graph_node_get_graph(flavor: Flavor, node: *mut c_void, graph: *mut *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_child_graph_node_get_graph", || {
        let g = sim(flavor)?.child_graph_of(h(node)).map_err(pool_err)?;
        notify::embedded(node as usize, g as usize);
        // SAFETY: the caller's contract.
        unsafe { write_out(graph, "graph", p(g)) }
    })
}

/// `graph_add_empty_node(&node, graph, deps, ndeps)`.
///
/// # Safety
/// As for [`graph_add_kernel_node`].
pub unsafe fn graph_add_empty_node(flavor: Flavor, node: *mut *mut c_void, graph: *mut c_void, deps: *const *mut c_void, ndeps: usize) -> c_int {
    serve_plain("hfp_intercept_sim_graph_add_empty_node", || {
        // SAFETY: the caller's contract.
        let d = unsafe { deps_of(deps, ndeps) }?;
        let n = sim(flavor)?.graph_add_empty_node(h(graph), &d).map_err(pool_err)?;
        // SAFETY: the caller's contract.
        unsafe { write_out(node, "node", p(n)) }
    })
}

/// `graph_clone(&clone, graph)`.
///
/// # Safety
/// `clone` is null or valid for one pointer write.
pub unsafe fn graph_clone(flavor: Flavor, clone: *mut *mut c_void, graph: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_clone", || {
        let c = sim(flavor)?.graph_clone(h(graph)).map_err(pool_err)?;
        notify::graph_cloned(graph as usize, c as usize);
        // SAFETY: the caller's contract.
        unsafe { write_out(clone, "clone", p(c)) }
    })
}

/// `graph_instantiate(&exec, graph)`.
///
/// # Safety
/// `exec` is null or valid for one pointer write.
pub unsafe fn graph_instantiate(flavor: Flavor, exec: *mut *mut c_void, graph: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_instantiate", || {
        let e = sim(flavor)?.graph_instantiate(h(graph)).map_err(pool_err)?;
        notify::instantiated(e as usize, graph as usize, false);
        // SAFETY: the caller's contract.
        unsafe { write_out(exec, "exec", p(e)) }
    })
}

/// `graph_exec_update(exec, graph)`: 0 updated, 1 topologies differ (unchanged), -1 failed.
pub fn graph_exec_update(flavor: Flavor, exec: *mut c_void, graph: *mut c_void) -> c_int {
    let mut took = false;
    let r = serve_plain("hfp_intercept_sim_graph_exec_update", || {
        took = sim(flavor)?.graph_exec_update(h(exec), h(graph)).map_err(pool_err)?;
        notify::updated(exec as usize, graph as usize, took);
        Ok(())
    });
    match (r, took) {
        (0, true) => 0,
        (0, false) => 1,
        _ => -1,
    }
}

pub fn graph_exec_kernel_node_set_params(flavor: Flavor, exec: *mut c_void, node: *mut c_void, func: *mut c_void, args: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_exec_kernel_node_set_params", || {
        sim(flavor)?
            .graph_exec_kernel_node_set_params(h(exec), h(node), SimKernel { function: h(func), args: h(args) })
            .map_err(pool_err)?;
        notify::exec_kernel_set(exec as usize, &[func as usize]);
        Ok(())
    })
}

pub fn graph_launch(flavor: Flavor, exec: *mut c_void, stream: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_launch", || {
        sim(flavor)?.graph_launch(h(exec), RawStream(stream as usize)).map_err(pool_err)?;
        notify::launched(exec as usize, RawStream(stream as usize), None);
        Ok(())
    })
}

pub fn graph_exec_destroy(flavor: Flavor, exec: *mut c_void) -> c_int {
    serve_plain("hfp_intercept_sim_graph_exec_destroy", || {
        sim(flavor)?.graph_exec_destroy(h(exec)).map_err(pool_err)?;
        notify::exec_destroyed(exec as usize);
        Ok(())
    })
}

/// `live_graphs(&graphs, &execs)`: the sim's own counts.
///
/// # Safety
/// Both are null or valid for one write each.
pub unsafe fn live_graphs(flavor: Flavor, graphs: *mut usize, execs: *mut usize) -> c_int {
    serve_plain("hfp_intercept_sim_live_graphs", || {
        let (g, e) = sim(flavor)?.live_graphs();
        // SAFETY: the caller's contract.
        unsafe {
            write_out(graphs, "graphs", g)?;
            write_out(execs, "execs", e)
        }
    })
}
