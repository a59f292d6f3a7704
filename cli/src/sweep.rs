//! `hipfft-pool sweep`: the probe at each configuration, each run in a child process (this
//! binary running `probe --progress-protocol`), killed when it hangs, with the hang's
//! backtraces in a report.
//!
//! A run hangs when the child has not exited `--timeout` seconds after it started, or has
//! made no progress (no `progress`, `sample` or `phase` line; heartbeats do not count) for
//! `--stall` seconds. Before the kill the sweep records what the child was doing
//! (`hang::collect`). Exit status: 0 every run passed (a configuration the pool builder
//! rejects is reported, not run, and does not count); 1 some run hung or failed; 2 a usage
//! or setup error (bad flags, a child that could not start or could not open its runtime,
//! a report that could not be written).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use crossbeam_channel::{RecvTimeoutError, unbounded};
use hipfft_pool::check::probe::ProbeShape;
use hipfft_pool::{PoolConfig, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::hang::{self, Backtrace, HangReport};
use super::legacy::DestroyMode;
use super::plot::{self, HLine, Series, TimelineRow};
use super::probe::{ExperimentArgs, Mode, bad, config_label, load_shapes, parse_destroy, parse_mode, parse_runtime, rocfft_env, run_order};

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    /// Cache capacities to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,16,24,32,128")]
    pub capacities: Vec<usize>,
    /// Plan sources, comma-separated: legacy (MLX's old cache) and/or pool.
    #[arg(long, value_delimiter = ',', default_value = "legacy")]
    pub mode: Vec<String>,
    /// The pool's live ceiling (default: each capacity). A pool capacity above it is
    /// reported as rejected (the pool builder refuses it) and not run.
    #[arg(long)]
    pub ceiling: Option<usize>,
    /// Shape orders, comma-separated: forward, reverse, shuffle:SEED.
    #[arg(long, value_delimiter = ',', default_value = "forward")]
    pub order: Vec<String>,
    /// Destroy modes, comma-separated: deferred, eager.
    #[arg(long, value_delimiter = ',', default_value = "deferred")]
    pub destroy: Vec<String>,
    /// Seconds a run may take before it counts as hung and is killed.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Seconds without progress after which a run counts as hung (default: 30, at most the timeout).
    #[arg(long)]
    pub stall: Option<f64>,
    /// Consecutive runs of each configuration.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// What to record of a hung child: auto (gdb if on PATH, plus /proc), gdb, proc or off.
    #[arg(long, default_value = "auto")]
    pub backtrace: String,
    /// The text report (the table, then every hang in detail).
    #[arg(long, default_value = "sweep-report.txt")]
    pub report: PathBuf,
    /// Print the whole result as one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Every run's timeline as CSV (one row per step, plus one per hang).
    #[arg(long, value_name = "FILE.csv")]
    pub timeline: Option<PathBuf>,
    /// Live handles over the run, one line per configuration (its first run), as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The whole investigation of issue #5 in one go, instead of the product of --mode,
    /// --capacities, --order and --destroy: the legacy capacity table, reordering, the
    /// single-shape control, eager destroy, auto-allocation, then the pool under a ceiling
    /// (--ceiling, else the largest legacy capacity that passed).
    #[arg(long)]
    pub investigation: bool,
    /// No progress bar (it is also off when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Clone, Debug, serde::Serialize)]
struct Config {
    label: String,
    /// Which part of the investigation it belongs to.
    group: String,
    mode: Mode,
    capacity: usize,
    ceiling: Option<usize>,
    order: String,
    destroy: DestroyMode,
    auto_alloc: bool,
    repeat: Option<[usize; 2]>,
}

impl Config {
    fn new(group: &str, mode: Mode, capacity: usize, ceiling: Option<usize>, order: &str, destroy: DestroyMode, exp: &ExperimentArgs) -> Self {
        Self::with(group, mode, capacity, ceiling, order, destroy, exp.auto_alloc, exp.repeat_shape.zip(exp.repeat))
    }

    #[allow(clippy::too_many_arguments)]
    fn with(group: &str, mode: Mode, capacity: usize, ceiling: Option<usize>, order: &str, destroy: DestroyMode, auto_alloc: bool, repeat: Option<(usize, usize)>) -> Self {
        let ceiling = match mode {
            Mode::Pool => Some(ceiling.unwrap_or(capacity)),
            Mode::Legacy => None,
        };
        Config {
            label: config_label(mode, capacity, ceiling, order, destroy, auto_alloc, repeat),
            group: group.to_string(),
            mode,
            capacity,
            ceiling,
            order: order.to_string(),
            destroy,
            auto_alloc,
            repeat: repeat.map(|(i, n)| [i, n]),
        }
    }

    /// Why the pool would not run this, in the pool builder's own words.
    fn rejection(&self) -> Option<String> {
        let ceiling = self.ceiling?;
        match PoolConfig::builder().capacity(self.capacity).live_ceiling(ceiling).build() {
            Ok(_) => None,
            Err(e) if self.capacity > ceiling => Some(format!("rejected: capacity {} > ceiling {ceiling} ({e})", self.capacity)),
            Err(e) => Some(format!("rejected: {e}")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Pass,
    Hang,
    /// The child exited with a wrong result or an error of the run.
    Fail,
    /// The child could not set up (exit status 2: bad flags, no runtime).
    Error,
}

/// Where a run was when it stopped progressing.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct Position {
    /// `shapes` (in the shape loop) or `shutdown` (destroying plans after it), or `start`
    /// (no step began).
    phase: String,
    step: usize,
    cycle: usize,
    pos: usize,
    shape: usize,
    shape_name: String,
}

impl Position {
    fn describe(&self) -> String {
        match self.phase.as_str() {
            "start" => "before the first step".into(),
            "shutdown" => format!("shutdown, after step {}", self.step),
            _ => format!("cycle {} pos {}: #{} {}", self.cycle, self.pos, self.shape, self.shape_name),
        }
    }
}

/// A protocol line's counts (see `cli/probe.rs`).
#[derive(Clone, Debug, Default, serde::Serialize)]
struct Counts {
    /// The plan source's own counts.
    live: usize,
    cached: usize,
    in_flight: usize,
    /// Handles alive at the runtime boundary, and the most since the step began.
    rt_live: usize,
    step_max: usize,
    /// Plan calls running at that moment: `create`, `destroy`, `exec` or `-`.
    calls: String,
    sim_live: Option<usize>,
}

impl Counts {
    /// Handles alive: the sim's own count where there is one, else the boundary count.
    fn shown(&self) -> usize {
        self.sim_live.unwrap_or(self.rt_live)
    }
    fn most(&self) -> usize {
        self.step_max.max(self.shown())
    }
}

#[derive(Clone, Debug, serde::Serialize)]
struct RunResult {
    run: usize,
    outcome: Outcome,
    /// Why it hung (`no progress for 2.0 s`, `no exit after 60 s`) or failed.
    reason: Option<String>,
    elapsed_s: f64,
    pid: u32,
    exit_code: Option<i32>,
    steps_done: usize,
    /// Where it stopped progressing (hangs), or the last step (others).
    stopped_at: Option<Position>,
    /// The counts at the stop: a hang's from the child's last heartbeat, taken during it.
    counts_at_stop: Option<Counts>,
    /// The most handles seen alive (the runtime's ground truth on the sim).
    peak_live: Option<usize>,
    /// The child's summary (`probe --json`), when it got that far.
    result: Option<serde_json::Value>,
    hang_report: Option<HangReport>,
    stderr_tail: String,
    #[serde(skip)]
    rows: Vec<TimelineRow>,
    #[serde(skip)]
    block_above: Option<usize>,
}

#[derive(Clone, Debug, serde::Serialize)]
struct ConfigResult {
    config: Config,
    rejected: Option<String>,
    runs: Vec<RunResult>,
    /// `passed`, `hung`, `failed`, `mixed`, `error` or `rejected`.
    verdict: String,
    /// One line: what happened over the runs.
    summary: String,
}

#[derive(serde::Serialize)]
struct SweepOut {
    version: &'static str,
    runtime: String,
    command: Vec<String>,
    timeout_s: f64,
    stall_s: f64,
    runs_per_config: usize,
    sim_block_above_live: Option<usize>,
    configs: Vec<ConfigResult>,
    hung: bool,
    exit_code: u8,
    report: String,
    notes: Vec<String>,
}

/// Everything a child run needs.
struct Plan<'a> {
    args: &'a SweepArgs,
    exe: PathBuf,
    shapes: &'a [ProbeShape],
    timeout: Duration,
    stall: Duration,
    backtrace: Backtrace,
    bar: ProgressBar,
}

pub fn run(a: SweepArgs) -> Result<ExitCode> {
    parse_runtime(&a.exp.runtime)?;
    let backtrace = Backtrace::parse(&a.backtrace).ok_or_else(|| bad("--backtrace", format!("{:?} is not auto, gdb, proc or off", a.backtrace)))?;
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        return Err(bad("--timeout", "must be a positive number of seconds"));
    }
    let stall = a.stall.unwrap_or(30.0f64.min(a.timeout));
    if !(stall > 0.0 && stall.is_finite()) {
        return Err(bad("--stall", "must be a positive number of seconds"));
    }
    if a.runs == 0 {
        return Err(bad("--runs", "must be at least 1"));
    }
    if a.exp.cycles == 0 {
        return Err(bad("--cycles", "must be at least 1"));
    }
    if a.capacities.is_empty() || a.capacities.contains(&0) {
        return Err(bad("--capacities", "give one or more capacities of at least 1"));
    }
    let modes = a.mode.iter().map(|m| parse_mode(m)).collect::<Result<Vec<_>>>()?;
    let destroys = a.destroy.iter().map(|d| parse_destroy(d)).collect::<Result<Vec<_>>>()?;
    let shapes = load_shapes(&a.exp)?;
    for o in &a.order {
        run_order(&a.exp, shapes.len(), o)?;
    }
    if let Some(i) = a.exp.repeat_shape.filter(|&i| i >= shapes.len()) {
        return Err(bad("--repeat-shape", format!("{i} is past the last shape ({} shapes, numbered from 0)", shapes.len())));
    }
    std::fs::write(&a.report, "(the sweep is starting)\n").map_err(|e| bad("--report", format!("cannot write {}: {e}", a.report.display())))?;
    let exe = std::env::current_exe().map_err(|e| bad("sweep", format!("cannot find this program to run its probe: {e}")))?;
    let bar = if a.no_progress || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} steps  {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    };
    let plan = Plan { args: &a, exe, shapes: &shapes, timeout: Duration::from_secs_f64(a.timeout), stall: Duration::from_secs_f64(stall.min(a.timeout)), backtrace, bar };
    let mut notes = Vec::new();
    let mut results: Vec<ConfigResult> = Vec::new();
    if a.investigation {
        if a.mode != ["legacy"] || a.order != ["forward"] || a.destroy != ["deferred"] || a.exp.auto_alloc || a.exp.repeat.is_some() {
            notes.push("--investigation chooses its own modes, orders, destroy modes and controls; --mode, --order, --destroy, --auto-alloc and --repeat were ignored".into());
        }
        investigation(&plan, &mut results, &mut notes);
    } else {
        let mut configs = Vec::new();
        for &mode in &modes {
            for order in &a.order {
                for &destroy in &destroys {
                    for &capacity in &a.capacities {
                        configs.push(Config::new("sweep", mode, capacity, a.ceiling, order, destroy, &a.exp));
                    }
                }
            }
        }
        if a.exp.repeat.is_some() && a.order.len() > 1 {
            notes.push("--repeat-shape replaces the shape order: the --order values run the same sequence".into());
        }
        plan.bar.set_length((configs.iter().filter(|c| c.rejection().is_none()).count() * a.runs * steps_per_run(&plan)) as u64);
        for c in configs {
            results.push(run_config(&plan, c));
            checkpoint(&plan, &results, &notes);
        }
    }
    plan.bar.finish_and_clear();
    finish(&plan, results, notes)
}

