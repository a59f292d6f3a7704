//! Soak: many threads against a small live ceiling on the simulated runtime, with faults
//! injected at random, for a set time, checking the pool's promises all along against the
//! sim's own ground truth.
//!
//!   cargo run --release --example soak -- --threads 8 --seconds 60 --ceiling 4 [--json]
//!
//! Workers acquire random shapes (more shapes than the ceiling), execute on their own
//! streams, and release in every style (now, after a synchronize, `release_after`), with
//! now and then a result checked against the reference FFT. A fault driver changes the
//! injected faults every few tens of milliseconds (every-K-th creation, execution, event
//! and destroy failures, and short hangs of creation or destroy, ended with `unblock_all`);
//! an admin thread trims and changes the capacity. A monitor samples the live handles and
//! the sim's misuse log continuously. Every outcome is checked: an acquire either leases a
//! live plan or fails with a timeout or the injected runtime error, named with its code;
//! nothing else. At the end everything is released, the pool shut down, and nothing may be
//! left: no handle, event, stream or byte. Any violation, or no progress for 30 s (a
//! hang), makes the exit status 1.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::reference::{self, SplitMix64};
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{Direction, Error, Lease, PlanDesc, PlanPool, PoolConfig, Runtime, TransformType};

#[derive(Parser, Debug)]
#[command(about = "Soak the plan pool on the simulated runtime with random faults")]
struct Args {
    /// Worker threads.
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// How long to run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// The live-handle ceiling (small, to force waits and evictions).
    #[arg(long, default_value_t = 4)]
    ceiling: usize,
    /// Distinct shapes the workers ask for (default: three times the ceiling).
    #[arg(long)]
    shapes: Option<usize>,
    /// Acquire timeout, in milliseconds.
    #[arg(long, default_value_t = 100)]
    acquire_timeout_ms: u64,
    /// No injected faults.
    #[arg(long)]
    no_faults: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Default)]
struct Counts {
    ops: AtomicU64,
    acquires: AtomicU64,
    leased: AtomicU64,
    timeouts: AtomicU64,
    create_errors: AtomicU64,
    stuck_errors: AtomicU64,
    execs: AtomicU64,
    exec_errors: AtomicU64,
    release_now: AtomicU64,
    release_synced: AtomicU64,
    release_after: AtomicU64,
    release_after_errors: AtomicU64,
    alloc_errors: AtomicU64,
    checked_transforms: AtomicU64,
    checks: AtomicU64,
    admin_ops: AtomicU64,
    fault_changes: AtomicU64,
    hangs_injected: AtomicU64,
    max_live: AtomicUsize,
    /// Largest relative error of a checked transform, as f64 bits.
    max_error_bits: AtomicU64,
}

struct Shared {
    sim: Arc<SimRuntime>,
    rt: Arc<dyn Runtime>,
    pool: PlanPool,
    shapes: Vec<PlanDesc>,
    ceiling: usize,
    seed: u64,
    stop: AtomicBool,
    counts: Counts,
    violations: Mutex<Vec<String>>,
}

impl Shared {
    fn violation(&self, what: String) {
        eprintln!("soak: VIOLATION: {what}");
        self.violations.lock().unwrap().push(what);
    }

    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        self.counts.checks.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.violation(what());
        }
    }

    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

fn base() -> SimConfig {
    SimConfig {
        create_latency: Duration::from_micros(100),
        exec_latency: Duration::from_micros(40),
        destroy_latency: Duration::from_micros(30),
        ..SimConfig::default()
    }
}

fn shapes(count: usize) -> Vec<PlanDesc> {
    let kinds = [TransformType::C2C, TransformType::R2C, TransformType::C2R, TransformType::Z2Z, TransformType::D2Z];
    (0..count)
        .map(|i| {
            let n = 8 + 4 * i as i64;
            let d = if i % 4 == 3 { vec![4, n / 2] } else { vec![n] };
            PlanDesc::new(kinds[i % kinds.len()], &d, 1 + (i % 3) as i64)
        })
        .collect()
}

fn direction(d: &PlanDesc) -> Direction {
    if d.transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward }
}

/// One shape's buffers, kept by a worker across iterations.
struct Bufs {
    input: Vec<u8>,
    d_in: DeviceBuffer,
    d_out: DeviceBuffer,
    work: Option<DeviceBuffer>,
}

fn alloc(rt: &Arc<dyn Runtime>, lease: &Lease, seed: u64) -> hipfft_pool::Result<Bufs> {
    let desc = lease.desc();
    let ext = desc.validate()?;
    let input = reference::random_input(desc, seed);
    let d_in = DeviceBuffer::from_host(rt, &input)?;
    let d_out = DeviceBuffer::new(rt, ext.output_bytes)?;
    let work = if lease.work_size() > 0 { Some(DeviceBuffer::new(rt, lease.work_size())?) } else { None };
    Ok(Bufs { input, d_in, d_out, work })
}

