//! Where a pool miss's time goes (build with `--features cuda`; `--runtime sim` to check it
//! without a GPU, where the numbers mean nothing).
//!
//! The 26 probe shapes in turn, each call destroying the previous plan and creating the
//! next, through four structures, interleaved round by round:
//!
//! - `inline`: both calls on the calling thread (a C++ cache's miss that evicts);
//! - `worker, one job`: both calls in one job on a worker thread that polls, the caller
//!   polling for the result;
//! - `worker, two jobs`: the destroy as one job and the create as the next, on the same
//!   polling worker (the caller waits for each in turn);
//! - `pool`: a miss of a pool at capacity 1 (it evicts and destroys the idle plan, creates).
//!
//! Every create and destroy goes through one timing wrapper of the runtime, so each
//! structure's calls are timed the same way: the microseconds inside each call, the CPU it
//! started and ended on, the thread, and what the call cost that thread (thread CPU time,
//! faults, switches: `common/call_cost.rs`, whose counter reads add about a microsecond to
//! each call, the same in every structure). What a structure adds over `inline` inside the
//! calls is the environment the calls run in; what it adds outside them is its hand-offs.
//!
//! `--only NAME` runs one structure (to trace it alone, e.g. under `nsys profile`).
//!
//! Knobs that move this harness toward `gpu_bench`'s creation part, one at a time, to find
//! what makes a miss cost more there: `--gap-ms 0` (no pause between structures),
//! `--bench-env` (the stream and buffers `gpu_bench` allocates first), `--pool-untimed` (the
//! pool over the runtime itself, not the timing wrapper: its calls go unrecorded).
//!
//! Unsafe calls: the plans destroyed are the ones this program created, each destroyed once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use hipfft_pool::runtime::sim::SimRuntime;
use hipfft_pool::{CreatedPlan, Decorator, PlanDesc, PlanOptions, PlanPool, PoolConfig, RawPlan, Result, Runtime};
use serde_json::{Value, json};

#[path = "common/call_thread.rs"]
mod call_thread;
use call_thread::{CallThread, Job};
#[path = "common/call_cost.rs"]
mod call_cost;
use call_cost::{CallCost, cpu, median};

#[derive(Parser, Debug)]
#[command(about = "Where a pool miss's time goes: destroy + create inline, on a worker, and through the pool")]
struct Args {
    /// `cuda` or `sim`.
    #[arg(long, default_value = "cuda")]
    runtime: String,
    /// Measured rounds of the 26 shapes per structure (after 2 discarded).
    #[arg(long, default_value_t = 30)]
    reps: usize,
    /// Run only this structure: inline, one-job, two-jobs, pool.
    #[arg(long)]
    only: Option<String>,
    /// Write every number as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Milliseconds slept before each structure's 26 shapes (lets the threads of the
    /// structure before stop polling).
    #[arg(long, default_value_t = 3)]
    gap_ms: u64,
    /// First do what `gpu_bench` does before its creation part: make and destroy each
    /// shape's plan once, create a stream, allocate the input, output and work buffers.
    #[arg(long)]
    bench_env: bool,
    /// Run the pool over the runtime itself rather than the timing wrapper (the pool's
    /// calls are then not timed; its total is).
    #[arg(long)]
    pool_untimed: bool,
}

const STRUCTURES: [&str; 4] = ["inline", "one-job", "two-jobs", "pool"];

/// One timed call.
#[derive(Clone, Debug)]
struct Call {
    structure: usize,
    shape: usize,
    create: bool,
    us: f64,
    /// Microseconds from the start of the miss to the start of this call.
    at_us: f64,
    cpu_start: i32,
    cpu_end: i32,
    thread: String,
    /// The calling thread's CPU time, faults and switches during the call.
    cost: CallCost,
}

/// The runtime, with every create and destroy timed and tagged with the structure and
/// shape being measured (set by the caller before each miss).
struct Timed {
    inner: Arc<dyn Runtime>,
    structure: AtomicUsize,
    shape: AtomicUsize,
    /// When the miss being measured began.
    began: parking_lot::Mutex<Instant>,
    calls: parking_lot::Mutex<Vec<Call>>,
}