fn steps_per_run(plan: &Plan<'_>) -> usize {
    let per_cycle = match plan.args.exp.repeat {
        Some(n) if plan.args.exp.repeat_shape.is_some() => n,
        _ => plan.shapes.len(),
    };
    per_cycle * plan.args.exp.cycles
}

/// The investigation of issue #5, group by group; later groups use what earlier ones found.
fn investigation(plan: &Plan<'_>, results: &mut Vec<ConfigResult>, notes: &mut Vec<String>) {
    let a = plan.args;
    let caps = &a.capacities;
    let max_cap = *caps.iter().max().expect("checked non-empty");
    let n = plan.shapes.len() * a.exp.cycles;
    let d = DestroyMode::Deferred;
    let add = |plan: &Plan<'_>, results: &mut Vec<ConfigResult>, configs: Vec<Config>, notes: &[String]| {
        plan.bar.inc_length((configs.len() * a.runs * n) as u64);
        for c in configs {
            results.push(run_config(plan, c));
            checkpoint(plan, results, notes);
        }
    };
    // 1. The original table: the legacy cache at each capacity.
    let table: Vec<Config> = caps.iter().map(|&c| Config::with("1 capacity table (legacy)", Mode::Legacy, c, None, "forward", d, false, None)).collect();
    add(plan, results, table, notes);
    let hung_caps: Vec<usize> = results.iter().filter(|r| r.verdict != "passed").map(|r| r.config.capacity).collect();
    let passed_caps: Vec<usize> = results.iter().filter(|r| r.verdict == "passed").map(|r| r.config.capacity).collect();
    let probe_cap = hung_caps.iter().copied().min().unwrap_or(max_cap);
    if hung_caps.is_empty() {
        notes.push(format!("no legacy capacity hung; the later groups run at capacity {max_cap}"));
    }
    // 2. Reordering: does the hang follow a shape or a count?
    let reorder = ["reverse", "shuffle:1"].iter().map(|o| Config::with("2 reordering (legacy)", Mode::Legacy, probe_cap, None, o, d, false, None)).collect();
    add(plan, results, reorder, notes);
    // 3. The single-shape control: one plan, reused.
    let repeat = Some((0, 60));
    plan.bar.inc_length((a.runs * 60 * a.exp.cycles) as u64);
    results.push(run_config(plan, Config::with("3 single-shape control (legacy)", Mode::Legacy, max_cap, None, "forward", d, false, repeat)));
    checkpoint(plan, results, notes);
    // 4 and 5. Destroy at once; the library's own work areas.
    let variants = vec![
        Config::with("4 eager destroy (legacy)", Mode::Legacy, probe_cap, None, "forward", DestroyMode::Eager, false, None),
        Config::with("5 auto-allocation (legacy)", Mode::Legacy, probe_cap, None, "forward", d, true, None),
    ];
    add(plan, results, variants, notes);
    // 6. The pool under a ceiling.
    let ceiling = a.ceiling.or_else(|| passed_caps.iter().copied().max());
    match ceiling {
        None => notes.push("no legacy capacity passed and no --ceiling was given: the pool group was not run (give --ceiling N below the device's limit)".into()),
        Some(ceil) => {
            let mut pool_caps: BTreeSet<usize> = caps.iter().copied().filter(|&c| c <= ceil).collect();
            pool_caps.insert(ceil);
            let mut configs: Vec<Config> =
                pool_caps.iter().map(|&c| Config::with("6 pool under a ceiling", Mode::Pool, c, Some(ceil), "forward", d, false, None)).collect();
            configs.push(Config::with("6 pool under a ceiling", Mode::Pool, ceil, Some(ceil), "forward", DestroyMode::Eager, false, None));
            add(plan, results, configs, notes);
        }
    }
}

