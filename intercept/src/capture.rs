//! Executions enqueued on a stream that is being captured into a graph.
//!
//! A captured `cufftExec*` does not run when it is called: it runs when the graph is launched,
//! perhaps much later. An event recorded during the capture proves nothing when it is queried,
//! so the pool's `release_after` cannot be used. Two policies (`HIPFFT_POOL_CAPTURE`):
//!
//! - `release-on-run` (the default): the lease travels in a host node added to the capture
//!   right after the transform (`cudaLaunchHostFunc` on the capturing stream). The first run
//!   of that node, which follows the transform's run in the graph, releases it. Right for
//!   frameworks that launch each captured graph once (MLX rebuilds and relaunches its graphs,
//!   and keeps its own plan alive only until that launch completed). A graph launched again
//!   after its first run would use a plan the pool may have destroyed: use `pin` for those.
//! - `pin`: the virtual handle keeps the lease of every captured execution until the handle
//!   is destroyed, as the real plan would have lived natively (one lease per distinct real
//!   plan: later executions on the same plan add none). Safe for graphs replayed any number
//!   of times, at the cost of one live plan per captured handle, and free of the host node's
//!   cost (a host node in a graph is a GPU-to-CPU round trip, several microseconds).
//! - `auto`: `pin` while fewer handles than half the ceiling (`HIPFFT_POOL_CAPTURE_PIN_LIMIT`)
//!   hold pinned plans, `release-on-run` beyond: a framework whose captured working set fits
//!   runs without host nodes, and one with more handles than the ceiling still cannot exhaust it.
//!
//! In both, no plan is created inside a capture (its `cudaMalloc` would break it): the
//! interposer prepares the real plan when the stream is set, outside the capture, and a
//! captured execution whose plan is not at hand fails with the library's error code.

use std::ffi::c_void;

use hipfft_pool::CapturedRelease;

/// How captured executions hold their plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturePolicy {
    /// Pin while fewer than the pin limit of handles hold pinned plans, else release on run.
    Auto,
    ReleaseOnRun,
    Pin,
}

impl CapturePolicy {
    /// `HIPFFT_POOL_CAPTURE`: `release-on-run` (default), `auto` or `pin`; another value
    /// keeps the default with a warning.
    ///
    /// Why `release-on-run` is the default: under MLX 0.32.2 on the H200, `test_fft.py` at a
    /// ceiling of 12 passed 5 runs of 5 with it, and gave wrong values in 3 runs of 5 under
    /// `auto` (pins without host nodes), a cause not yet found and not reproduced on the sim
    /// (docs/frameworks.md).
    pub fn from_env() -> (CapturePolicy, Option<String>) {
        match std::env::var("HIPFFT_POOL_CAPTURE").ok().as_deref() {
            None | Some("") | Some("release-on-run") => (CapturePolicy::ReleaseOnRun, None),
            Some("auto") => (CapturePolicy::Auto, None),
            Some("pin") => (CapturePolicy::Pin, None),
            Some(other) => (
                CapturePolicy::ReleaseOnRun,
                Some(format!(
                    "HIPFFT_POOL_CAPTURE={other:?} ignored (expected release-on-run, auto or pin); keeping release-on-run"
                )),
            ),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CapturePolicy::Auto => "auto",
            CapturePolicy::ReleaseOnRun => "release-on-run",
            CapturePolicy::Pin => "pin",
        }
    }
}

/// The host node: releases the lease on its first run. Never calls the GPU runtime (a lease
/// release is an atomic decrement and at most a channel send).
///
/// # Safety
/// `data` came from [`CapturedRelease::leak`].
pub unsafe extern "C" fn release_captured(data: *mut c_void) {
    // A panic must not unwind into the runtime's callback thread.
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: records are never freed once a host node refers to them.
        match unsafe { CapturedRelease::take(data) } {
            Some(lease) => {
                // At once: the host node runs after the captured work, and a stream callback
                // must not call the runtime (a drop would record an event).
                lease.release();
                crate::engine::count_captured_release();
            }
            None => crate::engine::count_captured_rerun(),
        }
    });
}
