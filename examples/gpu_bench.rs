//! GPU benchmark of the plan provider (build with `--features cuda`).
//!
//! Per call, over the 26 probe shapes in turn (one call = one transform of one shape on one
//! stream; the stream is synchronized once per cycle of 26; per-call time = cycle wall time /
//! 26; the median over many cycles after warm-up cycles):
//!
//! - `floor`: raw cuFFT through `CudaRuntime`, every plan made beforehand, no cache at all;
//! - `pool 128`: the pool at capacity 128 (acquire + exec + `release_after` per call);
//! - `pool 128 batch`: the same with `release_in_batch`, the batch ended at each cycle's end
//!   (one event per 26 calls, as a host ending a batch at its commit);
//! - `pool 128 release`: the same releasing at once (what `release_after` costs: an event);
//! - `floor again`: the floor measured once more after the pool rows (the machine's drift);
//! - `pool 8`: capacity (and live ceiling) 8, as MLX's ROCm port: every call misses;
//! - `alternated`: the floor, the floor with one `cudaEventRecord` after each call (what
//!   any release proven by an event per call costs the runtime itself, whatever tracks it),
//!   and the three releases at 128 again, measured in turn over `--rounds` rounds (order
//!   rotated each round), with each round's mean against that round's floor: the ratios
//!   the targets are read from, free of the machine's drift;
//! - `hip floor`, `hip pool 128`, `hip pool 8`: the same through `HipRuntime` over hip-shim
//!   built with `--features cuda` (paths from `HIPFFT_POOL_HIPFFT_LIB` and
//!   `HIPFFT_POOL_HIP_LIB`; skipped when unset), i.e. the hipFFT code path on NVIDIA;
//!
//! and plan creation per shape: raw (destroy the previous plan, create this one) against a
//! pool miss at capacity 1 (which does the same: evicts and destroys the idle plan, creates),
//! on the primary runtime twice: first, in a process that has run nothing else, and again
//! after the rows (an earlier run found raw cuFFT's calls on the main thread faster the second time),
//! every part beside the same one other plan (`--creation-alive`, default `anchor`).
//!
//! Every variant uses one input, one output and one work area allocated once, the work area
//! of the largest work size of the 26 plans, so the comparison isolates the plan provider
//! (MLX allocates the work area per call from its allocator; that cost is the same with any
//! provider and is left out).
//!
//! Without a CUDA device it prints `skipped: <reason>` and exits 0. `--runtime sim` runs the
//! whole program on the simulated runtime (to check it without a GPU; the numbers mean
//! nothing). `--json PATH` writes every number.
//!
//! Unsafe calls: every `unsafe` block drives the runtime directly with plans, streams and
//! events this program made and buffers it allocated at the sizes the descriptor's extents
//! and the plan's work size give; each lives until the stream it was used on is
//! synchronized, so no handle or pointer is used dead or short.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use hipfft_pool::runtime::hip::HipRuntime;
use hipfft_pool::runtime::sim::SimRuntime;
use hipfft_pool::{DevicePtr, Direction, PlanDesc, PlanOptions, PlanPool, PoolConfig, RawPlan, RawStream, Result, Runtime};
use serde_json::{Value, json};

#[path = "common/call_thread.rs"]
mod call_thread;
use call_thread::{CallThread, Job};
#[path = "common/call_cost.rs"]
mod call_cost;
use call_cost::CallCost;

#[derive(Parser, Debug)]
#[command(about = "Per-call cost of the plan provider on a GPU: raw cuFFT floor, the pool over cuFFT and over hip-shim, plan creation")]
struct Args {
    /// Write every number as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Measured cycles of the 26 shapes for variants that hit.
    #[arg(long, default_value_t = 2000)]
    cycles: usize,
    /// Measured cycles for variants that miss on every call (capacity 8).
    #[arg(long, default_value_t = 100)]
    miss_cycles: usize,
    /// Rounds of the alternated rows (the floor, the floor with an event per call and the
    /// three releases in turn, `cycles` split over them).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Cycles run first and discarded.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Rounds of the 26 shapes for plan creation (after 2 discarded).
    #[arg(long, default_value_t = 30)]
    create_reps: usize,
    /// `cuda`, or `sim` to check the program without a GPU.
    #[arg(long, default_value = "cuda")]
    runtime: String,
    /// Skip the HipRuntime-over-hip-shim variants.
    #[arg(long)]
    no_hip: bool,
    /// In the plan-creation rounds, run the pool's loop before the raw one (to tell an
    /// order effect from the pool's own cost).
    #[arg(long)]
    pool_first: bool,
    /// Milliseconds of copies queued on a second stream before each miss of the busy-GPU
    /// part (comma-separated; 0 = an idle GPU).
    #[arg(long, default_value = "0,5,20", value_delimiter = ',')]
    busy_ms: Vec<f64>,
    /// Rounds of the 26 shapes per variant in the busy-GPU part.
    #[arg(long, default_value_t = 3)]
    busy_rounds: usize,
    /// Milliseconds slept before each part of a plan-creation round (raw, pool, threads), as
    /// `miss_anatomy` does between its structures.
    #[arg(long, default_value_t = 0)]
    create_gap_ms: u64,
    /// Run only the first plan-creation part (and print and write it).
    #[arg(long)]
    creation_only: bool,
    /// In the plan-creation part, also measure each create and destroy's thread CPU time,
    /// page faults and context switches (two more system calls around each call).
    #[arg(long)]
    call_costs: bool,
    /// Leave out the plan-creation part's third part (raw calls on two other threads), to
    /// tell whether its threads' cuFFT calls change what the pool's calls cost.
    #[arg(long)]
    no_two_threads: bool,
    /// Which other plans are alive while each plan-creation part runs: `anchor` (one plan
    /// of another shape held for the whole part and the pool trimmed after its part: every
    /// part runs beside exactly one other plan, as in a program that holds others),
    /// `none` (the pool trimmed, nothing else: every part runs alone), `pool` (before
    /// 2026-12-06: the pool's idle plan stays cached between its parts, so the raw parts
    /// run beside it and the pool's part alone). cuFFT's destroy of the last live plan
    /// costs about 3x, and a create with none alive about 1.3x, what they cost beside
    /// another plan (H100, `docs/runs/2026-12-06-device-dc3ab54-alive/`): only a mode that
    /// gives every part the same neighbours compares them.
    #[arg(long, default_value = "anchor", value_parser = ["pool", "none", "anchor"])]
    creation_alive: String,
}

