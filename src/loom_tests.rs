//! Model checking of the concurrency core under loom: every interleaving (up to the
//! preemption bound) and every memory-model outcome loom explores, of the real
//! [`LeaseState`], [`LiveCeiling`] and [`Flight`], composed the way the pool composes them.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test --release --lib loom_tests`
//!
//! Loom cannot run the whole pool (it has OS threads of its own and runtime calls), so the
//! glue between the primitives (which step follows which, under which lock) is written
//! out here after `pool.rs`, `lease.rs` and `entry.rs`, each block naming the function it
//! follows. The primitives themselves are the crate's own code, compiled against loom's
//! atomics, mutexes and condition variables (`crate::sync`).
//!
//! Loom's `Condvar::wait_timeout` never times out, so a lost wake-up shows as a deadlock,
//! which loom reports. Timeouts are exercised with deadlines already past.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use crate::pool::ceiling::LiveCeiling;
use crate::pool::flight::Flight;
use crate::pool::lease_state::{Evicted, LeaseState, Released};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// The destroyer's channel (`retire_tx` / `retire_rx`): loom's `mpsc` does not model a
/// disconnect, so this is a counter under a lock with a condition variable.
#[derive(Default)]
struct Queue {
    state: Mutex<(usize, bool)>,
    cond: Condvar,
}

impl Queue {
    fn send(&self) {
        self.state.lock().unwrap().0 += 1;
        self.cond.notify_all();
    }
    fn close(&self) {
        self.state.lock().unwrap().1 = true;
        self.cond.notify_all();
    }
    fn try_recv(&self) -> bool {
        let mut g = self.state.lock().unwrap();
        if g.0 > 0 {
            g.0 -= 1;
            true
        } else {
            false
        }
    }
    /// Blocks for the next item; false once closed and empty.
    fn recv(&self) -> bool {
        let mut g = self.state.lock().unwrap();
        loop {
            if g.0 > 0 {
                g.0 -= 1;
                return true;
            }
            if g.1 {
                return false;
            }
            g = self.cond.wait(g).unwrap();
        }
    }
}

/// One plan of the pool: its state word, the retired set it may sit in, its destroys.
struct Plan {
    state: LeaseState,
    /// `Core::retired`, for this one plan.
    retired: Mutex<bool>,
    destroyed: AtomicUsize,
    /// Leases out, by the test's own count (checked against the state word at destroy).
    leases: AtomicUsize,
}

impl Plan {
    fn new() -> Self {
        Plan {
            state: LeaseState::new_leased(),
            retired: Mutex::new(false),
            destroyed: AtomicUsize::new(0),
            leases: AtomicUsize::new(1),
        }
    }

    /// `Core::destroy`: never under a lease, once.
    fn destroy(&self) {
        assert_eq!(self.leases.load(Ordering::SeqCst), 0, "destroyed under a lease");
        assert_eq!(self.state.leases(), 0, "destroyed under a lease (state word)");
        assert_eq!(self.destroyed.fetch_add(1, Ordering::SeqCst), 0, "destroyed twice");
    }

