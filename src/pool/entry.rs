//! A cached plan (`PlanEntry`), the pool core it reports back to (`Core`), and a lease
//! waiting for its GPU work (`PendingRelease`, what the completion thread holds).
//!
//! Core and PlanEntry refer to each other (a plan reports to its core; the core holds its
//! retired plans), so they share this file. The release of a lease is here too, as a
//! `PlanEntry` method: `Drop for Lease` calls it, and so does a `PendingRelease` once its
//! event fired, so `lease.rs` and `completion.rs` never need each other.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::pool::creator::{Creators, RuntimeCalls};
use crate::desc::PlanDesc;
use crate::error::Error;
use crate::observe::counters::{Counters, Latency};
use crate::observe::watchdog::{CallKind, Watchdog};
use crate::pool::batch::{OpenBatches, StreamBatch};
use crate::pool::ceiling::LiveCeiling;
use crate::pool::completion::{Completes, Lent};
use crate::pool::device::{CeilingPlan, Device};
use crate::pool::lease_state::{LeaseState, Released, Stripe};
use crate::runtime::boundary::{DevicePtr, RawEvent, RawPlan, RawStream, Rebind, Runtime, with_device};
use crate::sync::channel::Sender;
use crate::sync::stat::AtomicU64;
use crate::sync::{AtomicBool, AtomicUsize, Mutex, Ordering, lock, parking};

/// What every plan, the destroyer thread and the completion thread share. It holds no
/// cache: a plan may outlive its pool (a lease still out) and must still be destroyed.
pub(crate) struct Core {
    pub runtime: Arc<dyn Runtime>,
    pub ceilings: CeilingPlan,
    pub devices: parking::RwLock<BTreeMap<i32, Arc<Device>>>,
    pub watchdog: Arc<Watchdog>,
    /// This pool's live handles over all devices, and the most at once (statistics: the
    /// ceiling's own count is what bounds them).
    pub live: crate::sync::stat::AtomicUsize,
    pub peak_live: crate::sync::stat::AtomicUsize,
    /// Last releases of retired plans go here; the destroyer thread takes them.
    pub retire_tx: Sender<Arc<PlanEntry>>,
    /// Evicted plans still leased, by handle, so snapshots and shutdown can see them.
    pub retired: Mutex<HashMap<RawPlan, Arc<PlanEntry>, rustc_hash::FxBuildHasher>>,
    /// The completion thread's queue; `None` once the pool shut down.
    pub completion_tx: parking::Mutex<Option<Sender<PendingRelease>>>,
    /// Set (with `completion_tx` cleared) by `shutdown`: no event is made or listed after.
    pub shut: AtomicBool,
    /// Leases released with `release_in_batch`, per (device, stream), waiting for the one
    /// event the batch's end records (`PlanPool::end_batch`, or the batch filling up).
    pub batches: OpenBatches<Held>,
    /// Idle plans evicted (by any thread, under the pool lock) whose destroy has not yet
    /// returned: `shutdown` waits for them as for retired plans.
    pub destroying: AtomicUsize,
    /// Where misses run their plan creations (never on the calling thread).
    pub creators: Creators,
    /// Plans whose destroy could not run (their device could not be made current): still
    /// alive, still counted, retried by the destroyer thread.
    pub undestroyed: Mutex<Vec<Arc<PlanEntry>>>,
    /// When a stream was last seen capturing a graph (a `release_after` on it, or the host
    /// said so): the warm-up makes no plan while captures go on.
    pub capture_seen: parking::Mutex<Option<std::time::Instant>>,
    /// The runtime has one device: every plan is of the current device, and an execution
    /// needs no `hipGetDevice` to make sure (about 100 ns in a real framework's process).
    pub one_device: bool,
    /// How long a done batch's leases wait for their stream's thread (`GivenBack`).
    pub batch_lend: std::time::Duration,
}

