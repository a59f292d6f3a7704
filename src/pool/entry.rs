//! A cached plan and the pool core it reports back to.

use std::collections::HashMap;
use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::pool::ceiling::LiveCeiling;
use crate::desc::PlanDesc;
use crate::observe::counters::{Counters, Latency};
use crate::pool::lease_state::LeaseState;
use crate::runtime::boundary::{RawEvent, RawPlan, Runtime, with_device};
use crate::sync::{AtomicU64, Mutex, Ordering, lock};
use crate::observe::watchdog::{CallKind, Watchdog};

/// One device as the pool sees it: the ceiling its plans count against (the process-wide
/// one unless the pool splits it per device) and its counters.
pub(crate) struct Device {
    pub ceiling: Arc<LiveCeiling>,
    pub counters: Counters,
}

/// Where a device's ceiling comes from.
pub(crate) enum CeilingPlan {
    /// Every device counts against this one.
    Shared(Arc<LiveCeiling>),
    /// Each device has its own process-wide ceiling of this limit.
    PerDevice(usize),
}

/// What every plan, the destroyer thread and the completion thread share. It holds no
/// cache: a plan may outlive its pool (a lease still out) and must still be destroyed.
pub(crate) struct Core {
    pub runtime: Arc<dyn Runtime>,
    pub ceilings: CeilingPlan,
    pub devices: parking_lot::RwLock<std::collections::BTreeMap<i32, Arc<Device>>>,
    pub watchdog: Arc<Watchdog>,
    /// This pool's live handles over all devices, and the most at once.
    pub live: crate::sync::AtomicUsize,
    pub peak_live: crate::sync::AtomicUsize,
    /// Last releases of retired plans go here; the destroyer thread takes them.
    pub retire_tx: Sender<Arc<PlanEntry>>,
    /// Evicted plans still leased, by handle, so snapshots and shutdown can see them.
    pub retired: Mutex<HashMap<RawPlan, Arc<PlanEntry>>>,
    /// The completion thread's queue; `None` once the pool shut down.
    pub completion_tx: parking_lot::Mutex<Option<Sender<crate::pool::completion::PendingRelease>>>,
    /// Events free for reuse by `release_after`, per device.
    pub free_events: Mutex<HashMap<i32, Vec<RawEvent>>>,
    /// Idle plans evicted (by any thread, under the pool lock) whose destroy has not yet
    /// returned: `shutdown` waits for them as for retired plans.
    pub destroying: crate::sync::AtomicUsize,
}

impl Core {
    /// The device's state, made on first use.
    pub(crate) fn device(&self, id: i32) -> Arc<Device> {
        if let Some(d) = self.devices.read().get(&id) {
            return d.clone();
        }
        let ceiling = match &self.ceilings {
            CeilingPlan::Shared(c) => c.clone(),
            CeilingPlan::PerDevice(limit) => LiveCeiling::process_wide_for_device(id, *limit),
        };
        self.devices
            .write()
            .entry(id)
            .or_insert_with(|| Arc::new(Device { ceiling, counters: Counters::default() }))
            .clone()
    }

    pub(crate) fn live_up(&self, dev: &Device) {
        dev.counters.live_up();
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_live.fetch_max(now, Ordering::Relaxed);
    }

    pub(crate) fn live_down(&self, dev: &Device) {
        dev.counters.live_down();
        self.live.fetch_sub(1, Ordering::SeqCst);
    }

    /// Destroys an idle plan that `PlanPool::retire` handed out (counted in `destroying`
    /// from then until now). Never called under a pool lock, never from `release()`.
    pub(crate) fn destroy(&self, entry: &PlanEntry) {
        self.destroy_plan(entry);
        self.destroying.fetch_sub(1, Ordering::SeqCst);
    }

    /// Destroys a plan nobody can reach any more, with its device current, then gives its
    /// slot back.
    fn destroy_plan(&self, entry: &PlanEntry) {
        let rt = &*self.runtime;
        let started = std::time::Instant::now();
        let result = {
            let _span = tracing::debug_span!("destroy", desc = %entry.desc).entered();
            let _call = self.watchdog.enter(CallKind::Destroy, &entry.desc, &entry.dev.ceiling);
            // SAFETY: the plan is live and unreachable: no lease, no cache slot, no other
            // destroyer; its last execution was released.
            with_device(rt, entry.desc.device, || unsafe { rt.plan_destroy(entry.plan) })
        };
        let c = &entry.dev.counters;
        c.record_latency(Latency::Destroy, entry.desc.device, started.elapsed());
        match result {
            Ok(()) => Counters::bump(&c.destroys),
            Err(e) => {
                // The handle's state is unknown after a failed destroy; it cannot be retried
                // meaningfully, so it is logged, counted and its slot given back (logged first:
                // whoever sees the count can find the line).
                tracing::error!(plan = ?entry.plan, desc = %entry.desc, error = %e, "hipfftDestroy failed");
                Counters::bump(&c.destroy_failures);
            }
        }
        c.hits_of_destroyed.fetch_add(entry.hits.load(Ordering::Relaxed), Ordering::Relaxed);
        self.live_down(&entry.dev);
        entry.dev.ceiling.release();
    }

    /// Destroys a retired plan whose last lease went, then removes it from the retired set.
    /// Only then: `shutdown` waits for the set to empty, and must not return while the
    /// destroy is still in progress. (The handle may have been reused by a plan retired
    /// since; only this entry is removed.)
    pub(crate) fn destroy_retired(&self, entry: Arc<PlanEntry>) {
        self.destroy_plan(&entry);
        let mut retired = lock(&self.retired);
        if retired.get(&entry.plan).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
            retired.remove(&entry.plan);
        }
    }
}

pub(crate) struct PlanEntry {
    pub core: Arc<Core>,
    pub dev: Arc<Device>,
    pub desc: PlanDesc,
    pub plan: RawPlan,
    pub work_size: usize,
    /// Bytes one execution's input spans (the scratch of a preserving execution).
    pub input_bytes: usize,
    pub auto_allocation: bool,
    pub state: LeaseState,
    /// Recency stamp of the last hit (see `clock`).
    pub last_used: AtomicU64,
    /// The stamp this plan had when the LRU list last placed it.
    pub listed: AtomicU64,
    pub hits: AtomicU64,
    /// Set-stream, set-work-area and exec of one plan must not interleave between threads.
    pub exec_lock: parking_lot::Mutex<()>,
}
