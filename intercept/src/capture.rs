//! Executions enqueued on a stream that is being captured into a graph.
//!
//! A captured `cufftExec*` does not run when it is called: it runs when the graph is launched,
//! perhaps much later, and perhaps many times. An event recorded during the capture proves
//! nothing when it is queried, so the pool's `release_after` cannot be used.
//!
//! What a framework does with the captured graph decides how long the plan must live. MLX
//! 0.32.2 copies a capture that holds a single kernel node into its own graph as a kernel
//! node (any other capture becomes a child graph node), keys the instantiated graph by
//! topology and, at the next graph of that topology, updates the instantiation in place
//! (`cudaGraphExecUpdate`). cuFFT loads its kernels per plan, so a kept instantiation holds
//! the code of every plan it ran: when such an update succeeds after one of those plans was
//! destroyed, the launch runs freed code (illegal instruction, illegal memory access, or
//! another transform's output). That holds for child graph nodes as much as for copied
//! kernels: their updates fail on topology only while the shapes at each position differ
//! (docs/frameworks.md, runs 23 and 24; `scripts/probes/mlx_encoder_pattern.c` repeats it
//! without MLX, and MLX's own cache of 8 crashes that way). No node the interposer adds
//! makes every such update fail, and it cannot see when the framework drops its
//! instantiations, so what it can do is destroy captured plans as late as possible: resident
//! plans are never destroyed, and the pool under the interposer evicts the least recently
//! used plan first (`engine::interposer_eviction`). Two ways to hold a captured execution's
//! plan, and the policies (`HIPFFT_POOL_CAPTURE`):
//!
//! - resident: the real plan stays for the life of the process ([`Residents`]); the capture
//!   is the native one, with no node added. Graphs may keep it and be launched, updated or
//!   replayed at any time.
//! - released on run: a host node after the transform (`cudaLaunchHostFunc` on the
//!   capturing stream) releases the lease on its first run; the plan may be destroyed after
//!   it. A host node in a graph is a GPU-to-CPU round trip: several microseconds a call.
//!
//! `auto` (the default) makes plans resident up to `HIPFFT_POOL_CAPTURE_RESIDENTS` (a quarter
//! of the ceiling) and releases on run beyond: a captured working set that fits runs as
//! natively, and one larger than the ceiling still cannot exhaust it (the first release on
//! run warns once of the risk above). `release-on-run` always adds the host node (it expects
//! each captured graph to be launched once); `pin` makes every captured plan resident
//! (graphs replayed at will; the ceiling bounds them, and a capture that needs a plan beyond
//! it fails with the library's error code).
//!
//! In all, no plan is created inside a capture (its `cudaMalloc` would break it): the
//! interposer prepares the real plan when the stream is set, outside the capture, and a
//! captured execution whose plan is not at hand fails with the library's error code.

use std::ffi::c_void;
use std::sync::Arc;

use hipfft_pool::{CapturedRelease, Lease, PlanDesc, RawStream};
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

/// How captured executions hold their plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturePolicy {
    /// Resident up to the resident limit, released on run beyond.
    Auto,
    /// A host node releases every captured execution's lease on its first run.
    ReleaseOnRun,
    /// Every plan a captured execution ran on is resident.
    Pin,
}

impl CapturePolicy {
    /// `HIPFFT_POOL_CAPTURE`: `auto` (default), `release-on-run` or `pin`; another value
    /// keeps the default with a warning.
    ///
    /// Why `auto`: it runs a captured working set that fits under the resident limit with no
    /// host node (on the H200, `benches/c/capture_cycle.c` ran 16.6 us per transform
    /// natively and with no node, 59 us through `release-on-run`), and destroys no plan a
    /// capture held alone (see the module's comment).
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

/// Where an `after-graph` host node's lease goes once it ran: the engine's deferred
/// releases. The engine registers itself when it is made (`set_sink`), so this file, below
/// the engine, never names it.
pub trait CapturedLeases: Sync {
    /// An `after-graph` host node ran: its lease waits for an event on `stream`.
    fn ran(&self, lease: Lease, stream: RawStream);
}

static SINK: std::sync::OnceLock<&'static dyn CapturedLeases> = std::sync::OnceLock::new();

/// Registers the process's engine as the sink (once; it lives for the process).
pub(crate) fn set_sink(sink: &'static dyn CapturedLeases) {
    let _ = SINK.set(sink);
}

/// A captured execution's lease under `after-graph`, carried by its host node. Like
/// [`CapturedRelease`], the record is never freed once a host node refers to it (a graph may
/// be launched again); only the first run hands the lease on.
pub struct AfterGraphRelease {
    lease: Mutex<Option<Lease>>,
    stream: RawStream,
}

impl AfterGraphRelease {
    /// A record owning `lease`, as a host function's `data` pointer (leaked on purpose).
    pub fn leak(lease: Lease, stream: RawStream) -> *mut c_void {
        Box::into_raw(Box::new(AfterGraphRelease { lease: Mutex::new(Some(lease)), stream })).cast()
    }

