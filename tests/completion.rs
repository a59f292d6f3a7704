//! The completion thread's polling, watched at the runtime boundary: events on one stream are
//! queried oldest first (stream order makes a later one pointless while an earlier one has
//! not fired), a stalled stream does not hold up releases on another, and a batch of
//! releases (`release_in_batch` + `end_batch`) costs one event and is never released before
//! its work.

mod common;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::check::buffer::Stream;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{Decorator, RawEvent, RawStream, Result, Runtime};

/// The sim, with every event query checked against the order of the records on its stream,
/// and one stream that can be made to look stalled (its events never report complete).
struct Watched {
    sim: Arc<SimRuntime>,
    order: Mutex<Order>,
    queries: AtomicU64,
    records: AtomicU64,
    /// `stream_is_capturing` calls.
    capture_queries: AtomicU64,
    stalled: AtomicUsize,
}

#[derive(Default)]
struct Order {
    next: u64,
    /// Event -> (stream, sequence number of its latest record).
    recorded: HashMap<usize, (usize, u64)>,
    /// Per stream: records not yet seen complete, oldest first.
    outstanding: HashMap<usize, VecDeque<u64>>,
    violations: Vec<String>,
}

impl Watched {
    fn new(config: SimConfig) -> Arc<Watched> {
        Arc::new(Watched {
            sim: Arc::new(SimRuntime::new(config)),
            order: Mutex::default(),
            queries: AtomicU64::new(0),
            records: AtomicU64::new(0),
            capture_queries: AtomicU64::new(0),
            stalled: AtomicUsize::new(usize::MAX),
        })
    }

    fn violations(&self) -> Vec<String> {
        self.order.lock().unwrap().violations.clone()
    }
}

// SAFETY: records and forwards to the sim; what it returns is the sim's answer.
unsafe impl Decorator for Watched {
    fn inner(&self) -> &dyn Runtime {
        &*self.sim
    }
    unsafe fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        // SAFETY: the caller's contract, passed on to the sim unchanged.
        unsafe { self.sim.event_record(event, stream) }?;
        self.records.fetch_add(1, Ordering::SeqCst);
        let mut o = self.order.lock().unwrap();
        let seq = o.next;
        o.next += 1;
        o.recorded.insert(event.0, (stream.0, seq));
        o.outstanding.entry(stream.0).or_default().push_back(seq);
        Ok(())
    }
    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        self.capture_queries.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the caller's contract, passed on to the sim unchanged.
        unsafe { self.sim.stream_is_capturing(stream) }
    }
    unsafe fn event_query(&self, event: RawEvent) -> Result<bool> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        let (stream, seq) = self.order.lock().unwrap().recorded[&event.0];
        // SAFETY: the caller's contract, passed on to the sim unchanged.
        let done = stream != self.stalled.load(Ordering::SeqCst) && unsafe { self.sim.event_query(event) }?;
        let mut o = self.order.lock().unwrap();
        let queue = o.outstanding.get_mut(&stream).unwrap();
        let oldest = queue.front().copied();
        if done {
            queue.retain(|s| *s != seq);
        }
        if oldest != Some(seq) {
            o.violations.push(format!("record #{seq} on stream {stream:#x} queried while #{oldest:?} had not fired"));
        }
        Ok(done)
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn events_on_one_stream_are_queried_oldest_first() {
    let w = Watched::new(SimConfig { exec_latency: Duration::from_millis(4), ..SimConfig::default() });
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 16, 16, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    // The stream looks stalled until all 24 are pending, so the thread has many to choose from.
    w.stalled.store(stream.raw().0, Ordering::SeqCst);
    let mut jobs = Vec::new();
    for i in 0..24 {
        let lease = pool.acquire(&c2c(8 + 4 * (i % 6), 2)).unwrap();
        jobs.push(enqueue(&rt, &lease, &stream, i as u64));
        // SAFETY: the test's live stream of the pool's runtime.
        unsafe { lease.release_after(stream.raw()) }.unwrap();
    }
    let polled = w.queries.load(Ordering::Relaxed);
    wait_until("the thread polled the stalled stream a few times", || w.queries.load(Ordering::Relaxed) > polled + 5);
    w.stalled.store(usize::MAX, Ordering::SeqCst);
    for job in jobs {
        assert!(job.check(&stream) <= 1e-5);
    }
    // Every lease went: the plans can all be destroyed (ground truth: the sim's count).
    wait_until("every lease was released", || {
        pool.trim();
        w.sim.live_handles() == 0
    });
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.queries.load(Ordering::Relaxed) >= 24, "each release was seen complete by a query");
}

