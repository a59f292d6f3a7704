//! Graphs that can still run a plan's kernels, and the hooks that watch them.
//!
//! - [`registry`]: which graphs and instantiated graphs hold which plans (pure bookkeeping,
//!   model-tested against what graphs really contain);
//! - [`view`]: what a capture in progress holds, asked of the runtime, and the kernels one
//!   captured execution added;
//! - [`observed`]: which captures a hook saw begin (only those are followed);
//! - [`notify`]: graph calls the hooks saw, passed on to the process's registry;
//! - [`sim`]: the simulated runtime's graph calls, exported for test programs
//!   (`hfp_intercept_sim_*`), reported as the real hooks report theirs;
//! - [`hooks`]: the graph calls of a runtime, hooked: one set of hooks over a table per API;
//! - [`cuda`]: the CUDA driver's table (`cuGraph*`, `cuGetProcAddress`, ...);
//! - [`hip`]: HIP's table (`hipGraph*`, `hipGetProcAddress`, ...).
//!
//! Layering: `registry` and `view` name nothing above them; `notify` reaches the engine.

pub mod cuda;
pub mod hip;
pub mod hooks;
pub mod notify;
pub mod observed;
pub mod registry;
pub mod sim;
pub mod view;
