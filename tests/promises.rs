//! The pool's promises under a runtime that misbehaves: an acquire returns within its
//! timeout whatever the runtime does (a create or destroy that never returns marks the
//! device stuck); a panic in the runtime leaves no slot, key or flight behind; a destroy
//! that could not run keeps its handle counted until it is retried. Every count is checked
//! against the simulated runtime's own, never the pool's bookkeeping alone.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{CreatedPlan, Decorator, Error, PlanDesc, PlanOptions, RawPlan, Result, Runtime};

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_create_that_never_returns_ends_the_miss_within_its_timeout_and_marks_the_device_stuck() {
    // The seed's signature: past a dozen live plans, creation blocks for good.
    let (sim, rt) = sim(SimConfig { block_above_live: Some(2), ..SimConfig::default() });
    let timeout = Duration::from_millis(400);
    let pool = pool(&rt, 8, 8, timeout);
    let _a = pool.acquire(&c2c(8, 1)).unwrap();
    let _b = pool.acquire(&c2c(16, 1)).unwrap();

    let started = Instant::now();
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    let took = started.elapsed();
    assert!(took < timeout + Duration::from_secs(1), "the miss took {took:?} (timeout {timeout:?})");
    assert!(matches!(e, Error::CeilingTimeout { joined_creation: true, .. }), "{e}");
    assert!(e.to_string().contains("hipfftMakePlanMany64 had not returned"), "{e}");
    assert_eq!(sim.blocked_calls(), 1, "the creation is still inside the runtime");

    // Every later miss on the device fails at once, naming the call and the plan. (One more
    // timeout first: the worker may have entered the call after the miss began.)
    std::thread::sleep(timeout);
    let started = Instant::now();
    let e = pool.acquire(&c2c(64, 1)).unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(100), "a miss on a stuck device waited {:?}", started.elapsed());
    match &e {
        Error::DeviceStuck { device: 0, call, desc, running } => {
            assert_eq!(*call, "hipfftMakePlanMany64");
            assert!(desc.contains("n=32"), "{desc}");
            assert!(*running >= timeout);
        }
        other => panic!("expected DeviceStuck, got {other}"),
    }
    // Hits need no runtime call and still work.
    assert!(pool.acquire(&c2c(8, 1)).is_ok());

    // When the call returns, the worker destroys what it made and gives the slot back.
    sim.unblock_all();
    wait_until("the abandoned creation to be settled", Duration::from_secs(5), || {
        pool.ceiling().live() == 2 && sim.live_handles() == 2
    });
    // The device is no longer stuck: a miss goes through (the sim blocks above 2 live, so
    // make room first).
    drop((_a, _b));
    pool.trim();
    assert_eq!(sim.live_handles(), 0);
    assert!(pool.acquire(&c2c(64, 1)).is_ok());
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn a_destroy_that_never_returns_does_not_hold_the_miss_that_evicted() {
    let (sim, rt) = sim(SimConfig { block_destroy: true, ..SimConfig::default() });
    let timeout = Duration::from_millis(400);
    let pool = pool(&rt, 1, 1, timeout);
    drop(pool.acquire(&c2c(8, 1)).unwrap());

    // The miss evicts the idle plan; its destroy blocks on the destroyer thread, not here.
    let started = Instant::now();
    let e = pool.acquire(&c2c(16, 1)).unwrap_err();
    let took = started.elapsed();
    assert!(took < timeout + Duration::from_secs(1), "the miss took {took:?}");
    assert!(matches!(e, Error::CeilingTimeout { .. }), "{e}");
    assert_eq!(sim.blocked_calls(), 1, "the destroy runs on the destroyer thread");
    assert_eq!(sim.live_handles(), 1, "the handle being destroyed is still alive");
    assert_eq!(pool.ceiling().live(), 1, "and still counted");

    // The destroy was blocked when the miss ended; one more timeout and it has run for at
    // least a whole timeout, whatever the scheduler did (the destroyer thread may start it
    // well after the miss began on a loaded machine).
    std::thread::sleep(timeout);
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(matches!(&e, Error::DeviceStuck { call: "hipfftDestroy", .. }), "{e}");

    sim.set_faults(SimConfig::default());
    sim.unblock_all();
    wait_until("the destroy to return", Duration::from_secs(5), || sim.live_handles() == 0 && pool.ceiling().live() == 0);
    assert!(pool.acquire(&c2c(32, 1)).is_ok());
}

