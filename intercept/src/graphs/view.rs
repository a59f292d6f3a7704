//! What the interposer asks the runtime about a capture in progress ([`CaptureView`]): its
//! id, graph and tail before and after a captured execution, and the kernels between them
//! ([`kernels_since`]), whose functions are then the plan's.

use std::sync::Arc;

use hipfft_pool::{RawStream, Runtime, SimRuntime};
use rustc_hash::FxHashSet;

use crate::codes::Flavor;

/// A capture in progress, as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// Unique in the process (0: not known).
    pub id: u64,
    /// The graph being captured into.
    pub graph: usize,
    /// The nodes the next captured work will depend on.
    pub tail: Vec<usize>,
}

impl Capture {
    /// A capture the runtime could say nothing about (no view): never followed.
    pub fn unfollowed() -> Capture {
        Capture { id: 0, graph: 0, tail: Vec::new() }
    }
}

/// The runtime's graph introspection, as far as following a capture needs it.
pub trait CaptureView: Send + Sync {
    /// The capture in progress on `stream`, or `None`.
    ///
    /// # Safety
    /// `stream` is a live stream of the runtime (or its null stream).
    unsafe fn capture(&self, stream: RawStream) -> Result<Option<Capture>, String>;

    /// The nodes `node` depends on.
    ///
    /// # Safety
    /// `node` is a live node (of a capture in progress).
    unsafe fn deps(&self, node: usize) -> Result<Vec<usize>, String>;

    /// A kernel node's identities (its function, and its kernel handle where the runtime
    /// has one); empty for any other node.
    ///
    /// # Safety
    /// As for [`CaptureView::deps`].
    unsafe fn kernel(&self, node: usize) -> Result<Vec<usize>, String>;

    /// The graph a child graph node embeds, or `None` for any other node.
    ///
    /// # Safety
    /// As for [`CaptureView::deps`].
    unsafe fn embedded(&self, node: usize) -> Result<Option<usize>, String>;

    /// The nodes of `graph`.
    ///
    /// # Safety
    /// `graph` is a live graph.
    unsafe fn nodes(&self, graph: usize) -> Result<Vec<usize>, String>;
}

/// Nodes one execution may add before the walk gives up (and its plan is kept for good).
const WALK_LIMIT: usize = 4096;

/// The kernel identities of the nodes a captured execution added: those the tail `after`
/// reaches back through dependencies without passing the tail `before` (and the kernels of
/// any graph such a node embeds).
///
/// # Safety
/// `view`'s contracts: both captures are the same, still in progress.
pub unsafe fn kernels_since(view: &dyn CaptureView, before: &Capture, after: &Capture) -> Result<Vec<usize>, String> {
    if before.id != after.id || before.graph != after.graph {
        return Err("the capture changed during the execution".into());
    }
    let stop: FxHashSet<usize> = before.tail.iter().copied().collect();
    let mut seen = FxHashSet::default();
    let mut todo: Vec<usize> = after.tail.iter().copied().filter(|n| !stop.contains(n)).collect();
    let mut out = Vec::new();
    while let Some(n) = todo.pop() {
        if !seen.insert(n) {
            continue;
        }
        if seen.len() > WALK_LIMIT {
            return Err(format!("an execution added more than {WALK_LIMIT} graph nodes"));
        }
        // SAFETY: nodes of the capture in progress (the caller's contract).
        unsafe {
            out.extend(view.kernel(n)?);
            if let Some(g) = view.embedded(n)? {
                // An embedded graph's nodes are its own: no tail to stop at.
                todo.extend(view.nodes(g)?.into_iter().filter(|m| !stop.contains(m)));
            }
            todo.extend(view.deps(n)?.into_iter().filter(|d| !stop.contains(d)));
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The simulated runtime's view.
pub struct SimView(pub Arc<SimRuntime>);

fn sim_err(e: hipfft_pool::Error) -> String {
    e.to_string()
}

impl CaptureView for SimView {
    unsafe fn capture(&self, stream: RawStream) -> Result<Option<Capture>, String> {
        Ok(self.0.capture_info(stream).map_err(sim_err)?.map(|c| Capture {
            id: c.id,
            graph: c.graph as usize,
            tail: c.tail.into_iter().map(|n| n as usize).collect(),
        }))
    }

    unsafe fn deps(&self, node: usize) -> Result<Vec<usize>, String> {
        Ok(self.0.graph_node_deps(node as u64).map_err(sim_err)?.into_iter().map(|n| n as usize).collect())
    }

    unsafe fn kernel(&self, node: usize) -> Result<Vec<usize>, String> {
        match self.0.graph_node_kind(node as u64).map_err(sim_err)? {
            hipfft_pool::runtime::sim::SimNodeKind::Kernel => Ok(vec![self.0.kernel_node_params(node as u64).map_err(sim_err)?.function as usize]),
            _ => Ok(Vec::new()),
        }
    }

    unsafe fn embedded(&self, node: usize) -> Result<Option<usize>, String> {
        match self.0.graph_node_kind(node as u64).map_err(sim_err)? {
            hipfft_pool::runtime::sim::SimNodeKind::Graph => Ok(Some(self.0.child_graph_of(node as u64).map_err(sim_err)? as usize)),
            _ => Ok(None),
        }
    }

    unsafe fn nodes(&self, graph: usize) -> Result<Vec<usize>, String> {
        Ok(self.0.graph_nodes(graph as u64).map_err(sim_err)?.into_iter().map(|n| n as usize).collect())
    }
}

/// The view of the runtime the engine runs on: the sim's, or the real driver's (`None`
/// where it cannot be had: captures are then not followed).
pub fn for_runtime(_rt: &Arc<dyn Runtime>, sim: Option<&Arc<SimRuntime>>, flavor: Flavor) -> Option<Box<dyn CaptureView>> {
    if let Some(s) = sim {
        return Some(Box::new(SimView(s.clone())));
    }
    match flavor {
        Flavor::Cufft => crate::graphs::cuda::view(),
        Flavor::Hipfft => crate::graphs::hip::view(),
    }
}
