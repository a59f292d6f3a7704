//! Loom model tests of the pool layer, on the real code (`PlanPool`, `Lease`, `PlanEntry`,
//! `LiveCeiling`, `Flight`, the destroyer and completion threads), compiled against loom's
//! primitives through [`crate::sync`].
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test --release --lib pool::tests`
//!
//! - `loom_pool.rs`: misses at a full ceiling (single flight, no slot leak, the waiter's
//!   wake-up), two misses taking turns at one slot by swapping its idle plan, a failing
//!   creation, shutdown against another thread's idle destroy;
//! - `loom_lease.rs`: eviction racing the last release of a leased plan, releases on two
//!   stripes (of a pool's plan, and of a lease state alone), and a front-cache hit on it;
//!   shutdown racing the last release; `release_after` completion racing shutdown;
//! - `loom_ceiling.rs`, `loom_flight.rs`, `loom_batch.rs`: the primitives on their own
//!   (`loom_batch.rs`: adds to a batch racing its end).
//!
//! The runtime is [`ModelRuntime`]: no threads, plans and events are counters, and the
//! "GPU" finishes its work when a test says so. Every test asserts on its ground truth
//! (live plans, destroys, live events, plans in use), never on the pool's bookkeeping alone.
//!
//! Loom's `Condvar::wait_timeout` never times out and its `recv_timeout` returns at once, so
//! the pools here have deadlines of an hour (never reached): a lost wake-up is a deadlock,
//! which loom reports. Time must not decide a branch under loom (its replays would diverge).
//!
//! [`Regression`] switches bring back, in the real code, an ordering the pool had before a
//! fix; the `*_is_caught` tests show that loom fails it.

mod loom_batch;
mod loom_ceiling;
mod loom_flight;
mod loom_lease;
mod loom_pool;

use std::cell::Cell;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::Duration;

use loom::sync::Mutex as LoomMutex;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::desc::{PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::pool::ceiling::LiveCeiling;
use crate::pool::config::PoolConfig;
use crate::pool::plan_pool::PlanPool;
use crate::runtime::boundary::{CreatedPlan, PlanOptions, RawEvent, RawPlan, RawStream, Runtime};
use crate::runtime::codes::RuntimeCode;
use crate::runtime::decorator::Decorator;
use crate::runtime::sim::{SimConfig, SimRuntime};

/// An ordering the pool had before a fix, brought back in the real code for one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Regression {
    /// A miss at the ceiling waits without registering before its last look (defect 1).
    WaitWithoutRegistering,
    /// The destroyer leaves the retired set before the destroy (defect 2).
    LeaveRetiredBeforeDestroy,
    /// Shutdown's wait does not count other threads' idle destroys (defect 6).
    ShutdownIgnoresIdleDestroys,
    /// The evictor holds no count of a plan's open stripes while it marks them.
    EvictorHoldsNoStripe,
}

thread_local! {
    // Loom runs every model thread on the test's own OS thread, so this is per test.
    static REGRESSION: Cell<Option<Regression>> = const { Cell::new(None) };
}

/// Whether the running test brought `r` back.
pub(crate) fn regressed(r: Regression) -> bool {
    REGRESSION.with(|c| c.get() == Some(r))
}

/// Runs `test` with `r` brought back and returns its panic message; fails if it passed.
fn caught(r: Regression, test: fn()) -> String {
    REGRESSION.with(|c| c.set(Some(r)));
    let out = catch_unwind(AssertUnwindSafe(test));
    REGRESSION.with(|c| c.set(None));
    let payload = out.expect_err("loom found no failure in the old ordering");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Runs `f` under loom, at `LOOM_MAX_PREEMPTIONS` (3 when unset).
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(usize::MAX, f)
}

/// [`model`], at no more than `most` preemptions: for the three-party tests whose search at
/// 3 takes longer than CI can give (see docs/reliability.md).
fn model_bounded(most: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(3).min(most));
    b.check(f);
}

/// Spawns a model thread with a stack the pool's calls fit in (loom's default is 32 KiB).
fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> loom::thread::JoinHandle<T> {
    loom::thread::Builder::new().stack_size(1 << 20).spawn(f).expect("spawn a model thread")
}

/// Never reached under loom: deadlines must not decide a branch.
const HOUR: Duration = Duration::from_secs(3600);

/// A pool of `capacity` plans over `rt`, counting against a ceiling of its own.
fn pool(rt: &Arc<ModelRuntime>, capacity: usize) -> PlanPool {
    let config = PoolConfig::builder()
        .capacity(capacity)
        .shared_ceiling(LiveCeiling::new(rt.limit))
        .acquire_timeout(HOUR)
        .shutdown_timeout(HOUR)
        .watchdog_threshold(HOUR)
        // Cost eviction ranks by measured (wall-clock) creation times: a branch loom must
        // not see decided by the clock.
        .eviction(crate::pool::eviction::Eviction::Lru)
        .build()
        .expect("a valid configuration");
    PlanPool::new(config, rt.clone()).expect("a pool")
}

/// A descriptor per key.
fn key(n: i64) -> PlanDesc {
    PlanDesc::new(TransformType::C2C, &[n], 1)
}

/// The stream `release_after` records on (an in-order one: above the special handles).
const STREAM: RawStream = RawStream(7);

/// What a creation fails with when [`ModelRuntime::failing`] is set.
fn alloc_failed() -> Error {
    Error::Runtime { call: "hipfftMakePlanMany64", code: RuntimeCode::hipfft(2) }
}

/// A deterministic runtime: no threads, plans and events are counters, and the GPU work
/// recorded on a stream completes when the model calls [`ModelRuntime::finish_gpu_work`].
/// It panics (failing the model) on what a real library would suffer from: more live plans
/// than the ceiling, a destroy of a plan that is not live, of a plan a test thread is still
/// using, or of a plan whose GPU work is still pending.
pub(crate) struct ModelRuntime {
    /// The ceiling the pool is given; the runtime's own count must never pass it.
    limit: usize,
    failing: bool,
    next: StdAtomicUsize,
    /// Live plans. A loom mutex: loom then orders every read of it against the creates and
    /// destroys (a std count would be invisible to its search, which would not look for a
    /// schedule in which a test reads it too early).
    live: LoomMutex<HashSet<RawPlan>>,
    creations: StdAtomicUsize,
    destroys: StdAtomicUsize,
    /// Plans a test thread holds a lease on and may execute (set by the test).
    /// Plans test threads use now, once per user (two threads may use one plan).
    in_use: StdMutex<Vec<RawPlan>>,
    /// Plans with GPU work enqueued (set by the test, which stands for the execution).
    pending: StdMutex<HashSet<RawPlan>>,
    gpu_done: AtomicBool,
    live_events: StdAtomicUsize,
    /// Bumped as a create or destroy starts: a loom operation, so that loom may run other
    /// threads while the call is in progress (the ground truth above is std's, invisible to it).
    calls: AtomicUsize,
}

impl ModelRuntime {
    fn new(limit: usize) -> Arc<Self> {
        Arc::new(ModelRuntime {
            limit,
            failing: false,
            next: StdAtomicUsize::new(0x100),
            live: LoomMutex::new(HashSet::new()),
            creations: StdAtomicUsize::new(0),
            destroys: StdAtomicUsize::new(0),
            in_use: StdMutex::new(Vec::new()),
            pending: StdMutex::new(HashSet::new()),
            gpu_done: AtomicBool::new(false),
            live_events: StdAtomicUsize::new(0),
            calls: AtomicUsize::new(0),
        })
    }

    /// A runtime whose every creation fails with `HIPFFT_ALLOC_FAILED`.
    fn failing(limit: usize) -> Arc<Self> {
        let mut rt = Arc::into_inner(Self::new(limit)).expect("fresh");
        rt.failing = true;
        Arc::new(rt)
    }

    /// Plans alive in the runtime now.
    fn live(&self) -> usize {
        self.live.lock().unwrap().len()
    }

    fn creations(&self) -> usize {
        self.creations.load(StdOrdering::SeqCst)
    }

    fn destroys(&self) -> usize {
        self.destroys.load(StdOrdering::SeqCst)
    }

    fn live_events(&self) -> usize {
        self.live_events.load(StdOrdering::SeqCst)
    }

    /// A test thread starts using `plan` (it holds a lease on it).
    fn using(&self, plan: RawPlan) {
        assert!(self.live.lock().unwrap().contains(&plan), "a lease on a plan that is not live");
        self.in_use.lock().unwrap().push(plan);
    }

    /// A test thread stops using `plan` (it is about to release its lease).
    fn done_with(&self, plan: RawPlan) {
        let mut in_use = self.in_use.lock().unwrap();
        let i = in_use.iter().position(|p| *p == plan).expect("done with a plan this test was not using");
        in_use.swap_remove(i);
    }

    /// GPU work under `plan` is enqueued (what an execution would do).
    fn enqueue_work(&self, plan: RawPlan) {
        self.pending.lock().unwrap().insert(plan);
    }

    /// The GPU finishes everything enqueued so far.
    fn finish_gpu_work(&self) {
        self.gpu_done.store(true, Ordering::SeqCst);
    }
}

/// The sim answers only the calls the model does not make itself (none on these paths).
fn sim() -> &'static SimRuntime {
    static SIM: OnceLock<SimRuntime> = OnceLock::new();
    SIM.get_or_init(|| SimRuntime::new(SimConfig::default()))
}

// SAFETY: the model hands out only handles it made and checks every use of them.
unsafe impl Decorator for ModelRuntime {
    fn inner(&self) -> &dyn Runtime {
        sim()
    }

    fn current_device(&self) -> Result<i32> {
        Ok(0)
    }

    fn set_device(&self, _device: i32) -> Result<()> {
        Ok(())
    }

    fn plan_create(&self, _desc: &PlanDesc, _options: PlanOptions) -> Result<CreatedPlan> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.failing {
            return Err(alloc_failed());
        }
        let plan = RawPlan(self.next.fetch_add(1, StdOrdering::SeqCst));
        let mut live = self.live.lock().unwrap();
        live.insert(plan);
        assert!(live.len() <= self.limit, "{} plans live in the runtime, ceiling {}", live.len(), self.limit);
        self.creations.fetch_add(1, StdOrdering::SeqCst);
        Ok(CreatedPlan { plan, work_size: 0 })
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        assert!(!self.in_use.lock().unwrap().contains(&plan), "plan {plan:?} destroyed while a lease holder uses it");
        if self.pending.lock().unwrap().contains(&plan) {
            assert!(self.gpu_done.load(Ordering::SeqCst), "plan {plan:?} destroyed under pending GPU work");
        }
        assert!(self.live.lock().unwrap().remove(&plan), "plan {plan:?} destroyed twice, or never made");
        self.destroys.fetch_add(1, StdOrdering::SeqCst);
        Ok(())
    }

    fn event_create(&self) -> Result<RawEvent> {
        self.live_events.fetch_add(1, StdOrdering::SeqCst);
        Ok(RawEvent(self.next.fetch_add(1, StdOrdering::SeqCst)))
    }

    unsafe fn event_record(&self, _event: RawEvent, _stream: RawStream) -> Result<()> {
        Ok(())
    }

    /// Not done the first time: the GPU finishes right after it was first asked (or when
    /// the test says so). One round of polling, not a spin loop for loom to unroll.
    unsafe fn event_query(&self, _event: RawEvent) -> Result<bool> {
        Ok(self.gpu_done.swap(true, Ordering::SeqCst))
    }

    unsafe fn event_synchronize(&self, _event: RawEvent) -> Result<()> {
        Ok(())
    }

    unsafe fn event_destroy(&self, _event: RawEvent) -> Result<()> {
        self.live_events.fetch_sub(1, StdOrdering::SeqCst);
        Ok(())
    }
}
