//! `hipfft-pool probe`: one run of the probe in this process, through the pool or through
//! the legacy cache, with the experiment flags the sweep passes on.
//!
//! With `--progress-protocol` it writes one line per event on stdout, for `sweep` (or any
//! supervisor) to follow; every line is `WORD key=value ...` except the last:
//!
//! ```text
//! start pid=4242 mode=legacy capacity=16 ceiling=- steps=78 sim_block_above_live=12
//! progress step=12 cycle=0 pos=12 shape=12 live=12 cached=12 inflight=0 rt_live=12 max=12 calls=- sim_live=12 t=0.031
//! sample step=12 cycle=0 pos=12 shape=12 ok=1 live=13 cached=13 inflight=0 rt_live=13 max=13 calls=- sim_live=13 t=0.034
//! heartbeat live=13 cached=12 inflight=0 rt_live=13 max=13 calls=create sim_live=13 t=0.250
//! phase name=shutdown t=0.251
//! result {"runtime":"sim","mode":"legacy",...}
//! ```
//!
//! `progress` comes before each step (a shape: one or two transforms), `sample` after it,
//! `heartbeat` every 200 ms from a thread of its own (so the counts during a hang are
//! known), `phase` when the run leaves the shape loop (`shutdown`: the pool shuts down or
//! the legacy cache is cleared, which destroys plans) and `result` carries the summary JSON.
//! `live`, `cached` and `inflight` are the plan source's own counts (the pool's metrics, or
//! the legacy cache's); `rt_live` counts handles at the runtime boundary (a wrapper around
//! the runtime: alive from just before `plan_create` until `plan_destroy` returns), `max` is
//! the most `rt_live` reached since the step began (a miss that creates before it evicts
//! shows here), `calls` names the plan calls running right now (`create`, `destroy`,
//! `exec`, `-` for none) and `sim_live` is the simulated runtime's own count (`-` when the
//! runtime is not the sim).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Args;
use hipfft_pool::pool::config::RuntimeChoice;
use hipfft_pool::check::probe::{self, PlanSource, ProbeOutcome, ProbeShape, RunOptions};
use hipfft_pool::runtime::sim::SimRuntime;
use hipfft_pool::{Error, PlanOptions, PlanPool, PoolConfig, Result, Runtime};

use hipfft_pool::check::audit::{AuditedRuntime, PlanCounts};
use super::legacy::{DestroyMode, LegacyCache};
use super::plot::{self, HLine, Series, TimelineRow};

/// The rocFFT log layers `--rocfft-log` turns on unless `--rocfft-layer` says otherwise:
/// trace (1), bench (2), plan (8) and runtime compilation (32). Profile (4) is left out
/// because it makes rocFFT wait for every kernel, which changes the synchronization under
/// study; kernel I/O (16) because it logs every buffer.
pub const DEFAULT_ROCFFT_LAYER: u32 = 1 | 2 | 8 | 32;