fn run_config(plan: &Plan<'_>, config: Config) -> ConfigResult {
    if let Some(why) = config.rejection() {
        return ConfigResult { verdict: "rejected".into(), summary: format!("{}: {why}; not run", config.label), rejected: Some(why), runs: vec![], config };
    }
    let mut runs = Vec::new();
    for run in 1..=plan.args.runs {
        plan.bar.set_message(format!("{} run {run}/{}", config.label, plan.args.runs));
        let r = run_child(plan, &config, run);
        runs.push(r);
    }
    let (verdict, summary) = verdict(&config, &runs);
    ConfigResult { config, rejected: None, runs, verdict, summary }
}

fn verdict(c: &Config, runs: &[RunResult]) -> (String, String) {
    let n = runs.len();
    let count = |o: Outcome| runs.iter().filter(|r| r.outcome == o).count();
    let (pass, hang, fail, error) = (count(Outcome::Pass), count(Outcome::Hang), count(Outcome::Fail), count(Outcome::Error));
    let peak = runs.iter().filter_map(|r| r.peak_live).max();
    if pass == n {
        let peak = peak.map_or(String::new(), |p| format!(", at most {p} handle{} live", if p == 1 { "" } else { "s" }));
        return ("passed".into(), format!("{}: passed {n} of {n} runs{peak}", c.label));
    }
    if hang == n {
        let places: BTreeSet<String> = runs.iter().map(|r| r.stopped_at.as_ref().map_or("?".into(), |p| p.describe())).collect();
        let live: BTreeSet<usize> = runs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|c| c.shown())).collect();
        let calls: BTreeSet<String> = runs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|c| c.calls.clone())).collect();
        let calls = calls.into_iter().filter(|c| c != "-").collect::<Vec<_>>().join("/");
        let calls = if calls.is_empty() { String::new() } else { format!(", stuck in plan {calls}") };
        let live = live.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("/");
        let place = if places.len() == 1 {
            format!("every time at {}", places.iter().next().expect("one"))
        } else {
            format!("at {} different places: {}", places.len(), places.into_iter().collect::<Vec<_>>().join("; "))
        };
        return ("hung".into(), format!("{}: hung {n} of {n} runs, {place}, {live} handles live{calls}", c.label));
    }
    if error == n {
        let why = runs[0].reason.clone().unwrap_or_default();
        return ("error".into(), format!("{}: could not run: {why}", c.label));
    }
    if fail == n {
        let why = runs[0].reason.clone().unwrap_or_default();
        return ("failed".into(), format!("{}: failed {n} of {n} runs: {why}", c.label));
    }
    ("mixed".into(), format!("{}: {pass} passed, {hang} hung, {fail} failed, {error} could not run (of {n})", c.label))
}

