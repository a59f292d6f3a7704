//! Executions enqueued on a stream that is being captured into a graph.
//!
//! A captured `cufftExec*` does not run when it is called: it runs when the graph is launched,
//! perhaps much later. An event recorded during the capture proves nothing when it is queried,
//! so the pool's `release_after` cannot be used. Policies (`HIPFFT_POOL_CAPTURE`):
//!
//! - `pin`: the virtual handle keeps the lease of its captured executions while it lives, as
//!   the real plan would have lived natively (one lease per distinct real plan: later
//!   executions on the same plan add none). No host node: the captured graph is the native
//!   one. When the handle is destroyed its pins wait for proof that the graphs captured with
//!   them were launched ([`LaunchProof`]): a host node after the next execution captured on the
//!   same stream. Frameworks destroy handles before their graphs launch (MLX does), so an
//!   event recorded at the destroy would prove nothing.
//! - `release-on-run`: the lease travels in a host node added to the capture right after the
//!   transform (`cudaLaunchHostFunc` on the capturing stream); its first run releases it. A
//!   host node in a graph is a GPU-to-CPU round trip: several microseconds a call.
//! - `auto` (the default): `pin` while fewer handles than half the ceiling
//!   (`HIPFFT_POOL_CAPTURE_PIN_LIMIT`) hold pins (live, or awaiting their launch proof),
//!   `release-on-run` beyond: a captured working set that fits runs as natively, and one with
//!   more handles than the ceiling still cannot exhaust it.
//!
//! In all, no plan is created inside a capture (its `cudaMalloc` would break it): the
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
    /// `HIPFFT_POOL_CAPTURE`: `auto` (default), `release-on-run` or `pin`; another value
    /// keeps the default with a warning.
    ///
    /// Why `auto`: it runs a captured working set that fits under the pin limit with no host
    /// node (on the H200, `benches/c/capture_cycle.c` ran 16.6 us per transform natively and
    /// through `auto`, 59 us through `release-on-run`). Its wrong values under MLX at a
    /// ceiling of 12 (runs 8 and 9 in docs/frameworks.md) were pins of destroyed handles
    /// released before their graphs launched; the launch proof fixed them.
    pub fn from_env() -> (CapturePolicy, Option<String>) {
        match std::env::var("HIPFFT_POOL_CAPTURE").ok().as_deref() {
            None | Some("") | Some("auto") => (CapturePolicy::Auto, None),
            Some("release-on-run") => (CapturePolicy::ReleaseOnRun, None),
            Some("pin") => (CapturePolicy::Pin, None),
            Some(other) => (
                CapturePolicy::Auto,
                Some(format!(
                    "HIPFFT_POOL_CAPTURE={other:?} ignored (expected auto, release-on-run or pin); keeping auto"
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

/// The pins of destroyed handles, carried by a host node captured after a later execution
/// on their stream (`Engine::attach_awaiting`). Its first run proves that the graphs captured
/// before it on that stream were launched, so an event recorded on the stream afterwards
/// covers their work. Like [`CapturedRelease`], the record is never freed once a host node
/// refers to it (a graph may be launched again); only the first run hands the leases on.
pub struct LaunchProof {
    leases: parking_lot::Mutex<Option<Vec<Vec<hipfft_pool::Lease>>>>,
    stream: hipfft_pool::RawStream,
}

impl LaunchProof {
    /// A record owning `leases`, as a host function's `data` pointer (leaked on purpose).
    pub fn leak(leases: Vec<Vec<hipfft_pool::Lease>>, stream: hipfft_pool::RawStream) -> *mut c_void {
        Box::into_raw(Box::new(LaunchProof { leases: parking_lot::Mutex::new(Some(leases)), stream })).cast()
    }

    /// Takes the leases back from a record no host node refers to (the launch failed).
    ///
    /// # Safety
    /// `data` came from [`LaunchProof::leak`] and no host node refers to it.
    pub unsafe fn reclaim(data: *mut c_void) -> Option<Vec<Vec<hipfft_pool::Lease>>> {
        // SAFETY: the caller's promise: the record is ours alone again.
        let b = unsafe { Box::from_raw(data.cast::<LaunchProof>()) };
        b.leases.lock().take()
    }
}

/// The launch proof's host node: hands the pins on to the engine's deferred releases. Never
/// calls the GPU runtime (a lock and a push).
///
/// # Safety
/// `data` came from [`LaunchProof::leak`].
pub unsafe extern "C" fn leases_launched(data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: records are never freed once a host node refers to them.
        let proof = unsafe { &*data.cast::<LaunchProof>() };
        let Some(leases) = proof.leases.lock().take() else { return };
        match crate::engine::flavor().map(crate::engine::engine) {
            Some(Ok(e)) => e.launched(leases, proof.stream),
            // No engine cannot happen once a lease exists; keep the plans rather than guess.
            _ => std::mem::forget(leases),
        }
    });
}
