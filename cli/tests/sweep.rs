//! The investigation of the seed's hang, rerun on the simulated runtime through the real binary:
//! `hipfft-pool sweep` runs every probe in a child process, with the sim set to block plan
//! creation forever (in a pipe read) once more than 12 handles would be alive, as the
//! gfx1151 did. These tests check that the sweep reproduces the original table, that the
//! pool under a ceiling of 12 passes, that reordering moves the hang, that one shape
//! repeated never hangs, that the hang report names the blocked frame, and that the JSON,
//! CSV and SVG outputs are what they claim.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_hipfft-pool");

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hipfft-pool-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The binary with the injected block and none of the pool's own variables.
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).env("HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE", "12");
    for v in ["HIPFFT_POOL_CAPACITY", "MLX_ROCM_FFT_CACHE_SIZE", "HIPFFT_POOL_LIVE_CEILING", "HIPFFT_POOL_RUNTIME", "HIPFFT_POOL_ACQUIRE_TIMEOUT_MS"] {
        c.env_remove(v);
    }
    c
}

struct Swept {
    code: i32,
    json: Value,
    report: String,
}

/// `sweep --runtime sim --json` with short limits; the report goes to `dir`.
fn sweep(dir: &Path, args: &[&str]) -> Swept {
    sweep_with(dir, args, &[])
}

