//! The fault matrix: every fault the simulated runtime injects, against every operation of
//! the pool. For each cell, on a fresh simulated runtime and pool:
//! - the operation's outcome is the expected one, and an error names what failed with the
//!   hipFFT/HIP code by name and number (a failure the caller never sees, a failing
//!   destroy, must be in the log with its code, and counted);
//! - the invariants hold throughout (a monitor samples the sim's ground truth while the
//!   operation runs): live handles never above the ceiling, no misuse recorded (no destroy
//!   under a pending execution, no use of a destroyed plan), every leased plan alive;
//! - no call hangs: injected hangs are ended with `unblock_all` (after `set_faults` back to
//!   normal) and the operation must then return within seconds; while a runtime call hangs,
//!   the watchdog names it and hits on other keys are still served;
//! - the pool keeps serving other keys afterwards (a fresh plan, executed and checked
//!   against the reference FFT);
//! - nothing leaks: after shutdown no live handle, events or streams, and device memory back
//!   to its baseline; the pool's counts equal the runtime's.
//!
//! The cells run one at a time (the log capture is process-wide), one test per fault.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{CallKind, Error, Lease, PlanDesc, PlanPool, PoolConfig, RawStream, Runtime};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const CEILING: usize = 3;
const CAPACITY: usize = 2;
const EXEC_LATENCY: Duration = Duration::from_millis(3);
/// How long an operation may take once every hang is ended: past it, the cell failed with a hang.
const HANG: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    CreateFails,
    CreateBlocks,
    ExecFails,
    EventFails,
    DestroyFails,
    DestroyBlocks,
    MallocFails,
}

impl Fault {
    fn config(self) -> SimConfig {
        let mut c = base_config();
        match self {
            Fault::CreateFails => c.fail_create_every = Some(1),
            Fault::CreateBlocks => c.block_create = true,
            Fault::ExecFails => c.fail_exec_every = Some(1),
            Fault::EventFails => c.fail_event_every = Some(1),
            Fault::DestroyFails => c.fail_destroy_every = Some(1),
            Fault::DestroyBlocks => c.block_destroy = true,
            Fault::MallocFails => c.fail_malloc_every = Some(1),
        }
        c
    }

    fn blocks(self) -> bool {
        matches!(self, Fault::CreateBlocks | Fault::DestroyBlocks)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    AcquireMiss,
    AcquireHit,
    Exec,
    Release,
    ReleaseAfter,
    SetCapacity,
    Trim,
    Shutdown,
}

const OPS: [Op; 8] =
    [Op::AcquireMiss, Op::AcquireHit, Op::Exec, Op::Release, Op::ReleaseAfter, Op::SetCapacity, Op::Trim, Op::Shutdown];

impl Op {
    /// Whether the operation destroys a plan (itself, or through the destroyer thread).
    fn destroys(self) -> bool {
        !matches!(self, Op::AcquireHit | Op::Exec)
    }
}

fn base_config() -> SimConfig {
    SimConfig { exec_latency: EXEC_LATENCY, ..SimConfig::default() }
}

/// What a cell must see.
#[derive(Debug)]
enum Expect {
    Ok,
    /// The operation fails; its message holds every one of these.
    Err(&'static [&'static str]),
}

fn expect(fault: Fault, op: Op) -> Expect {
    match (fault, op) {
        (Fault::CreateFails, Op::AcquireMiss) => Expect::Err(&["hipfftMakePlanMany64 failed", "HIPFFT_ALLOC_FAILED (2)"]),
        (Fault::CreateBlocks, Op::AcquireMiss) => Expect::Err(&["hipfftMakePlanMany64 failed", "HIPFFT_INTERNAL_ERROR (5)"]),
        (Fault::ExecFails, Op::Exec) => Expect::Err(&["hipfftExecC2C failed", "HIPFFT_EXEC_FAILED (6)"]),
        (Fault::EventFails, Op::ReleaseAfter) => Expect::Err(&["hipEventRecord failed", "hipErrorInvalidValue (1)"]),
        _ => Expect::Ok,
    }
}