/// The sim, with plan creation or destroy made to panic, or `set_device` made to fail.
struct Unruly {
    sim: Arc<SimRuntime>,
    panic_create: AtomicBool,
    panic_destroy: AtomicUsize,
    refuse_set_device: AtomicBool,
    panic_event_query: AtomicBool,
}

impl Unruly {
    fn new(devices: i32) -> Arc<Unruly> {
        Arc::new(Unruly {
            sim: Arc::new(SimRuntime::new(SimConfig { devices, ..SimConfig::default() })),
            panic_create: AtomicBool::new(false),
            panic_destroy: AtomicUsize::new(0),
            refuse_set_device: AtomicBool::new(false),
            panic_event_query: AtomicBool::new(false),
        })
    }
}

// SAFETY: every call goes to the sim unchanged or fails (or panics) before reaching it, so
// what the sim returns is what callers get.
unsafe impl Decorator for Unruly {
    fn inner(&self) -> &dyn Runtime {
        &*self.sim
    }
    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        if self.panic_create.load(Ordering::SeqCst) {
            panic!("injected panic in plan_create");
        }
        self.sim.plan_create(desc, options)
    }
    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        if self.panic_destroy.load(Ordering::SeqCst) > 0 {
            self.panic_destroy.fetch_sub(1, Ordering::SeqCst);
            panic!("injected panic in plan_destroy");
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { self.sim.plan_destroy(plan) }
    }
    unsafe fn event_query(&self, event: hipfft_pool::RawEvent) -> Result<bool> {
        if self.panic_event_query.load(Ordering::SeqCst) {
            panic!("injected panic in event_query");
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { self.sim.event_query(event) }
    }
    fn set_device(&self, device: i32) -> Result<()> {
        if self.refuse_set_device.load(Ordering::SeqCst) {
            return Err(Error::Unavailable(format!("injected: cannot make device {device} current")));
        }
        self.sim.set_device(device)
    }
}