enum Msg {
    Line(String),
    Eof,
}

/// `word k=v k=v` -> the value of `key`.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().skip(1).find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn num(line: &str, key: &str) -> Option<usize> {
    field(line, key)?.parse().ok()
}

fn counts_of(line: &str) -> Counts {
    Counts {
        live: num(line, "live").unwrap_or(0),
        cached: num(line, "cached").unwrap_or(0),
        in_flight: num(line, "inflight").unwrap_or(0),
        rt_live: num(line, "rt_live").unwrap_or(0),
        step_max: num(line, "max").unwrap_or(0),
        calls: field(line, "calls").unwrap_or("-").to_string(),
        sim_live: num(line, "sim_live"),
    }
}

fn t_of(line: &str) -> f64 {
    field(line, "t").and_then(|t| t.parse().ok()).unwrap_or(0.0)
}

fn shape_name(shapes: &[ProbeShape], i: usize) -> String {
    shapes.get(i).map_or_else(|| "?".into(), |s| format!("{} {} n={} batch={}", s.name, s.kind, s.n, s.batch))
}

fn child_command(plan: &Plan<'_>, c: &Config, run: usize) -> std::io::Result<Command> {
    let e = &plan.args.exp;
    let mut cmd = Command::new(&plan.exe);
    cmd.arg("probe")
        .args(["--runtime", &e.runtime, "--mode", c.mode.name(), "--capacity", &c.capacity.to_string()])
        .args(["--cycles", &e.cycles.to_string(), "--order", &c.order, "--destroy", c.destroy.name()])
        .args(["--device", &e.device.to_string(), "--label", &c.label, "--progress-protocol", "--parent-watch"]);
    if let Some(ceil) = c.ceiling {
        cmd.args(["--ceiling", &ceil.to_string()]);
    }
    if c.auto_alloc {
        cmd.arg("--auto-alloc");
    }
    if let Some([i, n]) = c.repeat {
        cmd.args(["--repeat-shape", &i.to_string(), "--repeat", &n.to_string()]);
    }
    if let Some(s) = &e.shapes {
        cmd.arg("--shapes").arg(s);
    }
    let log_dir = e.rocfft_log.as_ref().map(|d| d.join(slug(&c.label)).join(format!("run{run}")));
    for (k, v) in rocfft_env(e, log_dir.as_deref())? {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(cmd)
}

fn slug(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '=' { c } else { '_' }).collect()
}