    /// Takes the lease back from a record no host node refers to (the launch failed).
    ///
    /// # Safety
    /// `data` came from [`AfterGraphRelease::leak`] and no host node refers to it.
    pub unsafe fn reclaim(data: *mut c_void) -> Option<Lease> {
        // SAFETY: the caller's promise: the record is ours alone again.
        let b = unsafe { Box::from_raw(data.cast::<AfterGraphRelease>()) };
        b.lease.lock().take()
    }
}

/// `after-graph`'s host node: hands the captured execution's lease to the engine's deferred
/// releases. Calls no GPU runtime (a lock and a push).
///
/// # Safety
/// `data` came from [`AfterGraphRelease::leak`].
pub unsafe extern "C" fn lease_ran(data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: records are never freed once a host node refers to them.
        let record = unsafe { &*data.cast::<AfterGraphRelease>() };
        let Some(lease) = record.lease.lock().take() else {
            crate::process::count_captured_rerun();
            return;
        };
        match SINK.get() {
            Some(sink) => sink.ran(lease, record.stream),
            // No engine cannot happen once a lease exists; keep the plan rather than guess.
            None => std::mem::forget(lease),
        }
    });
}

/// Real plans kept for the life of the process: each ran an execution captured with no node
/// after it, which a framework may keep in graphs of its own (see the module's comment).
/// One lease per descriptor; at most `limit` of them.
pub struct Residents {
    /// Read when a handle first meets its resident plan (`get`; a handle keeps the `Arc`
    /// from then on) and on slower paths, written only when a plan becomes resident.
    plans: RwLock<FxHashMap<PlanDesc, Arc<Lease>>>,
    /// How many plans `plans` holds, read without the lock: a framework that never captures
    /// pays one atomic load per call for residents.
    len: std::sync::atomic::AtomicUsize,
    limit: usize,
}

impl Residents {
    pub fn new(limit: usize) -> Residents {
        Residents { plans: RwLock::new(FxHashMap::default()), len: std::sync::atomic::AtomicUsize::new(0), limit }
    }

    /// `HIPFFT_POOL_CAPTURE_RESIDENTS` under `policy`: for `auto`, a whole number from 0 to the
    /// ceiling (default a quarter of it); `pin` has no limit of its own (the ceiling bounds
    /// it), `release-on-run` keeps none. Returns the limit and a warning for a value ignored.
    pub fn limit_from_env(policy: CapturePolicy, ceiling: usize) -> (usize, Option<String>) {
        let raw = std::env::var("HIPFFT_POOL_CAPTURE_RESIDENTS").ok();
        let (limit, warning) = Residents::limit_from(policy, ceiling, raw.as_deref());
        let old = std::env::var("HIPFFT_POOL_CAPTURE_PIN_LIMIT").ok().filter(|v| !v.is_empty()).map(|_| {
            "HIPFFT_POOL_CAPTURE_PIN_LIMIT is no longer read (pins became resident plans: see HIPFFT_POOL_CAPTURE_RESIDENTS)".to_string()
        });
        (limit, warning.or(old))
    }

