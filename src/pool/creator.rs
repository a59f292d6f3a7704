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

use crossbeam_channel::{Receiver, Sender, unbounded};

use crate::desc::PlanDesc;
use crate::error::{Error, Result};
use crate::observe::watchdog::CallKind;
use crate::sync::{Condvar, Mutex, lock};

/// Most creation workers a pool runs at once. A worker stuck in a call that never returns
/// keeps its place; the device it is stuck on is refused new misses meanwhile.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const MAX_WORKERS: usize = 4;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The pool's creation workers.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Creators {
    tx: Sender<Job>,
    rx: Receiver<Job>,
    /// Workers started, and those waiting for a job.
    started: AtomicUsize,
    idle: Arc<AtomicUsize>,
}

impl Creators {
    pub(crate) fn new() -> Self {
        let (tx, rx) = unbounded();
        Creators { tx, rx, started: AtomicUsize::new(0), idle: Arc::new(AtomicUsize::new(0)) }
    }

    /// Runs `job` on a worker. A panic inside it is caught there (the job must report its
    /// own outcome through what it captured, see [`Handoff`]).
    pub(crate) fn submit(&self, job: impl FnOnce() + Send + 'static) -> Result<()> {
        // Under loom the creation runs on the calling thread: the model's runtime never
        // blocks, and loom checks what follows the hand-off, not a worker pool of OS threads.
        #[cfg(loom)]
        {
            job();
            return Ok(());
        }
        #[cfg(not(loom))]
        self.submit_to_worker(job)
    }

    /// Runs `run(value)` on a worker, or gives `value` back when none can run it (no worker could be
    /// started; under loom, where there are no workers). For the destroy that frees the slot
    /// a miss at the ceiling waits for: on a worker, which then (polling) takes the miss's
    /// creation right after it, destroy and create run in turn on one thread with a hot core,
    /// as in the raw loop (see `sync::thread::poll_budget`).
    pub(crate) fn try_submit<T: Send + 'static>(&self, value: T, run: fn(T)) -> std::result::Result<(), T> {
        #[cfg(loom)]
        {
            let _ = run;
            return Err(value);
        }
        #[cfg(not(loom))]
        {
            if self.idle.load(Ordering::SeqCst) == 0 && self.spawn_worker().is_err() && self.started.load(Ordering::SeqCst) == 0 {
                return Err(value);
            }
            // Cannot fail: `self.rx` keeps the channel open as long as `self` lives.
            let sent = self.tx.send(Box::new(move || run(value)));
            debug_assert!(sent.is_ok());
            Ok(())
        }
    }

    #[cfg(not(loom))]
    fn submit_to_worker(&self, job: impl FnOnce() + Send + 'static) -> Result<()> {
        if self.idle.load(Ordering::SeqCst) == 0 {
            self.spawn_worker()?;
        }
        self.tx.send(Box::new(job)).map_err(|_| Error::ShutDown)
    }

    #[cfg_attr(loom, allow(dead_code))]
    fn spawn_worker(&self) -> Result<()> {
        let n = self.started.fetch_add(1, Ordering::SeqCst);
        if n >= MAX_WORKERS {
            // Enough workers: the job queues for the next free one.
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Ok(());
        }
        let rx = self.rx.clone();
        let idle = self.idle.clone();
        std::thread::Builder::new()
            .name(format!("hipfft-pool-create-{n}"))
            .spawn(move || {
                idle.fetch_add(1, Ordering::SeqCst);
                // Ends when the pool (every sender) is gone. Polls before it parks: the
                // next miss of a thrashing workload finds this thread awake and its core hot.
                let next = |rx: &Receiver<Job>| {
                    let mut got = None;
                    crate::sync::thread::poll_until(None, || match rx.try_recv() {
                        Ok(j) => {
                            got = Some(j);
                            true
                        }
                        Err(crossbeam_channel::TryRecvError::Empty) => false,
                        Err(crossbeam_channel::TryRecvError::Disconnected) => true,
                    });
                    match got {
                        Some(j) => Ok(j),
                        None => rx.recv(),
                    }
                };
                while let Ok(job) = next(&rx) {
                    idle.fetch_sub(1, Ordering::SeqCst);
                    if catch_unwind(AssertUnwindSafe(job)).is_err() {
                        tracing::error!("a plan-creation job panicked outside its own guard");
                    }
                    idle.fetch_add(1, Ordering::SeqCst);
                }
            })
            .map(|_| ())
            .map_err(|e| {
                self.started.fetch_sub(1, Ordering::SeqCst);
                Error::Internal(format!("cannot start a plan-creation worker: {e}"))
            })
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
    cond: Condvar,
    /// Set once a value was delivered, so that the waiter can poll before it parks.
    delivered: AtomicBool,
}

impl<T> Handoff<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Handoff { state: Mutex::new(HandoffState::Waiting), cond: Condvar::new(), delivered: AtomicBool::new(false) })
    }

    /// The worker's side: hands `value` over, or gives it back when the waiter gave up.
    pub(crate) fn deliver(&self, value: T) -> Option<T> {
        let mut s = lock(&self.state);
        match *s {
            HandoffState::Waiting => {
                *s = HandoffState::Done(value);
                self.delivered.store(true, Ordering::Release);
                self.cond.notify_all();
                None
            }
            _ => Some(value),
        }
    }

    /// The waiter's side: the value, or `None` when the deadline passed first (the worker
    /// then keeps it).
    pub(crate) fn wait(&self, deadline: Instant) -> Option<T> {
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
                *s = HandoffState::Abandoned;
                return None;
            }
            s = match self.cond.wait_timeout(s, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
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
        assert_eq!(h.deliver(7), Some(7), "the worker gets its value back to clean up");
    }

    #[test]
    fn a_delivered_value_reaches_the_waiter() {
        let h = Handoff::<u32>::new();
        let h2 = h.clone();
        let c = Creators::new();
        c.submit(move || assert_eq!(h2.deliver(5), None)).unwrap();
        assert_eq!(h.wait(Instant::now() + Duration::from_secs(10)), Some(5));
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