impl Timed {
    fn record(&self, create: bool, started: Instant, cpu_start: i32, cost: CallCost) {
        let us = started.elapsed().as_secs_f64() * 1e6;
        let call = Call {
            structure: self.structure.load(Ordering::SeqCst),
            shape: self.shape.load(Ordering::SeqCst),
            create,
            us,
            at_us: started.saturating_duration_since(*self.began.lock()).as_secs_f64() * 1e6,
            cpu_start,
            cpu_end: cpu(),
            thread: std::thread::current().name().unwrap_or("main").to_string(),
            cost,
        };
        self.calls.lock().push(call);
    }
}

// SAFETY: forwards every call to the wrapped runtime and returns its answer unchanged.
unsafe impl Decorator for Timed {
    fn inner(&self) -> &dyn Runtime {
        &*self.inner
    }
    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let (c, t) = (cpu(), Instant::now());
        let (r, cost) = CallCost::measure(|| self.inner.plan_create(desc, options));
        self.record(true, t, c, cost);
        r
    }
    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        let (c, t) = (cpu(), Instant::now());
        // SAFETY: the caller's contract, passed on unchanged.
        let (r, cost) = CallCost::measure(|| unsafe { self.inner.plan_destroy(plan) });
        self.record(false, t, c, cost);
        r
    }
}

