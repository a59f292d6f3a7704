//! Plan creation off the calling thread, so that a miss returns within its timeout whatever
//! the runtime does.
//!
//! A miss hands `hipfftCreate` + `hipfftMakePlanMany64` to a worker and waits for the result
//! with its deadline ([`Handoff`]). A creation that does not return in time is *abandoned*:
//! the miss fails, and the worker, when (if ever) the call returns, cleans up after it
//! (destroys the plan it made, gives the slot back). Until then the call stays registered on
//! its device ([`RuntimeCalls`]), which marks the device stuck: later misses on it fail at
//! once, naming the call, the plan and how long it has been running.
//!
//! Workers are spawned on demand, up to [`MAX_WORKERS`] per pool, and end with the pool.
//! A panic in a job (a runtime that panics) is caught on the worker and becomes an error.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use crate::desc::PlanDesc;
use crate::error::{Error, Result};
use crate::observe::watchdog::CallKind;
use crate::sync::{Condvar, Mutex, lock};

/// Most creation workers a pool runs at once. A worker stuck in a call that never returns
/// keeps its place; the device it is stuck on is refused new misses meanwhile.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const MAX_WORKERS: usize = 4;

/// How long a creation may sit queued behind busy workers before its miss starts another
/// one (up to [`MAX_WORKERS`]): a worker finishing its job takes it sooner than a new thread
/// could start, and a new thread's cold core makes cuFFT's calls slower.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const KICK_AFTER: Duration = Duration::from_micros(200);

type Job = Box<dyn FnOnce(&Rejoin<'_>) + Send + 'static>;

/// Given to a job so that it can put its worker back at the head of the idle workers before
/// it hands its result over ([`Rejoin::now`]). Without it, a miss that follows at once (a
/// thrashing workload) found the worker still finishing and went to another idle one: each
/// plan was then destroyed on another thread than the one that made it, and each creation
/// ran on a core the last one had not warmed (raw cuFFT calls split that way on the H200:
/// the destroy 2.9x and the create 1.18x their cost on one thread; docs/performance.md).
pub(crate) struct Rejoin<'a> {
    #[cfg_attr(loom, allow(dead_code))]
    at: Option<(&'a parking_lot::Mutex<Dispatch>, &'a crossbeam_channel::Sender<Option<Job>>)>,
    done: std::cell::Cell<bool>,
}

impl Rejoin<'_> {
    /// For a job run outside a worker (under loom): rejoins nothing.
    #[cfg_attr(not(loom), allow(dead_code))]
    fn none() -> Self {
        Rejoin { at: None, done: std::cell::Cell::new(false) }
    }

    /// Lists the worker as idle now, first in line for the next job, unless a job is
    /// queued (the worker takes that one when this job returns). The rest of this job
    /// must not block: a job sent meanwhile waits in the worker's channel until it returns.
    pub(crate) fn now(&self) {
        let Some((dispatch, tx)) = self.at else { return };
        if self.done.get() {
            return;
        }
        let mut d = dispatch.lock();
        if d.queued.is_empty() && !d.closed {
            d.idle.push(tx.clone());
            self.done.set(true);
        }
    }
}

/// Which worker runs a job. Idle workers wait on channels of their own, on a stack: a job
/// goes to the one that went idle last, whose core is hot and which is likely still
/// polling, so a miss's destroy and creation run on one thread, one after the other, as
/// an inline cache's would (a job handed to whichever parked thread woke first made the
/// calls slower than inline: docs/history/2026-12.md). Jobs that find no idle worker
/// queue here, and a worker takes them before it goes idle; both under one lock, so no job
/// is ever left queued while a worker waits.
#[derive(Default)]
#[cfg_attr(loom, allow(dead_code))]
struct Dispatch {
    idle: Vec<crossbeam_channel::Sender<Option<Job>>>,
    queued: VecDeque<Job>,
    closed: bool,
}

#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Creators {
    dispatch: Arc<parking_lot::Mutex<Dispatch>>,
    started: Arc<AtomicUsize>,
}

impl Creators {
    pub(crate) fn new() -> Self {
        Creators { dispatch: Arc::default(), started: Arc::new(AtomicUsize::new(0)) }
    }

