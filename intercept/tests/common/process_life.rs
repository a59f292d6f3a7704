//! How real processes live, under an interposer on the simulated runtime: the tests both
//! interposers run (`tests/process_life.rs` of each) over `intercept/tests/c/process_life.c`,
//! each bounded in time. Ground truth is the simulated runtime's own counts and each
//! transform's checked value; a hang fails the test by name.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::*;

/// `process_life.c` compiled against the interposer `lib` (of `package`), with `flags`.
pub fn build(lib: &str, package: &str, flags: &[&str]) -> PathBuf {
    let exe = work_dir(&format!("process_life_{lib}")).join("process_life");
    compile(&exe, &["process_life.c"], flags, &[&library_dir(lib, package)], &[lib]);
    exe
}

fn sim<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![("HIPFFT_POOL_RUNTIME", "sim")];
    env.extend_from_slice(extra);
    env
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// 16 threads pass 6 handles of distinct shapes among them (one thread at a time per
/// handle, as cuFFT allows) at ceiling 4: every execution succeeds with the right value, no
/// `ALLOC_FAILED`, and the sim never holds more than 4 plans. Before, the threads woken by
/// one flush put their leases back on the handles and the rest slept out the timeout.
pub fn handles_passed_between_threads_at_a_full_ceiling(exe: &Path) {
    let dir = work_dir("process_life_handoff");
    let out = dir.join("m.json");
    let env = sim(&[
        ("HIPFFT_POOL_LIVE_CEILING", "4"),
        // A sleep past this fails the run instead of slowing it.
        ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "5000"),
        ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
    ]);
    let (o, _) = run_within(exe, &["handoff", "16", "6", "64"], &env, Duration::from_secs(120));
    assert!(o.status.success() && stdout(&o).contains("ok handoff"), "{}", show(&o));
    assert!(stdout(&o).contains("1024 execs, 0 ALLOC_FAILED, 0 other failures, 0 wrong"), "{}", show(&o));
    let m = metrics(&out);
    assert!(get(&m, "sim_peak_live_handles") <= 4, "{m}");
    assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{m}");
    assert_eq!(get(&m, "ceiling_timeouts"), 0, "{m}");
}

/// A handle destroyed on one thread while another executes it, 30 times at ceiling 1: every
/// time, a plan of another shape can be made right after (the executing thread's lease
/// found its way back), and nothing is left live.
pub fn a_destroy_racing_an_execution_strands_no_lease(exe: &Path) {
    let env = sim(&[("HIPFFT_POOL_LIVE_CEILING", "1"), ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "2000")]);
    let (o, _) = run_within(exe, &["destroy_race", "30"], &env, Duration::from_secs(120));
    assert!(o.status.success() && stdout(&o).contains("30 trials, 0 ended without a slot"), "{}", show(&o));
}

/// 2^20 handles created and destroyed in a row, then a stale copy of the first handle is
/// refused (`INVALID_PLAN`) and a new handle works. (That values come round again after
/// their space is used, skipping live ones, is proved on the value space itself in
/// `handle_values`' tests.)
pub fn creating_and_destroying_handles_for_ever(exe: &Path) {
    let (o, _) = run_within(exe, &["reuse", "1048576"], &sim(&[]), Duration::from_secs(120));
    assert!(o.status.success() && stdout(&o).contains("ok reuse"), "{}", show(&o));
}

/// The files in `dir` whose names start with `stem`.
fn files_of(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(stem))
        .collect();
    v.sort();
    v
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = work_dir(name);
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        let _ = std::fs::remove_file(f.path());
    }
    dir
}

/// 100 children that never call the API exit while the parent's threads execute (holding
/// the interposer's locks at the fork), with metrics and manifest files set: none hangs,
/// none writes, and the files at the end are the parent's (its pid, its counts).
pub fn children_that_never_call_the_api_exit_at_once_and_write_nothing(exe: &Path) {
    let dir = fresh_dir("process_life_fork_exit");
    let (m, man) = (dir.join("m.json"), dir.join("manifest.json"));
    let env = sim(&[("HIPFFT_POOL_METRICS_OUT", m.to_str().unwrap()), ("HIPFFT_POOL_MANIFEST_OUT", man.to_str().unwrap())]);
    let (o, pid) = run_within(exe, &["fork_exit", "100"], &env, Duration::from_secs(120));
    assert!(o.status.success() && stdout(&o).contains("100 children, 0 hung, 0 failed"), "{}", show(&o));
    assert_eq!(files_of(&dir, ""), vec![dir.join("m.json"), dir.join("manifest.json")], "a child wrote a file");
    let parent = metrics(&m);
    assert_eq!(get(&parent, "pid"), pid as u64, "{parent}");
    assert!(get(&parent, "execs") > 0 && get(&parent, "sim_peak_live_handles") > 0, "{parent}");
    assert!(std::fs::read_to_string(&man).unwrap().contains("\"plans\""), "the parent's manifest");
}

