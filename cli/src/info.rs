//! `hipfft-pool info`.

use std::process::ExitCode;

use clap::Args;
use hipfft_pool::pool::config::RuntimeChoice;
use hipfft_pool::{PoolConfig, Result};

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// auto, sim, hip or cuda.
    #[arg(long, default_value = "auto")]
    pub runtime: String,
}

pub fn run(a: InfoArgs) -> Result<ExitCode> {
    let choice = RuntimeChoice::parse(&a.runtime).ok_or_else(|| hipfft_pool::Error::InvalidArgument {
        name: "--runtime",
        reason: format!("{:?} is not auto, sim, hip or cuda", a.runtime),
    })?;
    let (config, warnings) = PoolConfig::from_env();
    let selected = hipfft_pool::runtime::select::open(choice)?;
    let rt = &selected.runtime;
    let info = rt.info();
    println!("runtime: {}", rt.kind());
    for why in &selected.skipped {
        println!("  skipped {why}");
    }
    for (name, path) in &info.libraries {
        println!("library: {name} = {path}");
    }
    for (name, v) in &info.versions {
        println!("version: {name} {v}");
    }
    match rt.device_count() {
        Ok(n) => println!("devices: {n}"),
        Err(e) => println!("devices: unknown ({e})"),
    }
    for d in &info.devices {
        println!("  {d}");
    }
    match rt.device_flags() {
        Ok(Some(f)) => println!(
            "device flags: {f:#x}{}",
            if f & hipfft_pool::runtime::DEVICE_SCHEDULE_BLOCKING_SYNC != 0 {
                " (hipDeviceScheduleBlockingSync: set after the device's first use, a hipfftDestroy can wait forever)"
            } else {
                ""
            }
        ),
        Ok(None) => println!("device flags: not readable on this runtime"),
        Err(e) => println!("device flags: unknown ({e})"),
    }
    if rt.kind() != hipfft_pool::RuntimeKind::Cuda {
        // rocFFT's runtime-compiled kernels: the part of a plan creation a warm-up cannot
        // carry across processes by itself (docs/warmup.md).
        println!("{}", rocfft_cache_line(std::env::var_os("ROCFFT_RTC_CACHE_PATH").as_deref()));
    }
    println!("eviction: {}; warm-up manifest: {}; manifest out: {}",
        config.eviction.name(),
        config.warmup.as_ref().map_or("none".to_string(), |p| p.display().to_string()),
        config.manifest_out.as_ref().map_or("none".to_string(), |p| p.display().to_string()));
    println!("config: capacity {}, live ceiling {}, acquire timeout {:?}, work-area budget {}, runtime {}",
        config.capacity, config.live_ceiling, config.acquire_timeout,
        config.work_area_budget.map_or("none".to_string(), |b| format!("{b} bytes")), config.runtime.name());
    for w in &warnings {
        println!("  warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The `rocfft kernel cache:` line: where rocFFT keeps the kernels it compiles at plan
/// creation, and whether it can write there (rocFFT creates the file when missing).
pub fn rocfft_cache_line(path: Option<&std::ffi::OsStr>) -> String {
    use std::path::Path;
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return "rocfft kernel cache: ROCFFT_RTC_CACHE_PATH unset: kernels compiled at plan creation are kept in memory only, \
                so every process compiles them again (set it to a writable file to keep them)"
            .into();
    };
    let p = Path::new(path);
    let state = if p.is_dir() {
        "a directory, not a file: rocFFT cannot use it".to_string()
    } else if p.exists() {
        match std::fs::OpenOptions::new().append(true).open(p) {
            Ok(_) => format!("exists, writable ({} bytes)", p.metadata().map_or(0, |m| m.len())),
            Err(e) => format!("exists, NOT writable ({e}): rocFFT reads it but cannot add kernels"),
        }
    } else {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        match tempfile_probe(dir) {
            Ok(()) => "missing; its directory is writable, rocFFT will create it".to_string(),
            Err(e) => format!("missing, and its directory {} is NOT writable ({e}): kernels stay in memory only", dir.display()),
        }
    };
    format!("rocfft kernel cache: ROCFFT_RTC_CACHE_PATH={}: {state}", p.display())
}

/// Whether a file can be made in `dir` (made and removed at once).
fn tempfile_probe(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".hipfft-pool-write-probe-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}
