//! `libhipfft_pool_hipfft.so` from the outside: the C programs of `intercept/tests/c/`
//! compiled against the hipFFT API (`-DAPI_HIPFFT`: `hipfftHandle` is a pointer), linked to
//! the interposer and run on the simulated runtime, which counts every real handle itself.

#[path = "../../tests/common/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::OnceLock;

use harness::*;

const LIB: &str = "hipfft_pool_hipfft";

fn program() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = work_dir("hipfft_c").join("fft_sim_hipfft");
        compile(&exe, &["fft_sim.c"], &["-DAPI_HIPFFT"], &[&library_dir(LIB, "hipfft-pool-hipfft")], &[LIB]);
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
    let dir = work_dir("hipfft_handles");
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
    assert_eq!(get(&m, "virtual_handles_live"), 0, "{m}");
    assert!(get(&m, "live_at_exit") <= 4, "{m}");
    for key in ["hits", "misses", "capacity", "virtual_handles_live"] {
        assert!(m.get(key).is_some(), "no {key}: {m}");
    }
}

#[test]
fn handles_used_from_eight_threads_on_their_own_streams() {
    let dir = work_dir("hipfft_threads");
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
fn bad_arguments_give_hipfft_codes_with_messages() {
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
    // The messages name the hipFFT code and the field.
    assert!(s.contains("HIPFFT_INVALID_SIZE (8)") && s.contains("`n[0]` = 0"), "{s}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("hipfft-pool interposer: hipfftPlan1d returned HIPFFT_INVALID_SIZE"), "{e}");
}

#[test]
fn the_work_size_at_plan_time_is_the_real_one() {
    let o = run(program(), &["worksizes"], &sim(&[]), true);
    assert!(stdout(&o).contains("ok work size 4800"), "{}", show(&o));
}

/// A plan call for a descriptor seen before takes no slot of the ceiling: under a ceiling of
/// 1 held by another plan it makes no plan (the sim's count), and the execution makes it.
#[test]
fn a_plan_call_for_a_descriptor_seen_before_needs_no_slot() {
    let o = run(program(), &["memo"], &sim(&[("HIPFFT_POOL_LIVE_CEILING", "1")]), true);
    assert!(stdout(&o).contains("ok a remembered work size of 4800 made no plan at a full ceiling"), "{}", show(&o));
}

/// The library exports hipFFT's names, its own `hfp_intercept_*`, HIP's graph calls it follows
/// (each of `graphs::hip::VARIANTS`, no more) and `dlsym`; never the pool's `hfp_*`.
#[test]
fn only_hipfft_names_graph_hooks_dlsym_and_hfp_intercept_are_exported() {
    let lib = library_dir(LIB, "hipfft-pool-hipfft").join(format!("lib{LIB}.so"));
    let names = exported(&lib);
    let hooks = hipfft_pool_intercept::graphs::hip::VARIANTS;
    let stray: Vec<_> = names
        .iter()
        .filter(|n| !n.starts_with("hipfft") && !n.starts_with("hfp_intercept_") && *n != "dlsym" && !hooks.contains(&n.as_str()))
        .collect();
    assert!(stray.is_empty(), "{} exports names beyond its API, its hooks and dlsym: {stray:?}", lib.display());
    for hook in hooks.iter().chain(&["dlsym"]) {
        assert!(names.iter().any(|n| n == hook), "{hook} is not exported");
    }
    for want in [
        "hipfftCreate", "hipfftDestroy", "hipfftPlan1d", "hipfftPlan2d", "hipfftPlan3d", "hipfftPlanMany",
        "hipfftMakePlan1d", "hipfftMakePlan2d", "hipfftMakePlan3d", "hipfftMakePlanMany", "hipfftMakePlanMany64",
        "hipfftGetSize", "hipfftGetSize1d", "hipfftGetSize2d", "hipfftGetSize3d", "hipfftGetSizeMany", "hipfftGetSizeMany64",
        "hipfftSetAutoAllocation", "hipfftSetWorkArea", "hipfftSetStream", "hipfftExecC2C", "hipfftExecR2C", "hipfftExecC2R",
        "hipfftExecZ2Z", "hipfftExecD2Z", "hipfftExecZ2D", "hipfftXtMakePlanMany", "hipfftXtExec", "hipfftGetVersion",
        "hipfftGetProperty", "hfp_intercept_synchronize",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} is not exported: {names:?}");
    }
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

#[test]
fn the_host_profile_times_every_export_the_program_called() {
    host_profile_counts_every_export(program(), LIB, "hipfft");
}

/// The per-transform path (the exports a framework calls for every transform, and what they
/// run on a resident plan) sits in one `.text.hot` section, a few pages, not spread over the
/// library's text (docs/design.md, "The per-transform path in one text section").
#[test]
fn the_per_transform_path_is_in_the_hot_text_section() {
    let lib = library_dir(LIB, "hipfft-pool-hipfft").join(format!("lib{LIB}.so"));
    let hot = hot_text_functions(&lib).unwrap_or_else(|| panic!("{} has no .text.hot section", lib.display()));
    for want in ["hipfftSetStream", "hipfftSetWorkArea", "hipfftExecC2C", "hipfftExecR2C", "hipfftExecC2R"].iter().copied().chain(["hipfft_pool_intercept::engine::Engine::exec", "hipfft_pool::pool::lease::Lease::exec"]) {
        assert!(hot.iter().any(|n| n == want), "{want} is not in .text.hot: {hot:?}");
    }
    assert!(!hot.iter().any(|n| n == "hipfftCreate"), "hipfftCreate (not per transform) is in .text.hot: {hot:?}");
    assert!(hot.len() < 40, "the hot section holds more than the per-transform path: {hot:?}");
}

/// HIP's graph calls followed through the HIP runtime's own symbols: MLX's graph pattern
/// (`fft_sim mlx`, compiled with `-DGRAPHS_HIP` so that it calls `hipStreamBeginCapture`,
/// `hipGraphAddKernelNode`, `hipGraphExecUpdate`, ... of the HIP runtime it links) on
/// hip-shim over its simulated backend, with the interposer on `HIPFFT_POOL_RUNTIME=hip`:
/// its hooks, found before the runtime's symbols, see every graph call, and its capture view
/// asks the runtime what each captured execution added. Every value right or a failure naming
/// the ceiling; the shim's simulated backend records no misuse (the program checks it); every
/// captured plan beyond the residents was followed, and none is held once the graphs are gone.
#[test]
fn hip_graphs_are_followed_through_the_hip_runtimes_own_symbols() {
    let built = library_dir("hip_shim", "hip-shim").join("libhip_shim.so");
    let shim = work_dir("hipfft_graphs_shim");
    for name in ["libhipfft.so", "libhipfft.so.0", "libamdhip64.so", "libamdhip64.so.6"] {
        let link = shim.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&built, &link).unwrap();
    }
    let exe = work_dir("hipfft_graphs").join("fft_sim_hip_graphs");
    compile(&exe, &["fft_sim.c"], &["-DAPI_HIPFFT", "-DGRAPHS_HIP"], &[&library_dir(LIB, "hipfft-pool-hipfft"), &shim], &[LIB, "amdhip64"]);
    let (fft, hip) = (shim.join("libhipfft.so"), shim.join("libamdhip64.so"));
    for (ceiling, residents) in [("4", "1"), ("12", "0"), ("64", "0")] {
        let dir = work_dir(&format!("hipfft_graphs_{ceiling}_{residents}"));
        let out = dir.join("m.json");
        let env = [
            ("HIPFFT_POOL_RUNTIME", "hip"),
            ("HIPFFT_POOL_HIPFFT_LIB", fft.to_str().unwrap()),
            ("HIPFFT_POOL_HIP_LIB", hip.to_str().unwrap()),
            ("HIP_SHIM_BACKEND", "sim"),
            ("HIPFFT_POOL_LIVE_CEILING", ceiling),
            ("HIPFFT_POOL_CAPTURE_RESIDENTS", residents),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "10000"),
            ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
        ];
        let o = run(&exe, &["mlx", "12", "4"], &env, false);
        let text = stdout(&o);
        let at = format!("ceiling {ceiling}: {}", show(&o));
        assert!(o.status.success(), "{at}");
        let line = text.lines().find(|l| l.starts_with("mlx: ")).unwrap_or_else(|| panic!("{at}"));
        assert!(line.contains(" 0 wrong") && line.contains(" 0 not,"), "{at}");
        let m = metrics(&out);
        assert_eq!(m["runtime"], "hip", "{m}");
        assert_eq!(get(&m, "captured_kept"), 0, "every capture was followed: {m}\n{at}");
        assert_eq!(get(&m, "graph_held_plans"), 0, "{m}");
        if residents == "0" {
            assert!(get(&m, "captured_followed") > 0, "{m}");
        }
        if ceiling == "64" {
            assert!(line.contains(" 0 failed calls"), "{at}");
        }
    }
}
