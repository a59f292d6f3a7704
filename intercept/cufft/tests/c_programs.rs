//! `libhipfft_pool_cufft.so` from the outside: C programs written against the cuFFT API
//! (`intercept/tests/c/fft_sim.c`, declaring the prototypes they use) linked to the
//! interposer and run on the simulated runtime, which counts every real handle itself.

#[path = "../../tests/common/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::OnceLock;

use harness::*;

const LIB: &str = "hipfft_pool_cufft";

fn program() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = work_dir("cufft_c").join("fft_sim_cufft");
        compile(&exe, &["fft_sim.c"], &[], &[&library_dir(LIB, "hipfft-pool-cufft")], &[LIB]);
        exe
    })
}

fn sim(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![("HIPFFT_POOL_RUNTIME", "sim")];
    env.extend_from_slice(extra);
    env
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_typed_exec_and_the_xt_calls_match_a_dft() {
    let o = run(program(), &["numerics"], &sim(&[]), true);
    let s = stdout(&o);
    for t in ["C2C", "R2C", "C2R", "Z2Z", "D2Z", "Z2D"] {
        for how in ["Plan1d", "Plan2d", "Plan3d", "MakePlanMany64", "PlanMany"] {
            assert!(s.contains(&format!("ok {t} {how}")), "no {t} {how} line:\n{s}");
        }
        assert!(s.contains(&format!("ok Xt {t}")), "no Xt {t} line:\n{s}");
    }
    assert!(!s.contains("FAIL"), "{s}");
}

#[test]
fn a_hundred_and_twenty_eight_handles_keep_at_most_the_ceiling_alive() {
    let dir = work_dir("cufft_handles");
    let at_exit = dir.join("exit.json");
    let during = dir.join("during.json");
    let env = [
        ("HIPFFT_POOL_RUNTIME", "sim"),
        ("HIPFFT_POOL_LIVE_CEILING", "4"),
        ("HIPFFT_POOL_CAPACITY", "4"),
        ("HIPFFT_POOL_METRICS_OUT", at_exit.to_str().unwrap()),
    ];
    run(program(), &["handles", "128", "3", during.to_str().unwrap()], &env, true);
    for m in [metrics(&during), metrics(&at_exit)] {
        // The ground truth: the simulated runtime's own count of live handles.
        let sim_peak = get(&m, "sim_peak_live_handles");
        assert!((1..=4).contains(&sim_peak), "the sim saw {sim_peak} handles alive at once under a ceiling of 4: {m}");
        assert!(get(&m, "peak_live") <= 4, "{m}");
        assert_eq!(get(&m, "ceiling"), 4, "{m}");
        assert_eq!(get(&m, "virtual_handles_peak"), 128, "{m}");
        // 128 distinct shapes in three rounds through 4 slots: plans were evicted and remade.
        assert!(get(&m, "creations") >= 3 * 128, "{m}");
        assert!(get(&m, "destroys") >= 3 * 128 - 4, "{m}");
        assert!(get(&m, "execs") >= 3 * 128, "{m}");
        assert!(m["sim_violations"].as_array().unwrap().is_empty(), "the sim recorded misuse: {m}");
    }
    let m = metrics(&at_exit);
    assert_eq!(m["eviction"], "lru", "the interposer's default: {m}");
    assert_eq!(get(&m, "virtual_handles_live"), 0, "{m}");
    assert!(get(&m, "live_at_exit") <= 4, "{m}");
    for key in ["hits", "misses", "capacity", "virtual_handles_live"] {
        assert!(m.get(key).is_some(), "no {key}: {m}");
    }
}

#[test]
fn handles_used_from_eight_threads_on_their_own_streams() {
    let dir = work_dir("cufft_threads");
    let out = dir.join("m.json");
    let env = [
        ("HIPFFT_POOL_RUNTIME", "sim"),
        ("HIPFFT_POOL_LIVE_CEILING", "6"),
        ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
    ];
    let o = run(program(), &["threads", "8"], &env, true);
    assert!(stdout(&o).contains("ok 8 threads"), "{}", show(&o));
    let m = metrics(&out);
    assert!(get(&m, "sim_peak_live_handles") <= 6, "{m}");
    assert!(get(&m, "execs") >= 8 * 16 * 4, "{m}");
    assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{m}");
}

#[test]
fn bad_arguments_give_cufft_codes_with_messages() {
    let o = run(program(), &["errors"], &sim(&[]), true);
    let s = stdout(&o);
    for what in [
        "zero length -> 8",
        "exec on a destroyed handle -> 1",
        "C2C exec on an R2C plan -> 4",
        "null work area, auto-allocation off -> 13",
        "callback -> 16",
        "unknown type -> 3",
    ] {
        assert!(s.contains(&format!("ok {what}")), "no \"ok {what}\":\n{s}");
    }
    // The messages name the cuFFT code and the field.
    assert!(s.contains("CUFFT_INVALID_SIZE (8)") && s.contains("`n[0]` = 0"), "{s}");
    // Each failure is logged to stderr once (no subscriber in a C program).
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("hipfft-pool interposer: cufftPlan1d returned CUFFT_INVALID_SIZE"), "{e}");
}

