//! The completion thread's polling, watched at the runtime boundary: events on one stream are
//! queried oldest first (stream order makes a later one pointless while an earlier one has
//! not fired), and a stalled stream does not hold up releases on another.

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
        let mut o = self.order.lock().unwrap();
        let seq = o.next;
        o.next += 1;
        o.recorded.insert(event.0, (stream.0, seq));
        o.outstanding.entry(stream.0).or_default().push_back(seq);
        Ok(())
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
