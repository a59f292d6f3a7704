//! `LiveCeiling`: the hard bound on hipFFT handles alive at once, shared process-wide.
//!
//! A slot is taken before `hipfftCreate` and given back only after `hipfftDestroy` returned,
//! so cached plans, evicted plans still in flight and plans being made all count. Taking a
//! slot never blocks; a caller that finds no slot makes room or waits on [`LiveCeiling::wait_for_change`],
//! which is woken by anything that could let it progress (a slot given back, a plan going idle).
//!
//! Wake-ups cannot be lost: a waiter about to sleep counts itself (`parked += 1`) under the
//! lock before it re-reads the epoch, and a notifier bumps the epoch before it reads
//! `parked`; with SeqCst one of the two sees the other (the store-buffer pattern), and the
//! notifier then takes the lock, which the waiter holds until it sleeps. A waiter that is
//! still polling (registered in `waiters`, not parked) sees the epoch move without a
//! wake-up, which is a system call the notifier then does not make.
//!
//! A change that does not bump the epoch unless someone waits (a plan going idle, on the
//! hot release path: [`notify_idle`]) is seen only by a waiter that was
//! registered before it last looked for room: a miss holds a [`Waiting`] registration from
//! [`LiveCeiling::register`] across its last look and its wait.

use std::sync::{Arc, Weak};
use std::time::Instant;

use crate::sync::{AtomicU64, AtomicUsize, Condvar, Mutex, Ordering, lock, loom_sc_fence};

/// The bound on hipFFT handles alive at once: cached, retired (evicted, still leased) and
/// being made. Shared by every pool that counts against it; process-wide by default, since
/// the hang it prevents is the driver's, not one pool's.
#[derive(Debug)]
pub struct LiveCeiling {
    limit: usize,
    live: AtomicUsize,
    peak: AtomicUsize,
    epoch: AtomicU64,
    waiters: AtomicUsize,
    /// Waiters asleep on `cond` (or about to be, under `lock`): the ones a notify must wake.
    parked: AtomicUsize,
    /// Plans counting against this ceiling that GPU completion will not give back: each
    /// has a [`StandingLease`](crate::StandingLease) out (a graph that can still run it,
    /// a plan kept for the process's life). Once they fill the ceiling, a miss that found no
    /// room fails at once ([`Error::CeilingHeld`](crate::Error::CeilingHeld)): nothing it
    /// could wait for would free a slot.
    standing: AtomicUsize,
    lock: Mutex<()>,
    cond: Condvar,
    /// The caches holding plans against this ceiling, so that a miss in one can ask the
    /// others for an idle plan (weak: a cache that is gone drops out).
    members: Members,
}

/// A cache that can give back one idle plan counting against a ceiling (a pool's cache).
pub(crate) trait Reclaim: Send + Sync {
    /// Evicts the least recently used idle plan that counts against `ceiling` and hands
    /// it to its destroyer; whether there was one. Called with no other pool's lock held.
    fn reclaim_one(&self, ceiling: &Arc<LiveCeiling>) -> bool;
}

#[derive(Default)]
struct Members(parking_lot::Mutex<Vec<Weak<dyn Reclaim>>>);

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} caches", self.0.lock().len())
    }
}

impl LiveCeiling {
    /// Lists a cache on this ceiling (once; later calls for it are ignored).
    pub(crate) fn enlist(&self, cache: Weak<dyn Reclaim>) {
        let mut m = self.members.0.lock();
        m.retain(|w| w.strong_count() > 0);
        if !m.iter().any(|w| std::ptr::addr_eq(w.as_ptr(), cache.as_ptr())) {
            m.push(cache);
        }
    }

    /// Asks the caches listed here other than `me`, in turn, for one idle plan; whether
    /// one gave a plan back (its destroy then frees a slot). Called by a miss that found
    /// nothing idle of its own, holding no pool lock.
    pub(crate) fn reclaim_from_others(self: &Arc<Self>, me: *const ()) -> bool {
        let others: Vec<Arc<dyn Reclaim>> = {
            let mut m = self.members.0.lock();
            m.retain(|w| w.strong_count() > 0);
            m.iter().filter(|w| !std::ptr::addr_eq(w.as_ptr(), me)).filter_map(Weak::upgrade).collect()
        };
        others.iter().any(|c| c.reclaim_one(self))
    }

