//! `AuditedRuntime`: a decorator that checks the pool's promises at the runtime boundary,
//! against any runtime, a real GPU included.
//!
//! It counts handles from just before `plan_create` until `plan_destroy` returns (ground
//! truth independent of the pool's own bookkeeping, as the simulated runtime counts them),
//! the most alive since the last look, and which plan calls are running right now (so a hang
//! report can say "stuck in a destroy"). With pending checks on (`new`), after each execution
//! it records an event on the execution's stream, and a destroy of a plan whose last
//! execution has not completed is a violation; that costs one event record per execution, so
//! `counting` leaves it off.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::decorator::Decorator;
use crate::runtime::boundary::{CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime};

/// Handle counts at the runtime boundary.
#[derive(Debug, Default)]
pub struct PlanCounts {
    /// Handles alive: counted from just before `plan_create` until `plan_destroy` returns.
    pub live: AtomicUsize,
    /// The most alive since [`PlanCounts::take_window_max`] last ran.
    window_max: AtomicUsize,
    /// The most alive at once.
    pub peak: AtomicUsize,
    /// Successful creations.
    pub created: AtomicU64,
    /// Destroys (a failing destroy counts: hipFFT frees the plan first).
    pub destroyed: AtomicU64,
    /// Calls inside `plan_create` / `plan_destroy` / `plan_exec` right now.
    pub in_create: AtomicUsize,
    /// Calls inside `plan_destroy` right now.
    pub in_destroy: AtomicUsize,
    /// Calls inside `plan_exec` right now.
    pub in_exec: AtomicUsize,
}

impl PlanCounts {
    fn up(&self) {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.window_max.fetch_max(now, Ordering::SeqCst);
        self.peak.fetch_max(now, Ordering::SeqCst);
    }
    fn down(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
    /// The most handles alive since the last call (at least the number alive now), and
    /// starts a new window.
    pub fn take_window_max(&self) -> usize {
        let now = self.live.load(Ordering::SeqCst);
        self.window_max.swap(now, Ordering::SeqCst).max(now)
    }
    /// The window's maximum so far, without starting a new one.
    pub fn window_max(&self) -> usize {
        self.window_max.load(Ordering::SeqCst).max(self.live.load(Ordering::SeqCst))
    }
    /// `create`, `destroy`, `exec`, or `-`: the plan calls running right now.
    pub fn calls(&self) -> String {
        let mut v = Vec::new();
        for (name, c) in [("create", &self.in_create), ("destroy", &self.in_destroy), ("exec", &self.in_exec)] {
            match c.load(Ordering::SeqCst) {
                0 => {}
                1 => v.push(name.to_string()),
                n => v.push(format!("{name}x{n}")),
            }
        }
        if v.is_empty() { "-".into() } else { v.join("+") }
    }
}

/// Counts a call while it runs.
struct Inside<'a>(&'a AtomicUsize);

impl<'a> Inside<'a> {
    fn enter(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::SeqCst);
        Inside(c)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A [`Decorator`] that checks the pool's promises at the runtime boundary (see the
/// module docs).
pub struct AuditedRuntime {
    inner: Arc<dyn Runtime>,
    counts: Arc<PlanCounts>,
    check_pending: bool,
    /// The event after each plan's latest execution, with its device.
    last_exec: parking_lot::Mutex<HashMap<RawPlan, (RawEvent, i32)>>,
    violations: parking_lot::Mutex<Vec<String>>,
}

impl AuditedRuntime {
    /// Counts handles and checks that no destroy runs under a pending execution.
    pub fn new(inner: Arc<dyn Runtime>) -> Self {
        AuditedRuntime { inner, counts: Default::default(), check_pending: true, last_exec: Default::default(), violations: Default::default() }
    }

    /// Counts handles only (no event per execution), returning the counts to watch.
    pub fn counting(inner: Arc<dyn Runtime>) -> (Arc<dyn Runtime>, Arc<PlanCounts>) {
        let a = AuditedRuntime { check_pending: false, ..AuditedRuntime::new(inner) };
        let counts = a.counts.clone();
        (Arc::new(a), counts)
    }