impl Core {
    /// Runs `f` with `device` current ([`with_device`]); at once on a one-device runtime.
    #[inline]
    pub(crate) fn on_device<T>(&self, device: i32, f: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
        if self.one_device { f() } else { self.on_other_device(device, f) }
    }

    /// [`Core::on_device`] on a machine of several devices: out of line, so that the
    /// one-device path's instructions stay few.
    #[inline(never)]
    fn on_other_device<T>(&self, device: i32, f: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
        with_device(&*self.runtime, device, f)
    }

    /// A stream was seen capturing a graph (see `capture_seen`).
    pub(crate) fn note_capture(&self) {
        *self.capture_seen.lock() = Some(std::time::Instant::now());
    }

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
            .or_insert_with(|| Arc::new(Device {
                ordinal: id,
                ceiling,
                counters: Counters::default(),
                calls: RuntimeCalls::default(),
                enlisted: Default::default(),
                free_events: Mutex::new(Vec::new()),
            }))
            .clone()
    }

    /// Counts a plan being made (its ceiling slot is already taken).
    pub(crate) fn live_up(&self, dev: &Device) {
        dev.counters.live_up();
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_live.fetch_max(now, Ordering::Relaxed);
    }

    /// Counts a plan out (destroyed, or its creation failed).
    pub(crate) fn live_down(&self, dev: &Device) {
        dev.counters.live_down();
        self.live.fetch_sub(1, Ordering::SeqCst);
    }

    /// Destroys an idle plan that `PlanPool::retire` handed out (counted in `destroying`
    /// from then until now). Never called under a pool lock, never from `release()`.
    pub(crate) fn destroy(&self, entry: &Arc<PlanEntry>) {
        self.destroy_plan(entry);
        self.destroying.fetch_sub(1, Ordering::SeqCst);
    }

    /// Destroys a plan nobody can reach any more, with its device current, then gives its
    /// slot back. Returns false, keeping the slot, when the destroy could not run at all
    /// (the device could not be made current): the handle is still alive, so it still
    /// counts, and it is kept for a retry (`undestroyed`).
    fn destroy_plan(&self, entry: &Arc<PlanEntry>) -> bool {
        if self.destroy_call(entry).is_err() {
            return false;
        }
        self.live_down(&entry.dev);
        entry.dev.ceiling.release();
        true
    }

    /// `hipfftDestroy` of an unreachable plan with its device current, timed and counted;
    /// the slot is the caller's to settle. `Err` when the call could not run at all (the
    /// plan is then kept in `undestroyed` for a retry, still alive and counted). A destroy
    /// that ran and failed is `Ok`: the handle's state is unknown and cannot be retried
    /// meaningfully, so it is logged and counted, and its slot is given up like any other.
    fn destroy_call(&self, entry: &Arc<PlanEntry>) -> crate::error::Result<()> {
        let rt = &*self.runtime;
        let started = std::time::Instant::now();
        let mut ran = false;
        let result = {
            let _span = tracing::debug_span!("destroy", desc = %entry.desc).entered();
            let _call = self.watchdog.enter(CallKind::Destroy, &entry.desc, &entry.dev.ceiling);
            let _running = entry.dev.calls.enter(CallKind::Destroy, &entry.desc);
            with_device(rt, entry.desc.device, || {
                ran = true;
                // SAFETY: the plan is live and unreachable: no lease, no cache slot, no other
                // destroyer; its last execution was released.
                unsafe { rt.plan_destroy(entry.plan) }
            })
        };
        let c = &entry.dev.counters;
        c.record_latency(Latency::Destroy, entry.desc.device, started.elapsed());
        if !ran {
            let e = result.err().unwrap_or_else(|| crate::error::Error::Internal("the device could not be made current".into()));
            tracing::error!(plan = ?entry.plan, desc = %entry.desc, error = %e, "hipfftDestroy could not run (device not current); the plan stays alive and counted, and is retried");
            Counters::bump(&c.destroy_failures);
            lock(&self.undestroyed).push(entry.clone());
            return Err(e);
        }
        match result {
            Ok(()) => Counters::bump(&c.destroys),
            Err(e) => {
                // Logged first: whoever sees the count can find the line.
                tracing::error!(plan = ?entry.plan, desc = %entry.desc, error = %e, "hipfftDestroy failed");
                Counters::bump(&c.destroy_failures);
            }
        }
        Ok(())
    }

    /// Destroys an idle plan `PlanPool::retire` handed to a miss at the ceiling, which takes
    /// its slot over: the miss's creation runs next on the same worker, so the miss waits
    /// for one hand-off each way instead of two (the slot never goes back to the ceiling,
    /// so no other miss can take it in between). `Err` when the destroy could not run (the
    /// plan keeps its slot and is retried later) or panicked (it stays counted as live, as
    /// on the destroyer thread): either way the miss has no slot.
    pub(crate) fn destroy_for_swap(&self, entry: &Arc<PlanEntry>, to: &Device) -> crate::error::Result<()> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.destroy_call(entry)));
        self.destroying.fetch_sub(1, Ordering::SeqCst);
        match outcome {
            Ok(Ok(())) => {
                // The slot moves from the victim's device to the miss's (one ceiling).
                self.live_down(&entry.dev);
                self.live_up(to);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(p) => {
                let msg = crate::error::panic_message(&*p);
                tracing::error!(desc = %entry.desc, "hipfftDestroy panicked on a creation worker: {msg}; the plan stays counted as live");
                Counters::bump(&entry.dev.counters.destroy_failures);
                Err(crate::error::Error::Internal(format!("the runtime panicked in plan_destroy for {}: {msg}", entry.desc)))
            }
        }
    }

    /// Hands an evicted idle plan to the destroyer thread: a miss never runs a destroy
    /// itself (a destroy can wait for the device's whole queue, or forever). Only if that
    /// thread is gone (process teardown) is it destroyed here.
    pub(crate) fn doom(&self, entry: Arc<PlanEntry>) {
        if let Err(e) = self.retire_tx.send(entry) {
            self.destroy(&e.into_inner());
        }
    }

    /// Settles a creation whose miss stopped waiting for it: the plan it made (if any) is
    /// destroyed, and `creating` is given back, with the slot and the live count when the
    /// creation held one (`owns_slot`; a swap whose victim could not be destroyed did not).
    /// Runs on the creation worker, once the call returned.
    pub(crate) fn settle_abandoned(
        &self,
        dev: &Arc<Device>,
        desc: &PlanDesc,
        made: crate::error::Result<crate::runtime::boundary::CreatedPlan>,
        owns_slot: bool,
    ) {
        let c = &dev.counters;
        match made {
            Ok(created) => {
                Counters::bump(&c.creations);
                tracing::warn!(desc = %desc, "a plan creation returned after its miss gave up; destroying it");
                let rt = &*self.runtime;
                let result = {
                    let _call = self.watchdog.enter(CallKind::Destroy, desc, &dev.ceiling);
                    let _running = dev.calls.enter(CallKind::Destroy, desc);
                    // SAFETY: the plan was just made by this creation and nothing else has it:
                    // its miss gave up before it was cached.
                    with_device(rt, desc.device, || unsafe { rt.plan_destroy(created.plan) })
                };
                match result {
                    Ok(()) => Counters::bump(&c.destroys),
                    Err(e) => {
                        tracing::error!(desc = %desc, error = %e, "hipfftDestroy of an abandoned creation failed");
                        Counters::bump(&c.destroy_failures);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(desc = %desc, error = %e, "a plan creation failed after its miss gave up");
                Counters::bump(&c.create_failures);
            }
        }
        c.creating.fetch_sub(1, Ordering::SeqCst);
        if owns_slot {
            self.live_down(dev);
            dev.ceiling.release();
        }
    }

    /// Retries the destroys that could not run. Called by the destroyer thread.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn retry_undestroyed(&self) {
        let pending = std::mem::take(&mut *lock(&self.undestroyed));
        for e in pending {
            // A plan that fails again goes back on the list.
            self.destroy_plan(&e);
        }
    }

    /// Destroys what the destroyer thread was handed: a retired plan whose last lease
    /// went, or an idle plan a miss evicted (told apart by the retired set, which an idle
    /// victim has already left). A panic in the runtime is caught, logged and counted,
    /// and the thread keeps serving; the plan then stays counted as live.
    pub(crate) fn destroy_doomed(&self, entry: Arc<PlanEntry>) {
        let retired = lock(&self.retired).get(&entry.plan).is_some_and(|e| Arc::ptr_eq(e, &entry));
        let desc = entry.desc;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if retired {
                self.destroy_retired(entry);
            } else {
                self.destroy(&entry);
            }
        }));
        if let Err(p) = outcome {
            let msg = crate::error::panic_message(&*p);
            tracing::error!(desc = %desc, "hipfftDestroy panicked on the destroyer thread: {msg}; the plan stays counted as live");
            Counters::bump(&self.device(desc.device).counters.destroy_failures);
        }
    }

    /// Destroys a retired plan whose last lease went, then removes it from the retired set.
    /// Only then: `shutdown` waits for the set to empty, and must not return while the
    /// destroy is still in progress. (The handle may have been reused by a plan retired
    /// since; only this entry is removed.)
    pub(crate) fn destroy_retired(&self, entry: Arc<PlanEntry>) {
        // Even when it could not run (kept in `undestroyed`), it leaves the retired set: it
        // has no lease left, and `shutdown` reports undestroyed plans on their own.
        #[cfg(all(test, loom))]
        if crate::pool::tests::regressed(crate::pool::tests::Regression::LeaveRetiredBeforeDestroy) {
            lock(&self.retired).remove(&entry.plan);
        }
        self.destroy_plan(&entry);
        let mut retired = lock(&self.retired);
        if retired.get(&entry.plan).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
            retired.remove(&entry.plan);
        }
        // Its hits leave the retired set's listing for the counter (see `Cache::retire`).
        entry.dev.counters.hits_of_destroyed.fetch_add(entry.state.hits(), Ordering::Relaxed);
    }

    /// Puts an event back on its device's free list, or destroys it once the pool has shut
    /// down (its free lists are destroyed by `shutdown`; one recycled later would never be).
    /// Checked under the free-list lock, which `shutdown` takes only after it set `shut`.
    fn recycle_event(&self, dev: &Device, event: RawEvent) {
        {
            let mut free = lock(&dev.free_events);
            if !self.shut.load(Ordering::SeqCst) {
                free.push(event);
                return;
            }
        }
        let rt = &*self.runtime;
        // SAFETY: the event is live and no longer recorded or queried by anyone.
        if let Err(e) = with_device(rt, dev.ordinal, || unsafe { rt.event_destroy(event) }) {
            tracing::warn!(error = %e, "event destroy failed");
        }
    }
}