/// The experiment flags `probe` and `sweep` share.
#[derive(Args, Debug, Clone)]
pub struct ExperimentArgs {
    /// auto (hip if a device is there, else cuda, else sim), sim, hip or cuda.
    #[arg(long, default_value = "auto")]
    pub runtime: String,
    /// How many times to cycle the shape list.
    #[arg(long, default_value_t = 3)]
    pub cycles: usize,
    /// A shape file like shared/probe-shapes.json (default: the embedded 26 shapes).
    #[arg(long)]
    pub shapes: Option<PathBuf>,
    /// Device to run on.
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// Let the FFT library own each plan's work area (hipfftSetAutoAllocation left on;
    /// pool: `plan_options(PlanOptions { auto_allocation: true })`) and pass none to exec.
    #[arg(long)]
    pub auto_alloc: bool,
    /// The single-shape control: run shape I of the list (0-based) --repeat N times per
    /// cycle instead of the list. One plan, created once and reused.
    #[arg(long, value_name = "I", requires = "repeat")]
    pub repeat_shape: Option<usize>,
    /// How many times --repeat-shape runs per cycle.
    #[arg(long, value_name = "N", requires = "repeat_shape")]
    pub repeat: Option<usize>,
    /// rocFFT's kernel cache file (sets ROCFFT_RTC_CACHE_PATH).
    #[arg(long, value_name = "PATH")]
    pub rtc_cache: Option<PathBuf>,
    /// Where rocFFT compiles kernels (sets ROCFFT_RTC_PROCESS): 0 in this process, 1 in a
    /// helper process, 2 rocFFT's default (in process, a helper when a compile is running).
    #[arg(long, value_name = "0|1|2", value_parser = ["0", "1", "2"])]
    pub rtc_process: Option<String>,
    /// Turn rocFFT's logs on (ROCFFT_LAYER) and write each to a file in DIR
    /// (ROCFFT_LOG_TRACE_PATH=DIR/trace.log, ..._BENCH_, _PROFILE_, _PLAN_, _KERNELIO_,
    /// _RTC_, _TUNING_, _GRAPH_PATH). A sweep uses DIR/CONFIG/runN/.
    #[arg(long, value_name = "DIR")]
    pub rocfft_log: Option<PathBuf>,
    /// The ROCFFT_LAYER bit mask --rocfft-log sets: 1 trace, 2 bench, 4 profile, 8 plan,
    /// 16 kernel I/O, 32 runtime compilation, 64 tuning, 128 graph.
    #[arg(long, value_name = "MASK", default_value_t = DEFAULT_ROCFFT_LAYER)]
    pub rocfft_layer: u32,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    /// pool (this library) or legacy (MLX's old cache: an LRU of shared plans, no ceiling).
    #[arg(long, default_value = "pool")]
    pub mode: String,
    /// Plans the cache holds (default: from the environment, else 128).
    #[arg(long)]
    pub capacity: Option<usize>,
    /// Live handles allowed at once (pool only; default: from the environment, else the capacity).
    #[arg(long)]
    pub ceiling: Option<usize>,
    /// forward, reverse or shuffle:SEED.
    #[arg(long, default_value = "forward")]
    pub order: String,
    /// When an evicted plan is destroyed: deferred or eager (docs/investigation.md).
    #[arg(long, default_value = "deferred")]
    pub destroy: String,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Write the live, cached and in-flight handles after every step as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub timeline: Option<PathBuf>,
    /// Draw the timeline as SVG, with the ceiling and the sim's block threshold.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Progress lines on stdout for a supervisor (the protocol `sweep` reads; see the
    /// module docs of src/cli/probe.rs and docs/investigation.md).
    #[arg(long)]
    pub progress_protocol: bool,
    /// Kill this process when standard input closes (the sweep's child runs: a sweep that
    /// dies leaves no hung probe behind).
    #[arg(long, hide = true)]
    pub parent_watch: bool,
    /// The configuration name written in the timeline.
    #[arg(long, hide = true)]
    pub label: Option<String>,
    /// Serve the pool's Prometheus text on this loopback address while the probe runs
    /// (`curl http://127.0.0.1:PORT/metrics`; `/metrics.json` for JSON). Pool mode only.
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub metrics_addr: Option<String>,
    /// Write the pool's working set (a manifest: docs/warmup.md) to PATH after the run.
    #[arg(long, value_name = "PATH")]
    pub record: Option<PathBuf>,
    /// Make the plans of the manifest at PATH before the run (a warm-up), and report it.
    #[arg(long, value_name = "PATH")]
    pub warmup: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Pool,
    Legacy,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pool" => Some(Self::Pool),
            "legacy" => Some(Self::Legacy),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Pool => "pool",
            Self::Legacy => "legacy",
        }
    }
}

pub fn bad(name: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidArgument { name, reason: reason.into() }
}

pub fn parse_mode(s: &str) -> Result<Mode> {
    Mode::parse(s).ok_or_else(|| bad("--mode", format!("{s:?} is not pool or legacy")))
}