    /// Runs `job` on a worker: the last one to go idle, else the next to finish its job
    /// (see [`Creators::kick`]); the first job starts the first worker. Fails only when no
    /// worker exists and none can be started.
    pub(crate) fn submit(&self, job: impl FnOnce(&Rejoin<'_>) + Send + 'static) -> Result<()> {
        // Under loom the creation runs on the calling thread: the model's runtime never
        // blocks, and loom checks what follows the hand-off, not a worker pool of OS threads.
        #[cfg(loom)]
        {
            job(&Rejoin::none());
            return Ok(());
        }
        #[cfg(not(loom))]
        self.dispatch(Box::new(job)).map_err(|(e, _)| e)
    }

    /// Runs `run(value)` on a worker, queued behind busy ones like a creation (a destroy;
    /// the worker that just delivered a creation picks it up before it goes idle, and the
    /// next creation then queues behind it, on the same thread). A caller that waits for it
    /// calls [`Creators::kick`] if it is still queued after [`KICK_AFTER`]. Gives `value`
    /// back when no worker exists and none can start (the caller runs it elsewhere). Under
    /// loom, always gives it back.
    pub(crate) fn try_submit_queued<T: Send + 'static>(&self, value: T, run: fn(T)) -> std::result::Result<(), T> {
        #[cfg(loom)]
        {
            let _ = run;
            return Err(value);
        }
        #[cfg(not(loom))]
        {
            let slot = Arc::new(parking_lot::Mutex::new(Some(value)));
            let taken = slot.clone();
            let job: Job = Box::new(move |_: &Rejoin<'_>| {
                if let Some(v) = taken.lock().take() {
                    run(v)
                }
            });
            match self.dispatch(job) {
                Ok(()) => Ok(()),
                // The job never ran: the value is still in its slot.
                Err(_) => Err(slot.lock().take().expect("an undispatched job keeps its value")),
            }
        }
    }

    /// A creation still queued after [`KICK_AFTER`]: starts another worker for the queue if
    /// every worker is busy and fewer than [`MAX_WORKERS`] run.
    pub(crate) fn kick(&self) {
        #[cfg(not(loom))]
        if !self.dispatch.lock().queued.is_empty() {
            let _ = self.spawn_worker();
        }
    }

    #[cfg(not(loom))]
    fn dispatch(&self, mut job: Job) -> std::result::Result<(), (Error, Job)> {
        let mut d = self.dispatch.lock();
        if d.closed {
            return Err((Error::ShutDown, job));
        }
        if self.started.load(Ordering::SeqCst) == 0 && d.idle.is_empty() {
            drop(d);
            if let Err(e) = self.spawn_worker() {
                return Err((e, job));
            }
            d = self.dispatch.lock();
        }
        loop {
            let Some(worker) = d.idle.pop() else {
                // The job waits for the next worker to finish, or for a kick.
                d.queued.push_back(job);
                return Ok(());
            };
            // An idle worker's channel is empty (it holds one job at most); a worker that
            // ended left it disconnected, and the job goes to the next.
            match worker.try_send(Some(job)) {
                Ok(()) => return Ok(()),
                Err(e) => job = e.into_inner().expect("the job just sent"),
            }
        }
    }

    #[cfg_attr(loom, allow(dead_code))]
    fn spawn_worker(&self) -> Result<()> {
        let n = self.started.fetch_add(1, Ordering::SeqCst);
        if n >= MAX_WORKERS {
            // Enough workers: the job queues for the next free one.
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Ok(());
        }
        let dispatch = self.dispatch.clone();
        let started = self.started.clone();
        std::thread::Builder::new()
            .name(format!("hipfft-pool-create-{n}"))
            .spawn(move || {
                let (tx, rx) = crossbeam_channel::bounded::<Option<Job>>(1);
                // Whether the last job listed this worker as idle already (`Rejoin::now`).
                let mut rejoined = false;
                loop {
                    let job = {
                        let mut d = dispatch.lock();
                        match d.queued.pop_front() {
                            // Listed as idle, the worker must not take queued jobs too: a
                            // job sent to its channel meanwhile would wait behind them.
                            Some(j) if !rejoined => j,
                            None if d.closed && !rejoined => break,
                            queued => {
                                if let Some(j) = queued {
                                    // Only `Rejoin::now` lists a worker with jobs queued
                                    // after it looked: back to the queue's head.
                                    d.queued.push_front(j);
                                }
                                if !std::mem::take(&mut rejoined) {
                                    d.idle.push(tx.clone());
                                }
                                drop(d);
                                // Polls before it parks: the next miss of a thrashing
                                // workload finds this thread awake and its core hot.
                                let mut got = None;
                                crate::sync::thread::poll_until(None, || match rx.try_recv() {
                                    Ok(j) => {
                                        got = Some(j);
                                        true
                                    }
                                    Err(_) => false,
                                });
                                match got.map_or_else(|| rx.recv().ok(), Some) {
                                    Some(Some(j)) => j,
                                    // Told to stop (the pool is gone), or no sender left.
                                    _ => break,
                                }
                            }
                        }
                    };
                    let rejoin = Rejoin { at: Some((&dispatch, &tx)), done: std::cell::Cell::new(false) };
                    if catch_unwind(AssertUnwindSafe(|| job(&rejoin))).is_err() {
                        tracing::error!("a plan-creation job panicked outside its own guard");
                    }
                    rejoined = rejoin.done.get();
                }
                started.fetch_sub(1, Ordering::SeqCst);
            })
            .map(|_| ())
            .map_err(|e| {
                self.started.fetch_sub(1, Ordering::SeqCst);
                Error::Internal(format!("cannot start a plan-creation worker: {e}"))
            })
    }
}

