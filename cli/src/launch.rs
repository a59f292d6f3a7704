//! `hipfft-pool run`: runs any program with one of the interposers preloaded, so its cuFFT
//! (or hipFFT) plans come from the pool, then prints the pool's summary.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Args, ValueEnum};

/// Which interposer to preload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Api {
    /// `libhipfft_pool_cufft.so`: cuFFT's plan API (PyTorch, CuPy, MLX's CUDA backend).
    Cufft,
    /// `libhipfft_pool_hipfft.so`: hipFFT's plan API with AMD's pointer handles.
    Hipfft,
}

impl Api {
    fn file_name(self) -> &'static str {
        match self {
            Api::Cufft => "libhipfft_pool_cufft.so",
            Api::Hipfft => "libhipfft_pool_hipfft.so",
        }
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The FFT API the program calls.
    #[arg(long, value_enum, default_value = "cufft")]
    pub api: Api,
    /// Plans the pool caches (HIPFFT_POOL_CAPACITY; the ceiling when not given).
    #[arg(long)]
    pub capacity: Option<usize>,
    /// Live plan handles allowed at once, process-wide (HIPFFT_POOL_LIVE_CEILING).
    #[arg(long)]
    pub ceiling: Option<usize>,
    /// Where the interposer writes its metrics JSON at exit (HIPFFT_POOL_METRICS_OUT); a
    /// temporary file when not given.
    #[arg(long)]
    pub metrics_out: Option<PathBuf>,
    /// The interposer library (default: the one beside this program, else
    /// $HIPFFT_POOL_INTERCEPT_LIB).
    #[arg(long)]
    pub lib: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// The interposer to preload: `--lib`, else beside the running executable (and its parent,
/// for `target/<profile>/deps`), else `$HIPFFT_POOL_INTERCEPT_LIB`.
fn find_library(a: &RunArgs) -> Result<PathBuf, String> {
    if let Some(l) = &a.lib {
        return if l.exists() { Ok(l.clone()) } else { Err(format!("--lib {}: no such file", l.display())) };
    }
    let mut tried = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        for d in [dir.clone(), dir.join(".."), dir.join("deps")] {
            let p = d.join(a.api.file_name());
            if p.exists() {
                return Ok(std::fs::canonicalize(&p).unwrap_or(p));
            }
            tried.push(p.display().to_string());
        }
    }
    if let Some(p) = std::env::var_os("HIPFFT_POOL_INTERCEPT_LIB").map(PathBuf::from) {
        if p.exists() {
            return Ok(p);
        }
        tried.push(p.display().to_string());
    }
    let pkg = match a.api {
        Api::Cufft => "hipfft-pool-cufft",
        Api::Hipfft => "hipfft-pool-hipfft",
    };
    Err(format!(
        "no {} (looked at {}); build it with `cargo build --release -p {pkg}`, or pass --lib",
        a.api.file_name(),
        tried.join(", ")
    ))
}

/// The summary printed after the program: the counts that say what the pool did.
fn summary(path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return format!("hipfft-pool run: no metrics at {} (the program made no FFT call, or did not exit normally)", path.display());
    };
    let Ok(m) = serde_json::from_str::<serde_json::Value>(&text) else {
        return format!("hipfft-pool run: unreadable metrics at {}", path.display());
    };
    let g = |k: &str| m.get(k).map_or_else(|| "-".to_string(), |v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    format!(
        "hipfft-pool run: {} on {} ({}): peak live {} of ceiling {} (capacity {}), live at exit {}; \
         {} plans created, {} destroyed, {} hits, {} misses; virtual handles peak {} (live at exit {}); \
         {} executions ({} captured), {} failures; metrics in {}",
        g("api"),
        g("runtime"),
        m.get("library").and_then(|v| v.as_str()).unwrap_or("-"),
        g("peak_live"),
        g("ceiling"),
        g("capacity"),
        g("live_at_exit"),
        g("creations"),
        g("destroys"),
        g("hits"),
        g("misses"),
        g("virtual_handles_peak"),
        g("virtual_handles_live"),
        g("execs"),
        g("captured_execs"),
        g("failures"),
        path.display()
    )
}

pub fn run(a: RunArgs) -> hipfft_pool::Result<ExitCode> {
    let lib = match find_library(&a) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("hipfft-pool run: {why}");
            return Ok(ExitCode::from(127));
        }
    };
    let metrics = a.metrics_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("hipfft-pool-run-{}.json", std::process::id()))
    });
    let _ = std::fs::remove_file(&metrics);
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", lib.display()),
        _ => lib.display().to_string(),
    };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]).env("LD_PRELOAD", preload).env("HIPFFT_POOL_METRICS_OUT", &metrics);
    if let Some(c) = a.ceiling {
        cmd.env("HIPFFT_POOL_LIVE_CEILING", c.to_string());
        cmd.env("HIPFFT_POOL_CAPACITY", a.capacity.unwrap_or(c).to_string());
    } else if let Some(c) = a.capacity {
        cmd.env("HIPFFT_POOL_CAPACITY", c.to_string());
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hipfft-pool run: cannot start {}: {e}", a.command[0]);
            return Ok(ExitCode::from(127));
        }
    };
    eprintln!("{}", summary(&metrics));
    if a.metrics_out.is_none() {
        let _ = std::fs::remove_file(&metrics);
    }
    // The program's own status, or 128 + the signal that ended it, as a shell reports it.
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