#[test]
fn the_work_size_at_plan_time_is_the_real_one() {
    let o = run(program(), &["worksizes"], &sim(&[]), true);
    assert!(stdout(&o).contains("ok work size 4800"), "{}", show(&o));
}

/// What the interposer reads from the environment, as a C program sees it: a bad value of
/// the simulated runtime or of the poll budget is a line on stderr; an empty
/// `HIPFFT_POOL_EVICTION` is unset (the interposer's LRU, no warning), and one with blanks
/// around it is read trimmed.
#[test]
fn bad_environment_values_reach_stderr_and_blank_ones_are_unset() {
    let dir = work_dir("cufft_env");
    let out = dir.join("m.json");
    let out = out.to_str().unwrap();
    let env = [
        ("HIPFFT_POOL_RUNTIME", "sim"),
        ("HIPFFT_POOL_EVICTION", ""),
        ("HIPFFT_POOL_SIM_CREATE_LATENCY_US", "abc"),
        ("HIPFFT_POOL_POLL_US", "fast"),
        ("HIPFFT_POOL_METRICS_OUT", out),
    ];
    let o = run(program(), &["worksizes"], &env, true);
    let e = String::from_utf8_lossy(&o.stderr);
    for said in ["HIPFFT_POOL_SIM_CREATE_LATENCY_US=\"abc\" ignored", "HIPFFT_POOL_POLL_US=\"fast\" ignored"] {
        assert_eq!(e.matches(said).count(), 1, "{said} once:\n{}", show(&o));
    }
    assert!(!e.contains("HIPFFT_POOL_EVICTION"), "{}", show(&o));
    assert_eq!(metrics(out.as_ref())["eviction"], "lru", "{}", show(&o));
    let env = [("HIPFFT_POOL_RUNTIME", "sim"), ("HIPFFT_POOL_EVICTION", " cost "), ("HIPFFT_POOL_METRICS_OUT", out)];
    let o = run(program(), &["worksizes"], &env, true);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("HIPFFT_POOL_EVICTION"), "{}", show(&o));
    assert_eq!(metrics(out.as_ref())["eviction"], "cost", "{}", show(&o));
}

/// A plan call for a descriptor seen before takes no slot of the ceiling: under a ceiling of
/// 1 held by another plan it makes no plan (the sim's count), and the execution makes it.
#[test]
fn a_plan_call_for_a_descriptor_seen_before_needs_no_slot() {
    let o = run(program(), &["memo"], &sim(&[("HIPFFT_POOL_LIVE_CEILING", "1")]), true);
    assert!(stdout(&o).contains("ok a remembered work size of 4800 made no plan at a full ceiling"), "{}", show(&o));
}