pub fn parse_destroy(s: &str) -> Result<DestroyMode> {
    DestroyMode::parse(s).ok_or_else(|| bad("--destroy", format!("{s:?} is not eager or deferred")))
}

pub fn parse_runtime(s: &str) -> Result<RuntimeChoice> {
    RuntimeChoice::parse(s).ok_or_else(|| bad("--runtime", format!("{s:?} is not auto, sim, hip or cuda")))
}

pub fn load_shapes(exp: &ExperimentArgs) -> Result<Vec<ProbeShape>> {
    match &exp.shapes {
        Some(p) => probe::load_shapes(p),
        None => Ok(probe::embedded_shapes()),
    }
}

/// The run order: `--repeat-shape I --repeat N`, else `order`.
pub fn run_order(exp: &ExperimentArgs, len: usize, order: &str) -> Result<Vec<usize>> {
    match (exp.repeat_shape, exp.repeat) {
        (Some(i), Some(n)) => probe::repeat_order(len, i, n),
        _ => probe::order(len, order),
    }
}

/// The rocFFT variables the experiment flags ask for; `log_dir` is created.
pub fn rocfft_env(exp: &ExperimentArgs, log_dir: Option<&Path>) -> std::io::Result<Vec<(String, String)>> {
    let mut env = Vec::new();
    if let Some(p) = &exp.rtc_cache {
        env.push(("ROCFFT_RTC_CACHE_PATH".into(), p.display().to_string()));
    }
    if let Some(p) = &exp.rtc_process {
        env.push(("ROCFFT_RTC_PROCESS".into(), p.clone()));
    }
    if let Some(dir) = log_dir {
        std::fs::create_dir_all(dir)?;
        let dir = std::path::absolute(dir)?;
        env.push(("ROCFFT_LAYER".into(), exp.rocfft_layer.to_string()));
        for (var, file) in [
            ("ROCFFT_LOG_TRACE_PATH", "trace.log"),
            ("ROCFFT_LOG_BENCH_PATH", "bench.log"),
            ("ROCFFT_LOG_PROFILE_PATH", "profile.log"),
            ("ROCFFT_LOG_PLAN_PATH", "plan.log"),
            ("ROCFFT_LOG_KERNELIO_PATH", "kernelio.log"),
            ("ROCFFT_LOG_RTC_PATH", "rtc.log"),
            ("ROCFFT_LOG_TUNING_PATH", "tuning.log"),
            ("ROCFFT_LOG_GRAPH_PATH", "graph.log"),
        ] {
            env.push((var.into(), dir.join(file).display().to_string()));
        }
    }
    Ok(env)
}

/// A runtime, and the simulated one behind it when it is the sim.
pub type Opened = (Arc<dyn Runtime>, Option<Arc<SimRuntime>>);

/// The runtime, and the simulated one behind it when it is the sim (for its live count).
pub fn open_runtime(choice: RuntimeChoice) -> Result<Opened> {
    let sim = || {
        let s = Arc::new(SimRuntime::from_env());
        (s.clone() as Arc<dyn Runtime>, Some(s))
    };
    if choice == RuntimeChoice::Sim {
        return Ok(sim());
    }
    let selected = hipfft_pool::runtime::select::open(choice)?;
    if selected.runtime.kind() == hipfft_pool::RuntimeKind::Sim {
        // `auto` fell back to the sim: open our own, whose counts we can read.
        drop(selected);
        return Ok(sim());
    }
    Ok((selected.runtime, None))
}

/// The plan source's counts at one moment.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    live: usize,
    cached: usize,
    in_flight: usize,
    sim_live: Option<usize>,
}

/// A protocol line's counts; `max` is the step window's maximum (see the module docs).
fn fields(c: &Counts, rt: &PlanCounts, max: usize) -> String {
    format!(
        "live={} cached={} inflight={} rt_live={} max={max} calls={} sim_live={}",
        c.live,
        c.cached,
        c.in_flight,
        rt.live.load(Ordering::SeqCst),
        rt.calls(),
        c.sim_live.map_or("-".to_string(), |v| v.to_string())
    )
}