/// A cached (or retired) plan: its handle, what it was made for, and the state that counts
/// its leases.
///
/// A hit writes none of its words but `last_used`, and that only when the recency clock
/// moved: its lease goes to a stripe of `state`, and the lease borrows the entry's `Arc`
/// ([`Held`]) instead of counting it, so threads hitting one plan share its lines read-only.
/// `repr(C, align(64))` fixes which words share a line: the first holds what a hit and an
/// execution read (`state`, `last_used`, the plan, its work size); the second the lock an
/// execution writes, with the descriptor's device and transform (`PlanDesc` is `repr(C)`,
/// those first) right after it. An execution after the framework's own work evicted the
/// interposer's lines (MLX) thus reads two lines of the entry, not four.
#[repr(C, align(64))]
pub(crate) struct PlanEntry {
    /// Its leases, its hits and whether it was evicted (`LeaseState`). Shared with the
    /// threads' front caches, which hold it (and not the entry) to find a plan again.
    pub state: Arc<LeaseState>,
    /// Recency stamp of the last hit (see `clock`).
    pub last_used: AtomicU64,
    pub core: Arc<Core>,
    pub dev: Arc<Device>,
    pub plan: RawPlan,
    pub work_size: usize,
    pub auto_allocation: bool,
    /// Bytes one execution's input spans (the scratch of a preserving execution). Here so
    /// that `exec_lock` starts the second line (checked below).
    pub input_bytes: usize,
    /// Set-stream, set-work-area and exec of one plan must not interleave between threads;
    /// the lock holds what the plan carries (set under it).
    pub exec_lock: parking::Mutex<Carried>,
    pub desc: PlanDesc,
    /// The stamp this plan had when the LRU list last placed it.
    pub listed: AtomicU64,
    /// What making it took, microseconds (GreedyDual's cost).
    pub creation_us: f64,
    /// Uses of its key before it was made, remembered by a ghost (`eviction`).
    pub prior_uses: u64,
    /// GreedyDual's inflation when it was last used, as `f64` bits.
    pub base: AtomicU64,
    /// Standing leases on it (`StandingLease`): the plan counts as standing on its ceiling
    /// while there is one.
    pub standing: AtomicUsize,
}

