//! Graph calls the hooks saw, passed on to the process's registry, whose releases the engine
//! then settles. Before the engine exists, or while no plan is pinned, a call costs one load.

use hipfft_pool::{RawStream, StandingLease};

use crate::engine;
use crate::graphs::registry::{Registry, Released};

#[inline]
fn with(f: impl FnOnce(&Registry<StandingLease>) -> Vec<Released<StandingLease>>) {
    if let Some(e) = engine::ready() {
        if !e.graphs().is_empty() {
            let out = f(e.graphs());
            e.settle(out);
        }
    }
}

/// Whether any plan is pinned (a graph call that adds nothing from a pinned plan needs no
/// report otherwise).
#[inline]
pub fn any_held() -> bool {
    engine::ready().is_some_and(|e| !e.graphs().is_empty())
}

/// Whether a capture's end must be looked at (it may hold plans).
pub fn captures_held() -> bool {
    engine::ready().is_some_and(|e| e.graphs().has_captures())
}

pub fn capture_ended(capture: u64, graph: Option<usize>) {
    with(|r| r.capture_ended(capture, graph))
}

pub fn graph_destroyed(graph: usize) {
    with(|r| r.graph_destroyed(graph))
}

pub fn graph_cloned(source: usize, copy: usize) {
    with(|r| r.graph_cloned(source, copy))
}

pub fn child_added(parent: usize, node: usize, child: usize) {
    with(|r| r.child_added(parent, node, child))
}

pub fn embedded(node: usize, graph: usize) {
    with(|r| r.embedded(node, graph))
}

/// `graph` owns `body` (a conditional node's body graph): what is added to it is added to
/// `graph` too.
pub fn owned_by(graph: usize, body: usize) {
    with(|r| r.owned_by(graph, body))
}

pub fn kernel_added(graph: usize, node: usize, functions: &[usize]) {
    with(|r| r.kernel_added(graph, node, functions))
}

pub fn kernel_set(node: usize, functions: &[usize]) {
    with(|r| r.kernel_set(node, functions))
}

pub fn exec_kernel_set(exec: usize, functions: &[usize]) {
    with(|r| r.exec_kernel_set(exec, functions))
}

pub fn exec_child_set(exec: usize, child: usize) {
    with(|r| r.exec_child_set(exec, child))
}

pub fn instantiated(exec: usize, graph: usize, device_launch: bool) {
    with(|r| r.instantiated(exec, graph, device_launch))
}

pub fn updated(exec: usize, graph: usize, ok: bool) {
    with(|r| r.updated(exec, graph, ok))
}

pub fn launched(exec: usize, stream: RawStream, into_capture: Option<usize>) {
    with(|r| r.launched(exec, stream, into_capture))
}

pub fn exec_destroyed(exec: usize) {
    with(|r| r.exec_destroyed(exec))
}

/// Every plan pinned now is kept for good (see `observed::blind`).
pub fn keep_all_forever(why: &str) {
    if let Some(e) = engine::ready() {
        e.graphs().keep_all_forever();
    }
    crate::engine::warn_once_blind(why);
}