/// The library exports cuFFT's names, its own `hfp_intercept_*`, the driver's graph calls it
/// follows (each of `graphs::cuda::VARIANTS`, no more) and `dlsym`; never the pool's `hfp_*`.
#[test]
fn only_cufft_names_graph_hooks_dlsym_and_hfp_intercept_are_exported() {
    let lib = library_dir(LIB, "hipfft-pool-cufft").join(format!("lib{LIB}.so"));
    let names = exported(&lib);
    let hooks = hipfft_pool_intercept::graphs::cuda::VARIANTS;
    let stray: Vec<_> = names
        .iter()
        .filter(|n| !n.starts_with("cufft") && !n.starts_with("hfp_intercept_") && *n != "dlsym" && !hooks.contains(&n.as_str()))
        .collect();
    assert!(stray.is_empty(), "{} exports names beyond its API, its hooks and dlsym: {stray:?}", lib.display());
    for hook in hooks.iter().chain(&["dlsym"]) {
        assert!(names.iter().any(|n| n == hook), "{hook} is not exported");
    }
    for want in [
        "cufftCreate", "cufftDestroy", "cufftPlan1d", "cufftPlan2d", "cufftPlan3d", "cufftPlanMany",
        "cufftMakePlan1d", "cufftMakePlan2d", "cufftMakePlan3d", "cufftMakePlanMany", "cufftMakePlanMany64",
        "cufftGetSize", "cufftGetSize1d", "cufftGetSize2d", "cufftGetSize3d", "cufftGetSizeMany", "cufftGetSizeMany64",
        "cufftSetAutoAllocation", "cufftSetWorkArea", "cufftSetStream", "cufftExecC2C", "cufftExecR2C", "cufftExecC2R",
        "cufftExecZ2Z", "cufftExecD2Z", "cufftExecZ2D", "cufftXtMakePlanMany", "cufftXtExec", "cufftGetVersion",
        "cufftGetProperty", "hfp_intercept_synchronize",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} is not exported: {names:?}");
    }
}

/// The CUDA path without a GPU: a stand-in libcufft.so.12 and libcudart.so.13 (tests/c/stub/)
/// linked by a "framework extension" that is loaded `RTLD_LOCAL`, as Python loads one, with
/// the interposer preloaded and no `HIPFFT_POOL_RUNTIME`. The interposer must find the
/// mapped library (not in the global scope), bind the pool's runtime to it, let the
/// library's own nested call of an exported name reach the library, and hold a captured
/// execution's plan until the "graph" ran.
#[test]
fn the_cuda_path_finds_an_rtld_local_cufft_and_never_recurses() {
    let dir = work_dir("cufft_cuda_mode");
    let shared = |out: &str, src: &str, soname: &str, link: &[&str]| {
        let mut c = cc();
        c.args(["-shared", "-fPIC", "-O1", "-o"]).arg(dir.join(out)).arg(c_dir().join("stub").join(src));
        c.arg(format!("-Wl,-soname,{soname}")).arg(format!("-L{}", dir.display())).arg(format!("-Wl,-rpath,{}", dir.display()));
        c.args(link);
        let o = c.output().expect("cc");
        assert!(o.status.success(), "{}", show(&o));
    };
    shared("libcufft.so.12", "stub_cufft.c", "libcufft.so.12", &[]);
    shared("libcudart.so.13", "stub_cudart.c", "libcudart.so.13", &[]);
    shared("libplugin.so", "plugin.c", "libplugin.so", &["-l:libcufft.so.12", "-l:libcudart.so.13"]);
    let exe = dir.join("cuda_mode");
    compile(&exe, &["cuda_mode.c"], &[], &[], &[]);
    let lib = library_dir(LIB, "hipfft-pool-cufft").join(format!("lib{LIB}.so"));
    let end = dir.join("end.json");
    let env = [
        ("LD_PRELOAD", lib.to_str().unwrap()),
        ("HIPFFT_POOL_METRICS_OUT", end.to_str().unwrap()),
        ("HIPFFT_POOL_LIVE_CEILING", "4"),
    ];
    let plugin = dir.join("libplugin.so");
    let o = run(&exe, &[plugin.to_str().unwrap()], &env, true);
    assert!(stdout(&o).contains("ok cuda mode"), "{}", show(&o));
    let m = metrics(&end);
    assert!(m["library"].as_str().unwrap().ends_with("libcufft.so.12"), "{m}");
    assert_eq!(m["runtime"], "cuda", "{m}");
    assert_eq!(get(&m, "creations"), 2, "eight handles of one descriptor share one real plan (and one more descriptor): {m}");
    assert_eq!(get(&m, "virtual_handles_peak"), 9, "{m}");
    // The captured execution with nothing prepared found its plan cached (and was refused
    // for its auto-allocated area), so no capture missed.
    assert_eq!(get(&m, "capture_misses"), 0, "{m}");
    // The three captures (h[0], h[1], and hy after every other handle was destroyed) share
    // one descriptor: its plan became the one resident (limit 4 / 4) and served all three,
    // with no node added to the graph (the stub counts host nodes: none). A handle that
    // knows its resident plan executes there without asking whether the stream captures
    // (`resident_execs`, captured or not).
    assert_eq!(m["capture_policy"].as_str(), Some("auto"), "{m}");
    assert_eq!(get(&m, "captured_execs"), get(&m, "captured_on_residents"), "{m}");
    assert!(get(&m, "captured_on_residents") + get(&m, "resident_execs") >= 3, "{m}");
    assert_eq!((get(&m, "capture_residents"), get(&m, "capture_resident_limit")), (1, 1), "{m}");
    assert_eq!(get(&m, "destroys"), 0, "the resident plan was never destroyed: {m}");
}