/// The workers end with the pool: idle ones are told to stop, busy ones stop after their
/// job (a job that never returns keeps its thread, as before).
impl Drop for Creators {
    fn drop(&mut self) {
        let idle = {
            let mut d = self.dispatch.lock();
            d.closed = true;
            std::mem::take(&mut d.idle)
        };
        for w in idle {
            let _ = w.try_send(None);
        }
    }
}


enum HandoffState<T> {
    Waiting,
    Done(T),
    /// The waiter gave up; the worker keeps the result and cleans up.
    Abandoned,
    /// Taken by the waiter.
    Taken,
}

/// One result passed from a worker to the miss waiting for it, which may give up first.
pub(crate) struct Handoff<T> {
    state: Mutex<HandoffState<T>>,
    /// Whether the waiter is asleep on `cond` (under `state`'s lock): `deliver` wakes only
    /// then, since a waiter that polls needs no system call to see the value.
    parked: AtomicBool,
    cond: Condvar,
    /// Set once a value was delivered, so that the waiter can poll before it parks.
    delivered: AtomicBool,
}

impl<T> Handoff<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Handoff {
            state: Mutex::new(HandoffState::Waiting),
            parked: AtomicBool::new(false),
            cond: Condvar::new(),
            delivered: AtomicBool::new(false),
        })
    }

    /// The worker's side: hands `value` over, or gives it back when the waiter gave up.
    /// Runs `taken` first when the waiter is still there to take the value (under the lock
    /// it would give up under, so it cannot give up in between):
    /// the worker rejoins the idle ones there ([`Rejoin::now`]) before the waiter, woken,
    /// can send it the next job; a worker whose waiter gave up has the cleanup still to do
    /// and does not rejoin early.
    pub(crate) fn deliver_after(&self, value: T, taken: impl FnOnce()) -> Option<T> {
        let mut s = lock(&self.state);
        match *s {
            HandoffState::Waiting => {
                taken();
                *s = HandoffState::Done(value);
                self.delivered.store(true, Ordering::Release);
                // Read under the lock the waiter sets it under.
                let parked = self.parked.load(Ordering::Relaxed);
                drop(s);
                if parked {
                    self.cond.notify_all();
                }
                None
            }
            _ => Some(value),
        }
    }

    /// The waiter's side: the value, or `None` when the deadline passed first (the worker
    /// then keeps it).
    pub(crate) fn wait(&self, deadline: Instant) -> Option<T> {
        self.wait_for(deadline, true)
    }

    /// Waits until `until` without giving the value up: `None` leaves it on its way, for a
    /// later [`Handoff::wait`].
    pub(crate) fn wait_until(&self, until: Instant) -> Option<T> {
        self.wait_for(until, false)
    }

    fn wait_for(&self, deadline: Instant, abandon: bool) -> Option<T> {
        // Poll before parking: a creation that returns within the poll budget hands over
        // without a wake-up. The state below is still read under the lock.
        crate::sync::thread::poll_until(Some(deadline), || self.delivered.load(Ordering::Acquire));
        let mut s = lock(&self.state);
        loop {
            if matches!(*s, HandoffState::Done(_)) {
                return match std::mem::replace(&mut *s, HandoffState::Taken) {
                    HandoffState::Done(v) => Some(v),
                    _ => unreachable!("checked above"),
                };
            }
            let now = Instant::now();
            if now >= deadline {
                if abandon {
                    *s = HandoffState::Abandoned;
                }
                return None;
            }
            // Set and cleared under the lock `deliver` reads it under.
            self.parked.store(true, Ordering::Relaxed);
            s = match self.cond.wait_timeout(s, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            self.parked.store(false, Ordering::Relaxed);
        }
    }
}

/// One runtime call in progress on a device.
struct RunningCall {
    id: u64,
    kind: CallKind,
    desc: PlanDesc,
    since: Instant,
}

