//! A lease's release against eviction, shutdown and the destroyer, releases on two stripes
//! against eviction, a front-cache hit against eviction, and `release_after`'s completion
//! against shutdown, under loom.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};

use super::{ModelRuntime, Regression, STREAM, caught, key, model, pool, spawn};
use crate::pool::lease_state::{Evicted, LeaseState, Released, Stripe};

/// The main thread holds and uses a lease on plan A, the least recently used of two cached
/// plans; another thread lowers the capacity to one, which evicts A, racing the main thread's
/// last release of it. A is destroyed exactly once, never while its holder uses it (the
/// runtime checks both), by the evictor (A was idle) or by the destroyer thread (A was
/// retired, and the release handed it on); nothing is left once the pool is gone.
#[test]
fn eviction_racing_the_last_release_of_a_leased_plan() {
    model(|| {
        let rt = ModelRuntime::new(2);
        let pool = std::sync::Arc::new(pool(&rt, 2));
        let held = pool.acquire(&key(8)).expect("plan A");
        let a = held.plan();
        rt.using(a);
        drop(pool.acquire(&key(16)).expect("plan B"));
        let evictor = {
            let pool = pool.clone();
            spawn(move || pool.set_capacity(1).expect("a valid capacity"))
        };
        rt.done_with(a);
        drop(held);
        evictor.join().unwrap();
        assert_eq!(pool.cached_plans().len(), 1);
        assert!(pool.cached_plans()[0].desc == key(16).to_string(), "A, the LRU plan, was evicted");
        drop(pool);
        assert_eq!(rt.live(), 0);
        assert_eq!((rt.creations(), rt.destroys()), (2, 2), "every plan destroyed once");
    });
}

/// A hit from a thread's front cache (plan A, hit once through the map by that thread and
/// remembered there) racing another thread's eviction of A. The front path takes its lease
/// without the map's guard, so it may find A after A left the map: `try_lease` must then
/// refuse A if it is marked evicted (the miss makes A again), or A is retired under the
/// lease, not destroyed. Either way each plan is destroyed exactly once, never while in use
/// (the runtime checks), every lease is on a live plan of its key, and nothing is left.
#[test]
fn a_front_cache_hit_racing_the_eviction_of_its_plan() {
    model(|| {
        let rt = ModelRuntime::new(2);
        let pool = std::sync::Arc::new(pool(&rt, 2));
        drop(pool.acquire(&key(8)).expect("plan A"));
        drop(pool.acquire(&key(16)).expect("plan B"));
        let hitter = {
            let (pool, rt) = (pool.clone(), rt.clone());
            spawn(move || {
                for _ in 0..2 {
                    // The first: a hit through the map (remembered), or a miss if A is gone.
                    // The second: from the front cache while A is there.
                    let a = pool.acquire(&key(8)).expect("A: a hit, or a miss that remakes it");
                    assert_eq!(a.desc(), &key(8));
                    rt.using(a.plan());
                    rt.done_with(a.plan());
                }
            })
        };
        // B was used last: capacity 1 evicts A.
        pool.set_capacity(1).expect("a valid capacity");
        hitter.join().unwrap();
        drop(pool);
        assert_eq!(rt.live(), 0);
        assert_eq!(rt.creations(), rt.destroys(), "every plan destroyed once");
    });
}

/// A plan's lease state on its own: a lease on each of two stripes, given back on two
/// threads while a third marks the plan evicted. Exactly one party owns the destroy: the
/// evictor (`Evicted::Idle`, both leases back before it marked) or the release that closed
/// the last stripe (`Released::LastOfRetired`).
fn the_destroy_of_a_plan_leased_on_two_stripes_has_one_owner() {
    model(|| {
        let (a, b) = (Stripe::nth(0), Stripe::nth(1));
        let state = Arc::new(LeaseState::new_leased(a));
        assert!(state.try_lease(b));
        let owners = Arc::new(StdAtomicUsize::new(0));
        let release = |stripe| {
            let (state, owners) = (state.clone(), owners.clone());
            spawn(move || {
                if state.release(stripe) == Released::LastOfRetired {
                    owners.fetch_add(1, StdOrdering::Relaxed);
                }
            })
        };
        let (ra, rb) = (release(a), release(b));
        if state.evict() == Evicted::Idle {
            owners.fetch_add(1, StdOrdering::Relaxed);
        }
        ra.join().unwrap();
        rb.join().unwrap();
        assert_eq!(owners.load(StdOrdering::Relaxed), 1, "the destroy must have exactly one owner");
        assert!(!state.try_lease(a) && !state.try_lease(b), "an evicted plan is never leased again");
    });
}

#[test]
fn a_plan_leased_on_two_stripes_has_one_destroyer() {
    the_destroy_of_a_plan_leased_on_two_stripes_has_one_owner();
}