#[test]
fn a_panic_in_plan_create_leaves_no_slot_key_or_flight_behind() {
    let u = Unruly::new(1);
    let rt: Arc<dyn Runtime> = u.clone();
    let pool = pool(&rt, 2, 2, Duration::from_secs(5));
    u.panic_create.store(true, Ordering::SeqCst);
    let e = pool.acquire(&c2c(8, 1)).unwrap_err();
    assert!(matches!(&e, Error::Internal(m) if m.contains("injected panic in plan_create")), "{e}");
    assert_eq!(pool.ceiling().live(), 0, "the slot came back");
    assert_eq!(pool.metrics().creating, 0);
    // The key is not left `creating`: the next miss on it makes the plan at once, and does
    // not wait out its timeout on a flight nobody finishes.
    u.panic_create.store(false, Ordering::SeqCst);
    let started = Instant::now();
    let lease = pool.acquire(&c2c(8, 1)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(u.sim.live_handles(), 1);
    drop(lease);
    let started = Instant::now();
    let report = pool.shutdown();
    assert!(!report.timed_out && started.elapsed() < Duration::from_secs(1), "{report:?}");
    assert_eq!(u.sim.live_handles(), 0);
}

#[test]
fn a_panic_on_the_destroyer_thread_is_reported_and_the_thread_keeps_serving() {
    let u = Unruly::new(1);
    let rt: Arc<dyn Runtime> = u.clone();
    let pool = pool(&rt, 2, 2, Duration::from_millis(300));
    drop(pool.acquire(&c2c(8, 1)).unwrap());
    drop(pool.acquire(&c2c(16, 1)).unwrap());
    u.panic_destroy.store(1, Ordering::SeqCst);
    // At the ceiling: c2c(8) is evicted and its destroy, on the destroyer thread, panics.
    assert!(pool.acquire(&c2c(32, 1)).is_err(), "the panicked destroy keeps its slot");
    wait_until("the panicked destroy to be counted", Duration::from_secs(5), || pool.metrics().destroy_failures == 1);
    assert_eq!(u.sim.live_handles(), 2, "the handle whose destroy panicked is still alive");
    assert_eq!(pool.ceiling().live(), 2, "and still counted against the ceiling");
    // The thread still serves: the next eviction's destroy runs and the miss gets its slot.
    let destroyed = u.sim.destroyed_total();
    assert!(pool.acquire(&c2c(32, 1)).is_ok());
    assert_eq!(u.sim.destroyed_total(), destroyed + 1);
    assert_eq!(u.sim.live_handles(), 2);
}

#[test]
fn a_destroy_that_could_not_run_keeps_its_handle_counted_until_it_is_retried() {
    let u = Unruly::new(2);
    let rt: Arc<dyn Runtime> = u.clone();
    let pool = pool(&rt, 1, 1, Duration::from_secs(5));
    let on_device_1 = PlanDesc { device: 1, ..c2c(8, 1) };
    drop(pool.acquire(&on_device_1).unwrap());
    assert_eq!(u.sim.live_handles_on(1), 1);

    // The eviction's destroy needs device 1 current; it cannot be made current.
    u.refuse_set_device.store(true, Ordering::SeqCst);
    drop(pool.acquire(&PlanDesc { device: 1, ..c2c(16, 1) }).err());
    wait_until("the destroy attempt", Duration::from_secs(5), || pool.metrics().destroy_failures >= 1);
    assert_eq!(u.sim.live_handles_on(1), 1, "the destroy did not run: the handle is alive");
    assert_eq!(pool.ceiling_for(1).live(), 1, "so it still counts against the ceiling");

    // Once the device can be made current again, the destroyer thread retries it.
    u.refuse_set_device.store(false, Ordering::SeqCst);
    wait_until("the retried destroy", Duration::from_secs(5), || {
        u.sim.live_handles_on(1) == 0 && pool.ceiling_for(1).live() == 0
    });
    assert!(pool.acquire(&PlanDesc { device: 1, ..c2c(16, 1) }).is_ok());
}

/// When neither a query nor a synchronize of the event behind a
/// `release_after` works (a device in error), the lease stays held: the plan is not handed
/// out idle, not evicted and not destroyed, until a later query proves the work done.
#[test]
fn a_release_whose_event_cannot_be_waited_on_keeps_its_plan_until_proven_done() {
    let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_millis(1), ..SimConfig::default() });
    let pool = pool(&rt, 1, 1, Duration::from_millis(150));
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 1)).unwrap();
    let plan = lease.plan();
    let job = enqueue(&rt, &lease, &stream, 7);
    sim.set_faults(SimConfig { exec_latency: Duration::from_millis(1), fail_event_wait: true, ..SimConfig::default() });
    // SAFETY: the stream is live and outlives the pool's use of it below.
    unsafe { lease.release_after(stream.raw()) }.unwrap();
    // The only slot stays taken: a miss for another shape times out, and the plan lives.
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "{e}");
    assert!(sim.is_live(plan), "the plan was destroyed while its work was unproven");
    assert_eq!(sim.live_handles(), 1);
    assert!(pool.metrics().event_failures >= 1, "{:?}", pool.metrics());
    // The device recovers: a later query proves the work done, the lease goes, and the
    // miss can evict the plan.
    sim.set_faults(SimConfig::default());
    let _other = pool.acquire(&c2c(32, 1)).unwrap();
    wait_until("the unproven plan to be destroyed", Duration::from_secs(5), || !sim.is_live(plan));
    assert!(job.check(&stream) < 1e-4);
    assert_eq!(sim.violations().len(), 0, "{:?}", sim.violations());
}

