//! What the interposer's benches share: an engine of its own over the null runtime, with one
//! virtual handle per probe shape, planned as a framework holding 26 plans would.

use std::sync::Arc;
use std::time::Duration;

use hipfft_pool::runtime::null::NullRuntime;
use hipfft_pool::{PlanDesc, PoolConfig, Runtime};
use hipfft_pool_intercept::{Engine, Flavor, PlanRequest};

/// An engine over the null runtime (capacity and ceiling 128) and a handle per probe shape.
pub struct ProbeEngine {
    pub null: Arc<NullRuntime>,
    pub engine: Arc<Engine>,
    pub shapes: Vec<PlanDesc>,
    pub handles: Vec<u64>,
    /// Each shape's direction as cuFFT takes it (+1 for C2R, -1 otherwise).
    pub dirs: Vec<i32>,
}

pub fn probe_engine() -> ProbeEngine {
    let shapes: Vec<PlanDesc> =
        hipfft_pool::check::probe::embedded_shapes().iter().map(|s| s.desc(0).expect("valid probe shape")).collect();
    let null = Arc::new(NullRuntime::default());
    let rt: Arc<dyn Runtime> = null.clone();
    let config = PoolConfig::builder()
        .capacity(128)
        .private_ceiling(128)
        .acquire_timeout(Duration::from_secs(30))
        .build()
        .expect("config");
    let engine = Engine::over_runtime(Flavor::Cufft, config, rt).expect("engine over the null runtime");
    let handles = shapes
        .iter()
        .map(|d| {
            let r = PlanRequest::basic(d.transform.raw(), d.dims(), d.batch).expect("probe request");
            engine.plan(&r, "cufftPlanMany").expect("virtual handle")
        })
        .collect();
    let dirs = shapes.iter().map(|d| if d.transform.is_inverse_real() { 1 } else { -1 }).collect();
    ProbeEngine { null, engine, shapes, handles, dirs }
}
