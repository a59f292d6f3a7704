//! The pool's promises, checked against the simulated runtime's own ground truth: its live
//! handle count, its record of misuse (destroy under a pending execution, interleaved exec,
//! wrong device), and an independent reference FFT.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::reference;
use hipfft_pool::runtime::sim::SimConfig;
use hipfft_pool::{Error, Lease, LiveCeiling, PlanPool, PoolConfig, RawStream, Runtime};

#[test]
fn a_hit_reuses_the_plan_and_a_release_keeps_it_cached() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 4, 4, Duration::from_secs(5));
    let d = c2c(64, 2);
    let a = pool.acquire(&d).unwrap();
    let b = pool.acquire(&d).unwrap();
    assert_eq!(a.plan(), b.plan());
    assert_eq!(sim.created_total(), 1);
    drop(a);
    drop(b);
    let c = pool.acquire(&d).unwrap();
    assert!(sim.is_live(c.plan()));
    let m = pool.metrics();
    assert_eq!((m.hits, m.misses, m.creations), (2, 1, 1));
    drop(c);
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.destroyed_total(), 1);
}

#[test]
fn an_idle_plan_evicted_by_capacity_is_destroyed_off_the_miss_in_lru_order() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 2, 4, Duration::from_secs(5));
    let (a, b, c) = (c2c(8, 1), c2c(16, 1), c2c(32, 1));
    let pa = pool.acquire(&a).unwrap().plan();
    let pb = pool.acquire(&b).unwrap().plan();
    drop(pool.acquire(&a).unwrap()); // a is now more recent than b
    drop(pool.acquire(&c).unwrap());
    wait_for("the evicted plan's destroy", || !sim.is_live(pb));
    assert!(sim.is_live(pa), "the least recently used plan is the one destroyed");
    assert_eq!(sim.live_handles(), 2);
    drop(pool.acquire(&b).unwrap()); // evicts a (c is more recent)
    wait_for("the second evicted plan's destroy", || !sim.is_live(pa));
    assert_eq!(pool.metrics().evictions, 2);
}

/// A thread remembers the plans it hit (its front cache, `pool::front`); a plan evicted
/// since is never leased from there: the next acquire is a miss that makes a new plan, and
/// the evicted one is destroyed.
#[test]
fn a_plan_evicted_while_a_thread_remembers_it_is_never_leased_again() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 1, 4, Duration::from_secs(5));
    let (a, b) = (c2c(8, 1), c2c(16, 1));
    let old = pool.acquire(&a).unwrap().plan();
    drop(pool.acquire(&a).unwrap()); // a hit: remembered by this thread
    drop(pool.acquire(&b).unwrap()); // capacity 1: evicts a
    wait_for("the evicted plan's destroy", || !sim.is_live(old));
    let again = pool.acquire(&a).unwrap();
    assert!(sim.is_live(again.plan()), "the lease is on a live plan");
    assert_eq!(sim.created_total(), 3, "a was made again");
    let m = pool.metrics();
    assert_eq!((m.hits, m.misses), (1, 3));
    drop(again);
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
}

/// A plan leased by 20 threads at once (more threads than a plan has lease stripes, so
/// some share one) and evicted under them stays alive until the last of them gives its
/// lease back, from whichever thread, and is then destroyed once. Ground truth: the sim's
/// own live set.
#[test]
fn a_plan_leased_from_many_threads_outlives_its_eviction_until_the_last_release() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = Arc::new(pool(&rt, 1, 8, Duration::from_secs(5)));
    let (a, b) = (c2c(8, 1), c2c(16, 1));
    let plan = pool.acquire(&a).unwrap().plan();
    let leases: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20).map(|_| s.spawn(|| pool.acquire(&a).unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(leases.iter().all(|l| l.plan() == plan), "every thread hit the one plan");
    assert_eq!(pool.metrics().in_flight, 20);
    drop(pool.acquire(&b).unwrap()); // capacity 1: evicts a under its 20 leases
    let mut leases = leases;
    // Given back from other threads than the ones that took them, last one on this thread.
    let last = leases.pop().unwrap();
    std::thread::scope(|s| {
        for chunk in leases.chunks_mut(5) {
            let mine: Vec<_> = chunk.iter_mut().map(|l| std::mem::replace(l, pool.acquire(&b).unwrap())).collect();
            s.spawn(move || drop(mine));
        }
    });
    std::thread::sleep(Duration::from_millis(20));
    assert!(sim.is_live(plan), "one lease still holds the evicted plan");
    drop(last);
    wait_for("the retired plan's destroy", || !sim.is_live(plan));
    drop(leases); // leases on b
    assert_eq!(sim.created_total(), 2, "a was made once, b once");
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.destroyed_total(), 2, "each destroyed once");
}

