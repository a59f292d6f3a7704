//! Executions enqueued on a stream that is being captured into a graph.
//!
//! A captured `cufftExec*` does not run when it is called: it runs each time a graph holding
//! it is launched, perhaps much later, perhaps many times, and a framework may copy the
//! captured kernels into graphs of its own, nest them, keep instantiations and update them
//! in place (MLX's CUDA backend does all of it). cuFFT loads its kernels per plan, so a plan
//! destroyed while any of those can still run or be updated turns the next launch into freed
//! code or another transform's numbers. So a captured execution's plan is held by one of:
//!
//! - a *resident* plan ([`Residents`]): kept for the life of the process, one per
//!   descriptor, up to `HIPFFT_POOL_CAPTURE_RESIDENTS` (a quarter of the ceiling by default).
//!   Executions on it need no bookkeeping at all (the handle's fast path);
//! - the *graphs that hold it* (`crate::graphs`): the hooks follow every graph and
//!   instantiation its kernels reach, and the plan goes back to the pool only once none of
//!   them can run again. Where the hooks cannot see a capture (it began outside them), the
//!   plan is kept as a resident instead, beyond the limit if need be.
//!
//! Both kinds hold a standing lease, so a miss that finds the ceiling full of them fails at
//! once, saying how many plans it needs, rather than waiting out its timeout for graphs the
//! framework has yet to launch.
//!
//! Policies (`HIPFFT_POOL_CAPTURE`): `auto` (the default) as above; `pin`: every captured
//! plan resident (no graph is followed; the ceiling bounds them).
//!
//! In all, no plan is created inside a capture (its `cudaMalloc` would break it): the
//! interposer prepares the real plan when the stream is set, outside the capture, and a
//! captured execution whose plan is not at hand fails with the library's error code.

use std::sync::Arc;

use hipfft_pool::{Lease, PlanDesc, StandingLease};
use parking_lot::RwLock;
use rustc_hash::FxHashMap;

/// How captured executions hold their plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturePolicy {
    /// Resident up to the resident limit, held by the graphs that hold it beyond.
    Auto,
    /// Every plan a captured execution ran on is resident.
    Pin,
}

impl CapturePolicy {
    /// `HIPFFT_POOL_CAPTURE`: `auto` (default) or `pin`; another value keeps the default with
    /// a warning. `release-on-run` is no longer offered (a plan released when its graph first
    /// ran can be run again by a kept or updated instantiation): it keeps `auto`, saying so.
    ///
    /// Why `auto`: it runs a captured working set that fits under the resident limit with no
    /// bookkeeping, and follows the graphs of the rest, so that no ceiling, however low, lets
    /// a plan go while a graph can still run it.
    pub fn from_env() -> (CapturePolicy, Option<String>) {
        CapturePolicy::parse(std::env::var("HIPFFT_POOL_CAPTURE").ok().as_deref())
    }

    /// [`CapturePolicy::from_env`] for the value `raw`.
    pub fn parse(raw: Option<&str>) -> (CapturePolicy, Option<String>) {
        match raw.map(str::trim) {
            None | Some("") | Some("auto") => (CapturePolicy::Auto, None),
            Some("pin") => (CapturePolicy::Pin, None),
            Some("release-on-run") => (
                CapturePolicy::Auto,
                Some(
                    "HIPFFT_POOL_CAPTURE=\"release-on-run\" is no longer offered (a plan released when its graph first ran \
                     can be run again by a kept or updated instantiation); keeping auto, which holds each captured plan until \
                     no graph can run it"
                        .to_string(),
                ),
            ),
            Some(other) => (
                CapturePolicy::Auto,
                Some(format!("HIPFFT_POOL_CAPTURE={other:?} ignored (expected auto or pin); keeping auto")),
            ),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CapturePolicy::Auto => "auto",
            CapturePolicy::Pin => "pin",
        }
    }
}

/// Real plans kept for the life of the process, each ran a captured execution (see the
/// module's comment). One standing lease per descriptor; at most `limit` of them, beyond which
/// only [`Residents::keep`] adds.
pub struct Residents {
    /// Read when a handle first meets its resident plan (`get`; a handle keeps the `Arc`
    /// from then on) and on slower paths, written only when a plan becomes resident.
    plans: RwLock<FxHashMap<PlanDesc, Arc<StandingLease>>>,
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
    /// it). Returns the limit and a warning for a value ignored.
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
            (CapturePolicy::Auto, None) => (default, None),
            // 0 is allowed: every captured plan is then held by its graphs alone.
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
    pub fn get(&self, desc: &PlanDesc) -> Option<Arc<StandingLease>> {
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
        plans.insert(*lease.desc(), Arc::new(lease.share().into_standing()));
        self.len.store(plans.len(), std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// Keeps `lease` for good whatever the limit: its execution was captured where no hook
    /// will tell when its graphs are gone. A second plan of a descriptor already resident is
    /// kept too (standing, never served to later executions).
    pub fn keep(&self, lease: Lease) {
        let mut plans = self.plans.write();
        match plans.get(lease.desc()) {
            Some(r) if r.plan() == lease.plan() => lease.release(),
            Some(_) => std::mem::forget(lease.into_standing()),
            None => {
                plans.insert(*lease.desc(), Arc::new(lease.into_standing()));
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
        all.into_values().filter_map(|l| Arc::try_unwrap(l).ok()).for_each(drop);
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
