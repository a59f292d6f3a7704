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
//!   more handles than the ceiling still cannot exhaust it. Pins are a cache here, not a
//!   promise: once the ceiling is half full, a capture after a captured use of a pin carries
//!   a launch proof ([`CaptureClock`]: a host node, as `release-on-run` has); at three
//!   quarters no handle starts a pin; and a miss at the full ceiling takes back the pins of
//!   handles whose last captured execution has been proven launched (released after an
//!   event on their stream). Without that, pins of handles a
//!   framework keeps in its cache but no longer runs would hold half the ceiling for good,
//!   and a command buffer needing more than the other half would wait out its timeout (MLX
//!   at ceiling 12 did, and aborts on the failed plan creation). Like `release-on-run`,
//!   `auto` thus expects each captured graph to be launched once; `pin` is for frameworks that
//!   replay graphs.
//!
//! In all, no plan is created inside a capture (its `cudaMalloc` would break it): the
//! interposer prepares the real plan when the stream is set, outside the capture, and a
//! captured execution whose plan is not at hand fails with the library's error code.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hipfft_pool::{CapturedRelease, Lease, RawStream};

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
    /// through `auto`, 59 us through `release-on-run`). Part of its wrong values under MLX at
    /// a ceiling of 12 (runs 8 and 9 in docs/frameworks.md) were pins of destroyed handles
    /// released before their graphs launched, which the launch proof fixed; ceiling 12 still
    /// fails at times under every policy (runs 12 and 13), cause open.
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

/// When a `release-on-run` host node's lease goes back (`HIPFFT_POOL_CAPTURE_RELEASE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunRelease {
    /// `at-run` (default): when the node runs, right after the transform. The plan may then
    /// be evicted and destroyed while the rest of its graph still runs.
    AtRun,
    /// `after-graph`: the node hands the lease to the deferred releases, released after an
    /// event recorded on the stream from then on, so no plan is destroyed before the graph
    /// that used it has finished. An event per lease; for finding whether a destroy during
    /// a running graph hurts it (MLX at ceiling 12, docs/frameworks.md).
    AfterGraph,
}

impl RunRelease {
    /// `HIPFFT_POOL_CAPTURE_RELEASE`: `at-run` (default) or `after-graph`; another value keeps
    /// the default with a warning.
    pub fn from_env() -> (RunRelease, Option<String>) {
        match std::env::var("HIPFFT_POOL_CAPTURE_RELEASE").ok().as_deref() {
            None | Some("") | Some("at-run") => (RunRelease::AtRun, None),
            Some("after-graph") => (RunRelease::AfterGraph, None),
            Some(other) => (
                RunRelease::AtRun,
                Some(format!("HIPFFT_POOL_CAPTURE_RELEASE={other:?} ignored (expected at-run or after-graph); keeping at-run")),
            ),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RunRelease::AtRun => "at-run",
            RunRelease::AfterGraph => "after-graph",
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
                crate::process::count_captured_released(1);
            }
            None => crate::process::count_captured_rerun(),
        }
    });
}

/// Where the leases of a launch proof or an `after-graph` host node go once it ran: the
/// engine's deferred releases. The engine registers itself when it is made (`set_sink`),
/// so this file, below the engine, never names it.
pub trait CapturedLeases: Sync {
    /// A launch proof ran: the destroyed handles' pins wait for an event on `stream`.
    fn launched(&self, leases: Vec<Vec<Lease>>, stream: RawStream);
    /// An `after-graph` host node ran: its leases wait for an event on `stream`.
    fn ran(&self, leases: Vec<Vec<Lease>>, stream: RawStream);
}

static SINK: std::sync::OnceLock<&'static dyn CapturedLeases> = std::sync::OnceLock::new();

/// Registers the process's engine as the sink (once; it lives for the process).
pub(crate) fn set_sink(sink: &'static dyn CapturedLeases) {
    let _ = SINK.set(sink);
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

/// `after-graph`'s host node: hands the captured executions' leases to the engine's
/// deferred releases. Calls no GPU runtime (a lock and a push).
///
/// # Safety
/// `data` came from [`LaunchProof::leak`].
pub unsafe extern "C" fn leases_ran(data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: records are never freed once a host node refers to them.
        let proof = unsafe { &*data.cast::<LaunchProof>() };
        let Some(leases) = proof.leases.lock().take() else {
            crate::process::count_captured_rerun();
            return;
        };
        match SINK.get() {
            Some(sink) => sink.ran(leases, proof.stream),
            None => std::mem::forget(leases),
        }
    });
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
        match SINK.get() {
            Some(sink) => sink.launched(leases, proof.stream),
            // No engine cannot happen once a lease exists; keep the plans rather than guess.
            None => std::mem::forget(leases),
        }
    });
}