fn main() {
    let args = Args::parse();
    let inner: Arc<dyn Runtime> = match args.runtime.as_str() {
        "sim" => Arc::new(SimRuntime::from_env()),
        #[cfg(feature = "cuda")]
        "cuda" => match hipfft_pool::runtime::cuda::CudaRuntime::new() {
            Ok(r) => Arc::new(r),
            Err(e) => {
                println!("skipped: {e}");
                return;
            }
        },
        other => {
            eprintln!("miss_anatomy: --runtime {other:?}: expected cuda or sim");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args, inner) {
        eprintln!("miss_anatomy: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args, inner: Arc<dyn Runtime>) -> Result<()> {
    const DISCARD: usize = 2;
    let shapes: Vec<(String, PlanDesc)> = hipfft_pool::check::probe::embedded_shapes()
        .iter()
        .map(|s| (format!("{} {} n={} b={}", s.name, s.kind, s.n, s.batch), s.desc(0).expect("valid probe shape")))
        .collect();
    let rt = Arc::new(Timed {
        inner,
        structure: AtomicUsize::new(0),
        shape: AtomicUsize::new(0),
        began: parking_lot::Mutex::new(Instant::now()),
        calls: parking_lot::Mutex::new(Vec::new()),
    });
    let chosen: Vec<usize> = match &args.only {
        Some(name) => vec![STRUCTURES.iter().position(|s| s == name).ok_or_else(|| {
            hipfft_pool::Error::Internal(format!("--only {name:?}: expected one of {STRUCTURES:?}"))
        })?],
        None => (0..STRUCTURES.len()).collect(),
    };
    let worker = CallThread::start(rt.clone(), true);
    let raw: &dyn Runtime = &*rt;
    let env = if args.bench_env { Some(bench_env(&*rt.inner, &shapes)?) } else { None };
    let pool_rt: Arc<dyn Runtime> = if args.pool_untimed { rt.inner.clone() } else { rt.clone() };
    let pool = PlanPool::new(PoolConfig::builder().capacity(1).private_ceiling(1).build()?, pool_rt)?;
    let mut prev: Vec<Option<RawPlan>> = vec![None; STRUCTURES.len()];
    let mut totals: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); shapes.len()]; STRUCTURES.len()];
    for rep in 0..DISCARD + args.reps {
        for &s in &chosen {
            // The threads of the structure before stop polling (2 ms) before this one runs.
            if args.gap_ms > 0 {
                std::thread::sleep(Duration::from_millis(args.gap_ms));
            }
            for (i, (_, d)) in shapes.iter().enumerate() {
                rt.structure.store(if rep < DISCARD { usize::MAX } else { s }, Ordering::SeqCst);
                rt.shape.store(i, Ordering::SeqCst);
                let t = Instant::now();
                *rt.began.lock() = t;
                match s {
                    0 => {
                        if let Some(p) = prev[s].take() {
                            // SAFETY: see the note at the top of this file.
                            unsafe { raw.plan_destroy(p) }?;
                        }
                        prev[s] = Some(raw.plan_create(d, PlanOptions::default())?.plan);
                    }
                    1 => prev[s] = worker.run(Job::Both(prev[s].take(), *d))?.0,
                    2 => {
                        if let Some(p) = prev[s].take() {
                            worker.run(Job::Destroy(p))?;
                        }
                        prev[s] = worker.run(Job::Create(*d))?.0;
                    }
                    _ => drop(pool.acquire(d)?),
                }
                if rep >= DISCARD {
                    totals[s][i].push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
    }
    rt.structure.store(usize::MAX, Ordering::SeqCst);
    for p in prev.into_iter().flatten() {
        // SAFETY: see the note at the top of this file.
        unsafe { raw.plan_destroy(p) }?;
    }
    let metrics = pool.metrics();
    pool.shutdown();
    if let Some((stream, buffers)) = env {
        // SAFETY: made by `bench_env`, used by nothing since.
        unsafe {
            for b in buffers {
                rt.inner.free(b)?;
            }
            rt.inner.stream_destroy(stream)?;
        }
    }
    let calls = rt.calls.lock().clone();
    let mut rows = Vec::new();
    println!(
        "miss_anatomy: {} rounds of {} shapes; per structure, mean over shapes of the median us (gap {} ms{}{})",
        args.reps,
        shapes.len(),
        args.gap_ms,
        if args.bench_env { ", bench env" } else { "" },
        if args.pool_untimed { ", pool untimed" } else { "" }
    );
    println!(
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6}  threads",
        "structure", "total", "destroy", "create", "in calls", "outside", "before", "between", "x inline", "same cpu", "cpus"
    );
    let mut inline_total = None;
    for &s in &chosen {
        let mine: Vec<&Call> = calls.iter().filter(|c| c.structure == s).collect();
        let per_shape = |create: bool| -> f64 {
            (0..shapes.len())
                .map(|i| median(mine.iter().filter(|c| c.shape == i && c.create == create).map(|c| c.us).collect()))
                .sum::<f64>()
                / shapes.len() as f64
        };
        let (destroy, create) = (per_shape(false), per_shape(true));
        let total = totals[s].iter().map(|v| median(v.clone())).sum::<f64>() / shapes.len() as f64;
        if s == 0 {
            inline_total = Some(total);
        }
        // Per miss (a destroy and the create after it): whether the create started on the
        // CPU the destroy ended on, and the time before the destroy and between the two.
        let (mut same, mut pairs) = (0usize, 0usize);
        let (mut before, mut between) = (Vec::new(), Vec::new());
        for w in mine.windows(2) {
            if !w[0].create && w[1].create && w[0].shape == w[1].shape {
                pairs += 1;
                same += usize::from(w[0].cpu_end == w[1].cpu_start);
                before.push(w[0].at_us);
                between.push(w[1].at_us - w[0].at_us - w[0].us);
            }
        }
        let (before, between) = (median(before), median(between));
        let mut cpus: Vec<i32> = mine.iter().flat_map(|c| [c.cpu_start, c.cpu_end]).collect();
        cpus.sort_unstable();
        cpus.dedup();
        let migrated = mine.iter().filter(|c| c.cpu_start != c.cpu_end).count();
        let mut threads: HashMap<&str, usize> = HashMap::new();
        for c in &mine {
            *threads.entry(c.thread.as_str()).or_default() += 1;
        }
        let x_inline = inline_total.map_or(f64::NAN, |i| total / i);
        let costs = |create: bool| -> Vec<(usize, CallCost)> {
            mine.iter().filter(|c| c.create == create).map(|c| (c.shape, c.cost)).collect()
        };
        let (create_cost, destroy_cost) =
            (call_cost::summary(&costs(true), shapes.len()), call_cost::summary(&costs(false), shapes.len()));
        println!(
            "{:<10} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>8.1} {:>8.3} {:>7.0}% {:>6}  {:?}",
            STRUCTURES[s],
            total,
            destroy,
            create,
            destroy + create,
            total - destroy - create,
            before,
            between,
            x_inline,
            100.0 * same as f64 / pairs.max(1) as f64,
            cpus.len(),
            threads
        );
        if !mine.is_empty() {
            println!("{:<10} create:  {}", "", call_cost::line(&create_cost));
            println!("{:<10} destroy: {}", "", call_cost::line(&destroy_cost));
        }
        rows.push(json!({
            "create_cost": create_cost, "destroy_cost": destroy_cost,
            "gap_ms": args.gap_ms, "bench_env": args.bench_env, "pool_untimed": args.pool_untimed,
            "structure": STRUCTURES[s], "total_us": total, "destroy_us": destroy, "create_us": create,
            "outside_calls_us": total - destroy - create, "x_inline": x_inline,
            "before_destroy_us_median": before, "destroy_to_create_us_median": between,
            "create_on_cpu_of_destroy_pct": 100.0 * same as f64 / pairs.max(1) as f64,
            "calls_that_migrated": migrated, "calls": mine.len(), "cpus": cpus, "threads": threads,
        }));
    }
    println!(
        "pool's own histograms: create {:.1} us, destroy {:.1} us (means); misses {}, destroys {}",
        1e6 * metrics.create_latency.sum_s / metrics.create_latency.count.max(1) as f64,
        1e6 * metrics.destroy_latency.sum_s / metrics.destroy_latency.count.max(1) as f64,
        metrics.misses,
        metrics.destroys
    );
    // CPU time of each thread of the process so far: a thread that polls while it waits
    // shows here, whatever structure it served.
    let threads = thread_cpu_seconds();
    println!("CPU seconds by thread: {threads:?}");
    if let Some(path) = &args.json {
        let v: Value = json!({
            "rounds": args.reps, "structures": rows,
            "poll_us_env": std::env::var("HIPFFT_POOL_POLL_US").ok(),
            "thread_cpu_seconds": threads,
            "pool_create_us_mean": 1e6 * metrics.create_latency.sum_s / metrics.create_latency.count.max(1) as f64,
            "pool_destroy_us_mean": 1e6 * metrics.destroy_latency.sum_s / metrics.destroy_latency.count.max(1) as f64,
        });
        std::fs::write(path, serde_json::to_string_pretty(&v).expect("json"))
            .map_err(|e| hipfft_pool::Error::Internal(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// What `gpu_bench` does before its creation part: each shape's plan made and destroyed
/// once, a stream, and input, output and work buffers of the largest sizes.
fn bench_env(rt: &dyn Runtime, shapes: &[(String, PlanDesc)]) -> Result<(hipfft_pool::RawStream, Vec<hipfft_pool::DevicePtr>)> {
    let (mut input, mut output, mut work) = (0, 0, 1);
    for (_, d) in shapes {
        let e = d.validate()?;
        input = input.max(e.input_bytes);
        output = output.max(e.output_bytes);
        let p = rt.plan_create(d, PlanOptions::default())?;
        work = work.max(p.work_size);
        // SAFETY: the plan just made, destroyed once.
        unsafe { rt.plan_destroy(p.plan) }?;
    }
    let stream = rt.stream_create()?;
    let buffers = vec![rt.malloc(input)?, rt.malloc(output)?, rt.malloc(work)?];
    // SAFETY: `buffers[0]` holds `input` bytes.
    unsafe { rt.memcpy_htod(buffers[0], &vec![0u8; input]) }?;
    Ok((stream, buffers))
}

/// User + system CPU seconds of each live thread of this process, by name (Linux
/// `/proc/self/task/*/stat`, fields 14 and 15 in clock ticks of 100 Hz); empty elsewhere.
fn thread_cpu_seconds() -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return out };
    for t in tasks.flatten() {
        let (Ok(comm), Ok(stat)) = (std::fs::read_to_string(t.path().join("comm")), std::fs::read_to_string(t.path().join("stat")))
        else {
            continue;
        };
        // The fields after the command name, which is in parentheses and may hold spaces.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let f: Vec<&str> = rest.split(' ').collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
        out.push((comm.trim().to_string(), (ticks(11) + ticks(12)) / 100.0));
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}
