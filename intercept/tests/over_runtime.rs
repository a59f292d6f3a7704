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
