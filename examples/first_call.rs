//! First-call latency of the 26 probe shapes: cold, warmed from a manifest in the same
//! process, and warmed from the manifest file in a new process (after a restart).
//!
//! A first call is what a framework pays the first time it transforms a shape: acquire (a
//! miss makes the plan), one transform, and the stream synchronized, timed together.
//!
//! - `--phase cold --manifest PATH`: in a fresh process, the 26 first calls on a new pool
//!   (the first one also pays the library's start-up); the working set is written to PATH;
//!   then a second pool (the first dropped, its plans destroyed) is warmed from that manifest
//!   in this process and the 26 calls are timed again (`warmed`).
//! - `--phase restart --manifest PATH`: a new process warms a new pool from PATH and times
//!   the 26 calls (`restart`). Run it after `cold`.
//!
//! `--runtime sim` runs on the simulated runtime (`HIPFFT_POOL_SIM_H200_CREATE_COSTS=1`
//! gives its creations the H200's costs); `cuda` needs `--features cuda`. One JSON object
//! per line on stdout: `{"phase", "shape", "us"}` per call and `{"phase", "warm_up_ms",
//! "made"}` per warm-up.
//!
//! Unsafe calls: buffers of this program's runtime, sized from the largest extents of the
//! 26 shapes (the work area: 64 MiB, checked against each plan's work size), live until the
//! end; the stream is synchronized after every transform.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use hipfft_pool::check::probe::embedded_shapes;
use hipfft_pool::manifest::Manifest;
use hipfft_pool::{Direction, Error, PlanDesc, PlanPool, PoolConfig, Result, Runtime, SimRuntime};

#[derive(Parser)]
struct Args {
    /// `cold` (first calls, then warmed in the same process) or `restart` (warmed from the
    /// manifest file in this new process).
    #[arg(long)]
    phase: String,
    /// The manifest written by `cold` and read by `restart`.
    #[arg(long)]
    manifest: PathBuf,
    /// `cuda` (with `--features cuda`) or `sim`.
    #[arg(long, default_value = "cuda")]
    runtime: String,
}

const WORK_BYTES: usize = 64 << 20;

struct Buffers {
    stream: hipfft_pool::RawStream,
    input: hipfft_pool::DevicePtr,
    output: hipfft_pool::DevicePtr,
    work: hipfft_pool::DevicePtr,
}

fn open(which: &str) -> std::result::Result<Arc<dyn Runtime>, String> {
    match which {
        "sim" => Ok(Arc::new(SimRuntime::from_env())),
        #[cfg(feature = "cuda")]
        "cuda" => hipfft_pool::runtime::cuda::CudaRuntime::new().map(|r| Arc::new(r) as Arc<dyn Runtime>).map_err(|e| e.to_string()),
        other => Err(format!("--runtime {other:?}: expected sim, or cuda with --features cuda")),
    }
}

fn shapes() -> Result<Vec<(String, PlanDesc)>> {
    embedded_shapes().iter().map(|s| Ok((format!("{} {} n={} b={}", s.name, s.kind, s.n, s.batch), s.desc(0)?))).collect()
}

fn pool(rt: &Arc<dyn Runtime>) -> Result<PlanPool> {
    PlanPool::new(PoolConfig::builder().capacity(128).private_ceiling(128).build()?, rt.clone())
}

/// The 26 first calls on `pool`, one JSON line each.
fn first_calls(phase: &str, pool: &PlanPool, b: &Buffers, shapes: &[(String, PlanDesc)]) -> Result<()> {
    let rt = pool.runtime();
    for (name, d) in shapes {
        let dir = if d.transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward };
        let t = Instant::now();
        let lease = pool.acquire(d)?;
        if lease.work_size() > WORK_BYTES {
            return Err(Error::InvalidArgument { name: "work area", reason: format!("{name} wants {} bytes", lease.work_size()) });
        }
        let work = (lease.work_size() > 0).then_some(b.work);
        // SAFETY: buffers of this runtime sized for the largest shape (see the file's note);
        // the stream is synchronized before the lease is released.
        unsafe {
            lease.exec(b.stream, b.input, b.output, dir, work)?;
            rt.stream_synchronize(b.stream)?;
        }
        lease.release();
        println!("{}", serde_json::json!({"phase": phase, "shape": name, "us": t.elapsed().as_secs_f64() * 1e6}));
    }
    Ok(())
}

fn warm(phase: &str, pool: &PlanPool, manifest: &Manifest) {
    let r = pool.warm_up(manifest);
    println!(
        "{}",
        serde_json::json!({"phase": phase, "warm_up_ms": r.elapsed.as_secs_f64() * 1e3, "made": r.made, "skipped": r.skipped, "stopped": r.stopped})
    );
}

fn main() {
    let args = Args::parse();
    let rt = match open(&args.runtime) {
        Ok(rt) => rt,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    if let Err(e) = run(&args, rt) {
        eprintln!("first_call: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args, rt: Arc<dyn Runtime>) -> Result<()> {
    let shapes = shapes()?;
    let (mut in_bytes, mut out_bytes) = (0, 0);
    for (_, d) in &shapes {
        let e = d.validate()?;
        in_bytes = in_bytes.max(e.input_bytes);
        out_bytes = out_bytes.max(e.output_bytes);
    }
    let b = Buffers { stream: rt.stream_create()?, input: rt.malloc(in_bytes)?, output: rt.malloc(out_bytes)?, work: rt.malloc(WORK_BYTES)? };
    // SAFETY: `input` was just allocated with `in_bytes`.
    unsafe { rt.memcpy_htod(b.input, &vec![0u8; in_bytes]) }?;
    match args.phase.as_str() {
        "cold" => {
            {
                let p = pool(&rt)?;
                first_calls("cold", &p, &b, &shapes)?;
                p.save_manifest(&args.manifest)?;
            }
            let manifest = Manifest::load(&args.manifest)?;
            let p = pool(&rt)?;
            warm("warmed", &p, &manifest);
            first_calls("warmed", &p, &b, &shapes)?;
        }
        "restart" => {
            let manifest = Manifest::load(&args.manifest)?;
            let p = pool(&rt)?;
            warm("restart", &p, &manifest);
            first_calls("restart", &p, &b, &shapes)?;
        }
        other => return Err(Error::InvalidArgument { name: "--phase", reason: format!("{other:?}: expected cold or restart") }),
    }
    // SAFETY: the stream was synchronized after every transform; nothing uses these now.
    unsafe {
        rt.free(b.input)?;
        rt.free(b.output)?;
        rt.free(b.work)?;
        rt.stream_destroy(b.stream)?;
    }
    Ok(())
}