impl Args {
    /// The knobs of the plan-creation part.
    fn creation(&self) -> Creation {
        Creation {
            reps: self.create_reps,
            pool_first: self.pool_first,
            gap_ms: self.create_gap_ms,
            call_costs: self.call_costs,
            two_threads: !self.no_two_threads,
            trim_pool: self.creation_alive != "pool",
            anchor: self.creation_alive == "anchor",
        }
    }
}

/// How the plan-creation part runs (see `Args` for each knob).
#[derive(Clone, Copy)]
struct Creation {
    reps: usize,
    pool_first: bool,
    gap_ms: u64,
    call_costs: bool,
    two_threads: bool,
    trim_pool: bool,
    anchor: bool,
}

/// The runtime with each create and destroy's cost to its thread recorded, tagged with
/// what the creation part was measuring when it was made (`part * 1000 + shape`;
/// `usize::MAX`: not measured).
struct Clocked {
    inner: Arc<dyn Runtime>,
    tag: AtomicUsize,
    costs: parking_lot::Mutex<Vec<ClockedCall>>,
}

/// One recorded call: its part and shape (`tag`), create or destroy, its cost, and where it
/// ran (the thread's name and the CPU it ended on), to tell which threads and cores each
/// part's calls ran on.
struct ClockedCall {
    tag: usize,
    create: bool,
    cost: CallCost,
    thread: String,
    cpu: i32,
}

impl Clocked {
    fn keep(&self, create: bool, cost: CallCost) {
        let tag = self.tag.load(Ordering::SeqCst);
        if tag != usize::MAX {
            let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
            self.costs.lock().push(ClockedCall { tag, create, cost, thread, cpu: call_cost::cpu() });
        }
    }
}

// SAFETY: forwards every call to the wrapped runtime and returns its answer unchanged.
unsafe impl hipfft_pool::Decorator for Clocked {
    fn inner(&self) -> &dyn Runtime {
        &*self.inner
    }
    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<hipfft_pool::CreatedPlan> {
        let (r, cost) = CallCost::measure(|| self.inner.plan_create(desc, options));
        self.keep(true, cost);
        r
    }
    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        // SAFETY: the caller's contract, passed on unchanged.
        let (r, cost) = CallCost::measure(|| unsafe { self.inner.plan_destroy(plan) });
        self.keep(false, cost);
        r
    }
}

/// One runtime with the buffers and stream every variant on it shares.
struct Bench {
    name: &'static str,
    rt: Arc<dyn Runtime>,
    stream: RawStream,
    input: DevicePtr,
    output: DevicePtr,
    work: DevicePtr,
    work_bytes: usize,
    shapes: Vec<(String, PlanDesc, Direction)>,
}

#[derive(Clone, Debug)]
struct Stats {
    median: f64,
    p10: f64,
    p90: f64,
    mean: f64,
    min: f64,
    n: usize,
}

impl Stats {
    fn of(mut v: Vec<f64>) -> Stats {
        assert!(!v.is_empty());
        v.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Stats { median: at(0.5), p10: at(0.1), p90: at(0.9), mean: v.iter().sum::<f64>() / v.len() as f64, min: v[0], n: v.len() }
    }
    fn json(&self) -> Value {
        json!({"median_us": self.median, "p10_us": self.p10, "p90_us": self.p90, "mean_us": self.mean, "min_us": self.min, "samples": self.n})
    }
}

struct Row {
    variant: String,
    runtime: &'static str,
    capacity: Option<usize>,
    stats: Stats,
    extra: Value,
}

/// How a pool variant releases each call's lease.
#[derive(Clone, Copy)]
enum Release {
    /// `release_after(stream)`: one event per call.
    After,
    /// `release_in_batch(stream)`, the batch ended once per cycle: one event per 26 calls.
    Batch,
    /// `release()`: at once (safe only where nothing is evicted under pending work).
    AtOnce,
}

impl Release {
    fn name(self) -> &'static str {
        match self {
            Release::After => "release_after",
            Release::Batch => "release_in_batch",
            Release::AtOnce => "release at once",
        }
    }
}

fn direction(desc: &PlanDesc) -> Direction {
    if desc.transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward }
}