/// The completion thread: a panic in the runtime while it polls an event
/// is caught; the lease stays held (its work is not proven done), it is counted, and the
/// thread keeps serving: once the runtime behaves, the release completes and later ones too.
#[test]
fn a_panic_while_polling_an_event_keeps_the_lease_and_the_completion_thread_serving() {
    let u = Unruly::new(1);
    let rt: Arc<dyn Runtime> = u.clone();
    let pool = pool(&rt, 1, 1, Duration::from_millis(150));
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 1)).unwrap();
    let plan = lease.plan();
    let job = enqueue(&rt, &lease, &stream, 3);
    u.panic_event_query.store(true, Ordering::SeqCst);
    // SAFETY: the stream is live and outlives the pool's use of it below.
    unsafe { lease.release_after(stream.raw()) }.unwrap();
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "the plan was released after a panic: {e}");
    assert!(u.sim.is_live(plan));
    assert!(pool.metrics().event_failures >= 1, "{:?}", pool.metrics());
    u.panic_event_query.store(false, Ordering::SeqCst);
    // The thread survived: it completes this release (the miss evicts the plan) and the next.
    let other = pool.acquire(&c2c(32, 1)).unwrap();
    wait_until("the plan to be destroyed", Duration::from_secs(5), || !u.sim.is_live(plan));
    assert!(job.check(&stream) < 1e-4);
    let job = enqueue(&rt, &other, &stream, 4);
    // SAFETY: as above.
    unsafe { other.release_after(stream.raw()) }.unwrap();
    assert!(pool.acquire(&c2c(16, 1)).is_ok(), "a later release completed");
    assert!(job.check(&stream) < 1e-4);
}

/// A pool made while the device's flags include blocking sync (the
/// seed's hang, set after the null stream existed) says so in `warnings()` (C hosts:
/// `hfp_pool_warnings`), naming the flags; without it, nothing.
#[test]
fn a_pool_made_under_blocking_sync_warns_and_names_the_flags() {
    let (_, rt) = sim(SimConfig { device_flags: 0x4, ..SimConfig::default() });
    let pool = pool(&rt, 2, 2, Duration::from_millis(100));
    assert_eq!(pool.warnings().len(), 1, "{:?}", pool.warnings());
    let w = &pool.warnings()[0];
    assert!(w.contains("0x4") && w.contains("hipDeviceScheduleBlockingSync") && w.contains("hipSetDeviceFlags"), "{w}");
    let (_, rt) = sim(SimConfig { device_flags: 0x1, ..SimConfig::default() });
    assert!(pool_warnings(&rt).is_empty());
}

fn pool_warnings(rt: &Arc<dyn Runtime>) -> Vec<String> {
    pool(rt, 2, 2, Duration::from_millis(100)).warnings().to_vec()
}

/// A lease dropped right after an execution is released once that work
/// is done (an event on its last stream), not at once: at a ceiling of 1, a miss for another
/// shape cannot evict the plan while its transform runs, and the transform's result is
/// right. `release()` vouches for completion and releases at once.
#[test]
fn a_lease_dropped_after_an_exec_is_released_after_its_work_not_at_once() {
    let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_millis(300), ..SimConfig::default() });
    let pool = pool(&rt, 1, 1, Duration::from_millis(50));
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 1)).unwrap();
    let plan = lease.plan();
    let job = enqueue(&rt, &lease, &stream, 11);
    drop(lease);
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "the plan was released under its pending work: {e}");
    assert!(sim.is_live(plan));
    assert!(job.check(&stream) < 1e-4);
    // The work is done: the release follows, and the miss evicts the plan.
    let other = pool.acquire(&c2c(32, 1)).unwrap();
    assert!(!sim.is_live(plan));
    // Not executed: released at once.
    other.release();
    assert!(pool.acquire(&c2c(16, 1)).is_ok());
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Pools sharing a ceiling. A miss in one pool that finds nothing idle of
/// its own reclaims an idle plan of another pool at that ceiling instead of timing out;
/// two pools, then three, counted by the sim itself.
#[test]
fn a_pool_whose_plans_sit_idle_does_not_starve_the_others_at_a_shared_ceiling() {
    let (sim, rt) = sim(SimConfig::default());
    let ceiling = hipfft_pool::LiveCeiling::new(2);
    let make = || {
        let cfg = hipfft_pool::PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
            .capacity(2)
            .shared_ceiling(ceiling.clone())
            .acquire_timeout(Duration::from_millis(300))
            .build()
            .unwrap();
        hipfft_pool::PlanPool::new(cfg, rt.clone()).unwrap()
    };
    let (a, b, c) = (make(), make(), make());
    drop(a.acquire(&c2c(8, 1)).unwrap());
    drop(a.acquire(&c2c(16, 1)).unwrap());
    assert_eq!(sim.live_handles(), 2);
    drop(b.acquire(&c2c(32, 1)).expect("b reclaims one of a's idle plans"));
    assert_eq!((a.metrics().live, b.metrics().live), (1, 1));
    drop(c.acquire(&c2c(64, 1)).expect("c reclaims from a or b"));
    assert_eq!(a.metrics().live + b.metrics().live + c.metrics().live, 2);
    assert!(sim.live_handles() <= 2 && sim.peak_live_handles() <= 2, "the sim's own count");
}