    /// `try_hit` / `Step::Join`.
    fn try_lease(&self) -> bool {
        if !self.state.try_lease() {
            return false;
        }
        assert_eq!(self.destroyed.load(Ordering::SeqCst), 0, "leased after its destroy");
        self.leases.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// `Drop for Lease`: on the last lease of a retired plan, hand it to the destroyer.
    fn release(&self, to_destroyer: &Queue) {
        self.leases.fetch_sub(1, Ordering::SeqCst);
        if self.state.release() == Released::LastOfRetired {
            to_destroyer.send();
        }
    }

    /// `PlanPool::retire` under the retired lock; the evictor destroys an idle plan.
    fn evict(&self) {
        let idle = {
            let mut retired = self.retired.lock().unwrap();
            *retired = true;
            match self.state.evict() {
                Evicted::Idle => {
                    *retired = false;
                    true
                }
                Evicted::Leased => false,
            }
        };
        if idle {
            self.destroy();
        }
    }

    /// `Core::destroy_retired`: destroy, then leave the retired set.
    fn destroy_retired(&self) {
        self.destroy();
        *self.retired.lock().unwrap() = false;
    }
}

/// A release, a hit and an eviction race; the destroyer thread takes what is handed on.
/// Exactly one party destroys the plan, never under a lease, and nothing stays retired.
#[test]
fn release_racing_eviction_and_a_hit() {
    model(|| {
        let plan = Arc::new(Plan::new());
        let queue = Arc::new(Queue::default());
        let destroyer = {
            let (plan, queue) = (plan.clone(), queue.clone());
            thread::spawn(move || {
                while queue.recv() {
                    plan.destroy_retired();
                }
            })
        };
        let holder = {
            let (plan, queue) = (plan.clone(), queue.clone());
            thread::spawn(move || plan.release(&queue))
        };
        let hitter = {
            let (plan, queue) = (plan.clone(), queue.clone());
            thread::spawn(move || {
                if plan.try_lease() {
                    plan.release(&queue);
                }
            })
        };
        plan.evict();
        holder.join().unwrap();
        hitter.join().unwrap();
        queue.close();
        destroyer.join().unwrap();
        assert_eq!(plan.destroyed.load(Ordering::SeqCst), 1);
        assert!(!*plan.retired.lock().unwrap());
    });
}

/// `shutdown` racing the last release: shutdown evicts, then drains the queue itself and
/// returns once the retired set is empty; the destroyer thread competes for the queue.
/// When shutdown returns, the plan is destroyed (not merely out of the set).
#[test]
fn shutdown_racing_a_release() {
    model(|| {
        let plan = Arc::new(Plan::new());
        let queue = Arc::new(Queue::default());
        let destroyer = {
            let (plan, queue) = (plan.clone(), queue.clone());
            thread::spawn(move || {
                while queue.recv() {
                    plan.destroy_retired();
                }
            })
        };
        let holder = {
            let (plan, queue) = (plan.clone(), queue.clone());
            thread::spawn(move || plan.release(&queue))
        };
        // `shutdown`
        plan.evict();
        loop {
            while queue.try_recv() {
                plan.destroy_retired();
            }
            if !*plan.retired.lock().unwrap() {
                break;
            }
            thread::yield_now();
        }
        assert_eq!(plan.destroyed.load(Ordering::SeqCst), 1, "shutdown returned before the destroy finished");
        holder.join().unwrap();
        queue.close();
        destroyer.join().unwrap();
    });
}

/// Slots never exceed the limit, and every one comes back.
#[test]
fn ceiling_slots_never_exceed_the_limit() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (c, inside) = (c.clone(), inside.clone());
                thread::spawn(move || {
                    if c.try_acquire() {
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two slots of a ceiling of one");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        c.release();
                    }
                })
            })
            .collect();
        if c.try_acquire() {
            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two slots of a ceiling of one");
            inside.fetch_sub(1, Ordering::SeqCst);
            c.release();
        }
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(c.live(), 0);
        assert_eq!(c.waiters(), 0);
    });
}

/// A miss waiting for a slot is woken by the slot's release (`acquire_slow`'s loop: read
/// the epoch, look, wait for a change of that epoch).
#[test]
fn a_waiter_is_woken_by_a_slot_release() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        assert!(c.try_acquire());
        let waiter = {
            let c = c.clone();
            thread::spawn(move || {
                loop {
                    let seen = c.epoch();
                    if c.try_acquire() {
                        break;
                    }
                    assert!(c.wait_for_change(seen, far()));
                }
                c.release();
            })
        };
        c.release();
        waiter.join().unwrap();
        assert_eq!(c.live(), 0);
        assert_eq!(c.waiters(), 0);
    });
}

/// A miss at the ceiling whose only plan is leased is woken by the release that idles the
/// plan, then evicts it and takes its slot (`acquire_slow` with `Step::Wait` registering
/// before its last look; `Drop for Lease` with `notify_if_waiting`).
#[test]
fn a_waiter_is_woken_by_the_release_that_idles_a_plan() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        assert!(c.try_acquire()); // the cached plan's slot
        let plan = Arc::new(LeaseState::new_leased());
        let holder = {
            let (c, plan) = (c.clone(), plan.clone());
            thread::spawn(move || {
                if plan.release() == Released::Idle {
                    c.notify_if_waiting();
                }
            })
        };
        // The miss.
        let mut registered = None;
        let mut evicted = false;
        loop {
            let seen = c.epoch();
            if c.try_acquire() {
                break;
            }
            if !evicted && plan.leases() == 0 {
                assert_eq!(plan.evict(), Evicted::Idle);
                evicted = true;
                c.release(); // its destroy gives the slot back
                continue;
            }
            if registered.is_none() {
                registered = Some(c.register());
                continue;
            }
            assert!(c.wait_for_change(seen, far()));
        }
        drop(registered);
        holder.join().unwrap();
        assert!(evicted);
        assert_eq!(c.live(), 1);
        assert_eq!(c.waiters(), 0);
    });
}