/// MLX's graph pattern at every ceiling from 2 up (see the harness).
#[test]
fn mlx_graphs_give_right_values_or_a_clear_error_at_every_ceiling() {
    mlx_graphs_at_every_ceiling(program(), LIB);
}

#[test]
fn mlx_under_pin_keeps_every_captured_plan_for_good() {
    mlx_under_pin_keeps_every_captured_plan(program(), LIB);
}

/// Captured executions under each policy at a small ceiling (see the harness).
#[test]
fn captured_executions_hold_their_plans_until_no_graph_holds_them() {
    captured_executions_at_a_small_ceiling(program(), LIB);
}

/// Through the interposer: `HIPFFT_POOL_MANIFEST_OUT` writes the working set at
/// exit; a second run with `HIPFFT_POOL_WARMUP` makes those plans in the background from
/// the first cuFFT call on, so fewer of the program's calls miss, and nothing is made twice.
#[test]
fn a_manifest_recorded_at_exit_warms_up_the_next_run() {
    let dir = work_dir("cufft_manifest");
    let (manifest, cold, warm) = (dir.join("plans.json"), dir.join("cold.json"), dir.join("warm.json"));
    let _ = std::fs::remove_file(&manifest);
    run(
        program(),
        &["numerics"],
        &[
            ("HIPFFT_POOL_RUNTIME", "sim"),
            ("HIPFFT_POOL_MANIFEST_OUT", manifest.to_str().unwrap()),
            ("HIPFFT_POOL_METRICS_OUT", cold.to_str().unwrap()),
        ],
        true,
    );
    let text = std::fs::read_to_string(&manifest).expect("the manifest was written at exit");
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let plans = m["plans"].as_array().unwrap().len() as u64;
    let cold = metrics(&cold);
    assert_eq!(m["runtime"], "sim");
    assert!(plans > 10 && plans <= get(&cold, "creations"), "{plans} plans recorded, {cold}");
    run(
        program(),
        &["numerics"],
        &[
            ("HIPFFT_POOL_RUNTIME", "sim"),
            ("HIPFFT_POOL_WARMUP", manifest.to_str().unwrap()),
            ("HIPFFT_POOL_METRICS_OUT", warm.to_str().unwrap()),
        ],
        true,
    );
    let warm = metrics(&warm);
    assert!(get(&warm, "misses") < get(&cold, "misses"), "warmed {warm} against cold {cold}");
    assert!(get(&warm, "creations") <= get(&cold, "creations"), "a plan was made twice: {warm} against {cold}");
    assert!(warm["sim_violations"].as_array().unwrap().is_empty(), "{warm}");
}