/// Writes a protocol line; a closed stdout (the supervisor went) is ignored.
fn line(protocol: bool, text: std::fmt::Arguments<'_>) {
    if protocol {
        let mut out = std::io::stdout().lock();
        let _ = out.write_fmt(text);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

#[derive(serde::Serialize)]
struct Summary {
    runtime: String,
    mode: Mode,
    capacity: usize,
    /// The pool's live ceiling; none for the legacy cache.
    ceiling: Option<usize>,
    order: String,
    destroy: DestroyMode,
    auto_alloc: bool,
    /// `[shape, times]` for the single-shape control.
    repeat: Option<[usize; 2]>,
    cycles: usize,
    steps: usize,
    transforms: u64,
    hits: u64,
    misses: u64,
    creations: u64,
    destroys: u64,
    peak_live: usize,
    /// The most handles alive at the runtime boundary (counted around the runtime).
    rt_peak_live: usize,
    /// The simulated runtime's ground truth.
    sim_peak_live: Option<usize>,
    sim_live_at_end: Option<usize>,
    sim_block_above_live: Option<usize>,
    max_rel_error: f64,
    passed: bool,
    elapsed_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
    /// Plans the `--warmup` manifest made before the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    warmed_up: Option<usize>,
}

struct Driven {
    outcome: ProbeOutcome,
    rows: Vec<TimelineRow>,
}

/// Runs the probe over `source`, writing protocol lines and collecting the timeline.
#[allow(clippy::too_many_arguments)]
fn drive<S: PlanSource>(
    source: &S,
    sample: &(dyn Fn() -> Counts + Sync),
    rt: &PlanCounts,
    shapes: &[ProbeShape],
    order: &[usize],
    cycles: usize,
    device: i32,
    options: RunOptions,
    protocol: bool,
    label: &str,
) -> Driven {
    let started = Instant::now();
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        if protocol {
            let beat = move || {
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(Duration::from_millis(200)) {
                    let c = sample();
                    line(true, format_args!("heartbeat {} t={:.3}", fields(&c, rt, rt.window_max()), started.elapsed().as_secs_f64()));
                }
            };
            // Without heartbeats the sweep still sees progress lines; it only loses the counts during a hang.
            let _ = std::thread::Builder::new().name("probe-heartbeat".into()).spawn_scoped(scope, beat);
        }
        let mut rows = Vec::new();
        let outcome = probe::run_with(
            source,
            shapes,
            order,
            cycles,
            device,
            0x5eed,
            options,
            |s| {
                let c = sample();
                let max = rt.take_window_max();
                line(
                    protocol,
                    format_args!(
                        "progress step={} cycle={} pos={} shape={} {} t={:.3}",
                        s.step,
                        s.cycle,
                        s.index,
                        s.shape_index,
                        fields(&c, rt, max),
                        started.elapsed().as_secs_f64()
                    ),
                );
            },
            |s, ok| {
                let c = sample();
                let max = rt.take_window_max();
                let t = started.elapsed().as_secs_f64();
                line(
                    protocol,
                    format_args!(
                        "sample step={} cycle={} pos={} shape={} ok={} {} t={t:.3}",
                        s.step,
                        s.cycle,
                        s.index,
                        s.shape_index,
                        ok as u8,
                        fields(&c, rt, max)
                    ),
                );
                rows.push(TimelineRow {
                    config: label.to_string(),
                    run: 1,
                    event: "step",
                    step: s.step,
                    cycle: s.cycle,
                    pos: s.index,
                    shape: s.shape_index,
                    live: c.live,
                    cached: c.cached,
                    in_flight: c.in_flight,
                    rt_live: rt.live.load(Ordering::SeqCst),
                    step_max: max,
                    sim_live: c.sim_live,
                    t_s: t,
                });
            },
        );
        line(protocol, format_args!("phase name=shutdown t={:.3}", started.elapsed().as_secs_f64()));
        drop(stop_tx);
        Driven { outcome, rows }
    })
}