// ---- log capture: destroy failures are logged, not returned ----

fn log() -> &'static Mutex<Vec<String>> {
    static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LOG.get_or_init(|| {
        tracing::subscriber::set_global_default(Capture).expect("the only subscriber of this test binary");
        Mutex::new(Vec::new())
    })
}

struct Capture;

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut line = Line(format!("{}", e.metadata().level()));
        e.record(&mut line);
        lock(log()).push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn logged(needle: &str) -> bool {
    lock(log()).iter().any(|l| l.contains(needle))
}

/// Poison-tolerant: a failing assertion must not turn every later log line (written by
/// the pool's destroyer thread) into a second panic.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The log is process-wide while the test harness runs cells in parallel: a cell clears it
/// and reads it, so cells take turns.
fn one_cell_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    lock(&TURN)
}

// ---- one cell ----

/// Everything a cell runs on.
struct Bench {
    sim: Arc<SimRuntime>,
    rt: Arc<dyn Runtime>,
    pool: Arc<PlanPool>,
    stream: Stream,
    baseline_bytes: usize,
}

fn key(n: i64) -> PlanDesc {
    c2c(n, 2)
}

const A: i64 = 16;
const B: i64 = 24;
const C: i64 = 32;
const FRESH: i64 = 40;

impl Bench {
    fn new() -> Bench {
        let (sim, rt) = sim(base_config());
        let baseline_bytes = sim.allocated_bytes();
        let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
            .capacity(CAPACITY)
            .private_ceiling(CEILING)
            .acquire_timeout(Duration::from_millis(300))
            .shutdown_timeout(Duration::from_secs(5))
            .watchdog_threshold(Duration::from_millis(40))
            .build()
            .unwrap();
        let pool = Arc::new(PlanPool::new(cfg, rt.clone()).unwrap());
        let stream = Stream::new(&rt).unwrap();
        Bench { sim, rt, pool, stream, baseline_bytes }
    }

    /// Caches `n` and leaves it idle.
    fn cache(&self, n: i64) {
        drop(self.pool.acquire(&key(n)).unwrap());
    }

    fn check_invariants(&self, leases: &[&Lease], when: &str) {
        assert!(self.sim.live_handles() <= CEILING, "{when}: {} live > ceiling {CEILING}", self.sim.live_handles());
        assert!(self.sim.peak_live_handles() <= CEILING, "{when}: peak {} > ceiling", self.sim.peak_live_handles());
        for l in leases {
            assert!(self.sim.is_live(l.plan()), "{when}: a leased plan was destroyed");
        }
        let v = self.sim.violations();
        assert!(v.is_empty(), "{when}: misuse recorded: {v:?}");
    }
}

/// Samples the ground truth while an operation runs.
struct Monitor {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Monitor {
    fn start(sim: &Arc<SimRuntime>) -> Monitor {
        let (stop, max) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let thread = {
            let (sim, stop, max) = (sim.clone(), stop.clone(), max.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    max.fetch_max(sim.live_handles(), Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(50));
                }
            })
        };
        Monitor { stop, max, thread: Some(thread) }
    }

    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        self.max.load(Ordering::SeqCst)
    }
}

/// A transform's buffers, enqueued under a lease.
struct Job {
    desc: PlanDesc,
    input: Vec<u8>,
    d_in: DeviceBuffer,
    d_out: DeviceBuffer,
    work: Option<DeviceBuffer>,
}

fn buffers(rt: &Arc<dyn Runtime>, lease: &Lease, seed: u64) -> Job {
    let desc = *lease.desc();
    let ext = desc.validate().unwrap();
    let input = hipfft_pool::check::reference::random_input(&desc, seed);
    let d_in = DeviceBuffer::from_host(rt, &input).unwrap();
    let d_out = DeviceBuffer::new(rt, ext.output_bytes).unwrap();
    let work = (lease.work_size() > 0).then(|| DeviceBuffer::new(rt, lease.work_size()).unwrap());
    Job { desc, input, d_in, d_out, work }
}