#[test]
fn a_stalled_stream_does_not_hold_up_releases_on_another() {
    let w = Watched::new(SimConfig::default());
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 4, 4, Duration::from_secs(5));
    let (stalled, moving) = (Stream::new(&rt).unwrap(), Stream::new(&rt).unwrap());
    w.stalled.store(stalled.raw().0, Ordering::SeqCst);

    let a = pool.acquire(&c2c(16, 1)).unwrap();
    let plan_a = a.plan();
    let job_a = enqueue(&rt, &a, &stalled, 1);
    // SAFETY: the test's live stream of the pool's runtime.
    unsafe { a.release_after(stalled.raw()) }.unwrap();
    let b = pool.acquire(&c2c(32, 1)).unwrap();
    let plan_b = b.plan();
    let job_b = enqueue(&rt, &b, &moving, 2);
    // SAFETY: the test's live stream of the pool's runtime.
    unsafe { b.release_after(moving.raw()) }.unwrap();
    assert!(job_a.check(&stalled) <= 1e-5 && job_b.check(&moving) <= 1e-5);

    wait_until("the plan on the moving stream was released", || {
        pool.trim();
        !w.sim.is_live(plan_b)
    });
    assert!(w.sim.is_live(plan_a), "released although its stream never reported completion");
    w.stalled.store(usize::MAX, Ordering::SeqCst);
    wait_until("the plan on the stalled stream was released", || {
        pool.trim();
        !w.sim.is_live(plan_a)
    });
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
}

