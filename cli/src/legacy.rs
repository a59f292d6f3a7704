//! `--mode legacy`: the plan cache MLX's ROCm FFT backend had, as the baseline the pool is
//! measured against. It lives in the binary, not the library: nobody should build on it.
//!
//! The design: an LRU (the `lru` crate) of `Arc` plans, bounded by a capacity and by nothing
//! else. A miss creates the plan first and then inserts it, so the insert evicts the least
//! recently used plan *after* the new handle exists (capacity + 1 handles are alive for a
//! moment). An execution holds a shared reference to its plan until its work is done; an
//! evicted plan is destroyed when its last reference drops. No ceiling counts the handles
//! alive, which is what let the original probe pass a dozen of them on gfx1151.
//!
//! `--destroy` picks when an evicted plan is destroyed:
//!
//! * `deferred` (MLX's behaviour): each execution's reference is kept, with an event
//!   recorded on the execution's stream after it, until that event has completed (MLX
//!   keeps the plan's `shared_ptr` alive until the command completes). Completed
//!   references are dropped at the next cache access (every acquire first reaps them, in
//!   order; clearing the cache waits for all of them). The cache's eviction only drops the
//!   cache's own reference; `hipfftDestroy` runs wherever the last reference goes: inside
//!   the miss that evicted the plan when it was idle, else in the acquire that reaps its
//!   last execution. Reaping on the host thread, not on a thread of its own, keeps the
//!   counts deterministic: a run that passes passes every time.
//! * `eager`: each execution's reference is dropped right after synchronizing its stream
//!   (the probe synchronizes before releasing); an eviction synchronizes every stream the
//!   cache's plans ran on and then calls `hipfftDestroy` on the evicted plan at once, in the
//!   miss, whatever references remain (using one later is an error, never a use after free).

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::probe::{PlanSource, ProbeLease};
use hipfft_pool::runtime::with_device;
use hipfft_pool::{CreatedPlan, Direction, Error, PlanDesc, PlanOptions, RawEvent, RawStream, Result, Runtime};
use lru::LruCache;

/// When an evicted plan is destroyed (see the module docs; the pool's meaning is in
/// `cli/probe.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DestroyMode {
    Deferred,
    Eager,
}

impl DestroyMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "deferred" => Some(Self::Deferred),
            "eager" => Some(Self::Eager),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Deferred => "deferred",
            Self::Eager => "eager",
        }
    }
}

/// What the legacy cache counts, readable from any thread at any time (the sweep's
/// heartbeat reads it while the probe thread may be stuck inside a runtime call).
#[derive(Debug, Default)]
pub struct LegacyCounts {
    /// Handles alive: counted from just before `plan_create` until `plan_destroy` returns.
    pub live: AtomicUsize,
    pub peak_live: AtomicUsize,
    pub cached: AtomicUsize,
    /// References held for executions (by a lease, or by the releaser until its event fires).
    pub in_flight: AtomicUsize,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub creations: AtomicU64,
    pub destroys: AtomicU64,
    pub destroy_failures: AtomicU64,
}