/// One thread hitting the same descriptor in two pools gets each pool's own plan, and
/// each pool counts its own hits.
#[test]
fn one_thread_hitting_one_descriptor_in_two_pools_gets_each_pools_plan() {
    let (sim, rt) = sim(SimConfig::default());
    let (p1, p2) = (pool(&rt, 4, 4, Duration::from_secs(5)), pool(&rt, 4, 4, Duration::from_secs(5)));
    let d = c2c(64, 1);
    let (a1, a2) = (p1.acquire(&d).unwrap().plan(), p2.acquire(&d).unwrap().plan());
    assert_ne!(a1, a2);
    for _ in 0..3 {
        assert_eq!(p1.acquire(&d).unwrap().plan(), a1);
        assert_eq!(p2.acquire(&d).unwrap().plan(), a2);
    }
    assert_eq!((p1.metrics().hits, p2.metrics().hits), (3, 3));
    drop(p1);
    assert!(!sim.is_live(a1) && sim.is_live(a2));
    assert_eq!(p2.acquire(&d).unwrap().plan(), a2);
    drop(p2);
    assert_eq!(sim.live_handles(), 0);
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_miss_that_evicts_over_capacity_does_not_wait_for_the_destroy() {
    // Every destroy blocks until released: a miss that ran the evicted plan's destroy itself
    // (as an inline-destroy cache does, waiting out the device's queue) would never return.
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 1, 3, Duration::from_secs(30));
    let pa = pool.acquire(&c2c(8, 1)).unwrap().plan();
    sim.set_faults(SimConfig { block_destroy: true, ..SimConfig::default() });
    let (tx, rx) = std::sync::mpsc::channel();
    let p = std::sync::Arc::new(pool);
    let p2 = p.clone();
    std::thread::spawn(move || {
        let made = p2.acquire(&c2c(16, 1)).map(|l| l.plan());
        let _ = tx.send(made);
    });
    let pb = rx.recv_timeout(Duration::from_secs(20)).expect("the miss returned while the destroy was blocked").unwrap();
    assert!(sim.is_live(pb));
    assert!(sim.blocked_calls() >= 1 || sim.is_live(pa), "the evicted plan's destroy is still running elsewhere");
    sim.set_faults(SimConfig::default());
    sim.unblock_all();
    wait_for("the evicted plan's destroy", || !sim.is_live(pa));
    assert_eq!(sim.live_handles(), 1);
}

#[test]
fn a_leased_plan_evicted_is_retired_and_destroyed_by_the_pool_after_its_last_lease() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 1, 2, Duration::from_secs(5));
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    let plan = held.plan();
    drop(pool.acquire(&c2c(16, 1)).unwrap());
    assert!(sim.is_live(plan), "never destroyed while leased");
    assert_eq!(pool.metrics().retired_pending, 1);
    assert_eq!(sim.live_handles(), 2);
    held.release();
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.is_live(plan) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!sim.is_live(plan), "the destroyer thread destroys it after the last lease");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn release_after_waits_for_the_gpu_and_eviction_never_destroys_under_a_pending_exec() {
    let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_millis(30), ..SimConfig::default() });
    let pool = pool(&rt, 1, 2, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 3)).unwrap();
    let plan = lease.plan();
    let job = enqueue(&rt, &lease, &stream, 1);
    // SAFETY: the test's live stream of the pool's runtime.
    unsafe { lease.release_after(stream.raw()) }.unwrap();
    assert!(sim.pending_execs(plan) > 0, "the execution is still in flight");
    drop(pool.acquire(&c2c(32, 1)).unwrap()); // evicts the in-flight plan: it must be retired
    assert!(sim.is_live(plan));
    assert!(job.check(&stream) <= 1e-5);
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.is_live(plan) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!sim.is_live(plan));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn a_miss_at_the_ceiling_times_out_with_the_live_counts_and_never_hangs() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 2, 2, Duration::from_millis(100));
    let _a = pool.acquire(&c2c(8, 1)).unwrap();
    let _b = pool.acquire(&c2c(16, 1)).unwrap();
    let t = Instant::now();
    let err = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(t.elapsed() >= Duration::from_millis(100) && t.elapsed() < Duration::from_secs(5));
    match &err {
        Error::CeilingTimeout { state, .. } => {
            assert_eq!((state.live, state.cached, state.in_flight, state.ceiling), (2, 2, 2, 2));
        }
        other => panic!("expected a ceiling timeout, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("2 live of ceiling 2") && text.contains("HIPFFT_POOL_LIVE_CEILING"), "{text}");
    assert_eq!(sim.live_handles(), 2);
    assert_eq!(pool.metrics().ceiling_timeouts, 1);
}

#[test]
fn a_waiter_at_the_ceiling_is_served_when_a_lease_is_released() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = Arc::new(pool(&rt, 1, 1, Duration::from_secs(10)));
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    let p2 = pool.clone();
    let waiter = std::thread::spawn(move || p2.acquire(&c2c(16, 1)).map(|l| l.plan()));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(sim.live_handles(), 1);
    held.release();
    let plan = waiter.join().unwrap().expect("served after the release");
    assert!(!sim.is_live(plan) || sim.live_handles() == 1);
    assert_eq!(pool.metrics().ceiling_waits, 1);
    assert!(sim.peak_live_handles() <= 1);
}