    /// [`Residents::limit_from_env`] for the value `raw` of `HIPFFT_POOL_CAPTURE_RESIDENTS`.
    pub fn limit_from(policy: CapturePolicy, ceiling: usize, raw: Option<&str>) -> (usize, Option<String>) {
        let default = ceiling / 4;
        match (policy, raw.filter(|v| !v.is_empty())) {
            (CapturePolicy::Pin, _) => (usize::MAX, None),
            (CapturePolicy::ReleaseOnRun, _) => (0, None),
            (CapturePolicy::Auto, None) => (default, None),
            // 0 is allowed: every captured execution then gets a host node.
            (CapturePolicy::Auto, Some("0")) => (0, None),
            (CapturePolicy::Auto, Some(raw)) => match hipfft_pool::pool::config::parse_whole(raw, ceiling as u64) {
                Ok(v) => (v as usize, None),
                Err(why) => (default, Some(format!("HIPFFT_POOL_CAPTURE_RESIDENTS={raw:?} ignored ({why}); keeping {default}"))),
            },
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn len(&self) -> usize {
        self.len.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A lease on the resident plan for `desc`, if there is one.
    pub fn lease(&self, desc: &PlanDesc) -> Option<Lease> {
        if self.is_empty() {
            return None;
        }
        self.plans.read().get(desc).map(|l| l.share())
    }

    /// The resident lease for `desc`, if there is one, to keep: it stays resident for the
    /// engine's life.
    pub fn get(&self, desc: &PlanDesc) -> Option<Arc<Lease>> {
        if self.is_empty() {
            return None;
        }
        self.plans.read().get(desc).cloned()
    }

    /// Whether `lease`'s plan is resident after this call: it was, or it became so while
    /// there was room under the limit. `false` when its descriptor's resident is another
    /// plan, or the limit is reached.
    pub fn admit(&self, lease: &Lease) -> bool {
        // Every captured execution of a resident plan asks: a read lock answers it.
        if let Some(r) = self.plans.read().get(lease.desc()) {
            return r.plan() == lease.plan();
        }
        let mut plans = self.plans.write();
        if let Some(r) = plans.get(lease.desc()) {
            return r.plan() == lease.plan();
        }
        if plans.len() >= self.limit {
            return false;
        }
        plans.insert(*lease.desc(), Arc::new(lease.share()));
        self.len.store(plans.len(), std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// Keeps `lease` for good whatever the limit: its execution was captured and no host node
    /// could be added after it, so nothing will tell when its graph ran. A second plan of a descriptor already resident is kept too
    /// (never served to later executions).
    pub fn keep(&self, lease: Lease) {
        let mut plans = self.plans.write();
        match plans.get(lease.desc()) {
            Some(r) if r.plan() == lease.plan() => lease.release(),
            Some(_) => std::mem::forget(lease),
            None => {
                plans.insert(*lease.desc(), Arc::new(lease));
                self.len.store(plans.len(), std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Lets every resident plan go (an engine of its own being dropped; the process's
    /// engine never is).
    pub fn clear(&self) {
        let all = std::mem::take(&mut *self.plans.write());
        self.len.store(0, std::sync::atomic::Ordering::Relaxed);
        // Their executions completed or never will run again: the engine goes. (A handle's
        // copy of the `Arc`, none once the engine dropped its handles, drops the lease later.)
        all.into_values().filter_map(|l| Arc::try_unwrap(l).ok()).for_each(Lease::release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
    use hipfft_pool::{PlanPool, PoolConfig, TransformType};


    /// A pool over a sim of its own: the sim's counts are this test's ground truth (the
    /// pool's process-wide counts include other tests' pools).
    fn pool(capacity: usize) -> (Arc<PlanPool>, Arc<SimRuntime>) {
        let sim = Arc::new(SimRuntime::new(SimConfig::default()));
        let rt: Arc<dyn hipfft_pool::Runtime> = sim.clone();
        (PlanPool::new_shared(PoolConfig { live_ceiling: 4, capacity, ..PoolConfig::default() }, rt).unwrap(), sim)
    }

    fn desc(n: i64) -> PlanDesc {
        PlanDesc::new(TransformType::C2C, &[n], 1)
    }

    #[test]
    fn residents_admit_one_plan_per_descriptor_up_to_the_limit() {
        let (p, sim) = pool(4);
        let r = Residents::new(2);
        let (a, b, c) = (p.acquire(&desc(8)).unwrap(), p.acquire(&desc(16)).unwrap(), p.acquire(&desc(32)).unwrap());
        assert!(r.admit(&a) && r.admit(&b), "room for two");
        assert!(r.admit(&a), "a resident plan is admitted again");
        assert!(!r.admit(&c), "the limit is reached");
        assert_eq!((r.len(), r.get(&desc(8)).is_some(), r.get(&desc(32)).is_some()), (2, true, false));
        let served = r.lease(&desc(16)).expect("a lease on the resident");
        assert_eq!(served.plan(), b.plan());
        for l in [a, b, c, served] {
            l.release();
        }
        // Trimmed, the pool destroys what is idle; the two residents are not.
        p.trim();
        assert_eq!((sim.destroyed_total(), sim.live_handles()), (1, 2));
        r.clear();
    }

    #[test]
    fn the_resident_limit_takes_zero_to_the_ceiling_and_names_a_bad_value() {
        let auto = CapturePolicy::Auto;
        assert_eq!(Residents::limit_from(auto, 12, None), (3, None), "a quarter of the ceiling");
        assert_eq!(Residents::limit_from(auto, 12, Some("")), (3, None));
        assert_eq!(Residents::limit_from(auto, 12, Some("0")), (0, None));
        assert_eq!(Residents::limit_from(auto, 12, Some("12")), (12, None));
        for bad in ["13", "-1", "x"] {
            let (limit, warning) = Residents::limit_from(auto, 12, Some(bad));
            let warning = warning.expect("a warning");
            assert_eq!(limit, 3, "{warning}");
            assert!(warning.contains("HIPFFT_POOL_CAPTURE_RESIDENTS") && warning.contains(&format!("{bad:?}")), "{warning}");
        }
        assert_eq!(Residents::limit_from(CapturePolicy::ReleaseOnRun, 12, Some("5")), (0, None));
        assert_eq!(Residents::limit_from(CapturePolicy::Pin, 12, None).0, usize::MAX);
    }

    #[test]
    fn a_second_plan_of_a_resident_descriptor_is_not_admitted() {
        // Capacity 1: the next descriptor evicts the resident from the cache (its lease keeps
        // it alive, retired), so the pool makes a second plan for the first descriptor.
        let (p, _sim) = pool(1);
        let r = Residents::new(4);
        let a = p.acquire(&desc(8)).unwrap();
        assert!(r.admit(&a));
        a.release();
        p.acquire(&desc(16)).unwrap().release();
        let b = p.acquire(&desc(8)).unwrap();
        assert_ne!(b.plan(), a_plan(&r), "a second plan of the descriptor");
        assert!(!r.admit(&b), "only the resident itself may run captured alone");
        b.release();
        r.clear();
    }

    fn a_plan(r: &Residents) -> hipfft_pool::RawPlan {
        let l = r.lease(&desc(8)).unwrap();
        let plan = l.plan();
        l.release();
        plan
    }
}