/// Keeps the last `cap` bytes of a stream.
fn tail_reader(mut r: impl Read + Send + 'static, cap: usize) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut g = b.lock().unwrap_or_else(|p| p.into_inner());
            g.extend_from_slice(&chunk[..n]);
            if g.len() > cap {
                let cut = g.len() - cap;
                g.drain(..cut);
            }
        }
    });
    buf
}

fn last_lines(bytes: &[u8], n: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn run_child(plan: &Plan<'_>, c: &Config, run: usize) -> RunResult {
    let started = Instant::now();
    let mut r = RunResult {
        run,
        outcome: Outcome::Error,
        reason: None,
        elapsed_s: 0.0,
        pid: 0,
        exit_code: None,
        steps_done: 0,
        stopped_at: None,
        counts_at_stop: None,
        peak_live: None,
        result: None,
        hang_report: None,
        stderr_tail: String::new(),
        rows: Vec::new(),
        block_above: None,
    };
    let spawned = child_command(plan, c, run).and_then(|mut cmd| cmd.spawn());
    let mut child: Child = match spawned {
        Ok(ch) => ch,
        Err(e) => {
            r.reason = Some(format!("cannot start {}: {e}", plan.exe.display()));
            return r;
        }
    };
    r.pid = child.id();
    // Held open for the child's life: it kills itself when this end closes.
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let stderr = tail_reader(child.stderr.take().expect("piped"), 256 * 1024);
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            match l {
                Ok(l) => {
                    if tx.send(Msg::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Msg::Eof);
    });
    let mut last_progress = started;
    let mut eof = false;
    let mut position = Position { phase: "start".into(), ..Default::default() };
    let mut heartbeat: Option<Counts> = None;
    let mut peak = 0usize;
    let mut base_steps = plan.bar.position();
    let handle = |line: &str, r: &mut RunResult, last_progress: &mut Instant, position: &mut Position, heartbeat: &mut Option<Counts>, peak: &mut usize| {
        let word = line.split_whitespace().next().unwrap_or("");
        match word {
            "start" => {
                r.block_above = num(line, "sim_block_above_live");
                *last_progress = Instant::now();
            }
            "progress" => {
                *last_progress = Instant::now();
                let shape = num(line, "shape").unwrap_or(0);
                *position = Position {
                    phase: "shapes".into(),
                    step: num(line, "step").unwrap_or(0),
                    cycle: num(line, "cycle").unwrap_or(0),
                    pos: num(line, "pos").unwrap_or(0),
                    shape,
                    shape_name: shape_name(plan.shapes, shape),
                };
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                *heartbeat = Some(k);
            }
            "sample" => {
                *last_progress = Instant::now();
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                let step = num(line, "step").unwrap_or(0);
                r.steps_done = step + 1;
                plan.bar.set_position(base_steps + r.steps_done as u64);
                r.rows.push(TimelineRow {
                    config: c.label.clone(),
                    run,
                    event: "step",
                    step,
                    cycle: num(line, "cycle").unwrap_or(0),
                    pos: num(line, "pos").unwrap_or(0),
                    shape: num(line, "shape").unwrap_or(0),
                    live: k.live,
                    cached: k.cached,
                    in_flight: k.in_flight,
                    rt_live: k.rt_live,
                    step_max: k.step_max,
                    sim_live: k.sim_live,
                    t_s: t_of(line),
                });
            }
            "heartbeat" => {
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                *heartbeat = Some(k);
            }
            "phase" => {
                *last_progress = Instant::now();
                if field(line, "name") == Some("shutdown") {
                    position.phase = "shutdown".into();
                }
            }
            "result" => {
                *last_progress = Instant::now();
                r.result = serde_json::from_str(line["result".len()..].trim()).ok();
            }
            _ => {}
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(e) => {
                r.reason = Some(format!("cannot wait for the child: {e}"));
                break None;
            }
        }
        let now = Instant::now();
        let hung = if now >= started + plan.timeout {
            Some(format!("no exit after {:.1} s (--timeout)", plan.timeout.as_secs_f64()))
        } else if now >= last_progress + plan.stall {
            Some(format!("no progress for {:.1} s (--stall)", plan.stall.as_secs_f64()))
        } else {
            None
        };
        if let Some(why) = hung {
            // Drain what the child said before it stopped, then look at it, then kill it.
            while let Ok(Msg::Line(l)) = rx.try_recv() {
                handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak);
            }
            r.outcome = Outcome::Hang;
            r.reason = Some(why);
            r.stopped_at = Some(position.clone());
            r.counts_at_stop = heartbeat.clone();
            plan.bar.set_message(format!("{} run {run}: hung, recording backtraces", c.label));
            let report = hang::collect(r.pid, plan.backtrace);
            let mut pids: Vec<u32> = hang::descendants(r.pid);
            pids.push(r.pid);
            hang::kill_all(&pids);
            let _ = child.kill();
            let _ = child.wait();
            r.hang_report = Some(report);
            break None;
        }
        let wait = Duration::from_millis(50);
        if eof {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        match rx.recv_timeout(wait) {
            Ok(Msg::Line(l)) => handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak),
            Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
            Err(RecvTimeoutError::Timeout) => {}
        }
    };
    drop(stdin);
    if let Some(st) = status {
        // Exited: read what is left of its output (its stdout closes with it).
        let until = Instant::now() + Duration::from_secs(2);
        while !eof && Instant::now() < until {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Msg::Line(l)) => handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak),
                Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        r.exit_code = st.code();
        let passed = r.result.as_ref().and_then(|v| v.get("passed")).and_then(|v| v.as_bool()).unwrap_or(false);
        r.stopped_at = Some(position.clone());
        r.counts_at_stop = heartbeat.clone();
        (r.outcome, r.reason) = match (st.code(), passed) {
            (Some(0), true) => (Outcome::Pass, None),
            (Some(2), _) => (Outcome::Error, Some(first_error(&stderr, st))),
            _ => {
                let why = r
                    .result
                    .as_ref()
                    .and_then(|v| v.get("failure"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| first_error(&stderr, st));
                (Outcome::Fail, Some(why))
            }
        };
    }
    if let Some(res) = &r.result {
        for key in ["sim_peak_live", "rt_peak_live"] {
            peak = peak.max(res.get(key).and_then(|v| v.as_u64()).unwrap_or(0) as usize);
        }
    }
    r.peak_live = (peak > 0 || r.result.is_some()).then_some(peak);
    if let (Outcome::Hang, Some(p), Some(k)) = (r.outcome, r.stopped_at.clone(), r.counts_at_stop.clone()) {
        r.rows.push(TimelineRow {
            config: c.label.clone(),
            run,
            event: "hang",
            step: p.step,
            cycle: p.cycle,
            pos: p.pos,
            shape: p.shape,
            live: k.live,
            cached: k.cached,
            in_flight: k.in_flight,
            rt_live: k.rt_live,
            step_max: k.most(),
            sim_live: k.sim_live,
            t_s: started.elapsed().as_secs_f64(),
        });
    }
    r.elapsed_s = started.elapsed().as_secs_f64();
    r.stderr_tail = last_lines(&stderr.lock().unwrap_or_else(|p| p.into_inner()), 40);
    // Keep the bar's count whole for runs that stopped early.
    base_steps += steps_per_run(plan) as u64;
    plan.bar.set_position(base_steps);
    r
}