// The lines `PlanEntry`'s comment promises: an execution's lock word is off the first line
// (which hits on other threads read), and the descriptor's device and transform share the
// second with it.
#[cfg(not(loom))]
const _: () = {
    use std::mem::{align_of, offset_of};
    assert!(align_of::<PlanEntry>() == 64);
    assert!(offset_of!(PlanEntry, exec_lock) == 64);
    assert!(offset_of!(PlanEntry, desc) + offset_of!(PlanDesc, rank) <= 128);
};

/// The stream and work area a real plan carries (a plan keeps them until they are set
/// again), `None` where not known: an execution sets only what differs
/// ([`Runtime::plan_exec_bound`]), and a framework that sets them outside a graph capture
/// leaves only the execution itself inside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Carried {
    pub stream: Option<RawStream>,
    pub work_area: Option<DevicePtr>,
}

impl Carried {
    /// What an execution on `stream` with `work_area` must set first.
    pub(crate) fn rebind(&self, stream: RawStream, work_area: Option<DevicePtr>) -> Rebind {
        Rebind { stream: self.stream != Some(stream), work_area: work_area.is_some() && self.work_area != work_area }
    }

    /// After a successful execution or bind that set (or found) these.
    pub(crate) fn record(&mut self, stream: Option<RawStream>, work_area: Option<DevicePtr>) {
        if stream.is_some() {
            self.stream = stream;
        }
        if work_area.is_some() {
            self.work_area = work_area;
        }
    }
}

