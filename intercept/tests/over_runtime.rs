//! `Engine::over_runtime`: an interposer engine of its own over a runtime given to it (the
//! example of its doc comment, run as a test).

use std::sync::Arc;

use hipfft_pool::runtime::null::NullRuntime;
use hipfft_pool::{DevicePtr, PoolConfig};
use hipfft_pool_intercept::{Engine, ExecKind, Flavor, PlanRequest};

#[test]
fn an_engine_over_the_null_runtime_serves_a_handle_and_lets_go_of_it_on_drop() {
    let null = Arc::new(NullRuntime::default());
    let config = PoolConfig::builder().capacity(8).private_ceiling(8).build().unwrap();
    let e = Engine::over_runtime(Flavor::Cufft, config, null.clone()).unwrap();
    let h = e.plan(&PlanRequest::basic(0x29, &[256], 1).unwrap(), "cufftPlan1d").unwrap(); // C2C
    let (x, y) = (DevicePtr(0x1000), DevicePtr(0x2000));
    for _ in 0..3 {
        e.exec(h, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap();
    }
    // Ground truth from the runtime: one real plan served every execution.
    assert_eq!(null.plans_made(), 1);
    assert_eq!(e.pool().metrics().creations, 1);
    // Dropping the engine gives the handle's lease back before its pool shuts down, which
    // would otherwise wait out its whole timeout for the plan the lease holds.
    let started = std::time::Instant::now();
    drop(e);
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "drop took {:?}", started.elapsed());
}