fn first_error(stderr: &Arc<Mutex<Vec<u8>>>, st: std::process::ExitStatus) -> String {
    let g = stderr.lock().unwrap_or_else(|p| p.into_inner());
    let s = String::from_utf8_lossy(&g);
    s.lines()
        .rev()
        .find(|l| l.starts_with("hipfft-pool:") || l.contains("panicked"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| format!("exited with {st}"))
}

fn table(results: &[ConfigResult]) -> String {
    let w = results.iter().map(|r| r.config.label.len()).max().unwrap_or(13).max(13);
    let mut o = String::new();
    o.push_str(&format!("{:<w$}  run  result  in call  {:<44}  live  peak  time\n", "configuration", "stopped at"));
    o.push_str(&format!("{}  ---  ------  -------  {}  ----  ----  -------\n", "-".repeat(w), "-".repeat(44)));
    for cr in results {
        if let Some(why) = &cr.rejected {
            o.push_str(&format!("{:<w$}  -    {why}\n", cr.config.label));
            continue;
        }
        for r in &cr.runs {
            let res = match r.outcome {
                Outcome::Pass => "pass",
                Outcome::Hang => "HANG",
                Outcome::Fail => "FAIL",
                Outcome::Error => "ERROR",
            };
            let at = match r.outcome {
                Outcome::Hang => r.stopped_at.as_ref().map_or("?".into(), |p| p.describe()),
                Outcome::Pass => "-".into(),
                _ => r.reason.clone().unwrap_or_default(),
            };
            let at: String = if at.chars().count() > 44 { at.chars().take(43).chain(std::iter::once('…')).collect() } else { at };
            let (live, call) = match (r.outcome, &r.counts_at_stop) {
                (Outcome::Hang, Some(k)) => (k.shown().to_string(), k.calls.clone()),
                (Outcome::Hang, None) => ("?".into(), "?".into()),
                _ => ("-".into(), "-".into()),
            };
            let peak = r.peak_live.map_or("-".into(), |p| p.to_string());
            o.push_str(&format!("{:<w$}  {:<3}  {res:<6}  {call:<7}  {at:<44}  {live:<4}  {peak:<4}  {:>6.2}s\n", cr.config.label, r.run, r.elapsed_s));
        }
    }
    o
}

fn render_report(out: &SweepOut) -> String {
    let mut o = String::new();
    o.push_str(&format!("hipfft-pool {} sweep report\n", out.version));
    o.push_str(&format!("command:  {}\n", out.command.join(" ")));
    o.push_str(&format!("runtime:  {}\n", out.runtime));
    if let Some(b) = out.sim_block_above_live {
        o.push_str(&format!("sim:      plan creation blocks forever once more than {b} handles would be alive (HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE)\n"));
    }
    o.push_str(&format!(
        "limits:   a run hangs after {:.1} s without exit or {:.1} s without progress; {} runs per configuration\n",
        out.timeout_s, out.stall_s, out.runs_per_config
    ));
    o.push_str("columns:  in call = the plan calls running when the run stopped (create, destroy, exec);\n");
    o.push_str("          stopped at = the step in progress when the run stopped (cycle, position in the run order, shape);\n");
    o.push_str("          live = handles alive during the hang (the sim's count on the sim, else counted at the runtime boundary);\n");
    o.push_str("          peak = the most handles alive during the run\n\n");
    let mut group = "";
    let mut by_group: Vec<(&str, Vec<ConfigResult>)> = Vec::new();
    for r in &out.configs {
        if r.config.group != group {
            group = &r.config.group;
            by_group.push((group, Vec::new()));
        }
        by_group.last_mut().expect("pushed").1.push(r.clone());
    }
    for (g, rs) in &by_group {
        if by_group.len() > 1 || *g != "sweep" {
            o.push_str(&format!("== {g} ==\n"));
        }
        o.push_str(&table(rs));
        o.push('\n');
    }
    o.push_str("Verdicts:\n");
    for r in &out.configs {
        o.push_str(&format!("  {}\n", r.summary));
    }
    let obs = observations(&out.configs);
    if !obs.is_empty() {
        o.push_str("\nObservations:\n");
        for l in obs {
            o.push_str(&format!("  {l}\n"));
        }
    }
    for n in &out.notes {
        o.push_str(&format!("\nnote: {n}\n"));
    }
    let hung: Vec<(&ConfigResult, &RunResult)> =
        out.configs.iter().flat_map(|c| c.runs.iter().map(move |r| (c, r))).filter(|(_, r)| r.outcome != Outcome::Pass).collect();
    if !hung.is_empty() {
        o.push_str("\nRuns that did not pass, in detail\n");
        o.push_str("==================================\n");
    }
    for (c, r) in hung {
        o.push_str(&format!("\n--- {} run {}: {:?} ---\n", c.config.label, r.run, r.outcome));
        if let Some(why) = &r.reason {
            o.push_str(&format!("why:        {why}\n"));
        }
        if let Some(p) = &r.stopped_at {
            o.push_str(&format!("stopped at: {} (step {} of the run, {} steps done)\n", p.describe(), p.step, r.steps_done));
        }
        if let Some(k) = &r.counts_at_stop {
            o.push_str(&format!(
                "counts:     {} handles alive at the runtime boundary{} (most since the step began {}); the {}'s own count {}, cached {}, in flight {}\n",
                k.rt_live,
                k.sim_live.map_or(String::new(), |s| format!(", {s} by the sim's count")),
                k.step_max,
                match c.config.mode {
                    Mode::Pool => "pool",
                    Mode::Legacy => "legacy cache",
                },
                k.live,
                k.cached,
                k.in_flight
            ));
            o.push_str(&format!("in call:    {}\n", if k.calls == "-" { "no plan call running (stuck elsewhere)".to_string() } else { format!("plan {} running", k.calls) }));
        }
        o.push_str(&format!("time:       {:.2} s, pid {}, exit {}\n", r.elapsed_s, r.pid, r.exit_code.map_or("none (killed)".into(), |c| c.to_string())));
        if let Some(h) = &r.hang_report {
            o.push_str(&h.render());
        }
        if !r.stderr_tail.is_empty() {
            o.push_str("stderr (last lines):\n");
            for l in r.stderr_tail.lines() {
                o.push_str(&format!("  {l}\n"));
            }
        }
    }
    o
}

/// What the configurations say together: hangs that follow a count, not a shape.
fn observations(configs: &[ConfigResult]) -> Vec<String> {
    let mut out = Vec::new();
    let hung_at = |c: &ConfigResult| -> Option<Position> {
        (c.verdict == "hung").then(|| c.runs.first().and_then(|r| r.stopped_at.clone())).flatten()
    };
    for (i, a) in configs.iter().enumerate() {
        for b in &configs[i + 1..] {
            let (ca, cb) = (&a.config, &b.config);
            let same = ca.mode == cb.mode && ca.capacity == cb.capacity && ca.ceiling == cb.ceiling && ca.destroy == cb.destroy && ca.auto_alloc == cb.auto_alloc && ca.repeat == cb.repeat && ca.repeat.is_none();
            if !same || ca.order == cb.order || (ca.order != "forward" && cb.order != "forward") {
                continue;
            }
            if let (Some(pa), Some(pb)) = (hung_at(a), hung_at(b)) {
                let follows = if pa.step == pb.step && pa.shape != pb.shape {
                    "same step, different shape: the hang follows the number of plans made, not a shape"
                } else if pa.shape == pb.shape {
                    "same shape: the hang follows the shape"
                } else {
                    "different step and shape"
                };
                out.push(format!(
                    "order {} hangs at step {} (shape #{}), order {} at step {} (shape #{}): {follows}",
                    ca.order, pa.step, pa.shape, cb.order, pb.step, pb.shape
                ));
            }
        }
    }
    // Where the limit lies: the live count of every hang, and the call it hung in.
    let hangs: Vec<&RunResult> = configs.iter().flat_map(|c| c.runs.iter()).filter(|r| r.outcome == Outcome::Hang).collect();
    let live: BTreeSet<usize> = hangs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|k| k.shown())).collect();
    let calls: BTreeSet<&str> = hangs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|k| k.calls.as_str())).collect();
    if live.len() == 1 && calls.len() == 1 && calls.contains("create") {
        let n = *live.iter().next().expect("one");
        out.push(format!(
            "every hang ({}) was a plan creation with {n} handles alive counting the one being made: the device stops at {} live plans; a pool with --ceiling {} or less stays below it",
            hangs.len(),
            n - 1,
            n - 1
        ));
    } else if !hangs.is_empty() {
        let live = live.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
        out.push(format!("hangs had {live} handles alive, in plan calls: {}", calls.into_iter().collect::<Vec<_>>().join(", ")));
    }
    if calls_any(&hangs, "destroy") {
        out.push("a hang inside a plan destroy: the case the original block was traced to (hipFree inside hipfftDestroy waiting in a device-wide synchronization); see docs/investigation.md".into());
    }
    let passed_controls: Vec<&ConfigResult> = configs.iter().filter(|c| c.config.repeat.is_some() && c.verdict == "passed").collect();
    for c in passed_controls {
        out.push(format!("{}: the single-shape control passed (one plan, reused): repetition alone does not hang", c.config.label));
    }
    out
}