#[test]
fn the_flush_hook_runs_before_a_miss_waits() {
    let (_sim, rt) = sim(SimConfig::default());
    let pool = Arc::new(pool(&rt, 1, 1, Duration::from_millis(50)));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    pool.set_flush_hook(Some(Arc::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
    })));
    let _held = pool.acquire(&c2c(8, 1)).unwrap();
    assert!(pool.acquire(&c2c(16, 1)).is_err());
    assert!(calls.load(Ordering::SeqCst) >= 1);
}

/// A waiter woken by a change that did not free its slot asks the hook again: the lease a
/// host took back after the last flush may be the one it needs.
#[test]
fn the_flush_hook_is_asked_again_at_each_wake_up() {
    let (_sim, rt) = sim(SimConfig::default());
    let pool = Arc::new(pool(&rt, 1, 1, Duration::from_secs(5)));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    pool.set_flush_hook(Some(Arc::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
    })));
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    let p = pool.clone();
    let waiter = std::thread::spawn(move || p.acquire(&c2c(16, 1)).map(|_| ()));
    let wait_for = |n: usize| {
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while calls.load(Ordering::SeqCst) < n && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        calls.load(Ordering::SeqCst)
    };
    assert!(wait_for(1) >= 1, "asked before waiting");
    for n in 2..=4 {
        pool.ceiling().notify(); // a change that frees nothing
        assert!(wait_for(n) >= n, "asked again after wake-up {}", n - 1);
    }
    drop(held);
    waiter.join().unwrap().expect("served once the slot came back");
}

#[test]
fn the_flush_hook_can_release_what_the_waiter_needs() {
    // A host that batches GPU work: its pending lease only goes once the hook submits it.
    let (sim, rt) = sim(SimConfig::default());
    let pool = Arc::new(pool(&rt, 1, 1, Duration::from_secs(5)));
    let parked: Arc<parking_lot::Mutex<Option<hipfft_pool::Lease>>> = Arc::default();
    *parked.lock() = Some(pool.acquire(&c2c(8, 1)).unwrap());
    let p = parked.clone();
    pool.set_flush_hook(Some(Arc::new(move || drop(p.lock().take()))));
    let lease = pool.acquire(&c2c(16, 1)).expect("the hook freed the slot");
    assert!(sim.is_live(lease.plan()));
    assert_eq!(sim.live_handles(), 1);
}