    /// A ceiling of `limit` live handles. `limit` must be at least 1.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self::with_limit(limit))
    }

    pub(crate) fn with_limit(limit: usize) -> Self {
        LiveCeiling {
            limit: limit.max(1),
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            parked: AtomicUsize::new(0),
            standing: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cond: Condvar::new(),
            members: Members::default(),
        }
    }

    /// The process-wide ceiling. The first caller sets its limit; later callers share it
    /// whatever limit they ask for (the pool warns when they differ). A forked child gets a
    /// ceiling of its own (`sync::fork`): the parent's plans are not its handles.
    pub fn process_wide(limit: usize) -> Arc<Self> {
        Self::process_wide_for(None, limit)
    }

    /// The process-wide ceiling of one device, for pools that split the ceiling per device.
    /// The first caller for a device sets its limit.
    pub fn process_wide_for_device(device: i32, limit: usize) -> Arc<Self> {
        Self::process_wide_for(Some(device), limit)
    }

    fn process_wide_for(device: Option<i32>, limit: usize) -> Arc<Self> {
        crate::sync::fork::lock_around_fork(lock_for_fork);
        let generation = crate::sync::fork::generation();
        let mut all = PROCESS_WIDE.lock();
        if all.generation != generation {
            // Inherited across a fork: the parent's counts are not this process's handles.
            all.ceilings.clear();
            all.generation = generation;
        }
        if let Some((_, c)) = all.ceilings.iter().find(|(d, _)| *d == device) {
            return c.clone();
        }
        let c = LiveCeiling::new(limit);
        all.ceilings.push((device, c.clone()));
        c
    }

    /// The most handles allowed alive at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Handles alive now, across every pool sharing this ceiling.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// The most handles ever alive at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Plans held by standing leases right now (see `standing`): slots that no completion
    /// of GPU work will give back.
    ///
    /// ```
    /// let c = hipfft_pool::LiveCeiling::new(4);
    /// assert_eq!(c.standing(), 0);
    /// ```
    pub fn standing(&self) -> usize {
        self.standing.load(Ordering::SeqCst)
    }

    /// Whether every slot is held by a standing plan: a miss could only wait for somebody
    /// to let one go, which no GPU work will do.
    pub(crate) fn all_standing(&self) -> bool {
        self.standing() >= self.limit
    }

    /// A plan became standing (its first standing lease).
    pub(crate) fn stand(&self) {
        self.standing.fetch_add(1, Ordering::SeqCst);
    }

    /// A plan stopped standing (its last standing lease went): a waiter that failed on a
    /// full ceiling of standing plans may now find room once the plan is idle.
    pub(crate) fn unstand(&self) {
        let prev = self.standing.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev > 0, "standing count went below zero");
        self.notify();
    }

    /// Threads waiting for a change right now.
    pub fn waiters(&self) -> usize {
        self.waiters.load(Ordering::SeqCst)
    }

    /// Takes a slot if one is free. Never blocks.
    pub fn try_acquire(&self) -> bool {
        let mut cur = self.live.load(Ordering::SeqCst);
        loop {
            if cur >= self.limit {
                return false;
            }
            match self.live.compare_exchange_weak(cur, cur + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    self.peak.fetch_max(cur + 1, Ordering::Relaxed);
                    return true;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Gives a slot back (after `hipfftDestroy` returned, or when a creation failed).
    pub fn release(&self) {
        let prev = self.live.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev > 0, "ceiling slot released twice");
        self.notify();
    }

    /// The change counter a waiter reads before it looks for room.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Something changed that may let a waiter progress. Cheap when nobody waits.
    pub fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        loom_sc_fence();
        if self.parked.load(Ordering::SeqCst) > 0 {
            drop(lock(&self.lock));
            self.cond.notify_all();
        }
    }

    /// Registers the caller as a waiter until the guard drops. A miss registers *before* its
    /// last look for room (its checks must read with `SeqCst`), then waits with
    /// [`wait_for_change`](Self::wait_for_change): a change made after that look then always
    /// bumps the epoch, even one signalled by [`notify_idle`].
    pub(crate) fn register(self: &Arc<Self>) -> Waiting<'_> {
        let r = registry();
        lock(&r.ceilings).push(self.clone());
        r.count.fetch_add(1, Ordering::SeqCst);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        loom_sc_fence();
        Waiting { ceiling: self }
    }

    /// Waits until the epoch differs from `seen` or `deadline` passes. Returns false on timeout.
    pub fn wait_for_change(&self, seen: u64, deadline: Instant) -> bool {
        // Poll first (the caller is registered, so a change bumps the epoch either way): a
        // slot given back within the poll budget wakes no parked thread.
        if crate::sync::thread::poll_until(Some(deadline), || self.epoch.load(Ordering::SeqCst) != seen) {
            return true;
        }
        let mut guard = lock(&self.lock);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        self.parked.fetch_add(1, Ordering::SeqCst);
        loom_sc_fence();
        let changed = loop {
            if self.epoch.load(Ordering::SeqCst) != seen {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            guard = match self.cond.wait_timeout(guard, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        };
        self.parked.fetch_sub(1, Ordering::SeqCst);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        changed
    }
}

/// The process-wide ceilings (`None`: the one shared by every device), of one fork generation.
struct ProcessWide {
    generation: u64,
    ceilings: Vec<(Option<i32>, Arc<LiveCeiling>)>,
}

static PROCESS_WIDE: parking_lot::Mutex<ProcessWide> = parking_lot::Mutex::new(ProcessWide { generation: 0, ceilings: Vec::new() });

/// Locks the process-wide ceilings and the waiters' registry (before a fork; the guard goes
/// after it, on both sides), so that a child never inherits either lock held.
pub(crate) fn lock_for_fork() -> Box<dyn std::any::Any> {
    let ceilings = PROCESS_WIDE.lock();
    let waiters = lock(&registry().ceilings);
    Box::new((ceilings, waiters))
}

/// A registration as a waiter (see [`LiveCeiling::register`]); unregisters on drop.
pub(crate) struct Waiting<'a> {
    ceiling: &'a Arc<LiveCeiling>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.ceiling.waiters.fetch_sub(1, Ordering::SeqCst);
        let r = registry();
        r.count.fetch_sub(1, Ordering::SeqCst);
        let mut on = lock(&r.ceilings);
        if let Some(i) = on.iter().position(|c| Arc::ptr_eq(c, self.ceiling)) {
            on.swap_remove(i);
        }
    }
}