impl Job {
    fn exec(&self, lease: &Lease, stream: RawStream) -> hipfft_pool::Result<()> {
        // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
        unsafe { lease.exec(stream, self.d_in.ptr(), self.d_out.ptr(), direction_for(&self.desc), self.work.as_ref().map(|w| w.ptr())) }
    }

    fn error(&self, stream: &Stream) -> f64 {
        stream.synchronize().unwrap();
        let got = self.d_out.to_host().unwrap();
        let want = hipfft_pool::check::reference::expected_output(&self.desc, direction_for(&self.desc), &self.input);
        hipfft_pool::check::reference::rel_l2_error(&hipfft_pool::check::reference::gather_output(&self.desc, &got), &want)
    }
}

/// What the operation returned: its error's message, if any.
type Outcome = Result<(), String>;

/// The state a cell's operation acts on, prepared before the fault is injected.
struct Prepared {
    /// Leases the operation takes over (released by it, or by the teardown).
    leases: Vec<Lease>,
    jobs: Vec<Job>,
}

fn prepare(b: &Bench, op: Op) -> Prepared {
    let mut p = Prepared { leases: Vec::new(), jobs: Vec::new() };
    match op {
        // A and B cached: the miss on C fits under the ceiling, then evicts A (idle) for
        // the capacity and destroys it itself.
        Op::AcquireMiss | Op::SetCapacity | Op::Trim => {
            b.cache(A);
            b.cache(B);
        }
        Op::AcquireHit => b.cache(A),
        Op::Exec => {
            let l = b.pool.acquire(&key(A)).unwrap();
            p.jobs.push(buffers(&b.rt, &l, 1));
            p.leases.push(l);
        }
        // A leased with an execution enqueued, then evicted by B and C: retired, so its
        // release is the one that hands it to the destroyer.
        Op::Release | Op::ReleaseAfter => {
            let l = b.pool.acquire(&key(A)).unwrap();
            let job = buffers(&b.rt, &l, 2);
            job.exec(&l, b.stream.raw()).unwrap();
            p.jobs.push(job);
            p.leases.push(l);
            b.cache(B);
            b.cache(C);
            assert_eq!(b.pool.metrics().retired_pending, 1);
        }
        // A cached idle, B leased (released by the operation's helper while shutdown waits).
        Op::Shutdown => {
            b.cache(A);
            p.leases.push(b.pool.acquire(&key(B)).unwrap());
        }
    }
    p
}

/// Runs `op` on another thread (so a hang is detected, not suffered).
fn start(b: &Bench, op: Op, mut p: Prepared) -> std::thread::JoinHandle<(Outcome, Duration, Prepared)> {
    let pool = b.pool.clone();
    let stream_raw = b.stream.raw();
    let rt = b.rt.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        let out: Outcome = match op {
            Op::AcquireMiss => pool.acquire(&key(C)).map(drop).map_err(|e| e.to_string()),
            Op::AcquireHit => pool.acquire(&key(A)).map(drop).map_err(|e| e.to_string()),
            Op::Exec => p.jobs[0].exec(&p.leases[0], stream_raw).map_err(|e| e.to_string()),
            Op::Release => {
                // An honest release: the lease's execution has finished.
                // SAFETY: the test's live stream.
                unsafe { rt.stream_synchronize(stream_raw) }.unwrap();
                let lease = p.leases.pop().unwrap();
                let released = Instant::now();
                lease.release();
                return (Ok(()), released.elapsed(), p);
            }
            // SAFETY: the test's live stream of the pool's runtime.
            Op::ReleaseAfter => match unsafe { p.leases.pop().unwrap().release_after(stream_raw) } {
                Ok(()) => Ok(()),
                Err(e) => {
                    // The lease came back: it is neither lost nor released under the exec.
                    let msg = e.error.to_string();
                    p.leases.push(e.lease);
                    Err(msg)
                }
            },
            Op::SetCapacity => pool.set_capacity(1).map_err(|e| e.to_string()),
            Op::Trim => {
                pool.trim();
                Ok(())
            }
            Op::Shutdown => {
                let lease = p.leases.pop().unwrap();
                let helper = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(60));
                    drop(lease);
                });
                let report = pool.shutdown();
                helper.join().unwrap();
                if report.timed_out || !report.still_leased.is_empty() {
                    Err(format!("shutdown report {report:?}"))
                } else {
                    Ok(())
                }
            }
        };
        (out, started.elapsed(), p)
    })
}