#[test]
fn concurrent_misses_on_one_key_create_one_plan() {
    let (sim, rt) = sim(SimConfig { create_latency: Duration::from_millis(50), ..SimConfig::default() });
    let pool = Arc::new(pool(&rt, 4, 4, Duration::from_secs(10)));
    let plans: Vec<_> = (0..6)
        .map(|_| {
            let p = pool.clone();
            std::thread::spawn(move || p.acquire(&c2c(128, 2)).map(|l| l.plan()).unwrap())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert!(plans.iter().all(|p| *p == plans[0]));
    assert_eq!(sim.created_total(), 1);
}

#[test]
fn a_failed_creation_is_reported_to_every_waiter_and_frees_its_slot() {
    let (sim, rt) = sim(SimConfig {
        create_latency: Duration::from_millis(30),
        fail_create_every: Some(1),
        ..SimConfig::default()
    });
    let pool = Arc::new(pool(&rt, 2, 2, Duration::from_secs(10)));
    let errs: Vec<Error> = (0..3)
        .map(|_| {
            let p = pool.clone();
            std::thread::spawn(move || p.acquire(&c2c(64, 1)).unwrap_err())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    for e in &errs {
        assert!(e.to_string().contains("HIPFFT_ALLOC_FAILED (2)"), "{e}");
    }
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(pool.metrics().live, 0);
    assert_eq!(pool.ceiling().live(), 0);
    sim.set_faults(SimConfig::default());
    assert!(pool.acquire(&c2c(64, 1)).is_ok(), "the pool keeps serving");
}

#[test]
fn trim_and_set_capacity_destroy_idle_plans_only() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 4, 4, Duration::from_secs(5));
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    for n in [16, 32, 64] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    assert_eq!(sim.live_handles(), 4);
    pool.set_capacity(2).unwrap();
    // The held plan was the least recently used: evicted by capacity, but only retired.
    let m = pool.metrics();
    assert_eq!((m.cached, m.retired_pending), (2, 1));
    assert!(sim.is_live(held.plan()));
    assert_eq!(sim.live_handles(), 3);
    assert_eq!(pool.trim(), 2, "both idle cached plans go");
    assert_eq!(sim.live_handles(), 1);
    assert!(pool.set_capacity(0).is_err());
    assert!(pool.set_capacity(5).unwrap_err().to_string().contains("capacity"));
}

#[test]
fn the_work_area_budget_bounds_cached_bytes() {
    let (_sim, rt) = sim(SimConfig::default());
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(8)
        .private_ceiling(8)
        .work_area_budget(3 * 64 * 8)
        .build()
        .unwrap();
    let pool = PlanPool::new(cfg, rt).unwrap();
    for n in [64, 65, 66, 67, 68] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
        let m = pool.metrics();
        assert!(m.work_area_bytes <= 3 * 64 * 8 || m.cached == 1, "{m:?}");
    }
}

#[test]
fn shutdown_waits_for_leases_and_reports_what_it_could_not_destroy() {
    let (sim, rt) = sim(SimConfig::default());
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(2)
        .private_ceiling(2)
        .shutdown_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let pool = PlanPool::new(cfg, rt).unwrap();
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    drop(pool.acquire(&c2c(16, 1)).unwrap());
    let report = pool.shutdown();
    assert!(report.timed_out);
    assert_eq!(report.still_leased.len(), 1);
    assert_eq!(sim.live_handles(), 1);
    assert!(matches!(pool.acquire(&c2c(8, 1)), Err(Error::ShutDown)));
    let plan = held.plan();
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    while sim.is_live(plan) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sim.live_handles(), 0, "released after shutdown, still destroyed");
}

#[test]
fn exec_rejects_bad_arguments_by_name() {
    let (_sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 2, 2, Duration::from_secs(5));
    let lease = pool.acquire(&hipfft_pool::PlanDesc::new(hipfft_pool::TransformType::R2C, &[1024], 2)).unwrap();
    assert!(lease.work_size() > 0);
    let buf = hipfft_pool::check::buffer::DeviceBuffer::new(&rt, 1 << 16).unwrap();
    let p = buf.ptr();
    // SAFETY: refused by the argument checks before anything is enqueued.
    let e = unsafe { lease.exec(RawStream::NULL, p, p, hipfft_pool::Direction::Forward, None) }.unwrap_err();
    assert!(e.to_string().contains("work_area"), "{e}");
    // SAFETY: refused by the argument checks before anything is enqueued.
    let e = unsafe { lease.exec(RawStream::NULL, hipfft_pool::DevicePtr::NULL, p, hipfft_pool::Direction::Forward, Some(p)) }.unwrap_err();
    assert!(e.to_string().contains("`input`"), "{e}");
    // SAFETY: refused by the argument checks before anything is enqueued.
    let e = unsafe { lease.exec(RawStream::NULL, p, p, hipfft_pool::Direction::Inverse, Some(p)) }.unwrap_err();
    assert!(e.to_string().contains("direction"), "{e}");
}