/// How far the executions captured on one stream are known to have been launched. Each
/// captured execution takes the next number ([`CaptureClock::tick`]); a proof node attached
/// after the execution numbered `n` raises [`CaptureClock::launched`] to `n` when it runs.
/// Its graph is running then, and graphs captured on one stream are launched in capture
/// order, so every execution numbered up to `n` has been launched; an event recorded on the
/// stream afterwards covers them all. (A framework may order the executions of one graph by
/// its own dependencies, so the proof says *launched*, not *ran*.)
pub struct CaptureClock {
    next: AtomicU64,
    launched: AtomicU64,
    /// The last capture that used a pin, and the last one a proof was attached after.
    pinned_upto: AtomicU64,
    proof_upto: AtomicU64,
    /// The ceiling the stream's plans count against: proofs are taken only under pressure.
    pub ceiling: Arc<hipfft_pool::LiveCeiling>,
}

impl CaptureClock {
    pub fn new(ceiling: Arc<hipfft_pool::LiveCeiling>) -> CaptureClock {
        CaptureClock {
            next: AtomicU64::new(0),
            launched: AtomicU64::new(0),
            pinned_upto: AtomicU64::new(0),
            proof_upto: AtomicU64::new(0),
            ceiling,
        }
    }

    /// The number of the execution being captured now.
    pub fn tick(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Every execution numbered up to this has been launched.
    pub fn launched(&self) -> u64 {
        self.launched.load(Ordering::Acquire)
    }

    /// Whether the ceiling is three quarters full: no handle starts a pin then.
    pub fn pressed(&self) -> bool {
        self.ceiling.live() * 4 >= self.ceiling.limit() * 3
    }

    /// Capture `seq` used a pin.
    pub fn pinned(&self, seq: u64) {
        self.pinned_upto.fetch_max(seq, Ordering::Relaxed);
    }

    /// Whether a proof should follow a capture for the pins of live handles: the ceiling is
    /// half full and a pin was used after the last proof (a pin used while the pool has room
    /// waits for the first capture after it fills).
    pub fn wants_proof(&self) -> bool {
        self.pinned_upto.load(Ordering::Relaxed) > self.proof_upto() && self.ceiling.live() * 2 >= self.ceiling.limit()
    }

    /// The last capture a proof was attached after.
    pub fn proof_upto(&self) -> u64 {
        self.proof_upto.load(Ordering::Relaxed)
    }

    /// A proof was attached after capture `seq`.
    pub fn proof_attached(&self, seq: u64) {
        self.proof_upto.fetch_max(seq, Ordering::Relaxed);
    }

    /// A proof's host node data: never freed once a host node refers to it (a graph may be
    /// launched again), 16 bytes per proof.
    pub fn leak_proof(self: &Arc<Self>, seq: u64) -> *mut c_void {
        Box::into_raw(Box::new(ClockProof { clock: self.clone(), seq })).cast()
    }

    /// Frees a proof no host node refers to (the launch failed).
    ///
    /// # Safety
    /// `data` came from [`CaptureClock::leak_proof`] and no host node refers to it.
    pub unsafe fn reclaim_proof(data: *mut c_void) {
        // SAFETY: the caller's promise.
        drop(unsafe { Box::from_raw(data.cast::<ClockProof>()) });
    }
}

struct ClockProof {
    clock: Arc<CaptureClock>,
    seq: u64,
}

/// The clock's proof node: raises `launched`. Calls no GPU runtime (two atomics).
///
/// # Safety
/// `data` came from [`CaptureClock::leak_proof`].
pub unsafe extern "C" fn captures_launched(data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: records are never freed once a host node refers to them.
        let p = unsafe { &*data.cast::<ClockProof>() };
        p.clock.launched.fetch_max(p.seq, Ordering::AcqRel);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Arc<CaptureClock> {
        Arc::new(CaptureClock::new(hipfft_pool::LiveCeiling::new(4)))
    }

    #[test]
    fn a_proof_raises_what_is_launched_to_its_own_number() {
        let c = clock();
        let (a, b) = (c.tick(), c.tick());
        assert_eq!((a, b, c.launched()), (1, 2, 0));
        let data = c.leak_proof(a);
        // SAFETY: `data` came from leak_proof; this test is the host node.
        unsafe { captures_launched(data) };
        assert_eq!(c.launched(), a, "execution {b} was captured after the proof");
    }

    #[test]
    fn a_relaunched_old_proof_never_lowers_what_is_proven() {
        let c = clock();
        let (a, b) = (c.tick(), c.tick());
        let (pa, pb) = (c.leak_proof(a), c.leak_proof(b));
        // SAFETY: as above (both records stay leaked).
        unsafe {
            captures_launched(pb);
            captures_launched(pa);
        }
        assert_eq!(c.launched(), b);
    }

    #[test]
    fn a_proof_that_failed_to_attach_lets_go_of_its_clock() {
        let c = clock();
        let data = c.leak_proof(c.tick());
        // SAFETY: no host node refers to it.
        unsafe { CaptureClock::reclaim_proof(data) };
        assert_eq!(c.launched(), 0);
        assert_eq!(Arc::strong_count(&c), 1, "the reclaimed record let go of the clock");
    }
}