/// An injected runtime error must name its call and code: "... failed with hipFFT NAME (N)".
fn clear_runtime_error(e: &Error) -> bool {
    let t = e.to_string();
    matches!(e, Error::Runtime { .. }) && t.contains(" failed with ") && t.contains('(') && t.ends_with(')')
}

fn worker(s: &Shared, id: u64) {
    let stream = match Stream::new(&s.rt) {
        Ok(st) => st,
        Err(e) => return s.violation(format!("worker {id}: no stream: {e}")),
    };
    let mut rng = SplitMix64::new(s.seed ^ (id + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut bufs: HashMap<usize, Bufs> = HashMap::new();
    while !s.stop.load(Ordering::Relaxed) {
        let shape = (rng.next_u64() % s.shapes.len() as u64) as usize;
        let desc = s.shapes[shape];
        Shared::bump(&s.counts.acquires);
        let lease = match s.pool.acquire(&desc) {
            Ok(l) => l,
            Err(e @ Error::CeilingTimeout { .. }) => {
                Shared::bump(&s.counts.timeouts);
                let t = e.to_string();
                s.check(t.contains("live of ceiling"), || format!("a timeout without the counts: {t}"));
                Shared::bump(&s.counts.ops);
                continue;
            }
            // An injected hang of a create or destroy outlasts the acquire timeout (hangs
            // run to 150 ms, the timeout is 100 ms): misses on the device then fail at once.
            Err(e @ Error::DeviceStuck { .. }) => {
                Shared::bump(&s.counts.stuck_errors);
                let t = e.to_string();
                let injected = s.counts.hangs_injected.load(Ordering::Relaxed) > 0;
                s.check(injected && t.contains("has been running"), || {
                    format!("a stuck device with no hang injected, or an error without the call: {t}")
                });
                Shared::bump(&s.counts.ops);
                continue;
            }
            Err(e) if clear_runtime_error(&e) => {
                Shared::bump(&s.counts.create_errors);
                Shared::bump(&s.counts.ops);
                continue;
            }
            Err(e) => {
                s.violation(format!("acquire of {desc} failed unexpectedly: {e}"));
                continue;
            }
        };
        Shared::bump(&s.counts.leased);
        s.check(s.sim.is_live(lease.plan()), || format!("a lease on {desc} holds a dead plan"));
        match rng.next_u64() % 8 {
            // Release at once, without executing.
            0 | 1 => {
                drop(lease);
                Shared::bump(&s.counts.release_now);
            }
            // Execute; release after the stream's work, or after a synchronize, and now and
            // then check the result.
            _ => {
                if let std::collections::hash_map::Entry::Vacant(v) = bufs.entry(shape) {
                    match alloc(&s.rt, &lease, rng.next_u64()) {
                        Ok(b) => {
                            v.insert(b);
                        }
                        Err(e) => {
                            s.check(clear_runtime_error(&e), || format!("an allocation failed unclearly: {e}"));
                            Shared::bump(&s.counts.alloc_errors);
                            drop(lease);
                            Shared::bump(&s.counts.ops);
                            continue;
                        }
                    }
                }
                let b = &bufs[&shape];
                let verify = rng.next_u64().is_multiple_of(64);
                // SAFETY: `d_in` holds the input's bytes.
                if verify && unsafe { s.rt.memcpy_htod(b.d_in.ptr(), &b.input) }.is_err() {
                    Shared::bump(&s.counts.alloc_errors);
                }
                Shared::bump(&s.counts.execs);
                // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
                let r = unsafe { lease.exec(stream.raw(), b.d_in.ptr(), b.d_out.ptr(), direction(&desc), b.work.as_ref().map(|w| w.ptr())) };
                if let Err(e) = &r {
                    s.check(clear_runtime_error(e), || format!("exec failed unclearly: {e}"));
                    Shared::bump(&s.counts.exec_errors);
                }
                if verify && r.is_ok() {
                    let _ = stream.synchronize();
                    s.check(s.sim.is_live(lease.plan()), || format!("{desc} destroyed under its lease"));
                    drop(lease);
                    Shared::bump(&s.counts.release_synced);
                    if let Ok(out) = b.d_out.to_host() {
                        let want = reference::expected_output(&desc, direction(&desc), &b.input);
                        let err = reference::rel_l2_error(&reference::gather_output(&desc, &out), &want);
                        s.counts.max_error_bits.fetch_max(err.to_bits(), Ordering::Relaxed);
                        Shared::bump(&s.counts.checked_transforms);
                        s.check(err <= 1e-4, || format!("{desc}: relative error {err}"));
                    }
                } else if rng.next_u64().is_multiple_of(2) {
                    // SAFETY: the test's live stream of the pool's runtime.
                    match unsafe { lease.release_after(stream.raw()) } {
                        Ok(()) => Shared::bump(&s.counts.release_after),
                        Err(e) => {
                            s.check(clear_runtime_error(&e.error), || format!("release_after failed unclearly: {}", e.error));
                            Shared::bump(&s.counts.release_after_errors);
                            let _ = stream.synchronize();
                            drop(e.lease);
                        }
                    }
                } else {
                    let _ = stream.synchronize();
                    drop(lease);
                    Shared::bump(&s.counts.release_synced);
                }
            }
        }
        Shared::bump(&s.counts.ops);
    }
    let _ = stream.synchronize();
    drop(bufs);
}

/// Changes the injected faults every few tens of milliseconds; hangs last up to 150 ms.
fn fault_driver(s: &Shared, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let every = |rng: &mut SplitMix64| rng.next_u64().is_multiple_of(4).then(|| 3 + rng.next_u64() % 40);
    while !s.stop.load(Ordering::Relaxed) {
        let mut c = base();
        c.fail_create_every = every(&mut rng);
        c.fail_exec_every = every(&mut rng);
        c.fail_event_every = every(&mut rng);
        c.fail_destroy_every = every(&mut rng);
        c.fail_malloc_every = rng.next_u64().is_multiple_of(16).then_some(2);
        let hang = rng.next_u64() % 6;
        c.block_create = hang == 0;
        c.block_destroy = hang == 1;
        s.sim.set_faults(c.clone());
        Shared::bump(&s.counts.fault_changes);
        if c.block_create || c.block_destroy {
            Shared::bump(&s.counts.hangs_injected);
            // Mostly shorter than the acquire timeout, sometimes longer (misses then time out).
            std::thread::sleep(Duration::from_millis(2 + rng.next_u64() % 150));
            c.block_create = false;
            c.block_destroy = false;
            s.sim.set_faults(c);
            s.sim.unblock_all();
        }
        std::thread::sleep(Duration::from_millis(10 + rng.next_u64() % 50));
    }
    s.sim.set_faults(base());
    s.sim.unblock_all();
}

/// Trims, changes the capacity, and checks the metrics against the ceiling.
fn admin(s: &Shared, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    while !s.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(5 + rng.next_u64() % 40));
        match rng.next_u64() % 4 {
            0 => {
                s.pool.trim();
            }
            1 => {
                let c = 1 + (rng.next_u64() as usize) % s.ceiling;
                if let Err(e) = s.pool.set_capacity(c) {
                    s.violation(format!("set_capacity({c}) failed: {e}"));
                }
            }
            _ => {
                let m = s.pool.metrics();
                s.check(m.process_live <= s.ceiling && m.live <= s.ceiling, || format!("metrics above the ceiling: {m:?}"));
            }
        }
        Shared::bump(&s.counts.admin_ops);
    }
}