/// The waiters registered on any ceiling, and the ceilings they wait on (one entry per
/// registration). The release that idles a plan reads only this: once its lease is given
/// back, another thread may destroy and free the plan, its device state and a private
/// ceiling at once, so it must not touch them (the lease borrows the plan's `Arc`, it holds
/// no count of its own; see `entry::Held`).
struct Registry {
    count: AtomicUsize,
    ceilings: Mutex<Vec<Arc<LiveCeiling>>>,
}

#[cfg(not(loom))]
fn registry() -> &'static Registry {
    static REGISTRY: Registry = Registry { count: AtomicUsize::new(0), ceilings: Mutex::new(Vec::new()) };
    &REGISTRY
}

#[cfg(loom)]
fn registry() -> &'static Registry {
    // Made afresh for each execution loom explores.
    loom::lazy_static! {
        static ref REGISTRY: Registry = Registry { count: AtomicUsize::new(0), ceilings: Mutex::new(Vec::new()) };
    }
    &REGISTRY
}

/// A plan went idle (its release's `SeqCst` decrement is done): notifies every ceiling a
/// miss is registered on, if any; otherwise nothing at all (no shared write), for the hot
/// release path. A miss registered before its last look either saw the plan idle or is
/// notified: it listed its ceiling and counted itself (`SeqCst`) before that look, and this
/// reads the count (`SeqCst`) after the decrement (the store-buffer pattern). Ceilings other
/// than the plan's get a spurious change: their waiters look again and wait again.
#[inline]
pub(crate) fn notify_idle() {
    loom_sc_fence();
    if registry().count.load(Ordering::SeqCst) > 0 {
        notify_registered();
    }
}

#[cold]
fn notify_registered() {
    let mut on: Vec<Arc<LiveCeiling>> = lock(&registry().ceilings).clone();
    on.sort_by_key(|c| Arc::as_ptr(c) as usize);
    on.dedup_by(|a, b| Arc::ptr_eq(a, b));
    for c in on {
        c.notify();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slots_stop_at_the_limit_and_come_back() {
        let c = LiveCeiling::new(2);
        assert!(c.try_acquire());
        assert!(c.try_acquire());
        assert!(!c.try_acquire());
        c.release();
        assert!(c.try_acquire());
        assert_eq!(c.peak(), 2);
    }

    #[test]
    fn a_waiter_times_out_without_a_change_and_wakes_on_one() {
        let c = LiveCeiling::new(1);
        let e = c.epoch();
        assert!(!c.wait_for_change(e, Instant::now() + Duration::from_millis(20)));
        let c2 = c.clone();
        let t = std::thread::spawn(move || c2.wait_for_change(e, Instant::now() + Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        c.notify();
        assert!(t.join().unwrap());
    }
}

/// What the watchdog's stall reports quote (observe may not name pool types).
impl crate::observe::watchdog::LiveCounts for LiveCeiling {
    fn live(&self) -> usize {
        LiveCeiling::live(self)
    }
    fn limit(&self) -> usize {
        LiveCeiling::limit(self)
    }
}