/// Whether `op` under `fault` reaches a runtime call that hangs.
fn hangs(fault: Fault, op: Op) -> bool {
    match fault {
        Fault::CreateBlocks => op == Op::AcquireMiss,
        Fault::DestroyBlocks => op.destroys(),
        _ => false,
    }
}

fn cell(fault: Fault, op: Op) {
    let when = format!("{fault:?} x {op:?}");
    let _turn = one_cell_at_a_time();
    lock(log()).clear();
    let b = Bench::new();
    let p = prepare(&b, op);
    b.check_invariants(&p.leases.iter().collect::<Vec<_>>(), &format!("{when}, prepared"));
    let monitor = Monitor::start(&b.sim);
    b.sim.set_faults(fault.config());

    // An allocation failure never reaches the pool (it allocates nothing: work areas and
    // buffers are the caller's); the caller's own allocation fails, clearly.
    if fault == Fault::MallocFails {
        let e = DeviceBuffer::new(&b.rt, 256).err().expect("hipMalloc fails");
        let text = e.to_string();
        assert!(text.contains("hipMalloc failed") && text.contains("hipErrorOutOfMemory (2)"), "{when}: {text}");
    }

    let t = start(&b, op, p);
    if fault.blocks() {
        // Wait for the hang (a destroy may come later, on the destroyer thread), or for the
        // operation to finish when it reaches no call that blocks.
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && b.sim.blocked_calls() == 0 && (!t.is_finished() || hangs(fault, op)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let blocked = b.sim.blocked_calls() > 0;
        assert_eq!(blocked, hangs(fault, op), "{when}: blocked {blocked}");
        if blocked {
            // The watchdog names the call that does not return.
            let kind = if fault == Fault::CreateBlocks { CallKind::Create } else { CallKind::Destroy };
            let until = Instant::now() + Duration::from_secs(2);
            while !b.pool.stalled_calls().iter().any(|c| c.kind == kind) {
                assert!(Instant::now() < until, "{when}: the watchdog never reported the hung {kind:?}");
                std::thread::sleep(Duration::from_millis(5));
            }
            // Hits on cached keys are still served while a runtime call hangs (a shut-down
            // pool serves nothing).
            if op != Op::Shutdown {
                for k in [A, B, C].map(key).into_iter().filter(|k| is_cached(&b.pool, k)) {
                    let hit = b.pool.acquire(&k);
                    assert!(hit.is_ok(), "{when}: a hit on {k} failed while a call hung: {:?}", hit.err());
                }
            }
        }
        b.sim.set_faults(base_config());
        b.sim.unblock_all();
    }
    let until = Instant::now() + HANG;
    while !t.is_finished() {
        assert!(Instant::now() < until, "{when}: the operation hangs");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (outcome, took, mut p) = t.join().expect("the operation panicked");
    let max_live = monitor.finish();
    assert!(max_live <= CEILING, "{when}: {max_live} live handles sampled, ceiling {CEILING}");

    // The outcome, with a clear message.
    match (expect(fault, op), &outcome) {
        (Expect::Ok, Ok(())) => {}
        (Expect::Err(parts), Err(msg)) => {
            for part in parts {
                assert!(msg.contains(part), "{when}: the error does not name {part:?}: {msg}");
            }
        }
        (want, got) => panic!("{when}: expected {want:?}, got {got:?}"),
    }
    if matches!(op, Op::Release | Op::ReleaseAfter) {
        // Even with the destroy hanging on the destroyer thread.
        assert!(took < Duration::from_millis(200), "{when}: a release took {took:?} (it must never wait for the runtime)");
    }

    // Destroy faults: the caller gets its result; the failure is counted and logged with
    // its code (the handle is freed anyway, as hipFFT frees the plan first).
    if matches!(fault, Fault::DestroyFails | Fault::DestroyBlocks) && op.destroys() {
        let until = Instant::now() + Duration::from_secs(5);
        while b.pool.metrics().destroy_failures == 0 {
            assert!(Instant::now() < until, "{when}: no destroy failure counted: {:?}", b.pool.metrics());
            std::thread::sleep(Duration::from_millis(1));
        }
        let needle = "hipfftDestroy failed with hipFFT HIPFFT_INTERNAL_ERROR (5)";
        while !logged(needle) {
            let lines = lock(log()).clone();
            assert!(Instant::now() < until, "{when}: the failed destroy is not logged with its code: {lines:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let m = b.pool.metrics();
    match (fault, &outcome) {
        (Fault::CreateFails | Fault::CreateBlocks, Err(_)) => assert_eq!(m.create_failures, 1, "{when}: {m:?}"),
        (Fault::ExecFails, Err(_)) => assert_eq!(m.exec_failures, 1, "{when}: {m:?}"),
        (Fault::EventFails, Err(_)) => assert_eq!(m.event_failures, 1, "{when}: {m:?}"),
        _ => {}
    }
    b.sim.set_faults(base_config());
    b.check_invariants(&p.leases.iter().collect::<Vec<_>>(), &format!("{when}, after the operation"));

    // The pool keeps serving other keys.
    if op == Op::Shutdown {
        let e = b.pool.acquire(&key(FRESH)).unwrap_err();
        assert!(matches!(e, Error::ShutDown) && e.to_string().contains("shut down"), "{when}: {e}");
    } else {
        let l = b.pool.acquire(&key(FRESH)).unwrap_or_else(|e| panic!("{when}: the pool stopped serving: {e}"));
        let job = buffers(&b.rt, &l, 9);
        job.exec(&l, b.stream.raw()).unwrap();
        let err = job.error(&b.stream);
        assert!(err <= 1e-5, "{when}: a transform after the fault is wrong ({err})");
        drop(l);
        // And the plans the cell prepared still compute right.
        for job in &p.jobs {
            let l = b.pool.acquire(&job.desc).unwrap();
            job.exec(&l, b.stream.raw()).unwrap();
            let err = job.error(&b.stream);
            assert!(err <= 1e-5, "{when}: {} is wrong after the fault ({err})", job.desc);
        }
    }

    // Teardown: nothing leaks.
    b.stream.synchronize().unwrap();
    drop(std::mem::take(&mut p.leases));
    drop(std::mem::take(&mut p.jobs));
    let report = b.pool.shutdown();
    assert!(!report.timed_out && report.still_leased.is_empty(), "{when}: {report:?}");
    let Bench { sim, rt, pool, stream, baseline_bytes } = b;
    drop(stream);
    assert_eq!(sim.live_handles(), 0, "{when}: handles left alive after shutdown");
    assert_eq!(sim.created_total(), sim.destroyed_total(), "{when}");
    let m = pool.metrics();
    assert_eq!(m.creations, sim.created_total(), "{when}: {m:?}");
    assert_eq!(m.destroys + m.destroy_failures, sim.destroyed_total(), "{when}: {m:?}");
    assert_eq!((m.live, m.cached, m.retired_pending, m.in_flight), (0, 0, 0, 0), "{when}: {m:?}");
    assert_eq!(sim.live_events(), 0, "{when}: events left");
    assert_eq!(sim.live_streams(), 0, "{when}: streams left");
    assert_eq!(sim.allocated_bytes(), baseline_bytes, "{when}: device memory left allocated");
    let v = sim.violations();
    assert!(v.is_empty(), "{when}: misuse recorded: {v:?}");
    drop(pool);
    drop(rt);
}

fn is_cached(pool: &PlanPool, k: &PlanDesc) -> bool {
    let text = k.to_string();
    pool.cached_plans().iter().any(|p| p.desc == text)
}

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cells of one fault run one at a time: the log capture is process-wide.
fn row(fault: Fault) {
    let _one = serial();
    for op in OPS {
        cell(fault, op);
    }
}

#[test]
fn create_fails() {
    row(Fault::CreateFails);
}

#[test]
fn create_blocks() {
    row(Fault::CreateBlocks);
}

#[test]
fn exec_fails() {
    row(Fault::ExecFails);
}

#[test]
fn event_fails() {
    row(Fault::EventFails);
}

#[test]
fn destroy_fails() {
    row(Fault::DestroyFails);
}

#[test]
fn destroy_blocks() {
    row(Fault::DestroyBlocks);
}

#[test]
fn malloc_fails() {
    row(Fault::MallocFails);
}

// ---- beyond the matrix: a hang racing another operation ----

/// Shutdown while a creation hangs: it waits its timeout, says so, and once the hang ends
/// the creation's slot comes back; nothing leaks.
#[test]
fn shutdown_while_a_creation_hangs() {
    let _one = serial();
    let (sim, rt) = sim(SimConfig { block_create: true, ..base_config() });
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(CAPACITY)
        .private_ceiling(CEILING)
        .acquire_timeout(Duration::from_secs(5))
        .shutdown_timeout(Duration::from_millis(150))
        .build()
        .unwrap();
    let pool = Arc::new(PlanPool::new(cfg, rt).unwrap());
    let p = pool.clone();
    let t = std::thread::spawn(move || p.acquire(&key(A)).map(drop));
    while sim.blocked_calls() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = pool.shutdown();
    assert!(report.timed_out, "shutdown could not finish a hung creation: {report:?}");
    sim.set_faults(base_config());
    sim.unblock_all();
    let e = t.join().unwrap().unwrap_err();
    assert!(e.to_string().contains("HIPFFT_INTERNAL_ERROR (5)"), "{e}");
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(pool.ceiling().live(), 0);
    assert_eq!(pool.metrics().live, 0);
}

/// A miss that joins another thread's creation, which hangs, gives up after its acquire
/// timeout with an error that says what it waited for; after the hang the plan is usable.
#[test]
fn a_joiner_of_a_hung_creation_times_out_with_a_clear_error() {
    let _one = serial();
    let (sim, rt) = sim(SimConfig { block_create: true, ..base_config() });
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(CAPACITY)
        .private_ceiling(CEILING)
        .acquire_timeout(Duration::from_millis(150))
        .build()
        .unwrap();
    let pool = Arc::new(PlanPool::new(cfg, rt.clone()).unwrap());
    let p = pool.clone();
    let creator = std::thread::spawn(move || p.acquire(&key(A)).map(drop));
    while sim.blocked_calls() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let e = pool.acquire(&key(A)).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "{text}");
    assert!(text.contains("creation of this plan") && text.contains("hipfftMakePlanMany64"), "{text}");
    sim.set_faults(base_config());
    sim.unblock_all();
    assert!(creator.join().unwrap().is_err());
    // The abandoned creation returns on its worker, which settles it; until then the device
    // counts as stuck (the call has run for the whole timeout).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while pool.metrics().creating > 0 {
        assert!(std::time::Instant::now() < deadline, "the abandoned creation was never settled");
        std::thread::sleep(Duration::from_millis(1));
    }
    let l = pool.acquire(&key(A)).expect("served once the hang ended");
    let stream = Stream::new(&rt).unwrap();
    let job = buffers(&rt, &l, 3);
    job.exec(&l, stream.raw()).unwrap();
    assert!(job.error(&stream) <= 1e-5);
    drop(l);
    pool.shutdown();
    assert_eq!(sim.live_handles(), 0);
}