/// Samples the ground truth as fast as it can.
fn monitor(s: &Shared) {
    let mut seen_violations = 0;
    while !s.stop.load(Ordering::Relaxed) {
        let live = s.sim.live_handles();
        s.counts.max_live.fetch_max(live, Ordering::Relaxed);
        s.check(live <= s.ceiling, || format!("{live} live handles, ceiling {}", s.ceiling));
        let v = s.sim.violations();
        if v.len() > seen_violations {
            for m in &v[seen_violations..] {
                s.violation(format!("the sim recorded a misuse: {m}"));
            }
            seen_violations = v.len();
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn main() {
    let args = Args::parse();
    let ceiling = args.ceiling.max(1);
    let (sim, rt) = {
        let s = Arc::new(SimRuntime::new(base()));
        let rt: Arc<dyn Runtime> = s.clone();
        (s, rt)
    };
    let baseline_bytes = sim.allocated_bytes();
    let cfg = PoolConfig::builder()
        .capacity((ceiling / 2).max(1))
        .private_ceiling(ceiling)
        .acquire_timeout(Duration::from_millis(args.acquire_timeout_ms))
        .shutdown_timeout(Duration::from_secs(30))
        .watchdog_threshold(Duration::from_secs(5))
        .build()
        .expect("config");
    let pool = PlanPool::new(cfg, rt.clone()).expect("pool");
    let s = Arc::new(Shared {
        sim: sim.clone(),
        rt: rt.clone(),
        pool,
        shapes: shapes(args.shapes.unwrap_or(3 * ceiling).max(1)),
        ceiling,
        seed: args.seed,
        stop: AtomicBool::new(false),
        counts: Counts::default(),
        violations: Mutex::new(Vec::new()),
    });
    let started = Instant::now();
    let mut threads = Vec::new();
    for id in 0..args.threads as u64 {
        let s = s.clone();
        threads.push(std::thread::Builder::new().name(format!("soak-{id}")).spawn(move || worker(&s, id)).unwrap());
    }
    if !args.no_faults {
        let s2 = s.clone();
        let seed = args.seed;
        threads.push(std::thread::spawn(move || fault_driver(&s2, seed)));
    }
    {
        let s2 = s.clone();
        let seed = args.seed ^ 0xA5A5;
        threads.push(std::thread::spawn(move || admin(&s2, seed)));
        let s3 = s.clone();
        threads.push(std::thread::spawn(move || monitor(&s3)));
    }
    // Progress watch: no operation finishing for 30 s is a hang.
    let deadline = started + Duration::from_secs(args.seconds);
    let mut last = (0u64, Instant::now());
    let mut hung = false;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        let ops = s.counts.ops.load(Ordering::Relaxed);
        if ops != last.0 {
            last = (ops, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(30) {
            s.violation(format!("no progress for 30 s: a hang; stalled calls {:?}", s.pool.stalled_calls()));
            hung = true;
            break;
        }
    }
    s.stop.store(true, Ordering::SeqCst);
    sim.set_faults(base());
    sim.unblock_all();
    if hung {
        report(&args, &s, started.elapsed(), None);
        std::process::exit(1);
    }
    for t in threads {
        if t.join().is_err() {
            s.violation("a soak thread panicked".into());
        }
    }
    let elapsed = started.elapsed();
    let metrics = s.pool.metrics();
    let shutdown = s.pool.shutdown();
    if shutdown.timed_out || !shutdown.still_leased.is_empty() {
        s.violation(format!("shutdown did not finish: {shutdown:?}"));
    }
    let after = s.pool.metrics();
    let leftovers = [
        ("live handles", sim.live_handles()),
        ("live events", sim.live_events()),
        ("live streams", sim.live_streams()),
        ("bytes allocated above the baseline", sim.allocated_bytes().saturating_sub(baseline_bytes)),
    ];
    for (what, n) in leftovers {
        s.check(n == 0, || format!("after shutdown: {n} {what}"));
    }
    s.check(after.creations == sim.created_total(), || format!("creations {} != sim {}", after.creations, sim.created_total()));
    s.check(after.destroys + after.destroy_failures == sim.destroyed_total(), || {
        format!("destroys {} + failures {} != sim {}", after.destroys, after.destroy_failures, sim.destroyed_total())
    });
    s.check(sim.peak_live_handles() <= ceiling, || format!("peak {} > ceiling {ceiling}", sim.peak_live_handles()));
    let ok = report(&args, &s, elapsed, Some(&metrics));
    std::process::exit(if ok { 0 } else { 1 });
}

fn report(args: &Args, s: &Shared, elapsed: Duration, m: Option<&hipfft_pool::MetricsSnapshot>) -> bool {
    let c = &s.counts;
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let violations = s.violations.lock().unwrap().clone();
    let m = m.cloned().unwrap_or_else(|| s.pool.metrics());
    let v = serde_json::json!({
        "threads": args.threads,
        "seconds": elapsed.as_secs_f64(),
        "ceiling": s.ceiling,
        "shapes": s.shapes.len(),
        "faults": !args.no_faults,
        "ops": ld(&c.ops),
        "ops_per_s": ld(&c.ops) as f64 / elapsed.as_secs_f64(),
        "acquires": ld(&c.acquires),
        "leased": ld(&c.leased),
        "hits": m.hits,
        "misses": m.misses,
        "creations": m.creations,
        "evictions": m.evictions,
        "ceiling_waits": m.ceiling_waits,
        "timeouts": ld(&c.timeouts),
        "create_errors": ld(&c.create_errors),
        "stuck_errors": ld(&c.stuck_errors),
        "execs": ld(&c.execs),
        "exec_errors": ld(&c.exec_errors),
        "release_now": ld(&c.release_now),
        "release_synced": ld(&c.release_synced),
        "release_after": ld(&c.release_after),
        "release_after_errors": ld(&c.release_after_errors),
        "destroy_failures": m.destroy_failures,
        "alloc_errors": ld(&c.alloc_errors),
        "checked_transforms": ld(&c.checked_transforms),
        "max_rel_error": f64::from_bits(ld(&c.max_error_bits)),
        "fault_changes": ld(&c.fault_changes),
        "hangs_injected": ld(&c.hangs_injected),
        "admin_ops": ld(&c.admin_ops),
        "checks": ld(&c.checks),
        "max_live_sampled": c.max_live.load(Ordering::Relaxed),
        "peak_live": s.sim.peak_live_handles(),
        "violations": violations,
    });
    if args.json {
        println!("{v}");
    } else {
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
    }
    violations.is_empty()
}
