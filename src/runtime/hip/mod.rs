//! hipFFT and the HIP runtime (AMD), loaded at run time: no ROCm is needed to build.
//!
//! Layered like cudarc's `cufft` module, one job per file:
//!
//! - [`sys`]: the hand-written bindings, one struct of function pointers per library,
//!   resolved once at load.
//! - [`result`]: one thin wrapper per entry point that turns its status into an [`Error`];
//!   each takes a handle or pointer and is an `unsafe fn` with its `# Safety` section.
//! - `loader`: where the libraries are found. [`library_candidates`] is a pure function of
//!   the environment, so the search order is testable: the `HIPFFT_POOL_HIPFFT_LIB` /
//!   `HIPFFT_POOL_HIP_LIB` override (an exact file; when set, nothing else is tried), then
//!   `$ROCM_PATH/lib`, `$HIP_PATH/lib`, `/opt/rocm/lib`, then the dynamic loader's own search
//!   by plain name (`libhipfft.so`, then the runtime soname). Before that list (and unless
//!   an override is set), [`HipRuntime::load`] asks the loader whether the process already
//!   has the library mapped under one of its sonames (`RTLD_NOLOAD`, Linux): a process that
//!   already loaded hipFFT (MLX does) must get that same copy, never a second one from
//!   another ROCm. `dladdr` then names the file a symbol really came from.
//! - `runtime`: [`HipRuntime`], the [`Runtime`] implementation on top of `result`.
//! - `tests`: the runtime over stubbed entry points (no GPU, no library file).
//!
//! Loaded libraries are never unloaded: HIP registers process-exit handlers and threads,
//! and unloading it while they exist is not safe.
//!
//! [`Error`]: crate::error::Error
//! [`Runtime`]: crate::runtime::Runtime

mod loader;
pub mod result;
mod runtime;
pub mod sys;
#[cfg(test)]
mod tests;

pub use loader::{Candidate, CandidateOrigin, HipLibrary, library_candidates};
pub use runtime::HipRuntime;