#[test]
fn a_batch_of_releases_records_one_event_at_its_end() {
    let w = Watched::new(SimConfig { exec_latency: Duration::from_millis(1), ..SimConfig::default() });
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 8, 8, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    let mut jobs = Vec::new();
    for i in 0..20 {
        let lease = pool.acquire(&c2c(8 + 4 * (i % 5), 2)).unwrap();
        jobs.push(enqueue(&rt, &lease, &stream, i as u64));
        // SAFETY: the test's stream, live until the batch ends below.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    assert_eq!(w.records.load(Ordering::SeqCst), 0, "no event before the batch ends");
    assert_eq!(w.capture_queries.load(Ordering::SeqCst), 1, "capture asked about once, by the call that opened the batch");
    assert_eq!(pool.metrics().in_flight, 20, "every lease held until its batch ends");
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert_eq!(w.records.load(Ordering::SeqCst), 1, "one event for the whole batch");
    assert_eq!(w.capture_queries.load(Ordering::SeqCst), 2, "and once by its end");
    // SAFETY: as above; a second end finds nothing to end.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert_eq!(w.records.load(Ordering::SeqCst), 1);
    for job in jobs {
        assert!(job.check(&stream) <= 1e-5);
    }
    wait_until("every batched lease was released", || {
        pool.trim();
        w.sim.live_handles() == 0
    });
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn a_batch_that_fills_up_ends_itself() {
    let w = Watched::new(SimConfig::default());
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 4, 4, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    for _ in 0..hipfft_pool::BATCH_LIMIT + 3 {
        let lease = pool.acquire(&c2c(16, 1)).unwrap();
        // SAFETY: the test's stream, live until the batch ends below.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    assert_eq!(w.records.load(Ordering::SeqCst), 1, "the release that filled the batch recorded its event");
    wait_until("the full batch was released", || pool.metrics().in_flight == 3);
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert_eq!(w.records.load(Ordering::SeqCst), 2);
    wait_until("the rest was released", || pool.metrics().in_flight == 0);
}

#[test]
fn batched_leases_hold_their_plans_until_the_batch_work_is_done() {
    // Ceiling 2: the next two keys can only be made by destroying the two plans the batch
    // holds, which the sim reports as a violation if their executions are still pending.
    let w = Watched::new(SimConfig { exec_latency: Duration::from_millis(30), ..SimConfig::default() });
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 2, 2, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    let mut jobs = Vec::new();
    let mut plans = Vec::new();
    for (i, n) in [16, 32].into_iter().enumerate() {
        let lease = pool.acquire(&c2c(n, 4)).unwrap();
        plans.push(lease.plan());
        jobs.push(enqueue(&rt, &lease, &stream, i as u64));
        // SAFETY: the test's stream, live until the batch ends below.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert!(plans.iter().any(|p| w.sim.pending_execs(*p) > 0), "the batch's work is still queued");
    let started = Instant::now();
    let a = pool.acquire(&c2c(64, 1)).unwrap();
    let b = pool.acquire(&c2c(128, 1)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(20), "made room only once the batch's work was done");
    for p in &plans {
        assert!(!w.sim.is_live(*p), "the batch's plans were destroyed to make room");
    }
    drop((a, b));
    for job in jobs {
        assert!(job.check(&stream) <= 1e-5, "the batch's transforms ran on live plans");
    }
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn a_batch_whose_event_fails_is_released_after_a_stream_synchronize() {
    let w = Watched::new(SimConfig { fail_event_every: Some(1), exec_latency: Duration::from_millis(5), ..SimConfig::default() });
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 4, 4, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    let mut jobs = Vec::new();
    let mut plans = Vec::new();
    for i in 0..3 {
        let lease = pool.acquire(&c2c(8 << i, 1)).unwrap();
        plans.push(lease.plan());
        jobs.push(enqueue(&rt, &lease, &stream, i));
        // SAFETY: the test's stream, live until the batch ends below.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.expect("no event, but the stream was synchronized");
    assert_eq!(pool.metrics().in_flight, 0, "released once the synchronize returned");
    for p in &plans {
        assert_eq!(w.sim.pending_execs(*p), 0, "released with work pending on plan {p:?}");
    }
    for job in jobs {
        assert!(job.check(&stream) <= 1e-5);
    }
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn a_batch_is_not_ended_inside_a_capture_and_covers_a_graph_launched_before_its_end() {
    // Ceiling 2: making two other keys destroys the batch's two plans, which the sim reports
    // as a violation while any execution of theirs (the captured one included) is pending.
    let w = Watched::new(SimConfig { exec_latency: Duration::from_millis(5), ..SimConfig::default() });
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = pool(&rt, 2, 2, Duration::from_secs(5));
    let stream = Stream::new(&rt).unwrap();
    let mut jobs = Vec::new();
    let mut plans = Vec::new();
    // Both plans made first: none may be made inside a capture.
    let leases = [pool.acquire(&c2c(16, 4)).unwrap(), pool.acquire(&c2c(32, 4)).unwrap()];
    for (i, lease) in leases.into_iter().enumerate() {
        if i == 1 {
            w.sim.begin_capture(stream.raw()).unwrap();
        }
        plans.push(lease.plan());
        jobs.push(enqueue(&rt, &lease, &stream, i as u64));
        // SAFETY: the test's stream, live until the batch ends below.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    assert_eq!(w.capture_queries.load(Ordering::SeqCst), 1, "the batch opened before the capture; the captured lease joined it");
    // SAFETY: as above.
    let err = unsafe { pool.end_batch(stream.raw()) }.expect_err("no event can end a batch inside a capture");
    let text = err.to_string();
    assert!(text.contains("stream") && text.contains("capturing") && text.contains("2 leases"), "{text}");
    assert_eq!(w.records.load(Ordering::SeqCst), 0, "no event recorded in the capture");
    assert_eq!(pool.metrics().in_flight, 2, "the batch stays open, its leases held");
    let graph = w.sim.end_capture(stream.raw()).unwrap();
    let exec = w.sim.graph_instantiate(graph).unwrap();
    w.sim.graph_launch(exec, stream.raw()).unwrap();
    // SAFETY: as above; the graph was launched on the stream before the batch's end.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert_eq!(w.records.load(Ordering::SeqCst), 1);
    let a = pool.acquire(&c2c(64, 1)).unwrap();
    let b = pool.acquire(&c2c(128, 1)).unwrap();
    for p in &plans {
        assert!(!w.sim.is_live(*p), "the batch's plans were destroyed to make room");
    }
    drop((a, b));
    for job in jobs {
        assert!(job.check(&stream) <= 1e-5, "the batch's transforms, the captured one too, ran on live plans");
    }
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn a_release_in_batch_on_a_capturing_stream_keeps_the_plan_for_good_and_says_so() {
    let w = Watched::new(SimConfig::default());
    let rt: Arc<dyn Runtime> = w.clone();
    let ceiling = hipfft_pool::LiveCeiling::new(4);
    let cfg = hipfft_pool::PoolConfig::builder().capacity(4).shared_ceiling(ceiling.clone()).build().unwrap();
    let pool = hipfft_pool::PlanPool::new(cfg, rt.clone()).unwrap();
    let stream = Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(16, 1)).unwrap();
    let plan = lease.plan();
    w.sim.begin_capture(stream.raw()).unwrap();
    let job = enqueue(&rt, &lease, &stream, 7);
    // SAFETY: the test's stream, live until the graph ran below.
    let err = unsafe { lease.release_in_batch(stream.raw()) }.expect_err("a captured lease cannot be released by an event");
    assert!(err.to_string().contains("capturing a graph"), "{err}");
    // SAFETY: as above; nothing is batched, so there is nothing to end.
    unsafe { pool.end_batch(stream.raw()) }.expect("no batch opened");
    assert_eq!((pool.metrics().in_flight, ceiling.standing()), (1, 1), "held for good, as a standing plan");
    let graph = w.sim.end_capture(stream.raw()).unwrap();
    let exec = w.sim.graph_instantiate(graph).unwrap();
    for _ in 0..2 {
        w.sim.graph_launch(exec, stream.raw()).unwrap();
        assert!(job.check(&stream) <= 1e-5, "the graph may run again and again: its plan stays");
    }
    pool.trim();
    assert!(w.sim.is_live(plan));
    assert_eq!(w.records.load(Ordering::SeqCst), 0, "no event recorded in the capture");
    assert!(w.sim.violations().is_empty(), "{:#?}", w.sim.violations());
}

/// A pool whose done batches wait `lend` for their stream's thread.
fn lending_pool(rt: &Arc<dyn Runtime>, ceiling: usize, lend: Duration) -> hipfft_pool::PlanPool {
    let cfg = hipfft_pool::PoolConfig::builder()
        .capacity(ceiling)
        .private_ceiling(ceiling)
        .acquire_timeout(Duration::from_secs(5))
        .shutdown_timeout(Duration::from_secs(10))
        .eviction(hipfft_pool::Eviction::Lru)
        .batch_lend(lend)
        .build()
        .expect("valid config");
    hipfft_pool::PlanPool::new(cfg, rt.clone()).expect("pool")
}

/// Ends a batch of `n` executions on `stream` and waits until its work ran and the
/// completion thread has seen the batch's event fire.
fn a_done_batch(w: &Arc<Watched>, rt: &Arc<dyn Runtime>, pool: &hipfft_pool::PlanPool, stream: &Stream, n: i64) {
    let mut jobs = Vec::new();
    for i in 0..n {
        let lease = pool.acquire(&c2c(8 + 4 * i, 1)).unwrap();
        jobs.push(enqueue(rt, &lease, stream, i as u64));
        // SAFETY: the test's stream, live until the pool is gone.
        unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    }
    let seen = w.queries.load(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    for job in jobs {
        assert!(job.check(stream) <= 1e-5);
    }
    settled(w, seen);
}

/// Waits until the completion thread has queried an event since `seen` queries and then
/// polled for 50 ms more (it polls every millisecond or faster while it holds anything):
/// by then it has seen every event of work already done fire.
fn settled(w: &Watched, seen: u64) {
    wait_until("the completion thread queried the batch's event", || w.queries.load(Ordering::SeqCst) > seen);
    std::thread::sleep(Duration::from_millis(50));
}

/// Plans the pool could destroy now: everything idle is trimmed, and the sim counts what is
/// left alive (ground truth: leased plans cannot be destroyed).
fn alive_after_trim(w: &Watched, pool: &hipfft_pool::PlanPool) -> usize {
    pool.trim();
    w.sim.live_handles()
}

/// A pool whose done batches wait `lend` for their stream's thread, with one batch of four
/// executions done and lent back to its stream.
fn a_lent_batch(ceiling: usize, lend: Duration) -> (Arc<Watched>, Arc<dyn Runtime>, hipfft_pool::PlanPool, Stream) {
    let w = Watched::new(SimConfig::default());
    let rt: Arc<dyn Runtime> = w.clone();
    let pool = lending_pool(&rt, ceiling, lend);
    let stream = Stream::new(&rt).unwrap();
    a_done_batch(&w, &rt, &pool, &stream, 4);
    (w, rt, pool, stream)
}

#[test]
fn a_done_batch_is_released_by_the_next_add_on_its_stream_not_by_the_completion_thread() {
    // A lend far longer than the test: only the stream's thread can release the batch.
    let (w, _rt, pool, stream) = a_lent_batch(8, Duration::from_secs(600));
    assert_eq!(alive_after_trim(&w, &pool), 4, "done, but lent to the stream: still leased");
    let lease = pool.acquire(&c2c(100, 1)).unwrap();
    // SAFETY: the test's stream, live until the pool is gone.
    unsafe { lease.release_in_batch(stream.raw()) }.unwrap();
    assert_eq!(alive_after_trim(&w, &pool), 1, "the add released the done batch; its own lease waits in the open batch");
    // An end claims too: the second batch comes back and the next end on the stream takes it.
    let seen = w.queries.load(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    settled(&w, seen);
    assert_eq!(alive_after_trim(&w, &pool), 1, "lent again");
    // SAFETY: as above; nothing is open, but the end takes what came back.
    unsafe { pool.end_batch(stream.raw()) }.unwrap();
    assert_eq!(alive_after_trim(&w, &pool), 0);
    assert!(w.violations().is_empty(), "{:#?}", w.violations());
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn a_done_batch_nobody_claims_is_released_once_its_lend_ends() {
    let started = Instant::now();
    let (w, _rt, pool, _stream) = a_lent_batch(8, Duration::from_millis(300));
    assert_eq!(alive_after_trim(&w, &pool), 4, "lent to the stream for 300 ms");
    wait_until("the lend ended", || alive_after_trim(&w, &pool) == 0);
    assert!(started.elapsed() >= Duration::from_millis(300), "released by the completion thread at the lend's end, not before");
}

#[test]
fn a_miss_waiting_at_the_ceiling_does_not_wait_for_a_lent_batch() {
    let (w, _rt, pool, _stream) = a_lent_batch(4, Duration::from_secs(600));
    assert_eq!(alive_after_trim(&w, &pool), 4, "the ceiling is full of lent plans");
    // A new key needs a slot: the miss waits at the ceiling, and its wait makes the lent
    // leases due at once, not in ten minutes.
    let started = Instant::now();
    let lease = pool.acquire(&c2c(100, 1)).expect("a slot freed by the completion thread");
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    drop(lease);
    assert!(w.sim.violations().is_empty(), "the sim saw misuse: {:#?}", w.sim.violations());
}

#[test]
fn shutdown_releases_a_lent_batch_without_waiting_for_its_lend() {
    let (w, _rt, pool, _stream) = a_lent_batch(8, Duration::from_secs(600));
    assert_eq!(w.sim.live_handles(), 4);
    let started = Instant::now();
    let report = pool.shutdown();
    assert!(!report.timed_out && report.still_leased.is_empty(), "{report:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(w.sim.live_handles(), 0, "every plan destroyed");
}