fn calls_any(hangs: &[&RunResult], call: &str) -> bool {
    hangs.iter().any(|r| r.counts_at_stop.as_ref().is_some_and(|k| k.calls.contains(call)))
}

fn sweep_plot(out: &SweepOut, results: &[ConfigResult]) -> String {
    let mut series = Vec::new();
    let mut notes = Vec::new();
    for cr in results {
        let Some(r) = cr.runs.first() else {
            let why = if cr.rejected.is_some() { "rejected (capacity > ceiling), not run" } else { "not run" };
            notes.push(format!("{}: {why}", cr.config.label));
            continue;
        };
        let points: Vec<(f64, f64)> = r.rows.iter().map(|row| (row.step as f64 + 1.0, row.plotted_live() as f64)).collect();
        series.push(Series { label: cr.config.label.clone(), points, hung: r.outcome == Outcome::Hang, dashed: false });
    }
    let mut hlines = Vec::new();
    let ceilings: BTreeSet<usize> = results.iter().filter(|c| c.rejected.is_none()).filter_map(|c| c.config.ceiling).collect();
    for c in ceilings {
        hlines.push(HLine { label: format!("pool live ceiling {c}"), y: c as f64, color: plot::CEILING_COLOR });
    }
    if let Some(b) = out.sim_block_above_live {
        hlines.push(HLine { label: format!("sim blocks above {b} live"), y: b as f64, color: plot::BLOCK_COLOR });
    }
    plot::svg(
        &format!("hipfft-pool sweep on {}: live handles per configuration (first run)", out.runtime),
        "step (shapes run)",
        "live handles, most during each step",
        &series,
        &hlines,
        &notes,
    )
}