/// A leased plan of another pool is never taken.
#[test]
fn leased_plans_of_another_pool_are_never_reclaimed() {
    let (sim, rt) = sim(SimConfig::default());
    let ceiling = hipfft_pool::LiveCeiling::new(1);
    let make = || {
        let cfg = hipfft_pool::PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
            .capacity(1)
            .shared_ceiling(ceiling.clone())
            .acquire_timeout(Duration::from_millis(100))
            .build()
            .unwrap();
        hipfft_pool::PlanPool::new(cfg, rt.clone()).unwrap()
    };
    let (a, b) = (make(), make());
    let held = a.acquire(&c2c(8, 1)).unwrap();
    let plan = held.plan();
    let e = b.acquire(&c2c(16, 1)).unwrap_err();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "{e}");
    assert!(sim.is_live(plan), "a leased plan was reclaimed");
    held.release();
    assert!(b.acquire(&c2c(16, 1)).is_ok(), "once idle it is reclaimed");
    assert!(!sim.is_live(plan));
}

/// `release_after` on a stream that is capturing a graph is refused and the lease comes
/// back: a captured execution runs each time a graph holding it is launched, so no event can
/// tell when its plan is free. The caller holds the lease (standing: a miss that finds the
/// ceiling full of them fails at once) until its graphs are destroyed, then releases it; the
/// sim records no event recorded during the capture and no graph run on a destroyed plan.
#[test]
fn release_after_on_a_capturing_stream_gives_the_lease_back_to_hold_until_the_graph_is_gone() {
    let sim = Arc::new(SimRuntime::new(SimConfig::default()));
    let rt: Arc<dyn Runtime> = sim.clone();
    let pool = pool(&rt, 1, 1, Duration::from_millis(50));
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 1)).unwrap();
    let plan = lease.plan();
    sim.begin_capture(stream.raw()).unwrap();
    let job = enqueue(&rt, &lease, &stream, 21);
    // SAFETY: the stream is live.
    let back = unsafe { lease.release_after(stream.raw()) }.expect_err("refused inside a capture");
    assert!(matches!(back.error, Error::InvalidArgument { name: "stream", .. }), "{}", back.error);
    let held = back.lease.into_standing();
    let graph = sim.end_capture(stream.raw()).unwrap();
    // Every slot is held by a standing plan: a miss fails at once, naming what it needs.
    let started = std::time::Instant::now();
    let e = pool.acquire(&c2c(32, 1)).unwrap_err();
    assert!(matches!(e, Error::CeilingHeld { standing: 1, ceiling: 1, needed: 2, .. }), "{e}");
    assert!(started.elapsed() < Duration::from_millis(50), "no wait for the timeout");
    assert!(e.to_string().contains("HIPFFT_POOL_LIVE_CEILING"), "{e}");
    let exec = sim.graph_instantiate(graph).unwrap();
    for _ in 0..2 {
        sim.graph_launch(exec, stream.raw()).unwrap();
        assert!(job.check(&stream) < 1e-4, "the graph ran the transform");
    }
    sim.graph_exec_destroy(exec).unwrap();
    sim.graph_destroy(graph).unwrap();
    drop(held);
    // Let go: the miss evicts the plan.
    assert!(pool.acquire(&c2c(32, 1)).is_ok());
    assert!(!sim.is_live(plan));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