/// Ends this process once standard input closes (the supervising sweep is gone).
fn watch_parent() {
    let _ = std::thread::Builder::new().name("parent-watch".into()).spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        // Exit handlers of a GPU runtime may block as the run did: SIGKILL ourselves.
        let _ = std::process::Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
        std::process::abort();
    });
}

/// A label like the sweep's: `legacy cap=16`, `pool cap=8 ceil=12 order=reverse`.
pub fn config_label(
    mode: Mode,
    capacity: usize,
    ceiling: Option<usize>,
    order: &str,
    destroy: DestroyMode,
    auto_alloc: bool,
    repeat: Option<(usize, usize)>,
) -> String {
    let mut s = format!("{} cap={capacity}", mode.name());
    if let (Mode::Pool, Some(c)) = (mode, ceiling) {
        s.push_str(&format!(" ceil={c}"));
    }
    match repeat {
        Some((i, n)) => s.push_str(&format!(" repeat={i}x{n}")),
        None if order != "forward" => s.push_str(&format!(" order={order}")),
        None => {}
    }
    if destroy == DestroyMode::Eager {
        s.push_str(" destroy=eager");
    }
    if auto_alloc {
        s.push_str(" auto-alloc");
    }
    s
}

pub fn run(a: ProbeArgs) -> Result<ExitCode> {
    let mode = parse_mode(&a.mode)?;
    let destroy = parse_destroy(&a.destroy)?;
    let choice = parse_runtime(&a.exp.runtime)?;
    let shapes = load_shapes(&a.exp)?;
    let order = run_order(&a.exp, shapes.len(), &a.order)?;
    let repeat = a.exp.repeat_shape.zip(a.exp.repeat);
    if a.exp.cycles == 0 {
        return Err(bad("--cycles", "must be at least 1"));
    }
    let env = rocfft_env(&a.exp, a.exp.rocfft_log.as_deref())
        .map_err(|e| bad("--rocfft-log", format!("cannot create the log directory: {e}")))?;
    for (k, v) in &env {
        // SAFETY: no other thread runs yet (the runtime, the pool and their threads are
        // made below), so nothing reads the environment concurrently.
        unsafe { std::env::set_var(k, v) };
    }
    if a.parent_watch {
        watch_parent();
    }
    let (env_cfg, _) = PoolConfig::from_env();
    let plan_options = PlanOptions { auto_allocation: a.exp.auto_alloc };
    let config = match mode {
        Mode::Legacy => {
            if a.ceiling.is_some() {
                tracing::warn!("--ceiling is ignored with --mode legacy: the legacy cache has no ceiling");
            }
            None
        }
        Mode::Pool if a.capacity.is_none() && a.ceiling.is_none() => Some(PoolConfig { plan_options, ..env_cfg.clone() }),
        Mode::Pool => {
            let capacity = a.capacity.unwrap_or(env_cfg.capacity.min(a.ceiling.unwrap_or(usize::MAX)));
            Some(
                PoolConfig::builder()
                    .capacity(capacity)
                    .live_ceiling(a.ceiling.unwrap_or(capacity))
                    .acquire_timeout(env_cfg.acquire_timeout)
                    .plan_options(plan_options)
                    .build()?,
            )
        }
    };
    let capacity = match &config {
        Some(c) => c.capacity,
        None => a.capacity.unwrap_or(env_cfg.capacity),
    };
    let (rt, sim) = open_runtime(choice)?;
    let (rt, plan_counts) = AuditedRuntime::counting(rt);
    let runtime_name = rt.kind().to_string();
    let block_above = sim.as_ref().and_then(|s| s.config().block_above_live);
    let label = a.label.clone().unwrap_or_else(|| {
        config_label(mode, capacity, config.as_ref().map(|c| c.live_ceiling), &a.order, destroy, a.exp.auto_alloc, repeat)
    });
    let options = RunOptions { auto_alloc: a.exp.auto_alloc, sync_before_release: destroy == DestroyMode::Eager };
    let protocol = a.progress_protocol;
    let steps = order.len() * a.exp.cycles;
    line(
        protocol,
        format_args!(
            "start pid={} mode={} capacity={capacity} ceiling={} steps={steps} sim_block_above_live={}",
            std::process::id(),
            mode.name(),
            config.as_ref().map_or("-".to_string(), |c| c.live_ceiling.to_string()),
            block_above.map_or("-".to_string(), |v| v.to_string())
        ),
    );
    let sim_live = || sim.as_ref().map(|s| s.live_handles());
    let mut warmed = None;
    let (driven, stats, ceiling, problem) = match config {
        Some(config) => {
            let pool = std::sync::Arc::new(PlanPool::new(config, rt.clone())?);
            let _server = match &a.metrics_addr {
                Some(addr) => {
                    let server = hipfft_pool::observe::serve::MetricsServer::start(addr, &pool)?;
                    eprintln!("hipfft-pool: serving metrics on http://{}/metrics", server.addr());
                    Some(server)
                }
                None => None,
            };
            let pool = &*pool;
            if let Some(path) = &a.warmup {
                let manifest = hipfft_pool::manifest::Manifest::load(path)?;
                let r = pool.warm_up(&manifest);
                warmed = Some(r.made);
                eprintln!(
                    "hipfft-pool: warm-up made {} plans in {:.1} ms ({} already there, {} skipped{})",
                    r.made,
                    r.elapsed.as_secs_f64() * 1e3,
                    r.already,
                    r.skipped.len(),
                    r.stopped.as_deref().map_or(String::new(), |s| format!("; stopped: {s}"))
                );
                for w in &r.skipped {
                    eprintln!("hipfft-pool:   skipped: {w}");
                }
            }
            let sample = || {
                let m = pool.metrics();
                Counts { live: m.live, cached: m.cached, in_flight: m.in_flight, sim_live: sim_live() }
            };
            let driven = drive(pool, &sample, &plan_counts, &shapes, &order, a.exp.cycles, a.exp.device, options, protocol, &label);
            if let Some(path) = &a.record {
                pool.save_manifest(path)?;
                eprintln!("hipfft-pool: manifest of {} plans written to {}", pool.manifest().plans.len(), path.display());
            }
            let report = pool.shutdown();
            let m = pool.metrics();
            let problem = (!report.still_leased.is_empty())
                .then(|| format!("{} plans still leased at shutdown", report.still_leased.len()));
            (driven, [m.hits, m.misses, m.creations, m.destroys, m.peak_live as u64], Some(m.ceiling), problem)
        }
        None => {
            let mut cache = LegacyCache::new(rt.clone(), capacity, plan_options, destroy)?;
            let counts = cache.counts();
            let sample = || Counts {
                live: counts.live.load(Ordering::SeqCst),
                cached: counts.cached.load(Ordering::SeqCst),
                in_flight: counts.in_flight.load(Ordering::SeqCst),
                sim_live: sim_live(),
            };
            let driven = drive(&cache, &sample, &plan_counts, &shapes, &order, a.exp.cycles, a.exp.device, options, protocol, &label);
            cache.clear();
            let ld = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
            let left = counts.live.load(Ordering::SeqCst);
            let problem = (left > 0).then(|| format!("{left} handles still alive after the legacy cache was cleared"));
            let stats = [ld(&counts.hits), ld(&counts.misses), ld(&counts.creations), ld(&counts.destroys), counts.peak_live.load(Ordering::SeqCst) as u64];
            (driven, stats, None, problem)
        }
    };
    let outcome = &driven.outcome;
    let passed = outcome.correct && outcome.failure.is_none() && problem.is_none();
    let s = Summary {
        runtime: runtime_name,
        mode,
        capacity,
        ceiling,
        order: if repeat.is_some() { "repeat".into() } else { a.order.clone() },
        destroy,
        auto_alloc: a.exp.auto_alloc,
        repeat: repeat.map(|(i, n)| [i, n]),
        cycles: a.exp.cycles,
        steps,
        transforms: outcome.transforms,
        hits: stats[0],
        misses: stats[1],
        creations: stats[2],
        destroys: stats[3],
        peak_live: stats[4] as usize,
        rt_peak_live: plan_counts.peak.load(Ordering::SeqCst),
        sim_peak_live: sim.as_ref().map(|s| s.peak_live_handles()),
        sim_live_at_end: sim_live(),
        sim_block_above_live: block_above,
        max_rel_error: outcome.max_rel_error,
        passed,
        elapsed_s: outcome.elapsed_s,
        failure: outcome.failure.clone().or(problem),
        warmed_up: warmed,
    };
    if let Some(path) = &a.timeline {
        plot::write_csv(path, &driven.rows).map_err(|e| bad("--timeline", format!("cannot write {}: {e}", path.display())))?;
    }
    if let Some(path) = &a.plot {
        let svg = probe_plot(&label, &driven.rows, ceiling, block_above);
        std::fs::write(path, svg).map_err(|e| bad("--plot", format!("cannot write {}: {e}", path.display())))?;
    }
    let json = serde_json::to_string(&s).expect("summary serializes");
    if protocol {
        line(true, format_args!("result {json}"));
    } else if a.json {
        println!("{json}");
    } else {
        println!("hipfft-pool probe on {} runtime: {} steps ({} shapes x {} cycles)", s.runtime, steps, order.len(), s.cycles);
        match s.ceiling {
            Some(c) => println!("  pool        capacity {}, live ceiling {c}", s.capacity),
            None => println!("  legacy      capacity {}, no ceiling, destroy {}", s.capacity, destroy.name()),
        }
        println!("  transforms  {} (max relative error {:.2e}, bar 1e-5 single / 1e-12 double)", s.transforms, s.max_rel_error);
        println!("  plans       {} hits, {} misses, {} created, {} destroyed, peak {} live", s.hits, s.misses, s.creations, s.destroys, s.peak_live);
        println!("  runtime     peak {} live handles at the library boundary", s.rt_peak_live);
        if let Some(p) = s.sim_peak_live {
            println!("  sim         peak {p} live handles{}", block_above.map_or(String::new(), |b| format!(" (blocks above {b})")));
        }
        println!("  time        {:.3} s", s.elapsed_s);
        match &s.failure {
            Some(f) => println!("  FAILED      {f}"),
            None => println!("  passed"),
        }
    }
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One run's chart: live (the runtime's count where known, and the source's own),
/// cached and in flight, with the ceiling and the block threshold.
fn probe_plot(label: &str, rows: &[TimelineRow], ceiling: Option<usize>, block_above: Option<usize>) -> String {
    let pts = |f: &dyn Fn(&TimelineRow) -> usize| rows.iter().map(|r| (r.step as f64 + 1.0, f(r) as f64)).collect::<Vec<_>>();
    let mut series = vec![Series { label: "live, most during the step".into(), points: pts(&|r| r.plotted_live()), hung: false, dashed: false }];
    series.push(Series { label: "live after the step".into(), points: pts(&|r| r.rt_live), hung: false, dashed: true });
    series.push(Series { label: "cached".into(), points: pts(&|r| r.cached), hung: false, dashed: false });
    series.push(Series { label: "in flight".into(), points: pts(&|r| r.in_flight), hung: false, dashed: false });
    let mut hlines = Vec::new();
    if let Some(c) = ceiling {
        hlines.push(HLine { label: format!("live ceiling {c}"), y: c as f64, color: plot::CEILING_COLOR });
    }
    if let Some(b) = block_above {
        hlines.push(HLine { label: format!("sim blocks above {b}"), y: b as f64, color: plot::BLOCK_COLOR });
    }
    plot::svg(&format!("probe: {label}"), "step (shapes run)", "handles", &series, &hlines, &[])
}