#[test]
fn two_pools_sharing_one_ceiling_never_exceed_it() {
    let (sim, rt) = sim(SimConfig::default());
    let ceiling = LiveCeiling::new(3);
    let mk = || {
        PlanPool::new(
            PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru).capacity(2).shared_ceiling(ceiling.clone()).acquire_timeout(Duration::from_millis(50)).build().unwrap(),
            rt.clone(),
        )
        .unwrap()
    };
    let (p1, p2) = (mk(), mk());
    let _a = p1.acquire(&c2c(8, 1)).unwrap();
    let _b = p1.acquire(&c2c(16, 1)).unwrap();
    let _c = p2.acquire(&c2c(32, 1)).unwrap();
    assert!(matches!(p2.acquire(&c2c(64, 1)), Err(Error::CeilingTimeout { .. })));
    assert_eq!(sim.live_handles(), 3);
}

/// Many threads, a ceiling small enough to force waits, random release styles; a monitor
/// samples the simulated runtime's live count the whole time.
#[test]
fn stress_many_threads_small_ceiling() {
    let (sim, rt) = sim(SimConfig {
        create_latency: Duration::from_micros(200),
        exec_latency: Duration::from_micros(50),
        ..SimConfig::default()
    });
    const CEILING: usize = 4;
    let pool = Arc::new(pool(&rt, 3, CEILING, Duration::from_secs(20)));
    let shapes = Arc::new(small_shapes(10));
    let stop = Arc::new(AtomicBool::new(false));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let monitor = {
        let (sim, stop, max_seen) = (sim.clone(), stop.clone(), max_seen.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                max_seen.fetch_max(sim.live_handles(), Ordering::SeqCst);
                std::hint::spin_loop();
            }
        })
    };
    let workers: Vec<_> = (0..6u64)
        .map(|t| {
            let (pool, rt, shapes) = (pool.clone(), rt.clone(), shapes.clone());
            std::thread::spawn(move || {
                let stream = Stream::new(&rt).unwrap();
                let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut worst = 0f64;
                for i in 0..400u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let d = shapes[(x % shapes.len() as u64) as usize];
                    let lease = pool.acquire(&d).expect("acquire within the timeout");
                    match x % 4 {
                        0 => lease.release(),
                        1 => {
                            let job = enqueue(&rt, &lease, &stream, i);
                            // SAFETY: the test's live stream of the pool's runtime.
                            unsafe { lease.release_after(stream.raw()) }.unwrap();
                            worst = worst.max(job.check(&stream));
                        }
                        2 => {
                            let job = enqueue(&rt, &lease, &stream, i);
                            worst = worst.max(job.check(&stream));
                            drop(lease);
                        }
                        _ => {
                            std::thread::sleep(Duration::from_micros(100));
                            drop(lease);
                        }
                    }
                }
                worst
            })
        })
        .collect();
    for w in workers {
        assert!(w.join().unwrap() <= 1e-5);
    }
    stop.store(true, Ordering::SeqCst);
    monitor.join().unwrap();
    assert!(max_seen.load(Ordering::SeqCst) <= CEILING);
    assert!(sim.peak_live_handles() <= CEILING);
    let m = pool.metrics();
    assert!(m.ceiling_waits > 0, "the ceiling was small enough to force waits: {m:?}");
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.created_total(), sim.destroyed_total());
    let m = pool.metrics();
    assert_eq!(m.creations, sim.created_total());
    assert_eq!(m.destroys, sim.destroyed_total());
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn metrics_match_the_runtime_after_a_workload() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 3, 5, Duration::from_secs(5));
    let shapes = small_shapes(7);
    let mut acquires = 0u64;
    let mut held = HashMap::new();
    for i in 0..60 {
        let d = shapes[(i * 7 + i / 3) % shapes.len()];
        let l = pool.acquire(&d).unwrap();
        acquires += 1;
        if i % 5 == 0 {
            held.insert(i, l);
        }
        if held.len() > 1 {
            let k = *held.keys().next().unwrap();
            held.remove(&k);
        }
    }
    drop(held);
    let m = pool.metrics();
    assert_eq!(m.hits + m.misses, acquires);
    assert_eq!(m.creations, sim.created_total());
    pool.shutdown();
    let m = pool.metrics();
    assert_eq!(m.destroys, sim.destroyed_total());
    assert_eq!(m.live, sim.live_handles());
    assert_eq!(sim.live_handles(), 0);
}

