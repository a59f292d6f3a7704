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
//!
//! - `mod.rs`: the flags, the plan of runs, the investigation's experiments, the verdicts.
//! - `child`: one run in a child process, its progress protocol, the kill of a hung run.
//! - `report`: the table, the report, the plot and the checkpoint.

mod child;
mod report;
use child::*;
use report::*;

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

use crate::hang::{self, Backtrace, HangReport};
use crate::legacy::DestroyMode;
use crate::plot::{self, HLine, Series, TimelineRow};
use crate::probe::{ExperimentArgs, Mode, bad, config_label, load_shapes, parse_destroy, parse_mode, parse_runtime, rocfft_env, run_order};

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
    /// The whole investigation of the seed's hang in one go, instead of the product of --mode,
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

/// The investigation of the seed's hang, group by group; later groups use what earlier ones found.
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

