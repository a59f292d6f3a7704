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

#[test]
fn only_hipfft_names_and_hfp_intercept_are_exported() {
    let lib = library_dir(LIB, "hipfft-pool-hipfft").join(format!("lib{LIB}.so"));
    let names = exported(&lib);
    let stray: Vec<_> = names.iter().filter(|n| !n.starts_with("hipfft") && !n.starts_with("hfp_intercept_")).collect();
    assert!(stray.is_empty(), "{} exports names beyond hipfft* and hfp_intercept_*: {stray:?}", lib.display());
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