impl LegacyCounts {
    fn live_up(&self) {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_live.fetch_max(now, Ordering::SeqCst);
    }
    fn live_down(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Shared {
    rt: Arc<dyn Runtime>,
    counts: Arc<LegacyCounts>,
    /// Streams with an execution whose lease is still held, with how many: what an eager
    /// eviction synchronizes, as the device-wide synchronization inside `hipFree` would.
    /// Only these: a stream whose leases are all gone may be destroyed already, and
    /// synchronizing it then is a use after free (on CUDA it is).
    streams: Mutex<HashMap<RawStream, usize>>,
    /// `deferred`: references held until the event recorded after their execution completes.
    pending: Mutex<VecDeque<(RawEvent, Held)>>,
}

struct LegacyPlan {
    shared: Arc<Shared>,
    desc: PlanDesc,
    made: CreatedPlan,
    destroyed: AtomicBool,
}

impl LegacyPlan {
    /// `hipfftDestroy`, once.
    fn destroy_now(&self) {
        if self.destroyed.swap(true, Ordering::SeqCst) {
            return;
        }
        let rt = &*self.shared.rt;
        // SAFETY: `destroyed` makes this the only destroy; the eager path synchronized the
        // streams first, the deferred one destroys after the last reference's execution.
        let r = with_device(rt, self.desc.device, || unsafe { rt.plan_destroy(self.made.plan) });
        let c = &self.shared.counts;
        c.destroys.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = r {
            c.destroy_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, desc = %self.desc, "legacy cache: destroy failed");
        }
        c.live_down();
    }
}

impl Drop for LegacyPlan {
    fn drop(&mut self) {
        // The last shared reference went: destroyed here, as the shared_ptr's deleter did.
        self.destroy_now();
    }
}

/// One execution's reference, counted in flight until dropped, with the stream its
/// execution ran on (counted in `Shared::streams` while it is held).
struct Held(Arc<LegacyPlan>, Cell<Option<RawStream>>);

impl Held {
    /// Records the stream an execution is enqueued on.
    fn ran_on(&self, stream: RawStream) {
        if self.1.get() == Some(stream) {
            return;
        }
        let mut streams = lock(&self.0.shared.streams);
        if let Some(old) = self.1.replace(Some(stream)) {
            forget_stream(&mut streams, old);
        }
        *streams.entry(stream).or_default() += 1;
    }
}

fn forget_stream(streams: &mut HashMap<RawStream, usize>, s: RawStream) {
    if let Some(n) = streams.get_mut(&s) {
        *n -= 1;
        if *n == 0 {
            streams.remove(&s);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(s) = self.1.take() {
            forget_stream(&mut lock(&self.0.shared.streams), s);
        }
        self.0.shared.counts.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct LegacyCache {
    shared: Arc<Shared>,
    lru: Mutex<LruCache<PlanDesc, Arc<LegacyPlan>>>,
    options: PlanOptions,
    destroy: DestroyMode,
}

impl LegacyCache {
    pub fn new(rt: Arc<dyn Runtime>, capacity: usize, options: PlanOptions, destroy: DestroyMode) -> Result<Self> {
        let cap = NonZeroUsize::new(capacity).ok_or(Error::InvalidConfig {
            field: "capacity",
            value: "0".into(),
            reason: "must be at least 1",
        })?;
        let shared = Arc::new(Shared {
            rt,
            counts: Arc::default(),
            streams: Mutex::new(HashMap::new()),
            pending: Mutex::new(VecDeque::new()),
        });
        Ok(LegacyCache { shared, lru: Mutex::new(LruCache::new(cap)), options, destroy })
    }

    /// Drops the references whose executions completed (all of them, waiting, if `wait`).
    fn reap(&self, wait: bool) {
        let rt = &*self.shared.rt;
        loop {
            let next = {
                let mut q = lock(&self.shared.pending);
                let done = match q.front() {
                    None => return,
                    Some((ev, _)) if wait => {
                        // SAFETY: a pending entry owns its live event until it is popped.
                        if let Err(e) = unsafe { rt.event_synchronize(*ev) } {
                            tracing::warn!(error = %e, "legacy cache: event synchronize failed");
                        }
                        true
                    }
                    // SAFETY: as above.
                    Some((ev, _)) => unsafe { rt.event_query(*ev) }.unwrap_or(true),
                };
                if !done {
                    return;
                }
                q.pop_front()
            };
            // Dropped outside the lock: the last reference destroys the plan here.
            if let Some((ev, held)) = next {
                drop(held);
                // SAFETY: popped, so nobody else holds it; it is not used again.
                if let Err(e) = unsafe { rt.event_destroy(ev) } {
                    tracing::warn!(error = %e, "legacy cache: event destroy failed");
                }
            }
        }
    }

    pub fn counts(&self) -> Arc<LegacyCounts> {
        self.shared.counts.clone()
    }

    /// Drops every cached plan (the cache's destructor at exit), once every execution's
    /// reference has been released.
    pub fn clear(&mut self) {
        self.reap(true);
        let plans: Vec<Arc<LegacyPlan>> = {
            let mut lru = lock(&self.lru);
            let v = std::iter::from_fn(|| lru.pop_lru().map(|(_, p)| p)).collect();
            self.shared.counts.cached.store(0, Ordering::SeqCst);
            v
        };
        // Nothing is in flight any more (`reap(true)` waited for every reference), and the
        // streams the plans ran on may be destroyed by now: synchronizing a destroyed stream
        // is a use after free on CUDA (it crashed the H200 run), so no stream is touched here.
        lock(&self.shared.streams).clear();
        drop(plans);
    }

    fn sync_streams(&self) {
        let streams: Vec<RawStream> = lock(&self.shared.streams).keys().copied().collect();
        for s in streams {
            // SAFETY: only streams of leases still held: the probe finishes or drops each
            // lease before it destroys the stream the lease ran on.
            if let Err(e) = unsafe { self.shared.rt.stream_synchronize(s) } {
                tracing::warn!(error = %e, "legacy cache: stream synchronize failed");
            }
        }
    }
}

impl Drop for LegacyCache {
    fn drop(&mut self) {
        self.clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A shared reference to a plan, held for one execution.
pub struct LegacyLease {
    held: Held,
    destroy: DestroyMode,
}

impl PlanSource for LegacyCache {
    type Lease = LegacyLease;

    fn acquire(&self, desc: &PlanDesc) -> Result<LegacyLease> {
        let c = &self.shared.counts;
        let lease = |p: Arc<LegacyPlan>| {
            c.in_flight.fetch_add(1, Ordering::SeqCst);
            LegacyLease { held: Held(p, Cell::new(None)), destroy: self.destroy }
        };
        self.reap(false);
        if let Some(p) = lock(&self.lru).get(desc) {
            c.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(lease(p.clone()));
        }
        c.misses.fetch_add(1, Ordering::Relaxed);
        let rt = &*self.shared.rt;
        // hipfftCreate: the handle is alive from here on, whatever the cache holds.
        c.live_up();
        let made = match with_device(rt, desc.device, || rt.plan_create(desc, self.options)) {
            Ok(m) => m,
            Err(e) => {
                c.live_down();
                return Err(e);
            }
        };
        c.creations.fetch_add(1, Ordering::Relaxed);
        let plan = Arc::new(LegacyPlan { shared: self.shared.clone(), desc: *desc, made, destroyed: AtomicBool::new(false) });
        let out = lease(plan.clone());
        let evicted = {
            let mut lru = lock(&self.lru);
            let e = lru.push(*desc, plan.clone());
            c.cached.store(lru.len(), Ordering::SeqCst);
            e
        };
        drop(plan);
        if let Some((_, old)) = evicted.filter(|(_, old)| !Arc::ptr_eq(old, &out.held.0)) {
            match self.destroy {
                // Only the cache's reference goes; the plan is destroyed here if idle.
                DestroyMode::Deferred => drop(old),
                DestroyMode::Eager => {
                    self.sync_streams();
                    old.destroy_now();
                    drop(old);
                }
            }
        }
        Ok(out)
    }

    fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.shared.rt
    }
}

impl ProbeLease for LegacyLease {
    fn work_size(&self) -> usize {
        self.held.0.made.work_size
    }

    fn exec(&self, stream: &Stream, input: &DeviceBuffer, output: &DeviceBuffer, direction: Direction, work: Option<&DeviceBuffer>) -> Result<()> {
        let p = &*self.held.0;
        if p.destroyed.load(Ordering::SeqCst) {
            return Err(Error::InvalidArgument { name: "plan", reason: "destroyed by an eager eviction while still referenced".into() });
        }
        // The typed buffers carry their sizes: check them, so the safe signature cannot
        // reach past an allocation.
        let ext = p.desc.extents()?;
        if input.len() < ext.input_bytes || output.len() < ext.output_bytes {
            return Err(Error::InvalidArgument { name: "input/output", reason: "smaller than the descriptor's extents".into() });
        }
        if work.is_some_and(|w| w.len() < p.made.work_size) {
            return Err(Error::InvalidArgument { name: "work_area", reason: "smaller than the plan's work size".into() });
        }
        self.held.ran_on(stream.raw());
        let rt = &*p.shared.rt;
        // SAFETY: the plan is live (checked above, and the held reference keeps it); the
        // sizes are checked; the buffers and the stream are the probe's, of this runtime,
        // and outlive the execution (`finish` waits for it, or its event does).
        with_device(rt, p.desc.device, || unsafe {
            rt.plan_exec(p.made.plan, p.desc.transform, stream.raw(), work.map(|w| w.ptr()), input.ptr(), output.ptr(), direction)
        })
    }

    fn finish(self, stream: &Stream) -> Result<()> {
        let LegacyLease { held, destroy } = self;
        if destroy == DestroyMode::Eager {
            let r = stream.synchronize();
            drop(held);
            return r;
        }
        let shared = held.0.shared.clone();
        let rt = &*shared.rt;
        // SAFETY: `ev` was just made; `stream` is the wrapper's live stream.
        let event = rt.event_create().and_then(|ev| match unsafe { rt.event_record(ev, stream.raw()) } {
            Ok(()) => Ok(ev),
            Err(e) => {
                // SAFETY: made above, recorded nowhere, not used again.
                let _ = unsafe { rt.event_destroy(ev) };
                Err(e)
            }
        });
        match event {
            Ok(ev) => {
                lock(&shared.pending).push_back((ev, held));
                Ok(())
            }
            Err(e) => {
                // No event to wait for: wait for the stream, then let go.
                let _ = stream.synchronize();
                drop(held);
                Err(e)
            }
        }
    }
}