/// Without the evictor's hold on the open stripes, both leases can close theirs while it
/// marks, and the evictor's own close then owns the destroy a second time.
#[test]
fn an_evictor_without_its_hold_is_caught() {
    let msg = caught(Regression::EvictorHoldsNoStripe, the_destroy_of_a_plan_leased_on_two_stripes_has_one_owner);
    assert!(msg.contains("exactly one owner"), "{msg}");
}

/// Plan A leased on two stripes at once (the main thread's and another thread's, dealt in
/// the order they first ask), evicted while both leases go back: the release that closes
/// A's last stripe hands it to the destroyer, or the evictor destroys it if both were back
/// already. Each plan is destroyed exactly once, never while a holder uses it (the runtime
/// checks, per holder), and nothing is left once the pool is gone.
#[test]
fn eviction_racing_releases_on_two_stripes() {
    // At 2 preemptions: the state's own protocol is checked at 3 by the model test above,
    // and this one's search at 3 takes most of what CI can give loom.
    super::model_bounded(2, || {
        let rt = ModelRuntime::new(2);
        let pool = std::sync::Arc::new(pool(&rt, 2));
        let held = pool.acquire(&key(8)).expect("plan A");
        let a = held.plan();
        rt.using(a);
        drop(pool.acquire(&key(16)).expect("plan B"));
        let other = {
            let (pool, rt) = (pool.clone(), rt.clone());
            spawn(move || {
                // A hit on A on this thread's stripe, or a miss that remakes it.
                let l = pool.acquire(&key(8)).expect("A: a hit, or a miss that remakes it");
                assert_eq!(l.desc(), &key(8));
                rt.using(l.plan());
                rt.done_with(l.plan());
            })
        };
        pool.set_capacity(1).expect("a valid capacity");
        rt.done_with(a);
        drop(held);
        other.join().unwrap();
        drop(pool);
        assert_eq!(rt.live(), 0);
        assert_eq!(rt.creations(), rt.destroys(), "every plan destroyed once");
    });
}

/// Shutdown (evict everything, then wait until nothing is retired, being made or being
/// destroyed) racing the last release of a leased plan and the destroyer thread: when
/// shutdown returns, the plan is destroyed in the runtime, not merely out of the set.
fn shutdown_racing_the_last_release() {
    model(|| {
        let rt = ModelRuntime::new(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let held = pool.acquire(&key(8)).expect("plan A");
        rt.using(held.plan());
        let shutdown = {
            let (pool, rt) = (pool.clone(), rt.clone());
            spawn(move || {
                let report = pool.shutdown();
                assert!(!report.timed_out && report.still_leased.is_empty());
                assert_eq!(rt.live(), 0, "shutdown returned with a live handle");
            })
        };
        rt.done_with(held.plan());
        drop(held);
        shutdown.join().unwrap();
    });
}

#[test]
fn shutdown_waits_for_the_destroy_of_a_retired_plan() {
    shutdown_racing_the_last_release();
}

/// Before the fix, the destroyer left the retired set before destroying, so shutdown could
/// see nothing left and return while the destroy was still to come.
#[test]
fn the_old_destroyer_ordering_is_caught() {
    let msg = caught(Regression::LeaveRetiredBeforeDestroy, shutdown_racing_the_last_release);
    assert!(msg.contains("shutdown returned with a live handle"), "{msg}");
}

/// `release_after` (an event recorded behind the lease's work, the lease handed to the
/// completion thread) racing shutdown, with the GPU finishing the work after it. Either the
/// completion thread releases the lease when the event fires and shutdown waits for the
/// plan's destroy, or `release_after` finds the pool shut down and hands the lease back (the
/// caller synchronizes, then drops it). The plan is never destroyed under pending work (the
/// runtime checks), shutdown returns with nothing alive, and no event leaks.
#[test]
fn release_after_completion_racing_shutdown() {
    model(|| {
        let rt = ModelRuntime::new(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let lease = pool.acquire(&key(8)).expect("plan A");
        rt.enqueue_work(lease.plan());
        let shutdown = {
            let (pool, rt) = (pool.clone(), rt.clone());
            spawn(move || {
                let report = pool.shutdown();
                assert!(!report.timed_out && report.still_leased.is_empty());
                assert_eq!(rt.live(), 0, "shutdown returned with a live handle");
            })
        };
        // SAFETY: STREAM is the model runtime's stream, live for the whole test.
        let handed = unsafe { lease.release_after(STREAM) };
        rt.finish_gpu_work();
        if let Err(e) = handed {
            assert!(matches!(e.error, crate::error::Error::ShutDown), "{e:?}");
            drop(e.lease);
        }
        shutdown.join().unwrap();
        drop(pool);
        assert_eq!(rt.live(), 0);
        assert_eq!(rt.live_events(), 0, "every event made was destroyed");
    });
}