/// A waiter whose deadline passes as a slot is released: it reports a change or a timeout,
/// never hangs, and leaves no registration behind; the slot is free either way.
#[test]
fn a_timeout_racing_a_release() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        assert!(c.try_acquire());
        let seen = c.epoch();
        let releaser = {
            let c = c.clone();
            thread::spawn(move || c.release())
        };
        let changed = c.wait_for_change(seen, Instant::now());
        releaser.join().unwrap();
        assert_eq!(c.waiters(), 0);
        assert!(changed || c.epoch() != seen, "a timeout, with the release landing after it");
        assert!(c.try_acquire(), "the slot is free afterwards");
    });
}

/// Concurrent misses on one key: one creation, every miss gets its result
/// (`acquire_slow`'s `creating` map and `Step::Join`; `create`'s publish order).
fn single_flight(fail: bool) {
    model(move || {
        #[derive(Default)]
        struct Inner {
            creating: HashMap<u8, Arc<Flight<Result<u32, &'static str>>>>,
            cached: Option<u32>,
        }
        let inner = Arc::new(Mutex::new(Inner::default()));
        let creations = Arc::new(AtomicUsize::new(0));
        let miss = {
            let (inner, creations) = (inner.clone(), creations.clone());
            move || -> Result<u32, &'static str> {
                loop {
                    enum Step {
                        Hit(u32),
                        Join(Arc<Flight<Result<u32, &'static str>>>),
                        Create(Arc<Flight<Result<u32, &'static str>>>),
                    }
                    let step = {
                        let mut g = inner.lock().unwrap();
                        if let Some(v) = g.cached {
                            Step::Hit(v)
                        } else if let Some(f) = g.creating.get(&0) {
                            Step::Join(f.clone())
                        } else {
                            let f = Arc::new(Flight::new());
                            g.creating.insert(0, f.clone());
                            Step::Create(f)
                        }
                    };
                    match step {
                        Step::Hit(v) => return Ok(v),
                        Step::Join(f) => return f.wait(far()).expect("no deadline"),
                        Step::Create(f) => {
                            creations.fetch_add(1, Ordering::SeqCst);
                            let r = if fail { Err("HIPFFT_ALLOC_FAILED (2)") } else { Ok(7) };
                            {
                                let mut g = inner.lock().unwrap();
                                g.creating.remove(&0);
                                if let Ok(v) = r {
                                    g.cached = Some(v);
                                }
                            }
                            f.finish(r);
                            return r;
                        }
                    }
                }
            }
        };
        let others: Vec<_> = (0..2)
            .map(|_| {
                let m = miss.clone();
                thread::spawn(m)
            })
            .collect();
        let mine = miss();
        let want = if fail { Err("HIPFFT_ALLOC_FAILED (2)") } else { Ok(7) };
        assert_eq!(mine, want);
        for t in others {
            let r = t.join().unwrap();
            if fail {
                // A miss that came after the failure was published creates again.
                assert!(r == want, "{r:?}");
            } else {
                assert_eq!(r, want);
            }
        }
        let n = creations.load(Ordering::SeqCst);
        if fail {
            assert!((1..=3).contains(&n));
        } else {
            assert_eq!(n, 1, "one creation for concurrent misses");
        }
        assert!(inner.lock().unwrap().creating.is_empty());
    });
}

#[test]
fn concurrent_misses_on_one_key_create_once() {
    single_flight(false);
}

#[test]
fn a_failed_creation_reaches_every_joiner() {
    single_flight(true);
}

/// A joiner whose deadline passes as the creation finishes: the result or `None`, never a
/// hang; a later wait sees the result.
#[test]
fn a_flight_timeout_racing_its_finish() {
    model(|| {
        let f = Arc::new(Flight::<u32>::new());
        let creator = {
            let f = f.clone();
            thread::spawn(move || f.finish(3))
        };
        let early = f.wait(Instant::now());
        assert!(early.is_none() || early == Some(3));
        creator.join().unwrap();
        assert_eq!(f.wait(Instant::now()), Some(3));
    });
}
