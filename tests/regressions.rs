//! Regression tests for defects the reliability suite found (docs/reliability.md lists
//! them). Each reproduces its interleaving deterministically on the real pool.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::runtime::sim::SimConfig;
use hipfft_pool::{Lease, PlanPool, PoolConfig};
use parking_lot::Mutex;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that runs `hook` when a span of the given name is created on this thread,
/// so a test can act at an exact point inside the pool (the span sits right before the
/// ceiling wait).
struct OnSpan {
    name: &'static str,
    hook: Box<dyn Fn() + Send + Sync>,
}

impl Subscriber for OnSpan {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        if attrs.metadata().name() == self.name {
            (self.hook)();
        }
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Defect 1 (lost wake-up). A miss at the ceiling looked for an idle plan, found the only
/// plan leased, and went to wait; the lease was released in between, before the miss had
/// registered as a waiter, so the release saw no waiter and signalled nothing. The miss
/// slept its whole acquire timeout and failed with `CeilingTimeout`, with an idle plan it
/// could have evicted. The release here runs exactly in that window.
#[test]
fn a_release_between_the_look_and_the_wait_still_wakes_the_miss() {
    let (sim, rt) = sim(SimConfig::default());
    let pool = pool(&rt, 1, 1, Duration::from_secs(3));
    let parked: Arc<Mutex<Option<Lease>>> = Arc::new(Mutex::new(Some(pool.acquire(&c2c(8, 1)).unwrap())));
    let p = parked.clone();
    let sub = OnSpan { name: "ceiling_wait", hook: Box::new(move || drop(p.lock().take())) };
    let started = Instant::now();
    let r = tracing::subscriber::with_default(sub, || pool.acquire(&c2c(16, 1)));
    let waited = started.elapsed();
    assert!(parked.lock().is_none(), "the hook ran: the release happened inside the window");
    let lease = r.unwrap_or_else(|e| panic!("the miss was not woken by the release ({waited:?}): {e}"));
    assert!(waited < Duration::from_secs(1), "served at once, not after the timeout: {waited:?}");
    assert!(sim.is_live(lease.plan()));
    assert_eq!(sim.live_handles(), 1);
    drop(lease);
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
}

/// Defect 2 (shutdown returned early). The destroyer thread took a retired plan out of the
/// retired set *before* destroying it, so a shutdown running during that destroy found
/// nothing left, returned a clean report (not timed out, nothing still leased) and the
/// handle was still alive.
#[test]
fn shutdown_waits_for_a_retired_plan_the_destroyer_is_destroying() {
    let (sim, rt) = sim(SimConfig { destroy_latency: Duration::from_millis(300), ..SimConfig::default() });
    let pool = pool(&rt, 1, 2, Duration::from_secs(5));
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    drop(pool.acquire(&c2c(16, 1)).unwrap()); // capacity 1: the held plan is evicted, retired
    assert_eq!(pool.metrics().retired_pending, 1);
    assert_eq!(pool.trim(), 1, "the idle plan goes now, so shutdown has nothing of its own to destroy");
    held.release(); // the last lease: the destroyer thread takes it and destroys it (300 ms)
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(sim.live_handles(), 1, "the destroy is in progress");
    let report = pool.shutdown();
    assert!(!report.timed_out && report.still_leased.is_empty(), "{report:?}");
    assert_eq!(sim.live_handles(), 0, "a clean shutdown report means no handle is alive: {report:?}");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Defect 2, second path: a plan created while shutdown ran was counted out of `creating`
/// before it reached the retired set, so shutdown could see neither.
#[test]
fn shutdown_waits_for_a_creation_that_finishes_during_it() {
    for round in 0..40 {
        let (sim, rt) = sim(SimConfig { create_latency: Duration::from_micros(300 + 37 * round), ..SimConfig::default() });
        let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
            .capacity(2)
            .private_ceiling(2)
            .acquire_timeout(Duration::from_secs(5))
            .shutdown_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let pool = Arc::new(PlanPool::new(cfg, rt).unwrap());
        let p = pool.clone();
        let t = std::thread::spawn(move || p.acquire(&c2c(8, 1)).map(drop));
        while pool.metrics().creating == 0 && !t.is_finished() {
            std::hint::spin_loop();
        }
        let report = pool.shutdown();
        let r = t.join().unwrap();
        if !report.timed_out && report.still_leased.is_empty() {
            assert_eq!(sim.live_handles(), 0, "round {round}: clean report {report:?} with a handle alive ({r:?})");
        }
    }
}

/// Defect 4 (event leak; found by the `ops` fuzz target). `release_after` on a lease that
/// outlived its pool's shutdown made (or took) an event, found the pool shut down, and put
/// the event back on a free list that shutdown had already destroyed: it was never
/// destroyed. Each such call leaked a HIP event.
#[test]
fn release_after_after_shutdown_leaks_no_event() {
    let (sim, rt) = sim(SimConfig::default());
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(2)
        .private_ceiling(2)
        .shutdown_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let pool = PlanPool::new(cfg, rt.clone()).unwrap();
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(8, 1)).unwrap();
    let report = pool.shutdown();
    assert!(report.timed_out && report.still_leased.len() == 1, "{report:?}");
    // SAFETY: the test's live stream of the pool's runtime.
    let e = unsafe { lease.release_after(stream.raw()) }.unwrap_err();
    assert!(matches!(e.error, hipfft_pool::Error::ShutDown), "{}", e.error);
    drop(e.lease);
    drop(pool);
    let until = Instant::now() + Duration::from_secs(5);
    while sim.live_handles() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.live_events(), 0, "an event outlived the pool");
}