#[test]
fn shutdown_destroys_evicted_plans_still_queued_for_the_destroyer() {
    // The destroyer is busy with one evicted plan (each destroy takes 100 ms) while another
    // waits in its queue; shutdown takes the queued one itself and must count it out of the
    // idle destroys it waits for, or it waits out its whole timeout and reports one.
    let (sim, rt) = sim(SimConfig { destroy_latency: Duration::from_millis(100), ..SimConfig::default() });
    let pool = pool(&rt, 1, 4, Duration::from_secs(5));
    for n in [8, 16] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    // 32 evicts 16 into the queue while the destroyer is still on 8; its lease, held across
    // the start of the shutdown, keeps the shutdown from destroying anything inline first.
    let held = pool.acquire(&c2c(32, 1)).unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        drop(held);
    });
    let report = pool.shutdown();
    releaser.join().unwrap();
    assert!(!report.timed_out, "shutdown waited out its timeout: {report:?}");
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.created_total(), sim.destroyed_total());
}

/// A transform of `lease` on `stream` with the work area `work` (the caller's, shared
/// between calls so that the pool can find it already set).
fn enqueue_with_area(rt: &Arc<dyn Runtime>, lease: &Lease, stream: &Stream, work: &DeviceBuffer, seed: u64) -> Job {
    let desc = *lease.desc();
    let direction = direction_for(&desc);
    let input = reference::random_input(&desc, seed);
    let d_in = DeviceBuffer::from_host(rt, &input).unwrap();
    let d_out = DeviceBuffer::new(rt, desc.validate().unwrap().output_bytes).unwrap();
    // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they,
    // the area and the stream outlive the transform (the caller checks the job before freeing).
    unsafe { lease.exec(stream.raw(), d_in.ptr(), d_out.ptr(), direction, Some(work.ptr())) }.expect("exec");
    Job { desc, direction, input, d_in, d_out, work: None }
}

