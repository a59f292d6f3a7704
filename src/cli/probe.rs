//! `hipfft-pool probe`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use hipfft_pool::config::RuntimeChoice;
use hipfft_pool::probe;
use hipfft_pool::{PlanPool, PoolConfig, Result};

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// auto (hip if a device is there, else cuda, else sim), sim, hip or cuda.
    #[arg(long, default_value = "auto")]
    pub runtime: String,
    /// Plans the cache holds (default: from the environment, else 128).
    #[arg(long)]
    pub capacity: Option<usize>,
    /// Live handles allowed at once (default: from the environment, else the capacity).
    #[arg(long)]
    pub ceiling: Option<usize>,
    /// How many times to cycle the shape list.
    #[arg(long, default_value_t = 3)]
    pub cycles: usize,
    /// A shape file like shared/probe-shapes.json (default: the embedded 26 shapes).
    #[arg(long)]
    pub shapes: Option<PathBuf>,
    /// forward, reverse or shuffle:SEED.
    #[arg(long, default_value = "forward")]
    pub order: String,
    /// Device to run on.
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Summary {
    runtime: String,
    capacity: usize,
    ceiling: usize,
    cycles: usize,
    transforms: u64,
    hits: u64,
    misses: u64,
    creations: u64,
    destroys: u64,
    peak_live: usize,
    max_rel_error: f64,
    passed: bool,
    elapsed_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
}

pub fn run(a: ProbeArgs) -> Result<ExitCode> {
    let choice = RuntimeChoice::parse(&a.runtime).ok_or_else(|| hipfft_pool::Error::InvalidArgument {
        name: "--runtime",
        reason: format!("{:?} is not auto, sim, hip or cuda", a.runtime),
    })?;
    let shapes = match &a.shapes {
        Some(p) => probe::load_shapes(p)?,
        None => probe::embedded_shapes(),
    };
    let order = probe::order(shapes.len(), &a.order)?;
    let config = if a.capacity.is_none() && a.ceiling.is_none() {
        PoolConfig::from_env().0
    } else {
        let (env, _) = PoolConfig::from_env();
        let capacity = a.capacity.unwrap_or(env.capacity.min(a.ceiling.unwrap_or(usize::MAX)));
        PoolConfig::builder()
            .capacity(capacity)
            .live_ceiling(a.ceiling.unwrap_or(capacity))
            .acquire_timeout(env.acquire_timeout)
            .build()?
    };
    let selected = hipfft_pool::select::open(choice)?;
    let runtime_name = selected.runtime.kind().to_string();
    let pool = PlanPool::new(config.clone(), Arc::clone(&selected.runtime))?;
    let outcome = probe::run(&pool, &shapes, &order, a.cycles, a.device, 0x5eed, |_| {});
    let report = pool.shutdown();
    let m = pool.metrics();
    let passed = outcome.correct && outcome.failure.is_none() && report.still_leased.is_empty();
    let s = Summary {
        runtime: runtime_name,
        capacity: config.capacity,
        ceiling: m.ceiling,
        cycles: a.cycles,
        transforms: outcome.transforms,
        hits: m.hits,
        misses: m.misses,
        creations: m.creations,
        destroys: m.destroys,
        peak_live: m.peak_live,
        max_rel_error: outcome.max_rel_error,
        passed,
        elapsed_s: outcome.elapsed_s,
        failure: outcome.failure.clone(),
    };
    if a.json {
        println!("{}", serde_json::to_string(&s).expect("summary serializes"));
    } else {
        println!("hipfft-pool probe on {} runtime: {} shapes x {} cycles", s.runtime, shapes.len(), s.cycles);
        println!("  pool        capacity {}, live ceiling {}", s.capacity, s.ceiling);
        println!("  transforms  {} (max relative error {:.2e}, bar 1e-5 single / 1e-12 double)", s.transforms, s.max_rel_error);
        println!("  plans       {} hits, {} misses, {} created, {} destroyed, peak {} live", s.hits, s.misses, s.creations, s.destroys, s.peak_live);
        println!("  time        {:.3} s", s.elapsed_s);
        match &s.failure {
            Some(f) => println!("  FAILED      {f}"),
            None if passed => println!("  passed"),
            None => println!("  FAILED      {} plans still leased at shutdown", report.still_leased.len()),
        }
    }
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
