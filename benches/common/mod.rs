//! Shared by the criterion benches: the 26 probe shapes, pools over the sim, the C++
//! baseline wired to the same runtime, a runtime that does nothing, and the criterion
//! settings (short, so `cargo bench` finishes in minutes on two cores).
#![allow(dead_code)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use hfp_baseline::Baseline;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{PlanDesc, PlanOptions, PlanPool, PoolConfig, RawPlan, Runtime, TransformType};

/// Short measurements: `cargo bench` on two cores in a few minutes. Command-line flags
/// (`-- --measurement-time 10 --sample-size 100`) override these.
pub fn criterion() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
}

/// The 26 probe shapes, in the probe's order.
pub fn shapes() -> Vec<PlanDesc> {
    hipfft_pool::check::probe::embedded_shapes().iter().map(|s| s.desc(0).expect("valid probe shape")).collect()
}

/// A pool over `rt` with a ceiling of its own (`ceiling` handles), never the process-wide one.
pub fn pool(rt: Arc<dyn Runtime>, capacity: usize, ceiling: usize) -> PlanPool {
    let config = PoolConfig::builder()
        .capacity(capacity)
        .private_ceiling(ceiling)
        .acquire_timeout(Duration::from_secs(30))
        .build()
        .expect("valid pool config");
    PlanPool::new(config, rt).expect("pool")
}

pub fn sim(create_latency: Duration) -> Arc<SimRuntime> {
    Arc::new(SimRuntime::new(SimConfig { create_latency, ..SimConfig::default() }))
}

/// Makes every shape a cached plan (one miss each).
pub fn warm(pool: &PlanPool, shapes: &[PlanDesc]) {
    for d in shapes {
        drop(pool.acquire(d).expect("acquire"));
    }
}

/// The four integers the C++ cache keys on.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub dev: i32,
    pub ty: i32,
    pub n: i64,
    pub batch: i64,
}

impl Key {
    pub fn of(d: &PlanDesc) -> Key {
        Key { dev: d.device, ty: d.transform.raw(), n: d.n[0], batch: d.batch }
    }
    /// The descriptor a caller would build from the same integers (rank 1, packed).
    #[inline]
    pub fn desc(self) -> PlanDesc {
        let t = TransformType::from_raw(self.ty).expect("a hipfftType");
        PlanDesc::new(t, &[self.n], self.batch).on_device(self.dev)
    }
}

pub fn keys(shapes: &[PlanDesc]) -> Vec<Key> {
    shapes.iter().map(Key::of).collect()
}

/// Runtime the baseline's hooks create and destroy plans with.
struct HookCtx {
    rt: Arc<dyn Runtime>,
}

extern "C" fn hook_create(ctx: *mut c_void, dev: c_int, ty: c_int, n: i64, batch: i64) -> i64 {
    // SAFETY: ctx is the HookCtx leaked by `baseline_over`.
    let ctx = unsafe { &*(ctx as *const HookCtx) };
    let desc = Key { dev, ty, n, batch }.desc();
    match ctx.rt.plan_create(&desc, PlanOptions::default()) {
        Ok(p) => p.plan.0 as i64,
        Err(e) => {
            eprintln!("baseline create failed: {e}");
            std::process::abort()
        }
    }
}

extern "C" fn hook_destroy(ctx: *mut c_void, handle: i64) {
    // SAFETY: as above.
    let ctx = unsafe { &*(ctx as *const HookCtx) };
    // SAFETY: the baseline destroys each plan it made once, after its last use.
    if let Err(e) = unsafe { ctx.rt.plan_destroy(RawPlan(handle as usize)) } {
        eprintln!("baseline destroy failed: {e}");
    }
}

/// The C++ cache making and destroying its plans through `rt`, so it pays exactly the
/// runtime costs the pool pays.
pub fn baseline_over(rt: Arc<dyn Runtime>, capacity: usize) -> Baseline {
    let b = Baseline::new(capacity);
    // Leaked: tiny, and must outlive every plan the cache made.
    let ctx = Box::into_raw(Box::new(HookCtx { rt })) as *mut c_void;
    // SAFETY: ctx lives forever; the hooks only use the runtime, which is Send + Sync.
    unsafe { b.set_hooks(hook_create, hook_destroy, ctx) };
    b
}

/// Fills the baseline with every key (one miss each).
pub fn warm_baseline(b: &Baseline, keys: &[Key]) {
    for k in keys {
        b.acquire(k.dev, k.ty, k.n, k.batch);
    }
}

/// Linux: make `sleep` precise on this thread (the sim's latencies are sleeps; the default
/// timer slack of 50 us would add that much to each). Returns whether it took.
pub fn precise_sleep() -> bool {
    #[cfg(target_os = "linux")]
    {
        unsafe extern "C" {
            fn prctl(option: c_int, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> c_int;
        }
        const PR_SET_TIMERSLACK: c_int = 29;
        // SAFETY: PR_SET_TIMERSLACK takes a value, no pointers.
        unsafe { prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// What a `thread::sleep(d)` really takes here (median of 200), for the docs.
pub fn measured_sleep(d: Duration) -> Duration {
    let mut v: Vec<Duration> = (0..200)
        .map(|_| {
            let t = std::time::Instant::now();
            std::thread::sleep(d);
            t.elapsed()
        })
        .collect();
    v.sort();
    v[v.len() / 2]
}

/// Thread counts 1, 2, 4, ... up to `max`, and `max` itself. `max` is the available cores,
/// or `HFP_BENCH_MAX_THREADS`.
pub fn thread_counts() -> Vec<usize> {
    let max = std::env::var("HFP_BENCH_MAX_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut v = Vec::new();
    let mut t = 1;
    while t < max {
        v.push(t);
        t *= 2;
    }
    v.push(max);
    v
}

#[allow(unused_imports)] // not every bench runs over it
pub use hipfft_pool::runtime::null::NullRuntime;