impl Bench {
    fn new(name: &'static str, rt: Arc<dyn Runtime>) -> Result<Bench> {
        let shapes: Vec<(String, PlanDesc, Direction)> = hipfft_pool::check::probe::embedded_shapes()
            .iter()
            .map(|s| {
                let d = s.desc(0).expect("valid probe shape");
                (format!("{} {} n={} b={}", s.name, s.kind, s.n, s.batch), d, direction(&d))
            })
            .collect();
        let mut in_bytes = 0;
        let mut out_bytes = 0;
        for (_, d, _) in &shapes {
            let e = d.validate().expect("valid");
            in_bytes = in_bytes.max(e.input_bytes);
            out_bytes = out_bytes.max(e.output_bytes);
        }
        // The largest work size of the 26 plans (made and destroyed once to ask).
        let mut work_bytes = 0;
        for (_, d, _) in &shapes {
            let p = rt.plan_create(d, PlanOptions::default())?;
            work_bytes = work_bytes.max(p.work_size);
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_destroy(p.plan) }?;
        }
        let stream = rt.stream_create()?;
        let input = rt.malloc(in_bytes)?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.memcpy_htod(input, &vec![0u8; in_bytes]) }?;
        let output = rt.malloc(out_bytes)?;
        let work = rt.malloc(work_bytes.max(1))?;
        Ok(Bench { name, rt, stream, input, output, work, work_bytes, shapes })
    }

    /// Per-call microseconds of each measured cycle.
    fn cycles(&self, warmup: usize, cycles: usize, mut call: impl FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        let n = self.shapes.len();
        let mut out = Vec::with_capacity(cycles);
        for c in 0..warmup + cycles {
            let t = Instant::now();
            for i in 0..n {
                call(i)?;
            }
            // SAFETY: see the note at the top of this file.
            unsafe { self.rt.stream_synchronize(self.stream) }?;
            let dt = t.elapsed();
            if c >= warmup {
                out.push(dt.as_secs_f64() * 1e6 / n as f64);
            }
        }
        Ok(out)
    }

    fn work_for(&self, work_size: usize) -> Result<Option<DevicePtr>> {
        if work_size > self.work_bytes {
            return Err(hipfft_pool::Error::InvalidArgument {
                name: "work_area",
                reason: format!("plan wants {work_size} bytes, the shared area holds {}", self.work_bytes),
            });
        }
        Ok((work_size > 0).then_some(self.work))
    }

    /// Raw plans made beforehand, no cache.
    fn floor(&self, warmup: usize, cycles: usize) -> Result<Row> {
        let rt = &*self.rt;
        let mut plans: Vec<(RawPlan, Option<DevicePtr>)> = Vec::new();
        for (_, d, _) in &self.shapes {
            let p = rt.plan_create(d, PlanOptions::default())?;
            plans.push((p.plan, self.work_for(p.work_size)?));
        }
        let v = self.cycles(warmup, cycles, |i| {
            let (_, d, dir) = &self.shapes[i];
            let (plan, work) = plans[i];
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_exec(plan, d.transform, self.stream, work, self.input, self.output, *dir) }
        });
        // SAFETY: see the note at the top of this file.
        unsafe { rt.stream_synchronize(self.stream) }?;
        for (p, _) in plans {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_destroy(p) }?;
        }
        Ok(Row {
            variant: "floor: raw plans made beforehand, no cache".into(),
            runtime: self.name,
            capacity: None,
            stats: Stats::of(v?),
            extra: json!({}),
        })
    }

    fn pool(&self, capacity: usize, warmup: usize, cycles: usize, release: Release) -> Result<Row> {
        let config = PoolConfig::builder()
            .capacity(capacity)
            .private_ceiling(capacity)
            .acquire_timeout(Duration::from_secs(60))
            .build()?;
        let pool = PlanPool::new(config, self.rt.clone())?;
        let v = self.cycles(warmup, cycles, |i| self.pool_call(&pool, i, release));
        // SAFETY: see the note at the top of this file.
        unsafe { self.rt.stream_synchronize(self.stream) }?;
        let m = pool.metrics();
        let report = pool.shutdown();
        let release = release.name();
        Ok(Row {
            variant: format!("pool, capacity {capacity}, {release}"),
            runtime: self.name,
            capacity: Some(capacity),
            stats: Stats::of(v?),
            extra: json!({
                "release": release, "hits": m.hits, "misses": m.misses, "creations": m.creations,
                "destroys": m.destroys, "ceiling_waits": m.ceiling_waits, "peak_live": m.peak_live,
                "shutdown_destroyed": report.destroyed,
            }),
        })
    }

    /// One call of a pool variant: acquire shape `i`, exec, release as `release` says.
    fn pool_call(&self, pool: &PlanPool, i: usize, release: Release) -> Result<()> {
            let (_, d, dir) = &self.shapes[i];
            let lease = pool.acquire(d)?;
            // SAFETY: see the note at the top of this file.
            unsafe { lease.exec(self.stream, self.input, self.output, *dir, self.work_for(lease.work_size())?) }?;
            match release {
                // SAFETY: see the note at the top of this file.
                Release::After => unsafe { lease.release_after(self.stream) }.map_err(|e| {
                    // SAFETY: see the note at the top of this file.
                    let _ = unsafe { self.rt.stream_synchronize(self.stream) };
                    e.error
                }),
                Release::Batch => {
                    // SAFETY: see the note at the top of this file; the stream outlives the pool.
                    unsafe { lease.release_in_batch(self.stream) }?;
                    // The cycle's last call ends the batch, as a host's commit would.
                    if i + 1 == self.shapes.len() {
                        // SAFETY: as above.
                        unsafe { pool.end_batch(self.stream) }?;
                    }
                    Ok(())
                }
                Release::AtOnce => {
                    // Safe here: at capacity 128 nothing is evicted while the stream runs.
                    lease.release();
                    Ok(())
                }
            }
    }

    /// The floor, the floor with one event per call and the three pool variants at 128
    /// measured in turn, `rounds` rounds of `cycles / rounds` cycles each, the order
    /// rotated every round: the machine's drift (the floor moved by 7 to 14% between the
    /// sequential rows of one run) falls on all five alike. Besides each variant's per-cycle times, each round gives the variant's
    /// mean against the floor's mean of the same round; the rows carry the median of those
    /// paired ratios (`paired_x_floor`).
    fn alternated(&self, warmup: usize, cycles: usize, rounds: usize) -> Result<Vec<Row>> {
        let rt = &*self.rt;
        let mut plans: Vec<(RawPlan, Option<DevicePtr>)> = Vec::new();
        for (_, d, _) in &self.shapes {
            let p = rt.plan_create(d, PlanOptions::default())?;
            plans.push((p.plan, self.work_for(p.work_size)?));
        }
        let releases = [Release::After, Release::Batch, Release::AtOnce];
        let mut pools = Vec::new();
        for _ in releases {
            let config = PoolConfig::builder().capacity(128).private_ceiling(128).acquire_timeout(Duration::from_secs(60)).build()?;
            pools.push(PlanPool::new(config, self.rt.clone())?);
        }
        let per_round = (cycles / rounds.max(1)).max(1);
        // One event, recorded after every call of variant 1 and never queried: re-recording
        // an event is what the runtime charges for a per-call completion marker.
        let marker = rt.event_create()?;
        const VARIANTS: usize = 5;
        // Variant 0 is the floor, 1 the floor with an event per call, 2..=4 the pools in
        // `releases` order.
        let run = |v: usize, n: usize, warm: usize| -> Result<Vec<f64>> {
            if v <= 1 {
                self.cycles(warm, n, |i| {
                    let (_, d, dir) = &self.shapes[i];
                    let (plan, work) = plans[i];
                    // SAFETY: see the note at the top of this file.
                    unsafe { rt.plan_exec(plan, d.transform, self.stream, work, self.input, self.output, *dir) }?;
                    if v == 1 {
                        // SAFETY: see the note at the top of this file.
                        unsafe { rt.event_record(marker, self.stream) }?;
                    }
                    Ok(())
                })
            } else {
                self.cycles(warm, n, |i| self.pool_call(&pools[v - 2], i, releases[v - 2]))
            }
        };
        let mut all: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS];
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS];
        for v in 0..VARIANTS {
            run(v, 0, warmup)?; // warm-up: plans made, caches and clocks settled
        }
        for r in 0..rounds.max(1) {
            let mut means = [0.0; VARIANTS];
            for k in 0..VARIANTS {
                let v = (r + k) % VARIANTS;
                let got = run(v, per_round, 0)?;
                means[v] = got.iter().sum::<f64>() / got.len() as f64;
                all[v].extend(got);
            }
            for v in 0..VARIANTS {
                ratios[v].push(means[v] / means[0]);
            }
        }
        // SAFETY: see the note at the top of this file.
        unsafe { rt.stream_synchronize(self.stream) }?;
        // SAFETY: the stream it was recorded on is synchronized; nothing queries it.
        unsafe { rt.event_destroy(marker) }?;
        for (p, _) in plans {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_destroy(p) }?;
        }
        let mut rows = Vec::new();
        for (v, (cycles, paired)) in all.into_iter().zip(ratios).enumerate() {
            let paired = Stats::of(paired);
            let (variant, capacity, release) = match v {
                0 => ("floor, alternated with the pool rows".to_string(), None, "none".to_string()),
                1 => (
                    "floor + one cudaEventRecord per call, alternated".to_string(),
                    None,
                    "event per call, alternated".to_string(),
                ),
                _ => {
                    let name = releases[v - 2].name();
                    (format!("pool, capacity 128, {name}, alternated"), Some(128), format!("{name}, alternated"))
                }
            };
            rows.push(Row {
                variant,
                runtime: self.name,
                capacity,
                stats: Stats::of(cycles),
                extra: json!({"release": release, "rounds": rounds, "paired_x_floor": paired.median,
                              "paired_x_floor_p10": paired.p10, "paired_x_floor_p90": paired.p90}),
            });
        }
        for pool in pools {
            pool.shutdown();
        }
        Ok(rows)
    }

    /// The submitting thread's time for one plan creation while `queued_ms` of copies run on
    /// a second stream, five ways, interleaved per shape and round:
    /// - `raw create`: `plan_create` alone (what creation itself waits for on a busy GPU);
    /// - `raw inline evict`: destroy the previous plan, then create (MLX's and mlxcel's
    ///   caches on eviction): the destroy's `cudaFree` waits for the queue too;
    /// - `pool miss, no eviction`: a pool with room;
    /// - `pool miss, evicts over capacity`: capacity 1, ceiling 4: the evicted plan's destroy
    ///   runs on the destroyer thread;
    /// - `pool miss, evicts at the ceiling`: capacity = ceiling = 1: the miss needs the
    ///   evicted plan's slot, so it waits for that destroy.
    fn busy(&self, queued_ms: &[f64], rounds: usize) -> Result<Value> {
        const VARIANTS: [&str; 5] = [
            "raw create",
            "raw inline evict (destroy + create)",
            "pool miss, no eviction",
            "pool miss, evicts over capacity",
            "pool miss, evicts at the ceiling",
        ];
        let rt = &*self.rt;
        // Copies of a large buffer on a stream of their own keep the GPU busy for a known time.
        const COPY_BYTES: usize = 256 << 20;
        let (src, dst) = (rt.malloc(COPY_BYTES)?, rt.malloc(COPY_BYTES)?);
        let busy = rt.stream_create()?;
        let copy = |k: usize| -> Result<()> {
            for _ in 0..k {
                // SAFETY: see the note at the top of this file.
                unsafe { rt.memcpy_dtod_async(dst, src, COPY_BYTES, busy) }?;
            }
            Ok(())
        };
        let sync_busy = || -> Result<()> {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.stream_synchronize(busy) }
        };
        // Calibrate: the mean time of one copy over 20.
        copy(2)?;
        sync_busy()?;
        let t = Instant::now();
        copy(20)?;
        sync_busy()?;
        let copy_ms = (t.elapsed().as_secs_f64() * 1e3 / 20.0).max(1e-6);
        let pool_of = |capacity: usize, ceiling: usize| -> Result<PlanPool> {
            let config = PoolConfig::builder().capacity(capacity).private_ceiling(ceiling).acquire_timeout(Duration::from_secs(60)).build()?;
            PlanPool::new(config, self.rt.clone())
        };
        let settled = |pool: &PlanPool| {
            let until = Instant::now() + Duration::from_secs(30);
            loop {
                let m = pool.metrics();
                if m.destroys + m.cached as u64 >= m.creations || Instant::now() >= until {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        };
        let mut out = Vec::new();
        for &q in queued_ms {
            let copies = if q <= 0.0 { 0 } else { (q / copy_ms).ceil() as usize };
            let roomy = pool_of(64, 64)?;
            let over = pool_of(1, 4)?;
            let at = pool_of(1, 1)?;
            let mut prev_raw: Option<RawPlan> = None;
            let mut times: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
            for round in 0..rounds + 1 {
                for (_, d, _) in &self.shapes {
                    for (v, slot) in times.iter_mut().enumerate() {
                        sync_busy()?;
                        copy(copies)?;
                        let t = Instant::now();
                        let mut made_raw = None;
                        match v {
                            0 => made_raw = Some(rt.plan_create(d, PlanOptions::default())?.plan),
                            1 => {
                                if let Some(p) = prev_raw.take() {
                                    // SAFETY: see the note at the top of this file.
                                    unsafe { rt.plan_destroy(p) }?;
                                }
                                prev_raw = Some(rt.plan_create(d, PlanOptions::default())?.plan);
                            }
                            2 => drop(roomy.acquire(d)?),
                            3 => drop(over.acquire(d)?),
                            _ => drop(at.acquire(d)?),
                        }
                        let dt = t.elapsed().as_secs_f64() * 1e3;
                        sync_busy()?;
                        if let Some(p) = made_raw {
                            // SAFETY: see the note at the top of this file.
                            unsafe { rt.plan_destroy(p) }?;
                        }
                        if v == 2 {
                            // Room again for the next miss (destroyed while the GPU is idle).
                            roomy.trim();
                        }
                        // Every plan that left a cache destroyed before the next timing.
                        for pool in [&roomy, &over, &at] {
                            settled(pool);
                        }
                        // The first round fills caches and loads modules: not kept.
                        if round > 0 {
                            slot.push(dt);
                        }
                    }
                }
            }
            if let Some(p) = prev_raw.take() {
                // SAFETY: see the note at the top of this file.
                unsafe { rt.plan_destroy(p) }?;
            }
            let evictions = [over.metrics().evictions, at.metrics().evictions];
            let roomy_evictions = roomy.metrics().evictions;
            for pool in [roomy, over, at] {
                pool.shutdown();
            }
            let stats: Vec<Stats> = times.into_iter().map(Stats::of).collect();
            let rows: Vec<Value> = VARIANTS
                .iter()
                .zip(&stats)
                .map(|(name, s)| json!({"variant": name, "median_ms": s.median, "p10_ms": s.p10, "p90_ms": s.p90, "samples": s.n}))
                .collect();
            out.push(json!({
                "queued_ms": q,
                "copies": copies,
                "copy_ms": copy_ms,
                "variants": rows,
                "pool_over_capacity_vs_no_eviction": stats[3].median / stats[2].median,
                "pool_at_ceiling_vs_no_eviction": stats[4].median / stats[2].median,
                "raw_inline_evict_vs_raw_create": stats[1].median / stats[0].median,
                "evictions_over_capacity_and_at_ceiling": evictions,
                "evictions_no_eviction_pool": roomy_evictions,
            }));
        }
        // SAFETY: see the note at the top of this file.
        unsafe {
            rt.stream_synchronize(busy)?;
            rt.stream_destroy(busy)?;
            rt.free(src)?;
            rt.free(dst)?;
        }
        Ok(json!({"runtime": self.name, "rounds": rounds, "per_queue": out}))
    }

    /// Per shape: raw (destroy the previous plan, create this one) and a pool miss at
    /// capacity 1 (evicts and destroys the idle plan, creates), interleaved by round.
    fn creation(&self, knobs: Creation) -> Result<Value> {
        let Creation { reps, pool_first, gap_ms, call_costs, two_threads, trim_pool, anchor } = knobs;
        const DISCARD: usize = 2;
        // `--call-costs`: the runtime with each create and destroy's cost recorded.
        let clocked = call_costs
            .then(|| Arc::new(Clocked { inner: self.rt.clone(), tag: AtomicUsize::new(usize::MAX), costs: Default::default() }));
        let runtime: Arc<dyn Runtime> = match &clocked {
            Some(c) => c.clone(),
            None => self.rt.clone(),
        };
        let rt = &*runtime;
        let n = self.shapes.len();
        let config = PoolConfig::builder().capacity(1).private_ceiling(1).build()?;
        let pool = PlanPool::new(config, runtime.clone())?;
        let mut raw = vec![Vec::new(); n];
        let mut raw_create = vec![Vec::new(); n];
        let mut pooled = vec![Vec::new(); n];
        let mut prev: Option<RawPlan> = None;
        // The pool's thread structure without the pool: the destroy on one thread (as the
        // destroyer), the create on another (as a creation worker), the caller waiting on
        // each hand-off in turn. It tells the cost of running cuFFT's calls on other threads
        // from the pool's own logic.
        let mut threaded = vec![Vec::new(); n];
        let mut threaded_in_calls = vec![Vec::new(); n];
        let (destroy_tx, destroy_rx) = std::sync::mpsc::channel::<RawPlan>();
        let (destroyed_tx, destroyed_rx) = std::sync::mpsc::channel::<Result<f64>>();
        let (create_tx, create_rx) = std::sync::mpsc::channel::<PlanDesc>();
        let (created_tx, created_rx) = std::sync::mpsc::channel::<Result<(RawPlan, f64)>>();
        let (rt_d, rt_c) = (runtime.clone(), runtime.clone());
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(name.into()).spawn(f).map_err(|e| hipfft_pool::Error::Internal(format!("cannot start {name}: {e}")))
        };
        let destroyer = spawn("bench-destroyer", Box::new(move || {
            while let Ok(p) = destroy_rx.recv() {
                let t = Instant::now();
                // SAFETY: see the note at the top of this file.
                let r = unsafe { rt_d.plan_destroy(p) }.map(|()| t.elapsed().as_secs_f64() * 1e6);
                if destroyed_tx.send(r).is_err() {
                    break;
                }
            }
        }))?;
        let creator = spawn("bench-creator", Box::new(move || {
            while let Ok(d) = create_rx.recv() {
                let t = Instant::now();
                let r = rt_c.plan_create(&d, PlanOptions::default()).map(|p| (p.plan, t.elapsed().as_secs_f64() * 1e6));
                if created_tx.send(r).is_err() {
                    break;
                }
            }
        }))?;
        let gone = || hipfft_pool::Error::Internal("a benchmark thread ended".into());
        // `--creation-alive anchor`: a plan of a shape outside the set, alive throughout.
        let anchor = if anchor {
            Some(rt.plan_create(&PlanDesc::new(hipfft_pool::TransformType::C2C, &[96], 1), PlanOptions::default())?.plan)
        } else {
            None
        };
        let mut prev_threaded: Option<RawPlan> = None;
        for rep in 0..DISCARD + reps {
            for part in if pool_first { [1, 0, 2] } else { [0, 1, 2] } {
                if part == 2 && !two_threads {
                    continue;
                }
                if gap_ms > 0 {
                    std::thread::sleep(Duration::from_millis(gap_ms));
                }
                let tag = |i: usize| {
                    if let Some(c) = &clocked {
                        c.tag.store(if rep < DISCARD { usize::MAX } else { part * 1000 + i }, Ordering::SeqCst)
                    }
                };
                if part == 2 {
                    for (i, (_, d, _)) in self.shapes.iter().enumerate() {
                        tag(i);
                        let t = Instant::now();
                        let mut in_calls = 0.0;
                        if let Some(p) = prev_threaded.take() {
                            destroy_tx.send(p).map_err(|_| gone())?;
                            in_calls += destroyed_rx.recv().map_err(|_| gone())??;
                        }
                        create_tx.send(*d).map_err(|_| gone())?;
                        let (plan, us) = created_rx.recv().map_err(|_| gone())??;
                        in_calls += us;
                        let dt = t.elapsed();
                        prev_threaded = Some(plan);
                        if rep >= DISCARD {
                            threaded[i].push(dt.as_secs_f64() * 1e6);
                            threaded_in_calls[i].push(in_calls);
                        }
                    }
                    if let Some(p) = prev_threaded.take() {
                        // SAFETY: see the note at the top of this file.
                        unsafe { rt.plan_destroy(p) }?;
                    }
                } else if part == 0 {
                    for (i, (_, d, _)) in self.shapes.iter().enumerate() {
                        tag(i);
                        let t = Instant::now();
                        if let Some(p) = prev.take() {
                            // SAFETY: see the note at the top of this file.
                            unsafe { rt.plan_destroy(p) }?;
                        }
                        let t1 = Instant::now();
                        let p = rt.plan_create(d, PlanOptions::default())?;
                        let end = Instant::now();
                        prev = Some(p.plan);
                        if rep >= DISCARD {
                            raw[i].push((end - t).as_secs_f64() * 1e6);
                            raw_create[i].push((end - t1).as_secs_f64() * 1e6);
                        }
                    }
                    // The raw side's last plan is destroyed outside the pool's timing.
                    if let Some(p) = prev.take() {
                        // SAFETY: see the note at the top of this file.
                        unsafe { rt.plan_destroy(p) }?;
                    }
                } else {
                    for (i, (_, d, _)) in self.shapes.iter().enumerate() {
                        tag(i);
                        let t = Instant::now();
                        drop(pool.acquire(d)?);
                        let dt = t.elapsed();
                        if rep >= DISCARD {
                            pooled[i].push(dt.as_secs_f64() * 1e6);
                        }
                    }
                    if trim_pool {
                        // Its last plan goes too, as the raw parts' do (untimed, unrecorded).
                        if let Some(c) = &clocked {
                            c.tag.store(usize::MAX, Ordering::SeqCst);
                        }
                        pool.trim();
                    }
                }
            }
        }
        if let Some(c) = &clocked {
            c.tag.store(usize::MAX, Ordering::SeqCst);
        }
        if let Some(p) = anchor {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_destroy(p) }?;
        }
        drop((destroy_tx, create_tx));
        let _ = (destroyer.join(), creator.join());
        let m = pool.metrics();
        pool.shutdown();
        let mut rows = Vec::new();
        let (mut sum_raw, mut sum_pool, mut sum_create) = (0.0, 0.0, 0.0);
        let (mut sum_threaded, mut sum_threaded_calls) = (0.0, 0.0);
        for i in 0..n {
            let r = Stats::of(std::mem::take(&mut raw[i]));
            let c = Stats::of(std::mem::take(&mut raw_create[i]));
            let p = Stats::of(std::mem::take(&mut pooled[i]));
            sum_raw += r.median;
            sum_pool += p.median;
            sum_create += c.median;
            // The third part left out (`--no-two-threads`), its figures are null (NaN).
            let (th, thc) = if two_threads {
                (Some(Stats::of(std::mem::take(&mut threaded[i]))), Some(Stats::of(std::mem::take(&mut threaded_in_calls[i]))))
            } else {
                (None, None)
            };
            sum_threaded += th.as_ref().map_or(f64::NAN, |s| s.median);
            sum_threaded_calls += thc.as_ref().map_or(f64::NAN, |s| s.median);
            rows.push(json!({
                "shape": self.shapes[i].0, "raw_destroy_create": r.json(), "raw_create_only": c.json(),
                "pool_miss_capacity_1": p.json(), "ratio": p.median / r.median,
                "raw_on_two_threads": th.map(|s| s.json()), "raw_on_two_threads_in_calls": thc.map(|s| s.json()),
            }));
        }
        // Per part, what each create and destroy cost its thread (`--call-costs`).
        let call_costs = clocked.map(|clocked| {
            let costs = std::mem::take(&mut *clocked.costs.lock());
            let of = |part: usize, create: bool| -> Value {
                let calls: Vec<&ClockedCall> = costs.iter().filter(|c| c.tag / 1000 == part && c.create == create).collect();
                let mine: Vec<(usize, CallCost)> = calls.iter().map(|c| (c.tag % 1000, c.cost)).collect();
                let mut v = call_cost::summary(&mine, n);
                let mut threads = std::collections::BTreeMap::<&str, usize>::new();
                let mut cpus = std::collections::BTreeMap::<i32, usize>::new();
                for c in &calls {
                    *threads.entry(&c.thread).or_default() += 1;
                    *cpus.entry(c.cpu).or_default() += 1;
                }
                v["threads"] = json!(threads);
                v["cpus"] = json!(cpus.iter().map(|(c, k)| format!("{c}:{k}")).collect::<Vec<_>>());
                v
            };
            json!({
                "raw": {"create": of(0, true), "destroy": of(0, false)},
                "pool": {"create": of(1, true), "destroy": of(1, false)},
                "two_threads": {"create": of(2, true), "destroy": of(2, false)},
            })
        });
        Ok(json!({
            "call_costs": call_costs,
            "runtime": self.name, "rounds": reps, "gap_ms": gap_ms, "pool_first": pool_first, "two_threads": two_threads,
            "trim_pool": trim_pool, "anchor": anchor.is_some(), "per_shape": rows,
            "mean_raw_us": sum_raw / n as f64, "mean_raw_create_only_us": sum_create / n as f64,
            "mean_pool_us": sum_pool / n as f64, "overhead_pct": 100.0 * (sum_pool / sum_raw - 1.0),
            "pool_misses": m.misses, "pool_destroys": m.destroys,
            "mean_raw_two_threads_us": sum_threaded / n as f64,
            "mean_raw_two_threads_in_calls_us": sum_threaded_calls / n as f64,
            // Time the pool spent inside the runtime's create and destroy, per miss: the rest
            // of a miss is the pool's own.
            "pool_in_runtime_us_per_miss": 1e6 * (m.create_latency.sum_s + m.destroy_latency.sum_s) / m.misses.max(1) as f64,
            "pool_create_us_mean": 1e6 * m.create_latency.sum_s / m.create_latency.count.max(1) as f64,
            "pool_destroy_us_mean": 1e6 * m.destroy_latency.sum_s / m.destroy_latency.count.max(1) as f64,
        }))
    }
}