#[test]
fn an_execution_sets_only_what_its_plan_does_not_carry_and_runs_where_it_was_asked() {
    // Transforms take long enough that one run on another stream than asked would still be
    // in flight when the asked stream is synchronized, and read back wrong.
    let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_millis(20), ..SimConfig::default() });
    let pool = pool(&rt, 2, 2, Duration::from_secs(5));
    let (s1, s2) = (Stream::new(&rt).unwrap(), Stream::new(&rt).unwrap());
    let lease = pool.acquire(&c2c(64, 3)).unwrap();
    assert!(lease.work_size() > 0);
    let (w1, w2) = (DeviceBuffer::new(&rt, lease.work_size()).unwrap(), DeviceBuffer::new(&rt, lease.work_size()).unwrap());
    let calls = || sim.settings_calls();

    // Bound ahead: the executions that match set nothing.
    let before = calls();
    // SAFETY: the test's live stream and an area of the plan's work size that outlives the executions.
    unsafe { lease.bind(Some(s1.raw()), Some(w1.ptr())) }.unwrap();
    assert_eq!(calls() - before, 2, "the bind sets both");
    for seed in 0..3 {
        let before = calls();
        let job = enqueue_with_area(&rt, &lease, &s1, &w1, seed);
        assert_eq!(calls(), before, "stream and area were carried");
        assert!(job.check(&s1) <= 1e-5);
    }
    // A bind of what the plan carries calls nothing.
    let before = calls();
    // SAFETY: as above.
    unsafe { lease.bind(Some(s1.raw()), Some(w1.ptr())) }.unwrap();
    assert_eq!(calls(), before);

    // Another stream and area than the plan carries: the execution sets exactly those.
    let before = calls();
    let job = enqueue_with_area(&rt, &lease, &s2, &w2, 7);
    assert_eq!(calls() - before, 2);
    assert!(job.check(&s2) <= 1e-5, "the transform ran on the stream it was asked for");
    // Bound to one stream, executed on another: the execution sets the stream only.
    // SAFETY: as above.
    unsafe { lease.bind(Some(s1.raw()), None) }.unwrap();
    let before = calls();
    let job = enqueue_with_area(&rt, &lease, &s2, &w2, 8);
    assert_eq!(calls() - before, 1);
    assert!(job.check(&s2) <= 1e-5);

    // A null area is refused by name; a zero-size plan is bound no area.
    // SAFETY: the null pointer is refused before any call.
    let err = unsafe { lease.bind(None, Some(hipfft_pool::DevicePtr::NULL)) }.unwrap_err();
    assert!(err.to_string().contains("work_area"), "{err}");
    lease.release();
    let tiny = pool.acquire(&c2c(8, 1)).unwrap();
    assert_eq!(tiny.work_size(), 0);
    let before = calls();
    // SAFETY: as above (the area is never set on a plan that needs none).
    unsafe { tiny.bind(None, Some(w1.ptr())) }.unwrap();
    assert_eq!(calls(), before);
    tiny.release();
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// The sim, with each plan call recorded with its thread, and `current_device` failing once
/// on a creation worker when armed (a device that cannot be made current).
struct Recorded {
    sim: Arc<hipfft_pool::SimRuntime>,
    calls: std::sync::Mutex<Vec<(&'static str, std::thread::ThreadId)>>,
    fail_current_on_worker: AtomicBool,
    /// Milliseconds each create sleeps (0: none), to keep a creation worker busy.
    slow_create_ms: AtomicUsize,
}

// SAFETY: records and forwards to the sim; what it returns is the sim's answer, or an error
// for a call it did not forward.
unsafe impl hipfft_pool::Decorator for Recorded {
    fn inner(&self) -> &dyn Runtime {
        &*self.sim
    }
    fn current_device(&self) -> hipfft_pool::Result<i32> {
        let on_worker = std::thread::current().name().is_some_and(|n| n.starts_with("hipfft-pool-create"));
        if on_worker && self.fail_current_on_worker.swap(false, Ordering::SeqCst) {
            return Err(Error::Unavailable("the device could not be made current (injected)".into()));
        }
        self.sim.current_device()
    }
    fn plan_create(&self, desc: &hipfft_pool::PlanDesc, options: hipfft_pool::PlanOptions) -> hipfft_pool::Result<hipfft_pool::CreatedPlan> {
        self.calls.lock().unwrap().push(("create", std::thread::current().id()));
        std::thread::sleep(Duration::from_millis(self.slow_create_ms.load(Ordering::SeqCst) as u64));
        self.sim.plan_create(desc, options)
    }
    unsafe fn plan_destroy(&self, plan: hipfft_pool::RawPlan) -> hipfft_pool::Result<()> {
        self.calls.lock().unwrap().push(("destroy", std::thread::current().id()));
        // SAFETY: the caller's contract, passed on to the sim unchanged.
        unsafe { self.sim.plan_destroy(plan) }
    }
}

fn recorded() -> (Arc<Recorded>, Arc<dyn Runtime>) {
    let r = Arc::new(Recorded {
        sim: Arc::new(hipfft_pool::SimRuntime::new(SimConfig::default())),
        calls: std::sync::Mutex::default(),
        fail_current_on_worker: AtomicBool::new(false),
        slow_create_ms: AtomicUsize::new(0),
    });
    let rt: Arc<dyn Runtime> = r.clone();
    (r, rt)
}

/// A miss at the ceiling with an idle plan of its own takes that plan's slot over: one job
/// destroys it and makes the new plan, on one thread, one after the other (as an inline
/// cache's miss would), and the miss never waits on the ceiling for the slot to come back.
/// Ground truth: the sim's live count after every miss and its peak.
#[test]
fn a_miss_at_the_ceiling_destroys_its_idle_victim_and_creates_in_one_job() {
    let (r, rt) = recorded();
    let pool = pool(&rt, 1, 1, Duration::from_secs(10));
    let shapes = [c2c(8, 1), c2c(16, 1), c2c(32, 2)];
    for i in 0..30 {
        let lease = pool.acquire(&shapes[i % 3]).unwrap();
        assert!(r.sim.is_live(lease.plan()));
        assert_eq!(r.sim.live_handles(), 1, "miss {i}: the victim is gone before the new plan is handed out");
    }
    assert_eq!(r.sim.peak_live_handles(), 1, "never above the ceiling");
    let calls = r.calls.lock().unwrap().clone();
    assert_eq!(calls.iter().filter(|c| c.0 == "destroy").count(), 29);
    // Every destroy is followed by the next miss's create, on the same thread.
    for (i, w) in calls.windows(2).enumerate() {
        if w[0].0 == "destroy" {
            assert_eq!(w[1].0, "create", "call {i}: a destroy followed by {}", w[1].0);
            assert_eq!(w[0].1, w[1].1, "call {i}: the destroy and the create after it ran on two threads");
        }
    }
    let m = pool.metrics();
    assert_eq!((m.misses, m.creations, m.destroys, m.evictions), (30, 30, 29, 29));
    assert_eq!(m.ceiling_waits, 0, "a miss with an idle plan of its own never waits for a slot");
    pool.shutdown();
    assert_eq!(r.sim.live_handles(), 0);
    assert_eq!(r.sim.destroyed_total(), 30);
}

/// With two creation workers alive (two threads missed at once while a creation was slow),
/// one thread's misses in a row still run on one worker: each plan is destroyed, and the
/// next made, on the thread that made the plan before it (on the H200, raw cuFFT calls
/// split across two threads that way cost 2.9x the destroy and 1.18x the create).
#[test]
fn one_threads_misses_in_a_row_stay_on_one_worker_when_two_are_alive() {
    let (r, rt) = recorded();
    let pool = pool(&rt, 2, 2, Duration::from_secs(10));
    // Two misses at once, the creations slow: the second queues behind the first worker
    // until its kick starts another.
    r.slow_create_ms.store(20, Ordering::SeqCst);
    std::thread::scope(|s| {
        s.spawn(|| drop(pool.acquire(&c2c(8, 1)).unwrap()));
        s.spawn(|| drop(pool.acquire(&c2c(16, 1)).unwrap()));
    });
    r.slow_create_ms.store(0, Ordering::SeqCst);
    let workers = |calls: &[(&str, std::thread::ThreadId)]| calls.iter().map(|c| c.1).collect::<std::collections::HashSet<_>>().len();
    assert_eq!(workers(&r.calls.lock().unwrap()), 2, "two creation workers made the first two plans");
    r.calls.lock().unwrap().clear();
    let shapes = [c2c(32, 1), c2c(64, 1), c2c(128, 1), c2c(256, 1)];
    for i in 0..40 {
        let lease = pool.acquire(&shapes[i % 4]).unwrap();
        assert!(r.sim.is_live(lease.plan()));
    }
    assert!(r.sim.peak_live_handles() <= 2, "never above the ceiling");
    let calls = r.calls.lock().unwrap().clone();
    // The first two misses destroy the plans the two workers made; after that, every
    // destroy and create ran on the thread of the miss before.
    let steady: Vec<_> = calls.iter().skip(4).collect();
    assert!(steady.len() >= 60, "{} calls", steady.len());
    assert!(steady.iter().all(|c| c.1 == steady[0].1), "one worker ran the misses in a row: {:?}", steady.iter().map(|c| c.0).collect::<Vec<_>>());
    pool.shutdown();
    assert_eq!(r.sim.live_handles(), 0);
}

/// The victim of such a swap whose destroy cannot run at all (its device cannot be made
/// current) keeps its slot and stays counted: the miss fails with an error naming both
/// plans, the ceiling is never exceeded, and the destroyer thread's retry destroys the
/// victim, after which the next miss succeeds. Nothing leaks.
#[test]
fn a_swap_whose_victim_cannot_be_destroyed_fails_the_miss_and_keeps_its_slot_counted() {
    let (r, rt) = recorded();
    let pool = pool(&rt, 1, 1, Duration::from_secs(10));
    let (a, b) = (c2c(8, 1), c2c(16, 1));
    let victim = pool.acquire(&a).unwrap().plan();
    r.fail_current_on_worker.store(true, Ordering::SeqCst);
    let err = pool.acquire(&b).map(|l| l.plan()).expect_err("the victim could not be destroyed");
    let msg = err.to_string();
    assert!(msg.contains("could not be destroyed") && msg.contains(&a.to_string()) && msg.contains(&b.to_string()), "{msg}");
    assert_eq!(r.sim.created_total(), 1, "no plan made without a slot");
    // The victim is alive until the retry destroys it: at most the ceiling either way.
    let lease = pool.acquire(&b).expect("the next miss gets the slot once the retry destroyed the victim");
    assert!(!r.sim.is_live(victim) && r.sim.is_live(lease.plan()));
    assert_eq!(r.sim.peak_live_handles(), 1, "never above the ceiling");
    let m = pool.metrics();
    assert_eq!(m.destroy_failures, 1);
    drop(lease);
    pool.shutdown();
    assert_eq!(r.sim.live_handles(), 0);
    assert_eq!(r.sim.destroyed_total(), 2);
}