#[test]
fn the_host_profile_times_every_export_the_program_called() {
    host_profile_counts_every_export(program(), LIB, "cufft");
}

/// The per-transform path (the exports a framework calls for every transform, and what they
/// run on a resident plan) sits in one `.text.hot` section, a few pages, not spread over the
/// library's text (docs/design.md, "The per-transform path in one text section").
#[test]
fn the_per_transform_path_is_in_the_hot_text_section() {
    let lib = library_dir(LIB, "hipfft-pool-cufft").join(format!("lib{LIB}.so"));
    let hot = hot_text_functions(&lib).unwrap_or_else(|| panic!("{} has no .text.hot section", lib.display()));
    for want in ["cufftSetStream", "cufftSetWorkArea", "cufftXtExec", "cufftExecC2C", "cufftExecR2C", "cufftExecC2R"].iter().copied().chain(["hipfft_pool_intercept::engine::Engine::exec", "hipfft_pool::pool::lease::Lease::exec"]) {
        assert!(hot.iter().any(|n| n == want), "{want} is not in .text.hot: {hot:?}");
    }
    assert!(!hot.iter().any(|n| n == "cufftCreate"), "cufftCreate (not per transform) is in .text.hot: {hot:?}");
    assert!(hot.len() < 40, "the hot section holds more than the per-transform path: {hot:?}");
}

/// The interposer's `dlsym` as the CUDA runtime and XLA meet it (tests/c/dlsym_reach.c, with
/// the stand-in libcuda.so.1 and libcufft.so.12 of tests/c/stub/): `cuGetProcAddress` taken
/// from libcuda's handle is the hook, and hands out hooks for the graph calls, which reach
/// the driver; a graph function it cannot stand for is handed out as it is, and the
/// interposer says it can no longer follow graphs; `cufftCreate` taken from XLA's own handle
/// on libcufft is the interposer's; `RTLD_DEFAULT` and `RTLD_NEXT` keep their meaning.
#[test]
fn dlsym_serves_the_hooks_to_programs_that_load_the_driver_and_cufft_themselves() {
    let dir = work_dir("cufft_dlsym_reach");
    let shared = |out: &str, src: &str, soname: &str| {
        let mut c = cc();
        c.args(["-shared", "-fPIC", "-O1", "-o"]).arg(dir.join(out)).arg(c_dir().join("stub").join(src));
        // Bound to its own functions, as the driver is: the addresses it hands out are its own.
        c.arg(format!("-Wl,-soname,{soname}")).arg("-Wl,-Bsymbolic-functions");
        let o = c.output().expect("cc");
        assert!(o.status.success(), "{}", show(&o));
    };
    shared("libcuda.so.1", "stub_cuda.c", "libcuda.so.1");
    shared("libcufft.so.12", "stub_cufft.c", "libcufft.so.12");
    let exe = dir.join("dlsym_reach");
    compile(&exe, &["dlsym_reach.c"], &[], &[], &[]);
    let lib = library_dir(LIB, "hipfft-pool-cufft").join(format!("lib{LIB}.so"));
    let env = [("LD_PRELOAD", lib.to_str().unwrap()), ("LD_LIBRARY_PATH", dir.to_str().unwrap())];
    let o = run(&exe, &[], &env, true);
    assert!(stdout(&o).contains("ok dlsym reach"), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.matches("could not be followed").count(), 1, "{}", show(&o));
    assert!(stderr.contains("cuGraphAddNode"), "{}", show(&o));
}