impl Bench {
    /// Why a miss on other threads costs more than the same calls inline: destroy + create of
    /// the 26 shapes in turn (as the raw loop of `creation`), inline and through threads that
    /// stand for the pool's (destroy on one, create on another, or both on one), each with
    /// parking or polling waits, interleaved by round.
    fn thread_structures(&self, reps: usize) -> Result<Value> {
        const DISCARD: usize = 2;
        const NAMES: [&str; 5] = [
            "inline (the raw loop)",
            "destroy on one thread, create on another, parking",
            "destroy on one thread, create on another, polling 2 ms",
            "both on one thread, parking",
            "both on one thread, polling 2 ms",
        ];
        let rt = &*self.rt;
        let n = self.shapes.len();
        let threads: Vec<(CallThread, CallThread)> = [false, true, false, true]
            .iter()
            .map(|&spin| (CallThread::start(self.rt.clone(), spin), CallThread::start(self.rt.clone(), spin)))
            .collect();
        let mut total = vec![vec![Vec::new(); n]; NAMES.len()];
        let mut in_calls = vec![vec![Vec::new(); n]; NAMES.len()];
        let mut prev: Vec<Option<RawPlan>> = vec![None; NAMES.len()];
        for rep in 0..DISCARD + reps {
            for v in 0..NAMES.len() {
                for (i, (_, d, _)) in self.shapes.iter().enumerate() {
                    let t = Instant::now();
                    let (plan, calls) = match v {
                        0 => {
                            if let Some(p) = prev[v].take() {
                                // SAFETY: see the note at the top of this file.
                                unsafe { rt.plan_destroy(p) }?;
                            }
                            let p = rt.plan_create(d, PlanOptions::default())?.plan;
                            (p, t.elapsed().as_secs_f64() * 1e6)
                        }
                        1 | 2 => {
                            let (a, b) = &threads[v - 1];
                            let mut us = 0.0;
                            if let Some(p) = prev[v].take() {
                                us += a.run(Job::Destroy(p))?.1;
                            }
                            let (p, c) = b.run(Job::Create(*d))?;
                            (p.expect("made"), us + c)
                        }
                        _ => {
                            let (a, _) = &threads[v - 1];
                            let (p, c) = a.run(Job::Both(prev[v].take(), *d))?;
                            (p.expect("made"), c)
                        }
                    };
                    let dt = t.elapsed().as_secs_f64() * 1e6;
                    prev[v] = Some(plan);
                    if rep >= DISCARD {
                        total[v][i].push(dt);
                        in_calls[v][i].push(calls);
                    }
                }
            }
        }
        for p in prev.into_iter().flatten() {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.plan_destroy(p) }?;
        }
        let rows: Vec<Value> = NAMES
            .iter()
            .enumerate()
            .map(|(v, name)| {
                let mean = |x: &mut Vec<Vec<f64>>| x.iter_mut().map(|s| Stats::of(std::mem::take(s)).median).sum::<f64>() / n as f64;
                json!({"structure": name, "mean_us": mean(&mut total[v]), "mean_in_calls_us": mean(&mut in_calls[v])})
            })
            .collect();
        Ok(json!({"runtime": self.name, "rounds": reps, "structures": rows}))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        // SAFETY: see the note at the top of this file.
        let _ = unsafe { self.rt.stream_synchronize(self.stream) };
        for p in [self.input, self.output, self.work] {
            // SAFETY: see the note at the top of this file.
            let _ = unsafe { self.rt.free(p) };
        }
        // SAFETY: see the note at the top of this file.
        let _ = unsafe { self.rt.stream_destroy(self.stream) };
    }
}