/// The creates and destroys running on one device right now, so that a call that does not
/// return marks the device stuck. Registered on the slow paths only (never by an exec).
#[derive(Default)]
pub(crate) struct RuntimeCalls {
    calls: Mutex<Vec<RunningCall>>,
    next: AtomicUsize,
}

/// A call that has been running for longer than the caller's limit.
#[derive(Clone, Debug)]
pub(crate) struct StuckCall {
    pub kind: CallKind,
    pub desc: PlanDesc,
    pub running: Duration,
}

impl StuckCall {
    pub(crate) fn into_error(self, device: i32) -> Error {
        Error::DeviceStuck {
            device,
            call: self.kind.api_name(),
            desc: self.desc.to_string(),
            running: self.running,
        }
    }
}

/// Unregisters its call when dropped.
pub(crate) struct CallGuard<'a> {
    calls: &'a RuntimeCalls,
    id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        lock(&self.calls.calls).retain(|c| c.id != self.id);
    }
}

impl RuntimeCalls {
    /// Registers a call until the guard is dropped.
    pub(crate) fn enter(&self, kind: CallKind, desc: &PlanDesc) -> CallGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        lock(&self.calls).push(RunningCall { id, kind, desc: *desc, since: Instant::now() });
        CallGuard { calls: self, id }
    }

    /// The oldest call running for at least `limit`, if any.
    pub(crate) fn stuck(&self, limit: Duration) -> Option<StuckCall> {
        let calls = lock(&self.calls);
        let oldest = calls.iter().min_by_key(|c| c.since)?;
        let running = oldest.since.elapsed();
        (running >= limit).then_some(StuckCall { kind: oldest.kind, desc: oldest.desc, running })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_that_gave_up_leaves_the_value_to_the_worker() {
        let h = Handoff::<u32>::new();
        assert_eq!(h.wait(Instant::now()), None);
        assert_eq!(h.deliver_after(7, || ()), Some(7), "the worker gets its value back to clean up");
    }

    #[test]
    fn a_delivered_value_reaches_the_waiter() {
        let h = Handoff::<u32>::new();
        let h2 = h.clone();
        let c = Creators::new();
        c.submit(move |_| assert_eq!(h2.deliver_after(5, || ()), None)).unwrap();
        assert_eq!(h.wait(Instant::now() + Duration::from_secs(10)), Some(5));
    }

    fn on_worker(c: &Creators) -> String {
        let (tx, rx) = crossbeam_channel::bounded(1);
        c.submit(move |_| tx.send(std::thread::current().name().unwrap_or("?").to_string()).unwrap()).unwrap();
        rx.recv_timeout(Duration::from_secs(10)).expect("the job ran")
    }

    /// Submits a job that keeps its worker busy until the returned sender is dropped, and
    /// returns once it runs.
    fn occupy_a_worker(c: &Creators) -> crossbeam_channel::Sender<()> {
        let (hold_tx, hold_rx) = crossbeam_channel::bounded::<()>(0);
        let (busy_tx, busy_rx) = crossbeam_channel::bounded(1);
        c.submit(move |_| {
            busy_tx.send(()).unwrap();
            let _ = hold_rx.recv();
        })
        .unwrap();
        busy_rx.recv_timeout(Duration::from_secs(10)).expect("the occupying job runs");
        hold_tx
    }

    #[test]
    fn jobs_go_to_the_worker_that_went_idle_last_and_queue_behind_busy_ones() {
        let c = Creators::new();
        let first = on_worker(&c);
        for _ in 0..20 {
            assert_eq!(on_worker(&c), first, "one worker serves jobs that come one at a time");
        }
        // The only worker is busy: a creation queues (no thread started for it) until a
        // kick starts another.
        let hold_tx = occupy_a_worker(&c);
        let (ran_tx, ran_rx) = crossbeam_channel::bounded(1);
        c.submit(move |_| ran_tx.send(std::thread::current().name().unwrap_or("?").to_string()).unwrap()).unwrap();
        assert!(ran_rx.recv_timeout(Duration::from_millis(50)).is_err(), "queued behind the busy worker");
        assert_eq!(c.started.load(Ordering::SeqCst), 1);
        c.kick();
        let second = ran_rx.recv_timeout(Duration::from_secs(10)).expect("the kick started a worker for it");
        assert_ne!(second, first);
        drop(hold_tx);
        let started = c.started.clone();
        drop(c);
        let deadline = Instant::now() + Duration::from_secs(10);
        while started.load(Ordering::SeqCst) != 0 {
            assert!(Instant::now() < deadline, "the workers end with their pool");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_destroy_queues_behind_a_busy_worker_until_a_kick_starts_another() {
        let c = Creators::new();
        let hold_tx = occupy_a_worker(&c);
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        assert!(c.try_submit_queued(done_tx, |tx| tx.send(()).unwrap()).is_ok());
        assert!(done_rx.recv_timeout(Duration::from_millis(50)).is_err(), "queued: no thread started for it");
        assert_eq!(c.started.load(Ordering::SeqCst), 1);
        c.kick();
        done_rx.recv_timeout(Duration::from_secs(10)).expect("the kick started a worker for it");
        drop(hold_tx);
    }

    #[test]
    fn a_destroy_then_a_creation_run_on_the_worker_that_just_finished() {
        // A miss at the ceiling: its destroy arrives while the worker is still in the job
        // that made the previous plan, and the creation after it. Both queue and run there.
        let c = Creators::new();
        let first = on_worker(&c);
        let hold_tx = occupy_a_worker(&c);
        let (tx, rx) = crossbeam_channel::unbounded();
        let tx2 = tx.clone();
        assert!(c.try_submit_queued(tx, |tx| tx.send(std::thread::current().name().unwrap_or("?").to_string()).unwrap()).is_ok());
        c.submit(move |_| tx2.send(std::thread::current().name().unwrap_or("?").to_string()).unwrap()).unwrap();
        drop(hold_tx);
        let (d, k) = (rx.recv_timeout(Duration::from_secs(10)).unwrap(), rx.recv_timeout(Duration::from_secs(10)).unwrap());
        assert_eq!((d.as_str(), k.as_str()), (first.as_str(), first.as_str()), "one thread, one after the other");
        assert_eq!(c.started.load(Ordering::SeqCst), 1, "no thread was started for them");
    }

    #[test]
    fn a_worker_that_rejoins_before_it_delivers_takes_the_next_job_over_an_idle_one() {
        // Two workers, both idle. A caller's jobs come one at a time, each sent as soon as
        // the last one's value arrives, while that job's worker is still finishing (its tail
        // takes a millisecond here). Rejoining before it delivers, one worker runs them all;
        // with a plain `deliver` the next job went to the other, idle, worker every time.
        let c = Creators::new();
        let hold_tx = occupy_a_worker(&c);
        let (ran_tx, ran_rx) = crossbeam_channel::bounded(1);
        c.submit(move |_| ran_tx.send(()).unwrap()).unwrap();
        c.kick();
        ran_rx.recv_timeout(Duration::from_secs(10)).expect("the kick started a second worker");
        drop(hold_tx);
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.dispatch.lock().idle.len() < 2 {
            assert!(Instant::now() < deadline, "both workers go idle");
            std::thread::sleep(Duration::from_millis(1));
        }
        let run = |rejoin_first: bool| -> Vec<String> {
            (0..8)
                .map(|i| {
                    let h = Handoff::<String>::new();
                    let h2 = h.clone();
                    c.submit(move |rejoin| {
                        let me = std::thread::current().name().unwrap_or("?").to_string();
                        let left = if rejoin_first { h2.deliver_after(me, || rejoin.now()) } else { h2.deliver_after(me, || ()) };
                        assert!(left.is_none(), "job {i}: the waiter took its value");
                        std::thread::sleep(Duration::from_millis(1));
                    })
                    .unwrap();
                    h.wait(Instant::now() + Duration::from_secs(10)).expect("each job delivers")
                })
                .collect()
        };
        let rejoined = run(true);
        assert!(rejoined.iter().all(|t| *t == rejoined[0]), "one worker ran every job: {rejoined:?}");
        let plain = run(false);
        assert!(plain.windows(2).any(|w| w[0] != w[1]), "without rejoining, the idle worker takes jobs: {plain:?}");
        assert_eq!(c.started.load(Ordering::SeqCst), 2, "no third worker");
    }

    #[test]
    fn a_call_running_past_the_limit_is_stuck() {
        let calls = RuntimeCalls::default();
        let desc = PlanDesc::new(crate::desc::TransformType::C2C, &[8], 1);
        assert!(calls.stuck(Duration::ZERO).is_none());
        let g = calls.enter(CallKind::Create, &desc);
        assert!(calls.stuck(Duration::from_secs(3600)).is_none());
        let s = calls.stuck(Duration::ZERO).expect("stuck at a zero limit");
        assert_eq!(s.desc, desc);
        drop(g);
        assert!(calls.stuck(Duration::ZERO).is_none(), "unregistered on drop");
    }
}
