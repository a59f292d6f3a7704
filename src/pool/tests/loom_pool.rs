//! `PlanPool`'s acquire path and shutdown under loom: misses at a full ceiling, single
//! flight, the waiter's wake-up, two misses swapping one slot in turn, a failing creation,
//! shutdown against an idle destroy.

use super::{ModelRuntime, Regression, alloc_failed, caught, key, model, model_bounded, pool, spawn};

/// Two threads miss on one key at a full ceiling (one slot, held by a cached plan that the
/// main thread has leased) while the main thread releases that lease. Both misses are served
/// by one creation (single flight); the runtime never has more live plans than the ceiling;
/// no slot leaks: once the pool is gone, the runtime has no plan and the ceiling no slot.
#[test]
fn two_misses_on_one_key_at_a_full_ceiling_while_a_lease_is_released() {
    model_bounded(2, || {
        let rt = ModelRuntime::new(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let ceiling = pool.ceiling();
        let held = pool.acquire(&key(8)).expect("the first plan");
        rt.using(held.plan());
        let misses: Vec<_> = (0..2)
            .map(|_| {
                let (pool, rt) = (pool.clone(), rt.clone());
                spawn(move || {
                    let lease = pool.acquire(&key(16)).expect("a miss at the ceiling is served");
                    rt.using(lease.plan());
                    let plan = lease.plan();
                    rt.done_with(plan);
                    drop(lease);
                    plan
                })
            })
            .collect();
        rt.done_with(held.plan());
        drop(held);
        let plans: Vec<_> = misses.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(plans[0], plans[1], "both misses lease the one plan made for the key");
        assert_eq!(rt.creations(), 2, "one creation per key");
        assert_eq!(rt.live(), 1);
        assert_eq!(ceiling.live(), rt.live(), "the ceiling counts what the runtime has alive");
        drop(pool);
        assert_eq!(rt.live(), 0, "the pool's drop destroys its plans");
        assert_eq!(ceiling.live(), 0, "every slot came back");
    });
}

/// A miss at the ceiling whose only plan is leased waits; the release that idles that plan
/// wakes it (it registers before its last look, and the release notifies registered
/// waiters). A lost wake-up is a deadlock here: loom's waits never time out.
fn a_waiter_at_the_ceiling_is_woken_by_the_release_that_idles_a_plan() {
    model(|| {
        let rt = ModelRuntime::new(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let held = pool.acquire(&key(8)).expect("the first plan");
        let miss = {
            let pool = pool.clone();
            spawn(move || drop(pool.acquire(&key(16)).expect("served once the plan is idle")))
        };
        drop(held);
        miss.join().unwrap();
        assert_eq!(rt.creations(), 2);
        assert_eq!(rt.live(), 1, "the idle plan was evicted and destroyed to make room");
    });
}

#[test]
fn a_waiter_at_the_ceiling_never_loses_its_wake_up() {
    a_waiter_at_the_ceiling_is_woken_by_the_release_that_idles_a_plan();
}

/// Before the fix, a miss went to wait without registering first: a release between its
/// look (plan leased) and its wait signalled nobody, and it slept out its timeout.
#[test]
fn the_old_wait_protocol_is_caught() {
    let msg = caught(Regression::WaitWithoutRegistering, a_waiter_at_the_ceiling_is_woken_by_the_release_that_idles_a_plan);
    assert!(msg.contains("deadlock"), "{msg}");
}

/// Two misses on two keys at a full ceiling of one, whose only plan is idle: one of them
/// swaps that plan's slot (destroys it and creates its own in one job), the other finds
/// nothing idle until the first releases its lease, then swaps that plan. The runtime never
/// has two plans alive (it panics if it does), no slot is lost, and the ceiling counts what
/// the runtime holds throughout.
#[test]
fn two_misses_on_two_keys_take_turns_at_one_slot_by_swapping() {
    model_bounded(2, || {
        let rt = ModelRuntime::new(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let ceiling = pool.ceiling();
        drop(pool.acquire(&key(8)).expect("the first plan"));
        let other = {
            let (pool, rt) = (pool.clone(), rt.clone());
            spawn(move || {
                let lease = pool.acquire(&key(16)).expect("a swap at the ceiling is served");
                rt.using(lease.plan());
                rt.done_with(lease.plan());
            })
        };
        let lease = pool.acquire(&key(32)).expect("a swap at the ceiling is served");
        rt.using(lease.plan());
        rt.done_with(lease.plan());
        drop(lease);
        other.join().unwrap();
        assert_eq!(rt.creations(), 3, "one creation per key");
        assert_eq!(rt.destroys(), 2, "each miss destroyed the plan before it");
        assert_eq!(rt.live(), 1);
        assert_eq!(ceiling.live(), rt.live(), "the ceiling counts what the runtime has alive");
        drop(pool);
        assert_eq!(rt.live(), 0);
        assert_eq!(ceiling.live(), 0, "every slot came back");
    });
}

/// Two misses on one key whose creation fails: the error (with the runtime's code) reaches
/// both, and the slot comes back each time: nothing live, nothing counted.
#[test]
fn a_failed_creation_reaches_every_joiner_and_gives_its_slot_back() {
    model(|| {
        let rt = ModelRuntime::failing(1);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        let ceiling = pool.ceiling();
        let other = {
            let pool = pool.clone();
            spawn(move || pool.acquire(&key(16)).map(drop))
        };
        let mine = pool.acquire(&key(16)).map(drop);
        let theirs = other.join().unwrap();
        assert_eq!(mine.unwrap_err().to_string(), alloc_failed().to_string());
        assert_eq!(theirs.unwrap_err().to_string(), alloc_failed().to_string());
        assert_eq!(rt.live(), 0);
        assert_eq!(ceiling.live(), 0, "a failed creation gives its slot back");
    });
}

/// Another thread's miss pushes the idle plan out of a cache of one (the ceiling has room
/// for both, so the miss creates first and the victim's destroy runs after, outside every
/// lock) while the main thread shuts down: shutdown returns only once that destroy returned
/// (the runtime has no plan left then), whatever the miss did. (At a full ceiling the miss
/// would swap the victim's slot instead, destroying it inside its own creation, which
/// shutdown waits for as a creation.)
fn shutdown_racing_an_idle_destroy_by_another_thread() {
    model(|| {
        let rt = ModelRuntime::new(2);
        let pool = std::sync::Arc::new(pool(&rt, 1));
        drop(pool.acquire(&key(8)).expect("the first plan"));
        let miss = {
            let pool = pool.clone();
            spawn(move || drop(pool.acquire(&key(16))))
        };
        let report = pool.shutdown();
        assert!(!report.timed_out);
        assert_eq!(rt.live(), 0, "shutdown returned with a live handle");
        miss.join().unwrap();
        assert_eq!(rt.live(), 0);
    });
}

#[test]
#[ignore = "since idle destroys moved to the destroyer thread, shutdown's polling wait exceeds loom's branch limit; tests/regressions.rs covers the behaviour"]
fn shutdown_waits_for_an_idle_destroy_by_another_thread() {
    shutdown_racing_an_idle_destroy_by_another_thread();
}

/// Before the fix, shutdown did not count idle plans other threads were destroying.
#[test]
fn the_old_shutdown_wait_is_caught() {
    let msg = caught(Regression::ShutdownIgnoresIdleDestroys, shutdown_racing_an_idle_destroy_by_another_thread);
    assert!(msg.contains("shutdown returned with a live handle"), "{msg}");
}