#[test]
fn a_thread_remembers_its_last_handle_per_engine_and_never_past_its_destroy() {
    let config = || PoolConfig::builder().capacity(8).private_ceiling(8).build().unwrap();
    let (na, nb) = (Arc::new(NullRuntime::default()), Arc::new(NullRuntime::default()));
    let a = Engine::over_runtime(Flavor::Cufft, config(), na.clone()).unwrap();
    let b = Engine::over_runtime(Flavor::Cufft, config(), nb.clone()).unwrap();
    let (x, y) = (DevicePtr(0x1000), DevicePtr(0x2000));
    // Both engines number their handles alike: the same value names a handle of each.
    let ha = a.plan(&PlanRequest::basic(0x29, &[256], 1).unwrap(), "cufftPlan1d").unwrap();
    let hb = b.plan(&PlanRequest::basic(0x29, &[512], 1).unwrap(), "cufftPlan1d").unwrap();
    assert_eq!(ha, hb);
    a.exec(ha, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap();
    b.exec(hb, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap();
    a.exec(ha, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap();
    // Ground truth from each runtime: each engine's handle reached its own plan only.
    assert_eq!((na.plans_made(), nb.plans_made()), (1, 1));
    // Destroyed right after use, the handle is gone for this thread too.
    a.destroy(ha, "cufftDestroy").unwrap();
    let err = a.exec(ha, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap_err();
    assert_eq!(err.code, hipfft_pool_intercept::code::INVALID_PLAN);
    assert!(err.message.contains("was destroyed"), "{}", err.message);
    b.exec(hb, ExecKind::Xt, "cufftXtExec", x, y, -1).unwrap();
}

#[test]
fn a_handle_that_sets_the_stream_it_has_still_executes_there_after_another_handle_moved_its_plan() {
    use hipfft_pool::{Runtime, SimConfig, SimRuntime};
    let sim = Arc::new(SimRuntime::new(SimConfig::default()));
    let config = PoolConfig::builder().capacity(8).private_ceiling(8).build().unwrap();
    let e = Engine::over_runtime(Flavor::Cufft, config, sim.clone()).unwrap();
    let req = PlanRequest::basic(0x29, &[256], 1).unwrap(); // C2C
    // Two handles of one descriptor: one real plan serves both.
    let (h1, h2) = (e.plan(&req, "cufftPlan1d").unwrap(), e.plan(&req, "cufftPlan1d").unwrap());
    let work = e.work_size(h1, "cufftGetSize").unwrap();
    let area = sim.malloc(work.max(1)).unwrap();
    let buf = sim.malloc(256 * 8).unwrap();
    let (s1, s2) = (e.stream_create().unwrap(), e.stream_create().unwrap());
    for h in [h1, h2] {
        e.set_work_area(h, area, "cufftSetWorkArea").unwrap();
    }
    let captured_on_s1 = |h: u64| {
        sim.begin_capture(s1).unwrap();
        e.exec(h, ExecKind::Xt, "cufftXtExec", buf, buf, -1).unwrap();
        nodes_of(&sim, sim.end_capture(s1).unwrap())
    };
    // h1's first execution is captured: the plan becomes resident, serving both handles.
    e.set_stream(h1, s1, "cufftSetStream").unwrap();
    assert_eq!(captured_on_s1(h1), 1);
    // h2 executes on s2: the real plan now carries s2.
    e.set_stream(h2, s2, "cufftSetStream").unwrap();
    e.exec(h2, ExecKind::Xt, "cufftXtExec", buf, buf, -1).unwrap();
    // h1 sets the stream it already has (the call returns at once) and executes inside a
    // capture of s1. Ground truth from the simulated runtime: the transform is in s1's
    // graph, so the execution moved the plan back to s1 (on s2 it would have run instead).
    e.set_stream(h1, s1, "cufftSetStream").unwrap();
    assert_eq!(captured_on_s1(h1), 1, "h1's execution must land in s1's capture");
    e.synchronize().unwrap();
}

/// A handle whose plan is resident sets the stream and the work area and executes without
/// its lock (`Hot` in engine.rs): a new stream or area must reach the next execution, and a
/// destroyed handle must stop there.
#[test]
fn a_resident_handle_takes_new_settings_and_its_destroy_on_the_lock_free_path() {
    use hipfft_pool::{Runtime, SimConfig, SimRuntime};
    let sim = Arc::new(SimRuntime::new(SimConfig::default()));
    let config = PoolConfig::builder().capacity(8).private_ceiling(8).build().unwrap();
    let e = Engine::over_runtime(Flavor::Cufft, config, sim.clone()).unwrap();
    let h = e.plan(&PlanRequest::basic(0x29, &[256], 1).unwrap(), "cufftPlan1d").unwrap(); // C2C
    let work = e.work_size(h, "cufftGetSize").unwrap();
    assert!(work > 0, "the test needs a plan with a work area");
    let (a, b) = (sim.malloc(work).unwrap(), sim.malloc(work).unwrap());
    let buf = sim.malloc(256 * 8).unwrap();
    let (s1, s2) = (e.stream_create().unwrap(), e.stream_create().unwrap());
    let exec = || e.exec(h, ExecKind::Xt, "cufftXtExec", buf, buf, -1);
    let captured_on = |s| {
        sim.begin_capture(s).unwrap();
        let r = exec();
        (r, nodes_of(&sim, sim.end_capture(s).unwrap()))
    };
    e.set_work_area(h, a, "cufftSetWorkArea").unwrap();
    e.set_stream(h, s1, "cufftSetStream").unwrap();
    // Captured once, the plan becomes resident; then executions go straight to it.
    assert_eq!(captured_on(s1), (Ok(()), 1));
    for _ in 0..3 {
        e.set_stream(h, s1, "cufftSetStream").unwrap();
        e.set_work_area(h, a, "cufftSetWorkArea").unwrap();
        exec().unwrap();
    }
    let direct = |e: &Engine| serde_json::from_str::<serde_json::Value>(&e.metrics_json()).unwrap()["resident_execs"].as_u64().unwrap();
    assert!(direct(&e) >= 3, "the executions went to the resident plan");
    // A new area, the old one freed: ground truth from the simulated runtime, which checks
    // every area a plan is given: the next execution (straight to the resident plan) used
    // the new one. Then a new stream: the execution lands in s2's capture (on s1 it would
    // have run at once).
    e.synchronize().unwrap();
    e.set_work_area(h, b, "cufftSetWorkArea").unwrap();
    // SAFETY: no work uses `a` any more (synchronized), and the handle was given `b`.
    unsafe { sim.free(a) }.unwrap();
    let before = direct(&e);
    exec().unwrap();
    assert_eq!(direct(&e), before + 1, "still straight to the resident plan");
    e.synchronize().unwrap();
    assert_eq!(sim.violations(), Vec::<String>::new());
    e.set_stream(h, s2, "cufftSetStream").unwrap();
    assert_eq!(captured_on(s2), (Ok(()), 1), "the execution must land in s2's capture");
    exec().unwrap();
    e.synchronize().unwrap();
    assert_eq!(sim.violations(), Vec::<String>::new());
    // Destroyed, the handle is refused on the path that never takes its lock.
    e.destroy(h, "cufftDestroy").unwrap();
    let err = exec().unwrap_err();
    assert_eq!(err.code, hipfft_pool_intercept::code::INVALID_PLAN);
    assert!(err.message.contains("was destroyed"), "{}", err.message);
    let err = e.set_stream(h, s1, "cufftSetStream").unwrap_err();
    assert!(err.message.contains("was destroyed"), "{}", err.message);
}

/// Handles of one descriptor share its resident plan; on the lock-free path each thread's
/// execution still sets the plan's stream and area and executes as one step (the plan's
/// exec lock), whatever the other threads do. Ground truth: the simulated runtime logs any
/// interleaving of set-stream, set-work-area and exec on a plan, and any execution that runs
/// where it was not asked to.
#[test]
fn threads_executing_handles_that_share_a_resident_plan_never_interleave_its_settings() {
    use hipfft_pool::{Runtime, SimConfig, SimRuntime};
    const THREADS: usize = 8;
    let sim = Arc::new(SimRuntime::new(SimConfig::default()));
    let config = PoolConfig::builder().capacity(8).private_ceiling(8).build().unwrap();
    let e = Engine::over_runtime(Flavor::Cufft, config, sim.clone()).unwrap();
    let req = PlanRequest::basic(0x29, &[256], 1).unwrap(); // C2C
    let handles: Vec<u64> = (0..THREADS).map(|_| e.plan(&req, "cufftPlan1d").unwrap()).collect();
    let work = e.work_size(handles[0], "cufftGetSize").unwrap();
    // The first handle's captured execution makes the plan resident for all of them.
    let s0 = e.stream_create().unwrap();
    let a0 = sim.malloc(work).unwrap();
    let b0 = sim.malloc(256 * 8).unwrap();
    e.set_stream(handles[0], s0, "cufftSetStream").unwrap();
    e.set_work_area(handles[0], a0, "cufftSetWorkArea").unwrap();
    sim.begin_capture(s0).unwrap();
    e.exec(handles[0], ExecKind::Xt, "cufftXtExec", b0, b0, -1).unwrap();
    assert_eq!(nodes_of(&sim, sim.end_capture(s0).unwrap()), 1);
    let before = serde_json::from_str::<serde_json::Value>(&e.metrics_json()).unwrap()["resident_execs"].as_u64().unwrap();
    std::thread::scope(|scope| {
        for &h in &handles {
            let (e, sim) = (&e, &sim);
            scope.spawn(move || {
                let stream = e.stream_create().unwrap();
                let area = sim.malloc(work).unwrap();
                let buf = sim.malloc(256 * 8).unwrap();
                for _ in 0..2000 {
                    e.set_stream(h, stream, "cufftSetStream").unwrap();
                    e.set_work_area(h, area, "cufftSetWorkArea").unwrap();
                    e.exec(h, ExecKind::Xt, "cufftXtExec", buf, buf, -1).unwrap();
                }
            });
        }
    });
    e.synchronize().unwrap();
    let after = serde_json::from_str::<serde_json::Value>(&e.metrics_json()).unwrap()["resident_execs"].as_u64().unwrap();
    // Nearly all went to the resident plan (a thread's first execution on its stream locks).
    assert!(after - before >= (THREADS * 1999) as u64, "{before} -> {after}");
    // (Without the plan's exec lock in `Lease::enqueue`, this log fills: checked by hand.)
    let misuse = sim.violations();
    assert!(misuse.is_empty(), "{} misuses, the first: {:?}", misuse.len(), misuse.first());
    // One real plan served every execution.
    assert_eq!(sim.created_total(), 1);
}

/// The nodes a captured graph holds (then destroyed).
fn nodes_of(sim: &hipfft_pool::SimRuntime, graph: u64) -> usize {
    let n = sim.graph_nodes(graph).unwrap().len();
    sim.graph_destroy(graph).unwrap();
    n
}