fn open_primary(which: &str) -> std::result::Result<Arc<dyn Runtime>, String> {
    match which {
        "sim" => Ok(Arc::new(SimRuntime::from_env())),
        "cuda" => hipfft_pool::runtime::cuda::CudaRuntime::new().map(|r| Arc::new(r) as Arc<dyn Runtime>).map_err(|e| e.to_string()),
        other => Err(format!("--runtime {other:?}: expected cuda or sim")),
    }
}

fn open_hip() -> std::result::Result<Arc<dyn Runtime>, String> {
    let fft = std::env::var_os("HIPFFT_POOL_HIPFFT_LIB").filter(|v| !v.is_empty());
    let hip = std::env::var_os("HIPFFT_POOL_HIP_LIB").filter(|v| !v.is_empty());
    match (fft, hip) {
        (Some(f), Some(h)) => HipRuntime::load_from(&PathBuf::from(f), &PathBuf::from(h))
            .map(|r| Arc::new(r) as Arc<dyn Runtime>)
            .map_err(|e| e.to_string()),
        _ => Err("HIPFFT_POOL_HIPFFT_LIB and HIPFFT_POOL_HIP_LIB are not both set".into()),
    }
}

fn main() {
    let args = Args::parse();
    let rt = match open_primary(&args.runtime) {
        Ok(rt) => rt,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    if let Err(e) = run(&args, rt) {
        eprintln!("gpu_bench: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args, rt: Arc<dyn Runtime>) -> Result<()> {
    let info = rt.info();
    let primary = if args.runtime == "sim" { "sim" } else { "cuda" };
    eprintln!("gpu_bench: {primary}: {:?} {:?}", info.devices, info.versions);
    let miss_warmup = args.warmup.min(5);
    let mut rows = Vec::new();
    let mut creation = Vec::new();
    let busy: Option<Value>;
    let structures: Option<Value>;
    {
        let b = Bench::new(primary, rt)?;
        eprintln!("gpu_bench: shared work area {} bytes", b.work_bytes);
        // Plan creation first as well, in a process that has run nothing else: against the
        // same part after the rows, it tells whether what ran before changes a miss's cost.
        let mut first = b.creation(args.creation())?;
        first["runtime"] = json!(format!("{primary}, before the other parts"));
        creation.push(first);
        if args.creation_only {
            return report_creation_only(args, &creation);
        }
        rows.push(b.floor(args.warmup, args.cycles)?);
        rows.push(b.pool(128, args.warmup, args.cycles, Release::After)?);
        rows.push(b.pool(128, args.warmup, args.cycles, Release::Batch)?);
        rows.push(b.pool(128, args.warmup, args.cycles, Release::AtOnce)?);
        // The floor again: how far the machine drifted while the rows above ran.
        let mut again = b.floor(args.warmup, args.cycles)?;
        again.variant = "floor again, after the pool rows".into();
        rows.push(again);
        rows.push(b.pool(8, miss_warmup, args.miss_cycles, Release::After)?);
        rows.extend(b.alternated(args.warmup, args.cycles, args.rounds)?);
        creation.push(b.creation(args.creation())?);
        busy = Some(b.busy(&args.busy_ms, args.busy_rounds)?);
        structures = Some(b.thread_structures(args.create_reps)?);
    }
    let mut hip_skipped = None;
    let mut hip_info = None;
    if args.no_hip {
        hip_skipped = Some("--no-hip".to_string());
    } else {
        match open_hip() {
            Ok(hrt) => {
                let i = hrt.info();
                hip_info = Some(json!({"libraries": i.libraries, "versions": i.versions, "devices": i.devices}));
                // A failure here is reported and the cuFFT results still printed.
                let hip_rows = (|| -> Result<(Vec<Row>, Value)> {
                    let b = Bench::new("hip-shim", hrt)?;
                    let rows = vec![
                        b.floor(args.warmup, args.cycles)?,
                        b.pool(128, args.warmup, args.cycles, Release::After)?,
                        b.pool(128, args.warmup, args.cycles, Release::Batch)?,
                        b.pool(8, miss_warmup, args.miss_cycles, Release::After)?,
                    ];
                    Ok((rows, b.creation(args.creation())?))
                })();
                match hip_rows {
                    Ok((r, c)) => {
                        rows.extend(r);
                        creation.push(c);
                    }
                    Err(e) => {
                        eprintln!("gpu_bench: hip variants failed: {e}");
                        hip_skipped = Some(format!("failed: {e}"));
                    }
                }
            }
            Err(why) => {
                eprintln!("gpu_bench: hip variants skipped: {why}");
                hip_skipped = Some(why);
            }
        }
    }

    let floor = rows[0].stats.median;
    let hip_floor = rows.iter().find(|r| r.runtime == "hip-shim" && r.capacity.is_none()).map(|r| r.stats.median);
    println!();
    println!(
        "Per call over the 26-shape cycle (median of per-cycle means; {} cycles, {} for capacity 8), us; x floor = against the raw {primary} floor, x own fl = against the floor of the same runtime",
        args.cycles, args.miss_cycles
    );
    println!(
        "{:<48} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "variant", "runtime", "median", "p10", "p90", "x floor", "x own fl"
    );
    for r in &rows {
        let own = if r.runtime == "hip-shim" { hip_floor.unwrap_or(floor) } else { floor };
        println!(
            "{:<48} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>8.3} {:>9.3}",
            r.variant,
            r.runtime,
            r.stats.median,
            r.stats.p10,
            r.stats.p90,
            r.stats.median / floor,
            r.stats.median / own
        );
    }
    println!();
    print_creation(&creation);
    if let Some(st) = &structures {
        println!("Destroy + create of the 26 shapes in turn, mean of per-shape medians over {} rounds, us ({}): whole call, and inside the runtime's calls", st["rounds"], st["runtime"].as_str().unwrap_or("?"));
        for r in st["structures"].as_array().into_iter().flatten() {
            println!(
                "  {:<52} {:>8.1} {:>8.1}",
                r["structure"].as_str().unwrap_or("?"),
                r["mean_us"].as_f64().unwrap_or(f64::NAN),
                r["mean_in_calls_us"].as_f64().unwrap_or(f64::NAN)
            );
        }
        println!();
    }
    if let Some(b) = &busy {
        println!(
            "Plan creation on a busy GPU ({}): the submitting thread's ms per creation, median over {} rounds of the 26 shapes, with copies queued on another stream first",
            b["runtime"].as_str().unwrap_or("?"),
            b["rounds"]
        );
        for q in b["per_queue"].as_array().into_iter().flatten() {
            println!("  queued {:.0} ms ({} copies of {:.3} ms)", q["queued_ms"].as_f64().unwrap_or(0.0), q["copies"], q["copy_ms"].as_f64().unwrap_or(0.0));
            for v in q["variants"].as_array().into_iter().flatten() {
                println!(
                    "    {:<40} {:>9.3} ms   p10 {:>8.3}  p90 {:>8.3}",
                    v["variant"].as_str().unwrap_or("?"),
                    v["median_ms"].as_f64().unwrap_or(f64::NAN),
                    v["p10_ms"].as_f64().unwrap_or(f64::NAN),
                    v["p90_ms"].as_f64().unwrap_or(f64::NAN)
                );
            }
            println!(
                "    pool evicting over capacity / no eviction {:.3}x; at the ceiling {:.3}x; raw inline evict / raw create {:.3}x (evictions {})",
                q["pool_over_capacity_vs_no_eviction"].as_f64().unwrap_or(f64::NAN),
                q["pool_at_ceiling_vs_no_eviction"].as_f64().unwrap_or(f64::NAN),
                q["raw_inline_evict_vs_raw_create"].as_f64().unwrap_or(f64::NAN),
                q["evictions_over_capacity_and_at_ceiling"]
            );
        }
        println!();
    }
    if let Some(why) = &hip_skipped {
        println!("hip-shim variants skipped: {why}");
    }

    if let Some(path) = &args.json {
        let variants: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut v = json!({
                    "variant": r.variant, "runtime": r.runtime, "capacity": r.capacity,
                    "per_call": r.stats.json(), "x_floor": r.stats.median / floor, "detail": r.extra,
                });
                if let (Some(hf), "hip-shim") = (hip_floor, r.runtime) {
                    v["x_hip_floor"] = json!(r.stats.median / hf);
                }
                v
            })
            .collect();
        let doc = json!({
            "program": "gpu_bench",
            "runtime": primary,
            "devices": info.devices,
            "versions": info.versions,
            "libraries": info.libraries,
            "hip": hip_info,
            "hip_skipped": hip_skipped,
            "shapes": 26,
            "cycles": args.cycles,
            "miss_cycles": args.miss_cycles,
            "warmup_cycles": args.warmup,
            "method": "per call = wall time of one cycle of the 26 shapes (one transform each, one stream, synchronized at the cycle's end) / 26; median over cycles after warm-up; one input, output and work area (the largest work size) allocated once for all variants",
            "variants": variants,
            "creation": creation,
            "busy_gpu_creation": busy,
            "creation_thread_structures": structures,
        });
        let text = serde_json::to_string_pretty(&doc).expect("json");
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("gpu_bench: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
        eprintln!("gpu_bench: wrote {}", path.display());
    }
    Ok(())
}

/// The plan-creation parts' table: per shape raw against the pool's miss, and the means.
fn print_creation(creation: &[Value]) {
    for c in creation {
        println!(
            "Plan creation ({}), per shape, median of {} rounds, us: raw = destroy previous + create; pool = miss at capacity 1",
            c["runtime"].as_str().unwrap_or("?"),
            c["rounds"]
        );
        println!("{:<32} {:>10} {:>10} {:>10} {:>7}", "shape", "raw", "create", "pool", "ratio");
        for s in c["per_shape"].as_array().into_iter().flatten() {
            println!(
                "{:<32} {:>10.1} {:>10.1} {:>10.1} {:>7.3}",
                s["shape"].as_str().unwrap_or("?"),
                s["raw_destroy_create"]["median_us"].as_f64().unwrap_or(f64::NAN),
                s["raw_create_only"]["median_us"].as_f64().unwrap_or(f64::NAN),
                s["pool_miss_capacity_1"]["median_us"].as_f64().unwrap_or(f64::NAN),
                s["ratio"].as_f64().unwrap_or(f64::NAN),
            );
        }
        println!(
            "raw destroy + create on two other threads (the pool's structure, no pool): {:.1} us per miss, {:.1} of it inside the calls; pool in its calls {:.1} us",
            c["mean_raw_two_threads_us"].as_f64().unwrap_or(f64::NAN),
            c["mean_raw_two_threads_in_calls_us"].as_f64().unwrap_or(f64::NAN),
            c["pool_in_runtime_us_per_miss"].as_f64().unwrap_or(f64::NAN),
        );
        println!(
            "{:<32} {:>10.1} {:>10.1} {:>10.1}   pool adds {:+.2}%",
            "mean of medians",
            c["mean_raw_us"].as_f64().unwrap_or(f64::NAN),
            c["mean_raw_create_only_us"].as_f64().unwrap_or(f64::NAN),
            c["mean_pool_us"].as_f64().unwrap_or(f64::NAN),
            c["overhead_pct"].as_f64().unwrap_or(f64::NAN),
        );
        if c["call_costs"].is_object() {
            for part in ["raw", "pool", "two_threads"] {
                for call in ["create", "destroy"] {
                    let v = &c["call_costs"][part][call];
                    println!("{part:>11} {call:<7}: {}; threads {}, cpus {}", call_cost::line(v), v["threads"], v["cpus"]);
                }
            }
        }
        println!();
    }
}

/// `--creation-only`: the first creation part, printed and written, nothing else run.
fn report_creation_only(args: &Args, creation: &[Value]) -> Result<()> {
    print_creation(creation);
    if let Some(path) = &args.json {
        let v = json!({"creation": creation, "create_reps": args.create_reps, "create_gap_ms": args.create_gap_ms});
        std::fs::write(path, serde_json::to_string_pretty(&v).expect("json"))
            .map_err(|e| hipfft_pool::Error::Internal(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}
