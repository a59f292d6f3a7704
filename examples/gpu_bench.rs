//! GPU benchmark of the plan provider (build with `--features cuda`).
//!
//! Per call, over the 26 probe shapes in turn (one call = one transform of one shape on one
//! stream; the stream is synchronized once per cycle of 26; per-call time = cycle wall time /
//! 26; the median over many cycles after warm-up cycles):
//!
//! - `floor`: raw cuFFT through `CudaRuntime`, every plan made beforehand, no cache at all;
//! - `pool 128`: the pool at capacity 128 (acquire + exec + `release_after` per call);
//! - `pool 128 release`: the same releasing at once (what `release_after` costs: an event);
//! - `pool 8`: capacity (and live ceiling) 8, as MLX's ROCm port: every call misses;
//! - `hip floor`, `hip pool 128`, `hip pool 8`: the same through `HipRuntime` over hip-shim
//!   built with `--features cuda` (paths from `HIPFFT_POOL_HIPFFT_LIB` and
//!   `HIPFFT_POOL_HIP_LIB`; skipped when unset), i.e. the hipFFT code path on NVIDIA;
//!
//! and plan creation per shape: raw (destroy the previous plan, create this one) against a
//! pool miss at capacity 1 (which does the same: evicts and destroys the idle plan, creates).
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
use std::time::{Duration, Instant};

use clap::Parser;
use hipfft_pool::runtime::hip::HipRuntime;
use hipfft_pool::runtime::sim::SimRuntime;
use hipfft_pool::{DevicePtr, Direction, PlanDesc, PlanOptions, PlanPool, PoolConfig, RawPlan, RawStream, Result, Runtime};
use serde_json::{Value, json};

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

    fn pool(&self, capacity: usize, warmup: usize, cycles: usize, release_after: bool) -> Result<Row> {
        let config = PoolConfig::builder()
            .capacity(capacity)
            .private_ceiling(capacity)
            .acquire_timeout(Duration::from_secs(60))
            .build()?;
        let pool = PlanPool::new(config, self.rt.clone())?;
        let v = self.cycles(warmup, cycles, |i| {
            let (_, d, dir) = &self.shapes[i];
            let lease = pool.acquire(d)?;
            // SAFETY: see the note at the top of this file.
            unsafe { lease.exec(self.stream, self.input, self.output, *dir, self.work_for(lease.work_size())?) }?;
            if release_after {
                // SAFETY: see the note at the top of this file.
                unsafe { lease.release_after(self.stream) }.map_err(|e| {
                    // SAFETY: see the note at the top of this file.
                    let _ = unsafe { self.rt.stream_synchronize(self.stream) };
                    e.error
                })
            } else {
                // Safe here: at capacity 128 nothing is evicted while the stream runs.
                lease.release();
                Ok(())
            }
        });
        // SAFETY: see the note at the top of this file.
        unsafe { self.rt.stream_synchronize(self.stream) }?;
        let m = pool.metrics();
        let report = pool.shutdown();
        let release = if release_after { "release_after" } else { "release at once" };
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

    /// Per shape: raw (destroy the previous plan, create this one) and a pool miss at
    /// capacity 1 (evicts and destroys the idle plan, creates), interleaved by round.
    fn creation(&self, reps: usize, pool_first: bool) -> Result<Value> {
        const DISCARD: usize = 2;
        let rt = &*self.rt;
        let n = self.shapes.len();
        let config = PoolConfig::builder().capacity(1).private_ceiling(1).build()?;
        let pool = PlanPool::new(config, self.rt.clone())?;
        let mut raw = vec![Vec::new(); n];
        let mut raw_create = vec![Vec::new(); n];
        let mut pooled = vec![Vec::new(); n];
        let mut prev: Option<RawPlan> = None;
        for rep in 0..DISCARD + reps {
            for part in if pool_first { [1, 0] } else { [0, 1] } {
                if part == 0 {
                    for (i, (_, d, _)) in self.shapes.iter().enumerate() {
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
                        let t = Instant::now();
                        drop(pool.acquire(d)?);
                        let dt = t.elapsed();
                        if rep >= DISCARD {
                            pooled[i].push(dt.as_secs_f64() * 1e6);
                        }
                    }
                }
            }
        }
        let m = pool.metrics();
        pool.shutdown();
        let mut rows = Vec::new();
        let (mut sum_raw, mut sum_pool, mut sum_create) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let r = Stats::of(std::mem::take(&mut raw[i]));
            let c = Stats::of(std::mem::take(&mut raw_create[i]));
            let p = Stats::of(std::mem::take(&mut pooled[i]));
            sum_raw += r.median;
            sum_pool += p.median;
            sum_create += c.median;
            rows.push(json!({
                "shape": self.shapes[i].0, "raw_destroy_create": r.json(), "raw_create_only": c.json(),
                "pool_miss_capacity_1": p.json(), "ratio": p.median / r.median,
            }));
        }
        Ok(json!({
            "runtime": self.name, "rounds": reps, "per_shape": rows,
            "mean_raw_us": sum_raw / n as f64, "mean_raw_create_only_us": sum_create / n as f64,
            "mean_pool_us": sum_pool / n as f64, "overhead_pct": 100.0 * (sum_pool / sum_raw - 1.0),
            "pool_misses": m.misses, "pool_destroys": m.destroys,
            // Time the pool spent inside the runtime's create and destroy, per miss: the rest
            // of a miss is the pool's own.
            "pool_in_runtime_us_per_miss": 1e6 * (m.create_latency.sum_s + m.destroy_latency.sum_s) / m.misses.max(1) as f64,
            "pool_create_us_mean": 1e6 * m.create_latency.sum_s / m.create_latency.count.max(1) as f64,
            "pool_destroy_us_mean": 1e6 * m.destroy_latency.sum_s / m.destroy_latency.count.max(1) as f64,
        }))
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
    {
        let b = Bench::new(primary, rt)?;
        eprintln!("gpu_bench: shared work area {} bytes", b.work_bytes);
        rows.push(b.floor(args.warmup, args.cycles)?);
        rows.push(b.pool(128, args.warmup, args.cycles, true)?);
        rows.push(b.pool(128, args.warmup, args.cycles, false)?);
        rows.push(b.pool(8, miss_warmup, args.miss_cycles, true)?);
        creation.push(b.creation(args.create_reps, args.pool_first)?);
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
                        b.pool(128, args.warmup, args.cycles, true)?,
                        b.pool(8, miss_warmup, args.miss_cycles, true)?,
                    ];
                    Ok((rows, b.creation(args.create_reps, args.pool_first)?))
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
    for c in &creation {
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
            "{:<32} {:>10.1} {:>10.1} {:>10.1}   pool adds {:+.2}%",
            "mean of medians",
            c["mean_raw_us"].as_f64().unwrap_or(f64::NAN),
            c["mean_raw_create_only_us"].as_f64().unwrap_or(f64::NAN),
            c["mean_pool_us"].as_f64().unwrap_or(f64::NAN),
            c["overhead_pct"].as_f64().unwrap_or(f64::NAN),
        );
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