    /// The counts, live.
    pub fn counts(&self) -> &PlanCounts {
        &self.counts
    }
    /// Handles created through this runtime and not yet destroyed.
    pub fn live_handles(&self) -> usize {
        self.counts.live.load(Ordering::SeqCst)
    }
    /// The most handles alive at once.
    pub fn peak_live_handles(&self) -> usize {
        self.counts.peak.load(Ordering::SeqCst)
    }
    /// Successful creations.
    pub fn created_total(&self) -> u64 {
        self.counts.created.load(Ordering::SeqCst)
    }
    /// Destroys, failed ones included.
    pub fn destroyed_total(&self) -> u64 {
        self.counts.destroyed.load(Ordering::SeqCst)
    }
    /// Destroys under a pending execution, and failures of the audit's own calls.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().clone()
    }
}

// SAFETY: every call goes to the inner runtime with the caller's arguments and returns its
// answer; the audit's own events are made and destroyed through it.
unsafe impl Decorator for AuditedRuntime {
    fn inner(&self) -> &dyn Runtime {
        &*self.inner
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let _in = Inside::enter(&self.counts.in_create);
        // Count before the call, so a sampler never sees fewer than are alive.
        self.counts.up();
        let r = self.inner.plan_create(desc, options);
        match &r {
            Ok(_) => {
                self.counts.created.fetch_add(1, Ordering::SeqCst);
            }
            // The runtime destroys a half-made handle before it reports the error.
            Err(_) => self.counts.down(),
        }
        r
    }

    unsafe fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        // SAFETY: the caller upholds `plan_exec`'s contract, which is `plan_exec_bound`'s
        // with everything set.
        unsafe { Decorator::plan_exec_bound(self, plan, transform, stream, work_area, input, output, direction, Rebind::ALL) }
    }

    unsafe fn plan_exec_bound(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        rebind: Rebind,
    ) -> Result<()> {
        let _in = Inside::enter(&self.counts.in_exec);
        // SAFETY: the caller upholds `plan_exec_bound`'s contract; the arguments pass unchanged.
        unsafe { self.inner.plan_exec_bound(plan, transform, stream, work_area, input, output, direction, rebind) }?;
        if !self.check_pending {
            return Ok(());
        }
        let device = self.inner.current_device()?;
        let ev = self.inner.event_create()?;
        // SAFETY: `ev` was just made; the caller promised `stream` is live.
        unsafe { self.inner.event_record(ev, stream) }?;
        if let Some((old, d)) = self.last_exec.lock().insert(plan, (ev, device)) {
            debug_assert_eq!(d, device);
            // SAFETY: the audit's own event, no longer in the map, so used by nobody.
            if let Err(e) = unsafe { self.inner.event_destroy(old) } {
                tracing::warn!(error = %e, "audit: event destroy failed");
            }
        }
        Ok(())
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        let _in = Inside::enter(&self.counts.in_destroy);
        if let Some((ev, _)) = self.last_exec.lock().remove(&plan) {
            // SAFETY: the audit's own live event, taken out of the map (nobody else has it).
            match unsafe { self.inner.event_query(ev) } {
                Ok(true) => {}
                Ok(false) => self.violations.lock().push(format!("plan {plan:?} destroyed while an execution was pending")),
                Err(e) => self.violations.lock().push(format!("event query before destroying {plan:?} failed: {e}")),
            }
            // SAFETY: as for the query; it is not used again.
            if let Err(e) = unsafe { self.inner.event_destroy(ev) } {
                tracing::warn!(error = %e, "audit: event destroy failed");
            }
        }
        // SAFETY: the caller upholds `plan_destroy`'s contract; the plan passes unchanged.
        let r = unsafe { self.inner.plan_destroy(plan) };
        // Freed even when the call reports an error (hipFFT frees the plan first).
        self.counts.destroyed.fetch_add(1, Ordering::SeqCst);
        self.counts.down();
        r
    }
}