/// Children that plan and execute after the fork get a pool of their own (the sim allows
/// it), with checked results, at once; each writes to a path of its own (`PATH.<pid>`),
/// and the parent's file stays the parent's.
pub fn a_child_that_uses_the_api_gets_a_fresh_pool_and_a_file_of_its_own(exe: &Path) {
    let dir = fresh_dir("process_life_fork_use");
    let m = dir.join("m.json");
    let env = sim(&[("HIPFFT_POOL_METRICS_OUT", m.to_str().unwrap())]);
    let (o, pid) = run_within(exe, &["fork_use"], &env, Duration::from_secs(120));
    assert!(o.status.success() && stdout(&o).contains("8 children, 0 hung, 0 failed"), "{}", show(&o));
    assert_eq!(get(&metrics(&m), "pid"), pid as u64);
    let children = files_of(&dir, "m.json.");
    assert_eq!(children.len(), 8, "{children:?}");
    for f in children {
        let c = metrics(&f);
        assert_eq!(f.extension().unwrap().to_string_lossy(), get(&c, "pid").to_string());
        assert_eq!((get(&c, "execs"), get(&c, "creations")), (1, 1), "the child's own pool: {c}");
    }
}

/// 30 processes that each used the API exit at the same moment: with `%p` in the metrics
/// path, 30 files, each whole and each its writer's; with one plain path for all (forked
/// from one parent that made no plan), each child writes `PATH.<pid>`, whole.
pub fn processes_exiting_together_write_whole_files(exe: &Path) {
    for (pattern, prefix, name) in [("m-%p.json", "m-", "m-{}.json"), ("m.json", "m.json.", "m.json.{}")] {
        let dir = fresh_dir("process_life_exit_together");
        let path = dir.join(pattern);
        let env = sim(&[("HIPFFT_POOL_METRICS_OUT", path.to_str().unwrap())]);
        let (o, _) = run_within(exe, &["exit_together", "30"], &env, Duration::from_secs(120));
        assert!(o.status.success() && stdout(&o).contains("30 children, 0 hung, 0 failed"), "{}", show(&o));
        let files = files_of(&dir, "");
        assert_eq!(files.len(), 30, "{pattern}: {files:?}");
        for f in files {
            assert!(f.file_name().unwrap().to_string_lossy().starts_with(prefix), "{f:?}");
            let m = metrics(&f);
            assert_eq!(f.file_name().unwrap().to_string_lossy(), name.replace("{}", &get(&m, "pid").to_string()));
            assert!(get(&m, "execs") >= 5, "{m}");
        }
    }
}

/// `exit()` called by a signal handler on a thread inside the interposer, 40 times: the exit
/// hook waits on no lock (at most a bounded try), so every process ends, and the metrics
/// file, if written, is whole JSON.
pub fn exit_from_a_signal_handler_never_hangs(exe: &Path) {
    let dir = fresh_dir("process_life_signal_exit");
    let (m, man) = (dir.join("m.json"), dir.join("man.json"));
    let env = sim(&[("HIPFFT_POOL_METRICS_OUT", m.to_str().unwrap()), ("HIPFFT_POOL_MANIFEST_OUT", man.to_str().unwrap())]);
    for _ in 0..40 {
        let _ = std::fs::remove_file(&m);
        let (o, _) = run_within(exe, &["signal_exit"], &env, Duration::from_secs(15));
        assert!(o.status.success(), "{}", show(&o));
        if m.exists() {
            metrics(&m);
        }
    }
}

/// The Python program (`intercept/tests/py/fork_exit.py`) under the preloaded interposer:
/// 100 forked children, a quarter of which plan and execute, leave with `sys.exit()` while the
/// parent's threads execute; none hangs or fails, and the parent's file is the parent's.
pub fn python_children_exit_at_once(lib_path: &Path) {
    let dir = fresh_dir("process_life_python");
    let m = dir.join("m.json");
    let script = intercept_dir().join("tests/py/fork_exit.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let env = sim(&[("LD_PRELOAD", lib_path.to_str().unwrap()), ("HIPFFT_POOL_METRICS_OUT", m.to_str().unwrap())]);
    let (o, pid) = run_within(Path::new(&python), &[script.to_str().unwrap(), "100"], &env, Duration::from_secs(180));
    assert!(o.status.success() && stdout(&o).contains("ok fork_exit.py"), "{}", show(&o));
    assert_eq!(get(&metrics(&m), "pid"), pid as u64);
    assert_eq!(files_of(&dir, "m.json.").len(), 25, "one file per child that used the API");
}