fn summarize(plan: &Plan<'_>, results: &[ConfigResult], notes: &[String]) -> SweepOut {
    let a = plan.args;
    let all_runs = || results.iter().flat_map(|c| c.runs.iter());
    let hung = all_runs().any(|r| r.outcome == Outcome::Hang);
    let failed = all_runs().any(|r| r.outcome == Outcome::Fail);
    let errored = all_runs().any(|r| r.outcome == Outcome::Error);
    let code: u8 = if hung || failed {
        1
    } else if errored {
        2
    } else {
        0
    };
    let block = all_runs().find_map(|r| r.block_above);
    let runtime = all_runs().find_map(|r| r.result.as_ref()?.get("runtime")?.as_str().map(str::to_string)).unwrap_or_else(|| a.exp.runtime.clone());
    SweepOut {
        version: env!("CARGO_PKG_VERSION"),
        runtime,
        command: std::env::args().collect(),
        timeout_s: plan.timeout.as_secs_f64(),
        stall_s: plan.stall.as_secs_f64(),
        runs_per_config: a.runs,
        sim_block_above_live: block,
        configs: results.to_vec(),
        hung,
        exit_code: code,
        report: a.report.display().to_string(),
        notes: notes.to_vec(),
    }
}

/// Rewrites the report with what is done so far, so an interrupted sweep leaves one.
fn checkpoint(plan: &Plan<'_>, results: &[ConfigResult], notes: &[String]) {
    let text = render_report(&summarize(plan, results, notes));
    let _ = std::fs::write(&plan.args.report, format!("(partial: the sweep was still running; {} configurations done)\n{text}", results.len()));
}

fn finish(plan: &Plan<'_>, results: Vec<ConfigResult>, notes: Vec<String>) -> Result<ExitCode> {
    let a = plan.args;
    let out = summarize(plan, &results, &notes);
    let code = out.exit_code;
    let text = render_report(&out);
    std::fs::write(&a.report, &text).map_err(|e| bad("--report", format!("cannot write {}: {e}", a.report.display())))?;
    if let Some(p) = &a.timeline {
        let rows: Vec<TimelineRow> = results.iter().flat_map(|c| c.runs.iter().flat_map(|r| r.rows.iter().cloned())).collect();
        plot::write_csv(p, &rows).map_err(|e| bad("--timeline", format!("cannot write {}: {e}", p.display())))?;
    }
    if let Some(p) = &a.plot {
        std::fs::write(p, sweep_plot(&out, &results)).map_err(|e| bad("--plot", format!("cannot write {}: {e}", p.display())))?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&out).expect("sweep result serializes"));
    } else {
        // The summary part of the report: everything before the details.
        let summary = text.split("\nRuns that did not pass, in detail").next().unwrap_or(&text);
        print!("{summary}");
        println!("\nreport: {}", a.report.display());
    }
    Ok(ExitCode::from(code))
}