impl PlanEntry {
    /// Its key's uses: hits, this creation, and those a ghost remembered.
    pub(crate) fn uses(&self) -> u64 {
        self.prior_uses + self.state.hits() + 1
    }

    /// Its GreedyDual-Size-Frequency priority (`eviction`).
    pub(crate) fn priority(&self) -> f64 {
        crate::pool::eviction::CostState::priority(f64::from_bits(self.base.load(Ordering::Relaxed)), self.uses(), self.creation_us)
    }

    /// Releases the lease that `self` stands for once the work enqueued so far on `stream`
    /// completes: records an event there (reused from the free list when one is there)
    /// and hands lease and event to the completion thread. On failure the lease comes back,
    /// still held, so it is neither lost nor released while its work may be in flight.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's runtime ([`crate::Lease::release_after`]).
    pub(crate) unsafe fn release_after(held: Held, stream: RawStream) -> Result<(), (Error, Held)> {
        let core = held.core.clone();
        let device = held.desc.device;
        // SAFETY: the caller's promise, passed on.
        unsafe { core.record_release(device, stream, held, Vec::new(), None) }.map_err(|(e, first, _)| (e, first))
    }
}

impl Core {
    /// Ends a batch: one event on `stream` covers every lease in it; once it fired, the
    /// leases go back to `home`, the stream's batch, for the thread using the stream to
    /// release.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's runtime.
    pub(crate) unsafe fn end_batch(
        &self,
        device: i32,
        stream: RawStream,
        mut batch: Vec<Held>,
        home: Arc<StreamBatch<Held>>,
    ) -> Result<(), (Error, Vec<Held>)> {
        if batch.is_empty() {
            return Ok(());
        }
        let first = batch.swap_remove(0);
        // SAFETY: the caller's promise, passed on.
        unsafe { self.record_release(device, stream, first, batch, Some(home)) }.map_err(|(e, first, mut rest)| {
            rest.push(first);
            (e, rest)
        })
    }

