//! The CUDA driver's graph API, as the hooks (`hooks`) follow it: the table of entry points
//! and layouts, and the exports ([`crate::cuda_graph_hooks!`]).

use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use crate::graphs::hooks::{Api, ViewNames};
use crate::graphs::view::CaptureView;

/// The driver's hooked entry points, by exported name.
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

static REAL: [AtomicUsize; VARIANTS.len()] = [const { AtomicUsize::new(0) }; VARIANTS.len()];

/// The CUDA driver's graph API.
pub static API: Api = Api {
    name: "CUDA driver",
    library: "libcuda.so",
    sonames: &[c"libcuda.so.1"],
    variants: VARIANTS,
    real: &REAL,
    relevant: &[
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
    ],
    proc_prefixes: &["cuGraph", "cuStream", "cuGetProcAddress"],
    // CUDA_KERNEL_NODE_PARAMS(_v2): func, grid x3, block x3, shared memory, kernelParams,
    // extra, then (v2) kern at 56, ctx.
    kernel_func: 0,
    kernel_kern: Some(56),
    // CU_GRAPH_NODE_TYPE_CONDITIONAL.
    node_conditional: Some(13),
    view_names: ViewNames {
        capture_info_v3: Some(c"cuStreamGetCaptureInfo_v3"),
        capture_info_v2: c"cuStreamGetCaptureInfo_v2",
        deps_v2: Some(c"cuGraphNodeGetDependencies_v2"),
        deps_v1: c"cuGraphNodeGetDependencies",
        node_type: c"cuGraphNodeGetType",
        kernel_params_v2: Some(c"cuGraphKernelNodeGetParams_v2"),
        kernel_params_v1: c"cuGraphKernelNodeGetParams",
        child_graph: c"cuGraphChildGraphNodeGetGraph",
        graph_nodes: c"cuGraphGetNodes",
    },
    handle: OnceLock::new(),
    view: OnceLock::new(),
};

/// The driver's capture view, if libcuda has what it needs.
pub fn view() -> Option<Box<dyn CaptureView>> {
    crate::graphs::hooks::view(&API)
}

/// Defines the driver's hooked entry points ([`VARIANTS`]) in the calling (cdylib) crate.
#[macro_export]
macro_rules! cuda_graph_hooks {
    () => {
        $crate::graph_hooks!($crate::graphs::cuda::API, $crate::graphs::cuda::VARIANTS;
            begin1: cuStreamBeginCapture, cuStreamBeginCapture_ptsz;
            begin2: cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz;
            to_graph: cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz;
            end: cuStreamEndCapture, cuStreamEndCapture_ptsz;
            graph_destroy: cuGraphDestroy;
            clone: cuGraphClone;
            legacy: cuGraphInstantiate, cuGraphInstantiate_v2;
            flags: cuGraphInstantiateWithFlags;
            params: cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz;
            update_v1: cuGraphExecUpdate;
            update_v2: cuGraphExecUpdate_v2;
            exec_destroy: cuGraphExecDestroy;
            launch: cuGraphLaunch, cuGraphLaunch_ptsz;
            add_kernel[false]: cuGraphAddKernelNode;
            add_kernel[true]: cuGraphAddKernelNode_v2;
            set_kernel[false]: cuGraphKernelNodeSetParams;
            set_kernel[true]: cuGraphKernelNodeSetParams_v2;
            exec_set_kernel[false]: cuGraphExecKernelNodeSetParams;
            exec_set_kernel[true]: cuGraphExecKernelNodeSetParams_v2;
            add_child: cuGraphAddChildGraphNode;
            child_graph: cuGraphChildGraphNodeGetGraph;
            exec_child: cuGraphExecChildGraphNodeSetParams;
            add_node_v1: cuGraphAddNode;
            add_node_v2: cuGraphAddNode_v2;
            node_set: cuGraphNodeSetParams;
            exec_node_set: cuGraphExecNodeSetParams;
            gpa_v1: cuGetProcAddress;
            gpa_v2: cuGetProcAddress_v2;
        );
    };
}
