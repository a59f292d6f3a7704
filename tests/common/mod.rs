//! Helpers shared by the integration tests: a pool over a fresh simulated runtime, and a
//! checked transform through a lease.
#![allow(dead_code)]

pub mod shim;

use std::sync::Arc;
use std::time::Duration;

use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::reference;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{Direction, Lease, PlanDesc, PlanPool, PoolConfig, Runtime, TransformType};

pub fn sim(config: SimConfig) -> (Arc<SimRuntime>, Arc<dyn Runtime>) {
    let s = Arc::new(SimRuntime::new(config));
    let rt: Arc<dyn Runtime> = s.clone();
    (s, rt)
}

/// A pool with its own ceiling (tests run in parallel in one process).
pub fn pool(rt: &Arc<dyn Runtime>, capacity: usize, ceiling: usize, timeout: Duration) -> PlanPool {
    let cfg = PoolConfig::builder()
        .capacity(capacity)
        .private_ceiling(ceiling)
        .acquire_timeout(timeout)
        .shutdown_timeout(Duration::from_secs(10))
        // These tests state which plan goes first in LRU order. On the sim a creation takes
        // no time, so the default cost eviction would rank plans by clock noise; it has its
        // own tests (tests/warmup.rs) on the H200's creation costs.
        .eviction(hipfft_pool::Eviction::Lru)
        .build()
        .expect("valid config");
    PlanPool::new(cfg, rt.clone()).expect("pool")
}

pub fn c2c(n: i64, batch: i64) -> PlanDesc {
    PlanDesc::new(TransformType::C2C, &[n], batch)
}

/// Small shapes of every single-precision kind, for operation-sequence tests.
pub fn small_shapes(count: usize) -> Vec<PlanDesc> {
    let kinds = [TransformType::C2C, TransformType::R2C, TransformType::C2R];
    (0..count).map(|i| PlanDesc::new(kinds[i % 3], &[4 + 2 * i as i64], 1 + (i % 2) as i64)).collect()
}

/// The direction a descriptor's transform runs in the tests.
pub fn direction_for(desc: &PlanDesc) -> Direction {
    if desc.transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward }
}

/// One transform's buffers, so a test can check the result after the stream finished.
pub struct Job {
    pub desc: PlanDesc,
    pub direction: Direction,
    pub input: Vec<u8>,
    pub d_in: DeviceBuffer,
    pub d_out: DeviceBuffer,
    pub work: Option<DeviceBuffer>,
}

/// Enqueues a transform under `lease` on `stream` with a fresh work area.
pub fn enqueue(rt: &Arc<dyn Runtime>, lease: &Lease, stream: &Stream, seed: u64) -> Job {
    let desc = *lease.desc();
    let ext = desc.validate().unwrap();
    let direction = direction_for(&desc);
    let input = reference::random_input(&desc, seed);
    let d_in = DeviceBuffer::from_host(rt, &input).unwrap();
    let d_out = DeviceBuffer::new(rt, ext.output_bytes).unwrap();
    let work = (lease.work_size() > 0).then(|| DeviceBuffer::new(rt, lease.work_size()).unwrap());
    // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
    unsafe { lease
        .exec(stream.raw(), d_in.ptr(), d_out.ptr(), direction, work.as_ref().map(|w| w.ptr())) }
        .expect("exec");
    Job { desc, direction, input, d_in, d_out, work }
}

impl Job {
    /// Waits for the stream and returns the relative error against the reference.
    pub fn check(&self, stream: &Stream) -> f64 {
        stream.synchronize().unwrap();
        let got = self.d_out.to_host().unwrap();
        let want = reference::expected_output(&self.desc, self.direction, &self.input);
        reference::rel_l2_error(&reference::gather_output(&self.desc, &got), &want)
    }
}

/// Like `enqueue`, but returns the exec error instead of panicking.
pub fn try_enqueue(rt: &Arc<dyn Runtime>, lease: &Lease, stream: &Stream, seed: u64) -> hipfft_pool::Result<()> {
    let desc = *lease.desc();
    let ext = desc.validate().unwrap();
    let input = reference::random_input(&desc, seed);
    let d_in = DeviceBuffer::from_host(rt, &input).unwrap();
    let d_out = DeviceBuffer::new(rt, ext.output_bytes).unwrap();
    let work = (lease.work_size() > 0).then(|| DeviceBuffer::new(rt, lease.work_size()).unwrap());
    // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
    let r = unsafe { lease.exec(stream.raw(), d_in.ptr(), d_out.ptr(), direction_for(&desc), work.as_ref().map(|w| w.ptr())) };
    stream.synchronize().unwrap();
    r
}