    /// Records one event on `stream` and hands it, with the leases `first` and `rest`
    /// stand for, to the completion thread. On failure the leases come back, still held.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's runtime.
    #[allow(clippy::type_complexity)]
    unsafe fn record_release(
        &self,
        device: i32,
        stream: RawStream,
        first: Held,
        rest: Vec<Held>,
        home: Option<Arc<StreamBatch<Held>>>,
    ) -> Result<(), (Error, Held, Vec<Held>)> {
        let rt = &*self.runtime;
        if self.shut.load(Ordering::SeqCst) {
            // Shut down: no event to make (nobody would ever destroy it).
            return Err((Error::ShutDown, first, rest));
        }
        let dev = &*first.dev;
        let recorded = self.on_device(device, || {
            // The free list's lock is held for the pop only, never across event_create.
            let reused = lock(&dev.free_events).pop();
            let event = match reused {
                Some(e) => e,
                None => rt.event_create()?,
            };
            // SAFETY: `event` is live (made above or kept on the free list); the caller
            // promised `stream` is a live stream of this runtime.
            match unsafe { rt.event_record(event, stream) } {
                Ok(()) => Ok(event),
                Err(e) => {
                    self.recycle_event(dev, event);
                    Err(e)
                }
            }
        });
        let event = match recorded {
            Ok(e) => e,
            Err(error) => {
                Counters::bump(&first.dev.counters.event_failures);
                return Err((error, first, rest));
            }
        };
        let pending = PendingRelease { entry: first, rest, event, stream, unproven: std::cell::Cell::new(false), home };
        // Sent under the lock (an unbounded send never blocks): no clone of the sender.
        let sent = match &*self.completion_tx.lock() {
            Some(tx) => tx.send(pending).map_err(|e| e.0),
            None => Err(pending),
        };
        let Err(back) = sent else { return Ok(()) };
        // The completion thread is gone: the event goes back (or is destroyed), not lost.
        self.recycle_event(&back.entry.dev, back.event);
        Err((Error::ShutDown, back.entry, back.rest))
    }
}

/// One lease on a plan, as the pool passes it between its parts (a `Lease`, an open batch,
/// a pending release): the entry, borrowed, and the stripe of its state that counts the
/// lease.
///
/// It holds no reference count: taking and giving back a lease write only the stripe's
/// line, not the `Arc`'s counts that every thread hitting the plan would share. The lease
/// it stands for keeps the entry alive instead: until the plan's last lease is released the
/// plan is not destroyed, and until then the cache's map or the retired set holds the
/// entry's `Arc` (`Cache::retire` lists an entry as retired before it marks it evicted).
/// Once its lease is given back (`release`) nothing of the entry may be touched.
///
/// Dropped without `release` (only a pending release whose completion thread panicked),
/// its lease stays taken: the plan is then never destroyed, rather than destroyed under
/// work that may still run.
pub(crate) struct Held {
    entry: NonNull<PlanEntry>,
    stripe: Stripe,
}

// SAFETY: a `Held` stands for a `&PlanEntry` kept valid by its lease (see above), and
// `PlanEntry` is `Sync`: any thread may use and release it.
unsafe impl Send for Held {}
// SAFETY: as for `Send`; `&Held` gives out only `&PlanEntry`.
unsafe impl Sync for Held {}

