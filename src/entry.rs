//! A cached plan and the pool core it reports back to.

use std::collections::HashMap;
use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::ceiling::LiveCeiling;
use crate::desc::PlanDesc;
use crate::metrics::Counters;
use crate::lease_state::LeaseState;
use crate::runtime::{RawEvent, RawPlan, Runtime, with_device};
use crate::sync::{AtomicU64, Mutex, Ordering, lock};
use crate::watchdog::{CallKind, Watchdog};

/// What every plan, the destroyer thread and the completion thread share. It holds no
/// cache: a plan may outlive its pool (a lease still out) and must still be destroyed.
pub(crate) struct Core {
    pub runtime: Arc<dyn Runtime>,
    pub ceiling: Arc<LiveCeiling>,
    pub counters: Counters,
    pub watchdog: Arc<Watchdog>,
    /// Last releases of retired plans go here; the destroyer thread takes them.
    pub retire_tx: Sender<Arc<PlanEntry>>,
    /// Evicted plans still leased, by handle, so snapshots and shutdown can see them.
    pub retired: Mutex<HashMap<RawPlan, Arc<PlanEntry>>>,
    /// The completion thread's queue; `None` once the pool shut down.
    pub completion_tx: parking_lot::Mutex<Option<Sender<crate::completion::PendingRelease>>>,
    /// Events free for reuse by `release_after`, per device.
    pub free_events: Mutex<HashMap<i32, Vec<RawEvent>>>,
}

impl Core {
    /// Destroys a plan nobody can reach any more, with its device current, then gives its
    /// slot back. Never called under a pool lock, never from `release()`.
    pub(crate) fn destroy(&self, entry: &PlanEntry) {
        let rt = &*self.runtime;
        let started = std::time::Instant::now();
        let result = {
            let _span = tracing::debug_span!("destroy", desc = %entry.desc).entered();
            let _call = self.watchdog.enter(CallKind::Destroy, &entry.desc);
            with_device(rt, entry.desc.device, || rt.plan_destroy(entry.plan))
        };
        self.counters.destroy_latency.record(started.elapsed());
        match result {
            Ok(()) => Counters::bump(&self.counters.destroys),
            Err(e) => {
                // The handle's state is unknown after a failed destroy; it cannot be retried
                // meaningfully, so it is counted and its slot given back.
                Counters::bump(&self.counters.destroy_failures);
                tracing::error!(plan = ?entry.plan, desc = %entry.desc, error = %e, "hipfftDestroy failed");
            }
        }
        self.counters.hits_of_destroyed.fetch_add(entry.hits.load(Ordering::Relaxed), Ordering::Relaxed);
        self.counters.live_down();
        self.ceiling.release();
    }

    /// Destroys a retired plan whose last lease went, removing it from the retired set.
    pub(crate) fn destroy_retired(&self, entry: Arc<PlanEntry>) {
        lock(&self.retired).remove(&entry.plan);
        self.destroy(&entry);
    }
}

pub(crate) struct PlanEntry {
    pub core: Arc<Core>,
    pub desc: PlanDesc,
    pub plan: RawPlan,
    pub work_size: usize,
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