/// Defect 4, second path: an execution still pending when shutdown's wait ran out; its
/// `release_after` event completed later, was recycled onto the destroyed free list, and
/// leaked.
#[test]
fn a_release_after_pending_past_shutdown_leaks_no_event() {
    let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_millis(300), ..SimConfig::default() });
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(2)
        .private_ceiling(2)
        .shutdown_timeout(Duration::from_millis(30))
        .build()
        .unwrap();
    let pool = PlanPool::new(cfg, rt.clone()).unwrap();
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 1)).unwrap();
    let job = enqueue(&rt, &lease, &stream, 5);
    // SAFETY: the test's live stream of the pool's runtime.
    unsafe { lease.release_after(stream.raw()) }.unwrap();
    let report = pool.shutdown();
    assert!(report.timed_out, "{report:?}");
    assert!(job.check(&stream) <= 1e-5);
    drop(pool);
    let until = Instant::now() + Duration::from_secs(5);
    while (sim.live_handles() > 0 || sim.live_events() > 0) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.live_events(), 0, "the pending release's event outlived the pool");
}

/// Defect 5 (overflow; found by the `c_abi` fuzz target). A capacity above `usize::MAX / 4`
/// (the builder and `hfp_config` take any) overflowed the thrash detector's bounds
/// (`4 * capacity`) on the first eviction: a panic with overflow checks (the C ABI turned
/// it into `HFP_INTERNAL_ERROR`), a wrapped bound without. Run under `cargo test` (debug)
/// this panics without the fix; the fuzz seed `fuzz/corpus/c_abi/regression-huge-capacity` too.
#[test]
fn a_huge_capacity_does_not_overflow_the_thrash_detector() {
    let (sim, rt) = sim(SimConfig::default());
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru).capacity(usize::MAX / 2).private_ceiling(usize::MAX).build().unwrap();
    let pool = PlanPool::new(cfg, rt).unwrap();
    for n in [8, 16, 8, 32] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    assert_eq!(pool.trim(), 3);
    for n in [8, 16] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
}

/// Defect 6 (shutdown returned early, third path). An idle plan evicted by another
/// thread's miss is destroyed by that thread, outside every lock; a shutdown running
/// meanwhile saw neither a retired plan nor a creation, and returned a clean report with
/// the handle still alive (here, its destroy hangs until `unblock_all`).
#[test]
fn shutdown_waits_for_an_idle_plan_another_thread_is_destroying() {
    let (sim, rt) = sim(SimConfig::default());
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(1)
        .private_ceiling(1)
        .acquire_timeout(Duration::from_secs(5))
        .shutdown_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let pool = Arc::new(PlanPool::new(cfg, rt).unwrap());
    drop(pool.acquire(&c2c(8, 1)).unwrap());
    sim.set_faults(SimConfig { block_destroy: true, ..SimConfig::default() });
    let p = pool.clone();
    // At the ceiling: evicts the idle plan; its destroy, on the destroyer thread, hangs.
    let miss = std::thread::spawn(move || p.acquire(&c2c(16, 1)).map(drop));
    while sim.blocked_calls() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = pool.shutdown();
    let alive = sim.live_handles();
    sim.set_faults(SimConfig::default());
    sim.unblock_all();
    let _ = miss.join().unwrap();
    assert!(
        report.timed_out || alive == 0,
        "a clean shutdown report ({report:?}) with {alive} handle(s) alive: a destroy was still in progress"
    );
    // The destroy returns on the destroyer thread once unblocked.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while sim.live_handles() != 0 {
        assert!(std::time::Instant::now() < deadline, "the unblocked destroy never finished");
        std::thread::sleep(Duration::from_millis(1));
    }
}