impl Held {
    /// Takes over the lease just taken on `stripe` of `entry`'s state.
    ///
    /// # Safety
    /// The caller took that lease and passes it on (it is released through the result, once),
    /// and `entry` is listed in its cache's map, or in the retired set, or was made by the
    /// caller and is listed in one of them before this lease can be released.
    #[inline]
    pub(crate) unsafe fn new(entry: &Arc<PlanEntry>, stripe: Stripe) -> Held {
        Held { entry: NonNull::from(&**entry), stripe }
    }

    /// As [`Held::new`], from a pointer to the entry.
    ///
    /// # Safety
    /// As for [`Held::new`]; `entry` points into an `Arc<PlanEntry>` so listed.
    #[inline]
    pub(crate) unsafe fn from_ptr(entry: NonNull<PlanEntry>, stripe: Stripe) -> Held {
        Held { entry, stripe }
    }

    /// Another lease on the same plan and stripe, taken while this one holds it.
    pub(crate) fn share(&self) -> Held {
        self.state.add_lease(self.stripe);
        Held { entry: self.entry, stripe: self.stripe }
    }

    /// The entry's `Arc`, counted: for the destroyer, which outlives every lease.
    fn counted(&self) -> Arc<PlanEntry> {
        let p = self.entry.as_ptr().cast_const();
        // SAFETY: `p` came from an `Arc<PlanEntry>` that the map or the retired set still
        // holds (this lease keeps it listed), so its count is above zero while it is raised.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    /// Gives the lease back. Never calls the runtime (safe in a stream callback): one
    /// atomic decrement on the lease's stripe, a wake-up only if a miss waits at a ceiling,
    /// and for the last lease of a retired plan a send to the destroyer thread.
    #[inline]
    pub(crate) fn release(self) {
        match self.state.release(self.stripe) {
            // The entry may be gone from here on: nothing of it is touched.
            Released::StillLeased => {}
            Released::Idle => {
                // An idle plan may be evicted: a miss waiting at a ceiling should look again.
                crate::pool::ceiling::notify_idle();
            }
            Released::LastOfRetired => {
                // This release owns the destroy, so the entry stays listed as retired until
                // the destroyer is done with it.
                let entry = self.counted();
                if let Err(e) = self.core.retire_tx.send(entry) {
                    // The destroyer thread is gone (process teardown): the handle is never
                    // destroyed. Counted and logged, never a panic here.
                    let entry = e.into_inner();
                    Counters::bump(&entry.dev.counters.destroy_failures);
                    tracing::error!(plan = ?entry.plan, "a retired plan's destroyer is gone; its handle is not destroyed");
                }
            }
        }
    }
}

impl Deref for Held {
    type Target = PlanEntry;

    #[inline]
    fn deref(&self) -> &PlanEntry {
        // SAFETY: valid while the lease is held (see the type), which `&self` proves.
        unsafe { self.entry.as_ref() }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("plan", &self.plan).field("stripe", &self.stripe).finish()
    }
}

/// Leases waiting for their GPU work: the plans they hold (one lease each, counted in the
/// plan's state word; more than one for a batch), the event recorded behind that work, and
/// the stream it was recorded on.
/// The completion thread releases the lease when the event fires. Dropped without
/// completing (only if the completion thread panicked), it keeps its lease: the plan is
/// then never destroyed, rather than destroyed under work that may still run.
pub(crate) struct PendingRelease {
    entry: Held,
    /// The other leases of a batch, covered by the same event (empty for `release_after`).
    rest: Vec<Held>,
    event: RawEvent,
    stream: RawStream,
    /// Set once neither a query nor a synchronize of the event could prove the work done:
    /// the lease is kept (the plan is neither reused idle nor destroyed) and polled again.
    unproven: std::cell::Cell<bool>,
    /// A batch's stream batch: its leases go back there once done, for the thread using the
    /// stream to release (`batch`'s index says why); `None` for `release_after`.
    home: Option<Arc<StreamBatch<Held>>>,
}

/// A done batch's leases, given back to their stream's batch ([`StreamBatch::give_back`]).
/// The completion thread releases what the stream's next add or end has not taken once the
/// loan is due: after the pool's `batch_lend` (by default far longer than a host's gap
/// between two executions, short next to what it costs: the plans stay leased, not idle,
/// that long), at once while a miss waits at a ceiling (it may wait for these plans), and
/// once the batch is closed (its pool shut down).
pub(crate) struct GivenBack {
    home: Arc<StreamBatch<Held>>,
    lend: std::time::Duration,
    /// The ceiling the batch's plans count against (a batch's leases are one device's).
    ceiling: Arc<LiveCeiling>,
}

impl Lent for GivenBack {
    fn due(&self, waited: std::time::Duration) -> bool {
        // Time must not decide a branch under loom: there, every loan is due at once (the
        // race with a claiming add is what the models explore).
        cfg!(loom) || waited >= self.lend || self.ceiling.waiters() > 0 || self.home.is_closed()
    }