fn sweep_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Swept {
    let report = dir.join("report.txt");
    let mut all = vec!["sweep", "--runtime", "sim", "--json", "--timeout", "20", "--stall", "2", "--report", report.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = command(&all).envs(env.iter().copied()).output().expect("run the sweep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("--json is not JSON ({e}): {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    let report = std::fs::read_to_string(&report).expect("the report is written");
    Swept { code: out.status.code().expect("exited"), json, report }
}

/// The report's start (the table, the verdicts, then the first runs in detail), for failure messages.
fn brief(report: &str) -> String {
    report.chars().take(8000).collect()
}

fn configs(j: &Value) -> &Vec<Value> {
    j["configs"].as_array().expect("configs")
}

fn by_label<'a>(j: &'a Value, label: &str) -> &'a Value {
    configs(j).iter().find(|c| c["config"]["label"] == label).unwrap_or_else(|| panic!("no configuration {label:?} in {j}"))
}

fn runs(c: &Value) -> &Vec<Value> {
    c["runs"].as_array().expect("runs")
}

#[test]
fn the_legacy_cache_reproduces_the_original_table() {
    let dir = scratch("table");
    let s = sweep(&dir, &["--mode", "legacy", "--capacities", "8,16,24,32,128", "--runs", "3", "--backtrace", "proc"]);
    assert_eq!(s.code, 1, "a hang makes the exit status 1\n{}", brief(&s.report));
    assert_eq!(s.json["hung"], true);
    assert_eq!(s.json["sim_block_above_live"], 12);
    let eight = by_label(&s.json, "legacy cap=8");
    assert_eq!(eight["verdict"], "passed", "{}", brief(&s.report));
    assert_eq!(runs(eight).len(), 3);
    for r in runs(eight) {
        assert_eq!(r["outcome"], "pass");
        assert_eq!(r["result"]["transforms"], 90);
        assert!(r["peak_live"].as_u64().unwrap() <= 12, "{r}");
    }
    for cap in [16, 24, 32, 128] {
        let c = by_label(&s.json, &format!("legacy cap={cap}"));
        assert_eq!(c["verdict"], "hung", "{}", brief(&s.report));
        let rs = runs(c);
        assert_eq!(rs.len(), 3);
        for r in rs {
            assert_eq!(r["outcome"], "hang", "{r}");
            assert!(r["reason"].as_str().unwrap().contains("no progress"), "{r}");
            // The same place every run: the 13th distinct shape needs the 13th live handle.
            let at = &r["stopped_at"];
            assert_eq!((at["phase"].as_str(), at["cycle"].as_u64(), at["pos"].as_u64(), at["step"].as_u64()), (Some("shapes"), Some(0), Some(12), Some(12)), "{r}");
            assert_eq!(r["counts_at_stop"]["sim_live"], 13);
            assert_eq!(r["counts_at_stop"]["rt_live"], 13);
            assert_eq!(r["counts_at_stop"]["calls"], "create", "stuck inside plan creation");
            assert!(r["exit_code"].is_null(), "killed, not exited");
        }
        assert!(c["summary"].as_str().unwrap().contains("every time at cycle 0 pos 12"), "{}", c["summary"]);
    }
    // The table names each run, its result, where it stopped and the live count.
    let line = s.report.lines().find(|l| l.starts_with("legacy cap=24 ") && l.contains("HANG")).expect("a table row");
    assert!(line.contains("create") && line.contains("cycle 0 pos 12") && line.contains(" 13 "), "{line}");
    assert_eq!(s.report.lines().filter(|l| l.starts_with("legacy cap=8 ") && l.contains(" pass ")).count(), 3, "{}", brief(&s.report));
    assert_eq!(s.report.lines().filter(|l| l.starts_with("legacy cap=") && l.contains(" HANG ")).count(), 12);
}

#[test]
fn the_pool_under_a_ceiling_of_12_passes_every_capacity_it_accepts() {
    let dir = scratch("pool");
    let s = sweep(&dir, &["--mode", "pool", "--ceiling", "12", "--capacities", "8,12,16,128", "--runs", "3"]);
    assert_eq!(s.code, 0, "rejected configurations do not fail the sweep\n{}", brief(&s.report));
    assert_eq!(s.json["hung"], false);
    for cap in [8, 12] {
        let c = by_label(&s.json, &format!("pool cap={cap} ceil=12"));
        assert_eq!(c["verdict"], "passed", "{}", brief(&s.report));
        for r in runs(c) {
            assert_eq!(r["outcome"], "pass");
            assert!(r["peak_live"].as_u64().unwrap() <= 12, "{r}");
            assert_eq!(r["result"]["sim_live_at_end"], 0);
        }
    }
    for cap in [16, 128] {
        let c = by_label(&s.json, &format!("pool cap={cap} ceil=12"));
        assert_eq!(c["verdict"], "rejected");
        assert!(c["rejected"].as_str().unwrap().starts_with("rejected: capacity"), "{c}");
        assert!(c["rejected"].as_str().unwrap().contains("> ceiling 12"), "{c}");
        assert!(runs(c).is_empty(), "a rejected configuration is not run");
    }
    assert!(s.report.contains("pool cap=128 ceil=12  -    rejected: capacity 128 > ceiling 12"), "{}", brief(&s.report));
}

#[test]
fn reordering_moves_the_legacy_hang() {
    let dir = scratch("order");
    let s = sweep(&dir, &["--mode", "legacy", "--capacities", "16", "--order", "forward,reverse", "--runs", "2", "--backtrace", "off"]);
    assert_eq!(s.code, 1);
    let fwd = by_label(&s.json, "legacy cap=16");
    let rev = by_label(&s.json, "legacy cap=16 order=reverse");
    assert_eq!((fwd["verdict"].as_str(), rev["verdict"].as_str()), (Some("hung"), Some("hung")), "{}", brief(&s.report));
    let at = |c: &Value| runs(c).iter().map(|r| (r["stopped_at"]["step"].as_u64().unwrap(), r["stopped_at"]["shape"].as_u64().unwrap())).collect::<Vec<_>>();
    // Forward hangs on shape 12, reverse on shape 13 (the 13th from the end): the hung shape
    // moves with the order; the step does not, as the 13th creation is the one that blocks.
    assert_eq!(at(fwd), vec![(12, 12), (12, 12)]);
    assert_eq!(at(rev), vec![(12, 13), (12, 13)]);
    assert!(s.report.contains("the hang follows the number of plans made, not a shape"), "{}", brief(&s.report));
}

#[test]
fn one_shape_repeated_never_hangs() {
    let dir = scratch("repeat");
    let s = sweep(&dir, &["--mode", "legacy", "--capacities", "128", "--repeat-shape", "0", "--repeat", "60", "--runs", "3"]);
    assert_eq!(s.code, 0, "{}", brief(&s.report));
    let c = by_label(&s.json, "legacy cap=128 repeat=0x60");
    assert_eq!(c["verdict"], "passed");
    for r in runs(c) {
        assert_eq!(r["result"]["steps"], 180, "60 repeats x 3 cycles");
        assert_eq!(r["result"]["creations"], 1, "a repeated shape reuses one plan");
        assert_eq!(r["peak_live"], 1);
    }
}

#[test]
fn the_hang_report_names_the_blocked_pipe_read() {
    let dir = scratch("report");
    let logs = dir.join("logs");
    let cache = dir.join("rtc.db");
    let s = sweep(
        &dir,
        &["--mode", "legacy", "--capacities", "16", "--runs", "1", "--backtrace", "auto", "--rocfft-log", logs.to_str().unwrap(), "--rtc-cache", cache.to_str().unwrap(), "--rtc-process", "1"],
    );
    assert_eq!(s.code, 1);
    let r = &runs(by_label(&s.json, "legacy cap=16"))[0];
    let h = &r["hang_report"];
    let threads = h["process"]["threads"].as_array().unwrap();
    assert!(threads.len() >= 3, "{h}");
    // The kernel's view: the probe thread sleeps in a pipe read (anon_pipe_read on 6.x
    // kernels, pipe_read or pipe_wait on older ones).
    let main = threads.iter().find(|t| t["tid"] == h["process"]["pid"]).expect("the main thread");
    let wchan = main["wchan"].as_str().unwrap();
    assert!(["pipe_read", "pipe_wait", "anon_pipe_read"].iter().any(|w| wchan.contains(w)), "wchan {wchan:?}");
    let blocked = h["blocked_in_pipe_read"].as_array().unwrap();
    assert_eq!(blocked.len(), 1, "only the probe thread (parent-watch is left out): {blocked:?}");
    assert!(s.report.contains("blocked in a pipe read:"), "{}", brief(&s.report));
    assert!(s.report.contains(&format!("wchan {wchan}")));
    if hipfft_on_path("gdb") && h["gdb"].is_string() {
        // gdb's view: read(2) called by the sim's blocker, inside plan creation.
        let bt = h["gdb"].as_str().unwrap();
        assert!(bt.contains("read"), "{bt}");
        assert!(bt.contains("hipfft_pool::runtime::sim::block::Blocker::block"), "{bt}");
        assert!(bt.contains("plan_create"), "{bt}");
        let frames: Vec<&str> = main["top_frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        assert!(frames[0].contains("read"), "{frames:?}");
        assert!(frames.iter().any(|f| f.contains("Blocker::block")), "{frames:?}");
        assert!(frames.iter().any(|f| f.contains("create_plan")), "{frames:?}");
        assert!(s.report.contains("gdb backtrace (thread apply all bt):"));
        assert!(blocked[0].as_str().unwrap().contains("Blocker::block"), "{blocked:?}");
    } else {
        eprintln!("gdb not usable here: {}", h["gdb_note"]);
    }
    assert_eq!(h["descendants"].as_array().unwrap().len(), 0, "the sim starts no helper process");
    assert!(s.report.contains("child processes: none"));
    // The rocFFT variables reached the child (read back from its /proc environ).
    let env: Vec<&str> = h["process"]["env"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let run_dir = logs.join("legacy_cap=16").join("run1");
    assert!(run_dir.is_dir(), "a log directory per configuration and run");
    for want in [
        format!("ROCFFT_RTC_CACHE_PATH={}", cache.display()),
        "ROCFFT_RTC_PROCESS=1".to_string(),
        "ROCFFT_LAYER=43".to_string(),
        format!("ROCFFT_LOG_TRACE_PATH={}", run_dir.join("trace.log").display()),
        format!("ROCFFT_LOG_RTC_PATH={}", run_dir.join("rtc.log").display()),
        "HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE=12".to_string(),
    ] {
        assert!(env.contains(&want.as_str()), "{want} not in the child's environment: {env:?}");
    }
}

#[test]
fn a_destroy_that_blocks_is_named() {
    // The original block's signature: hipfftDestroy never returning. Every destroy blocks.
    let dir = scratch("destroy");
    let s = sweep_with(&dir, &["--mode", "legacy,pool", "--capacities", "8", "--runs", "1", "--backtrace", "proc"], &[("HIPFFT_POOL_SIM_BLOCK_DESTROY", "1")]);
    assert_eq!(s.code, 1);
    for label in ["legacy cap=8", "pool cap=8 ceil=8"] {
        let r = &runs(by_label(&s.json, label))[0];
        assert_eq!(r["outcome"], "hang", "{}", brief(&s.report));
        // One blocked destroy, or more: a miss at the ceiling hands its victim's destroy to a
        // creation worker, so a second eviction's destroy (after a wake-up) runs beside the
        // first instead of queueing behind it on the destroyer thread. Either names the call.
        let calls = r["counts_at_stop"]["calls"].as_str().unwrap_or("");
        assert!(calls == "destroy" || calls.starts_with("destroyx"), "{r}");
        // The first eviction: the 9th distinct shape.
        assert_eq!(r["stopped_at"]["pos"], 8, "{r}");
    }
    assert!(s.report.contains("a hang inside a plan destroy: the case the original block was traced to"), "{}", brief(&s.report));
    // The table names the call in its own column: "destroy", or "destroyxN" for N at once.
    let named = |l: &str| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        cols.windows(2).any(|w| w[0] == "HANG" && (w[1] == "destroy" || w[1].starts_with("destroyx")))
    };
    assert!(s.report.lines().any(|l| l.starts_with("pool cap=8 ceil=8 ") && named(l)), "{}", brief(&s.report));
    assert!(s.report.lines().any(|l| l.starts_with("legacy cap=8 ") && named(l)), "{}", brief(&s.report));
}

fn hipfft_on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

fn polylines(svg: &str) -> usize {
    svg.matches("<polyline").count()
}

#[test]
fn the_sweep_plots_one_line_per_configuration_and_writes_a_timeline() {
    let dir = scratch("plot");
    let (svg, csv) = (dir.join("live.svg"), dir.join("live.csv"));
    let s = sweep(
        &dir,
        &["--mode", "legacy,pool", "--ceiling", "12", "--capacities", "8,12", "--runs", "1", "--backtrace", "off", "--plot", svg.to_str().unwrap(), "--timeline", csv.to_str().unwrap()],
    );
    assert_eq!(s.code, 1, "legacy at 12 makes a 13th handle before it evicts, and hangs\n{}", brief(&s.report));
    assert_eq!(by_label(&s.json, "legacy cap=12")["verdict"], "hung");
    assert_eq!(by_label(&s.json, "pool cap=12 ceil=12")["verdict"], "passed");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(polylines(&svg), 4, "one polyline per configuration");
    for label in ["legacy cap=8", "legacy cap=12", "pool cap=8 ceil=12", "pool cap=12 ceil=12", "pool live ceiling 12", "sim blocks above 12 live"] {
        assert!(svg.contains(label), "{label} missing from the plot");
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("config,run,event,step,cycle,pos,shape,live,cached,in_flight,rt_live,step_max,sim_live,t_s"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 14));
    let of = |cfg: &str| rows.iter().filter(|r| r[0] == cfg).collect::<Vec<_>>();
    assert_eq!(of("legacy cap=8").len(), 78);
    assert_eq!(of("pool cap=12 ceil=12").len(), 78);
    // The pool never has more than its ceiling alive, even within a step; legacy at 8 has 9.
    assert!(of("pool cap=12 ceil=12").iter().all(|r| r[11].parse::<usize>().unwrap() <= 12));
    assert_eq!(of("legacy cap=8").iter().map(|r| r[11].parse::<usize>().unwrap()).max(), Some(9));
    let hang: Vec<_> = of("legacy cap=12").into_iter().filter(|r| r[2] == "hang").collect();
    assert_eq!(hang.len(), 1);
    assert_eq!((hang[0][3], hang[0][11], hang[0][12]), ("12", "13", "13"), "the hang row: step 12, 13 alive");
}

#[test]
fn probe_writes_its_own_timeline_and_plot() {
    let dir = scratch("probe");
    let (svg, csv) = (dir.join("p.svg"), dir.join("p.csv"));
    for (mode, extra) in [("legacy", vec!["--destroy", "eager"]), ("pool", vec!["--ceiling", "12", "--auto-alloc"])] {
        let mut args = vec!["probe", "--runtime", "sim", "--json", "--mode", mode, "--capacity", "8", "--timeline", csv.to_str().unwrap(), "--plot", svg.to_str().unwrap()];
        args.extend(extra);
        let out = command(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["passed"], true, "{j}");
        assert_eq!(j["mode"], mode);
        // Legacy: the cache's 8 and one evicted plan still in flight. The pool: under its
        // ceiling (its evicted plans are destroyed off the miss, so a few more may be alive).
        let bound = if mode == "legacy" { 9 } else { 12 };
        assert!(j["rt_peak_live"].as_u64().unwrap() <= bound, "{mode}: {j}");
        let csv = std::fs::read_to_string(&csv).unwrap();
        assert!(csv.starts_with("config,run,event,step,"));
        assert_eq!(csv.lines().count(), 1 + 78);
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert_eq!(polylines(&svg), 4, "live (most, after), cached, in flight");
        assert!(svg.contains("sim blocks above 12"));
    }
}

#[test]
fn the_single_run_legacy_probe_hangs_like_the_sweep_says() {
    // The probe with the protocol, killed by hand after its progress stops: the last
    // progress line names position 12 with 12 handles alive before the 13th creation.
    use std::io::{BufRead, BufReader};
    let mut child = command(&["probe", "--runtime", "sim", "--mode", "legacy", "--capacity", "16", "--progress-protocol"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut last_progress = String::new();
    let mut heartbeat = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with("progress ") {
            last_progress = line;
        } else if line.starts_with("heartbeat ") && last_progress.starts_with("progress step=12 ") {
            heartbeat = line;
            if heartbeat.contains("calls=create") {
                break;
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(last_progress.starts_with("progress step=12 cycle=0 pos=12 shape=12 live=12 cached=12"), "{last_progress}");
    assert!(heartbeat.contains("rt_live=13") && heartbeat.contains("sim_live=13"), "{heartbeat}");
}

#[test]
fn usage_errors_exit_2() {
    let dir = scratch("usage");
    let report = dir.join("r.txt");
    for bad in [
        vec!["sweep", "--capacities", "0"],
        vec!["sweep", "--mode", "cache"],
        vec!["sweep", "--order", "sideways"],
        vec!["sweep", "--destroy", "later"],
        vec!["sweep", "--repeat-shape", "99", "--repeat", "3"],
        vec!["sweep", "--backtrace", "lldb"],
        vec!["probe", "--mode", "legacy", "--order", "shuffle:x"],
        vec!["sweep", "--rtc-process", "3"],
    ] {
        let mut args = bad.clone();
        args.extend(["--runtime", "sim"]);
        if bad[0] == "sweep" {
            args.extend(["--report", report.to_str().unwrap()]);
        }
        let out = command(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!report.exists(), "no report for a sweep that never started");
}
