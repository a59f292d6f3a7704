//! HIP's graph API, as the hooks (`hooks`) follow it: the table of entry points and layouts,
//! and the exports ([`crate::hip_graph_hooks!`]).
//!
//! The hazard is the same as CUDA's: rocFFT's kernels are shared by plans of a shape, but a
//! captured execution's kernel arguments point at its plan's own memory (twiddle tables),
//! so a graph that can still run a transform needs its plan. The registry maps each kernel
//! function to every plan captured with it, so with shared kernels it holds every such plan
//! while any graph holding the function lives: more than needed, never less.

use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use crate::graphs::hooks::{Api, ViewNames};
use crate::graphs::view::CaptureView;

/// HIP's hooked entry points, by exported name (`_spt`: the per-thread default stream).
pub const VARIANTS: &[&str] = &[
    "hipStreamBeginCapture",
    "hipStreamBeginCapture_spt",
    "hipStreamBeginCaptureToGraph",
    "hipStreamEndCapture",
    "hipStreamEndCapture_spt",
    "hipGraphDestroy",
    "hipGraphClone",
    "hipGraphInstantiate",
    "hipGraphInstantiateWithFlags",
    "hipGraphInstantiateWithParams",
    "hipGraphExecUpdate",
    "hipGraphExecDestroy",
    "hipGraphLaunch",
    "hipGraphLaunch_spt",
    "hipGraphAddKernelNode",
    "hipGraphKernelNodeSetParams",
    "hipGraphExecKernelNodeSetParams",
    "hipGraphAddChildGraphNode",
    "hipGraphChildGraphNodeGetGraph",
    "hipGraphExecChildGraphNodeSetParams",
    "hipGraphAddNode",
    "hipGraphNodeSetParams",
    "hipGraphExecNodeSetParams",
    "hipGetProcAddress",
];

static REAL: [AtomicUsize; VARIANTS.len()] = [const { AtomicUsize::new(0) }; VARIANTS.len()];

/// HIP's graph API.
pub static API: Api = Api {
    name: "HIP runtime",
    library: "libamdhip64.so",
    sonames: &[c"libamdhip64.so.6", c"libamdhip64.so.7", c"libamdhip64.so.5", c"libamdhip64.so"],
    variants: VARIANTS,
    real: &REAL,
    relevant: &[
        "hipStreamBeginCapture",
        "hipStreamBeginCaptureToGraph",
        "hipStreamEndCapture",
        "hipGraphDestroy",
        "hipGraphClone",
        "hipGraphInstantiate",
        "hipGraphInstantiateWithFlags",
        "hipGraphInstantiateWithParams",
        "hipGraphExecUpdate",
        "hipGraphExecDestroy",
        "hipGraphLaunch",
        "hipGraphAddKernelNode",
        "hipGraphKernelNodeSetParams",
        "hipGraphExecKernelNodeSetParams",
        "hipGraphAddChildGraphNode",
        "hipGraphChildGraphNodeGetGraph",
        "hipGraphExecChildGraphNodeSetParams",
        "hipGraphAddNode",
        "hipGraphNodeSetParams",
        "hipGraphExecNodeSetParams",
    ],
    proc_prefixes: &["hipGraph", "hipStream"],
    // hipKernelNodeParams: blockDim (dim3, 12 bytes), extra at 16, func at 24, gridDim,
    // kernelParams, sharedMemBytes; no kernel handle.
    kernel_func: 24,
    kernel_kern: None,
    // HIP has no conditional nodes (its type 13 is a symbol copy).
    node_conditional: None,
    view_names: ViewNames {
        capture_info_v3: None,
        capture_info_v2: c"hipStreamGetCaptureInfo_v2",
        deps_v2: None,
        deps_v1: c"hipGraphNodeGetDependencies",
        node_type: c"hipGraphNodeGetType",
        kernel_params_v2: None,
        kernel_params_v1: c"hipGraphKernelNodeGetParams",
        child_graph: c"hipGraphChildGraphNodeGetGraph",
        graph_nodes: c"hipGraphGetNodes",
    },
    handle: OnceLock::new(),
    view: OnceLock::new(),
};

/// HIP's capture view, if the HIP runtime has what it needs.
pub fn view() -> Option<Box<dyn CaptureView>> {
    crate::graphs::hooks::view(&API)
}

/// Defines HIP's hooked entry points ([`VARIANTS`]) in the calling (cdylib) crate.
#[macro_export]
macro_rules! hip_graph_hooks {
    () => {
        $crate::graph_hooks!($crate::graphs::hip::API, $crate::graphs::hip::VARIANTS;
            begin2: hipStreamBeginCapture, hipStreamBeginCapture_spt;
            to_graph: hipStreamBeginCaptureToGraph;
            end: hipStreamEndCapture, hipStreamEndCapture_spt;
            graph_destroy: hipGraphDestroy;
            clone: hipGraphClone;
            legacy: hipGraphInstantiate;
            flags: hipGraphInstantiateWithFlags;
            params: hipGraphInstantiateWithParams;
            update_v1: hipGraphExecUpdate;
            exec_destroy: hipGraphExecDestroy;
            launch: hipGraphLaunch, hipGraphLaunch_spt;
            add_kernel[false]: hipGraphAddKernelNode;
            set_kernel[false]: hipGraphKernelNodeSetParams;
            exec_set_kernel[false]: hipGraphExecKernelNodeSetParams;
            add_child: hipGraphAddChildGraphNode;
            child_graph: hipGraphChildGraphNodeGetGraph;
            exec_child: hipGraphExecChildGraphNodeSetParams;
            add_node_v1: hipGraphAddNode;
            node_set: hipGraphNodeSetParams;
            exec_node_set: hipGraphExecNodeSetParams;
            gpa_v2: hipGetProcAddress;
        );
    };
}
