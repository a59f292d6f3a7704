//! `hipfft-pool run`: runs any program with one of the interposers preloaded, so its cuFFT
//! (or hipFFT) plans come from the pool, then prints the pool's summary: one line for the
//! process tree (every process that made an FFT call writes `metrics-<pid>.json` at exit,
//! and the counts are summed), and one per process when there were several.

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
    /// The directory each process of the tree writes its metrics JSON to at exit, as
    /// `metrics-<pid>.json` (HIPFFT_POOL_METRICS_OUT=DIR/metrics-%p.json); kept when given,
    /// a temporary one removed after the summary when not.
    #[arg(long)]
    pub metrics_dir: Option<PathBuf>,
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

/// Counts summed over the process tree (the rest are per process).
const SUMMED: [&str; 8] = ["creations", "destroys", "hits", "misses", "virtual_handles_peak", "execs", "captured_execs", "failures"];

/// The metrics files of `dir` (`metrics-<pid>.json`), read: (pid, metrics) in pid order, and
/// the files that could not be read or parsed.
fn read_tree(dir: &Path) -> (Vec<(u32, serde_json::Value)>, Vec<PathBuf>) {
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("metrics-").and_then(|n| n.strip_suffix(".json")).and_then(|p| p.parse().ok()) else {
            continue;
        };
        match std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()) {
            Some(m) => found.push((pid, m)),
            None => unreadable.push(path),
        }
    }
    found.sort_by_key(|(pid, _)| *pid);
    (found, unreadable)
}

fn text(m: &serde_json::Value, k: &str) -> String {
    m.get(k).map_or_else(|| "-".to_string(), |v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

fn count(m: &serde_json::Value, k: &str) -> u64 {
    m.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// One process's line.
fn process_line(pid: u32, m: &serde_json::Value) -> String {
    format!(
        "  pid {pid}: peak live {} of ceiling {}, live at exit {}; {} created, {} destroyed, {} hits, {} misses; {} executions ({} captured), {} failures",
        text(m, "peak_live"),
        text(m, "ceiling"),
        text(m, "live_at_exit"),
        text(m, "creations"),
        text(m, "destroys"),
        text(m, "hits"),
        text(m, "misses"),
        text(m, "execs"),
        text(m, "captured_execs"),
        text(m, "failures"),
    )
}

/// The summary printed after the program: the counts that say what the pool did, summed
/// over the processes of the tree (each has a ceiling of its own: the peak is the largest).
fn summary(dir: &Path) -> String {
    let (tree, unreadable) = read_tree(dir);
    let mut out = String::new();
    for path in &unreadable {
        out += &format!("hipfft-pool run: unreadable metrics at {}\n", path.display());
    }
    let Some((_, first)) = tree.first() else {
        out += &format!(
            "hipfft-pool run: no metrics in {} (the program made no FFT call, or did not exit normally)",
            dir.display()
        );
        return out;
    };
    let sum = |k: &str| tree.iter().map(|(_, m)| count(m, k)).sum::<u64>();
    let most = |k: &str| tree.iter().map(|(_, m)| count(m, k)).max().unwrap_or(0);
    let [creations, destroys, hits, misses, handles, execs, captured, failures] = SUMMED.map(sum);
    out += &format!(
        "hipfft-pool run: {} on {} ({}): {} process{} used the pool; peak live {} of ceiling {} (capacity {}), live at exit {}; \
         {creations} plans created, {destroys} destroyed, {hits} hits, {misses} misses; virtual handles peak {handles} (live at exit {}); \
         {execs} executions ({captured} captured), {failures} failures; metrics in {}",
        text(first, "api"),
        text(first, "runtime"),
        first.get("library").and_then(|v| v.as_str()).unwrap_or("-"),
        tree.len(),
        if tree.len() == 1 { "" } else { "es" },
        most("peak_live"),
        text(first, "ceiling"),
        text(first, "capacity"),
        sum("live_at_exit"),
        sum("virtual_handles_live"),
        dir.display()
    );
    if tree.len() > 1 {
        for (pid, m) in &tree {
            out += "\n";
            out += &process_line(*pid, m);
        }
    }
    out
}

pub fn run(a: RunArgs) -> hipfft_pool::Result<ExitCode> {
    let lib = match find_library(&a) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("hipfft-pool run: {why}");
            return Ok(ExitCode::from(127));
        }
    };
    let dir = match &a.metrics_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("hipfft-pool-run-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("hipfft-pool run: cannot make the metrics directory {}: {e}", dir.display());
        return Ok(ExitCode::from(127));
    }
    // This run's files only: an earlier run's would be summed with them.
    let (earlier, _) = read_tree(&dir);
    for (pid, _) in earlier {
        let _ = std::fs::remove_file(dir.join(format!("metrics-{pid}.json")));
    }
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", lib.display()),
        _ => lib.display().to_string(),
    };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..]).env("LD_PRELOAD", preload).env("HIPFFT_POOL_METRICS_OUT", dir.join("metrics-%p.json"));
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
    eprintln!("{}", summary(&dir));
    if a.metrics_dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    // The program's own status, or 128 + the signal that ended it, as a shell reports it.
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