    fn finish(self) {
        for e in self.home.reclaim() {
            e.release();
        }
    }
}

impl Completes for PendingRelease {
    type Queue = (i32, usize);

    /// The stream's in-order queue; `None` for a handle that may name a different stream
    /// on each thread (0, and HIP/CUDA's legacy and per-thread 1 and 2).
    fn queue(&self) -> Option<(i32, usize)> {
        (self.stream.0 > 2).then_some((self.entry.desc.device, self.stream.0))
    }

    /// Whether the event proves the work done: it fired, or its query failed and a
    /// synchronize of it returned. When both fail (a device in error), or the runtime
    /// panics, the work is not proven done: the lease stays held, counted in
    /// `event_failures` and logged once, and a later round asks again. Releasing it would
    /// let a plan be reused or destroyed under work that may still run; a panic must not
    /// end the completion thread, which every other release waits on.
    fn poll(&self) -> bool {
        let e = &self.entry;
        let rt = &*e.core.runtime;
        let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: a pending release owns its live event until it is recycled.
            with_device(rt, e.desc.device, || match unsafe { rt.event_query(self.event) } {
                Ok(done) => Ok(Ok(done)),
                // SAFETY: as for the query.
                Err(query) => match unsafe { rt.event_synchronize(self.event) } {
                    Ok(()) => Ok(Ok(true)),
                    Err(sync) => Ok(Err(format!("query: {query}; synchronize: {sync}"))),
                },
            })
        }));
        let why = match asked {
            Ok(Ok(Ok(done))) => return done,
            Ok(Ok(Err(why))) => why,
            Ok(Err(device)) => format!("the device could not be made current: {device}"),
            Err(panic) => format!("the runtime panicked: {}", crate::error::panic_message(&*panic)),
        };
        if !self.unproven.replace(true) {
            Counters::bump(&e.dev.counters.event_failures);
            tracing::error!(
                plan = ?e.plan,
                "the event behind a release_after could not prove its work done ({why}); \
                 the lease stays held until a later query does"
            );
        }
        false
    }

    /// Recycles the event, then releases the leases.
    fn complete(self) -> Option<GivenBack> {
        self.entry.core.recycle_event(&self.entry.dev, self.event);
        let lend = self.entry.core.batch_lend;
        let PendingRelease { entry, rest, home, .. } = self;
        if let Some(home) = home.filter(|_| !lend.is_zero() && entry.dev.ceiling.waiters() == 0) {
            let ceiling = entry.dev.ceiling.clone();
            let mut all = rest;
            // Fits: the batch's buffer held `entry` too before it was swapped out.
            all.push(entry);
            let back = match home.give_back(all) {
                Ok(()) => return Some(GivenBack { home, lend, ceiling }),
                Err(back) => back,
            };
            for e in back {
                e.release();
            }
            return None;
        }
        for e in rest {
            e.release();
        }
        entry.release();
        None
    }

    type Lent = GivenBack;
}
