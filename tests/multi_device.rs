//! Several devices on the simulated runtime (which checks that every create, exec and destroy
//! is made with the plan's own device current): per-device keys and metrics, one
//! process-wide ceiling by default, an optional per-device split, and destroys of plans of
//! one device from a thread where another is current.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use hipfft_pool::check::buffer::Stream;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{PlanPool, PoolConfig, Runtime, check::probe};

fn probe_on_every_device(devices: i32, pool: Arc<PlanPool>, rt: Arc<dyn Runtime>) {
    let shapes = probe::embedded_shapes();
    let threads: Vec<_> = (0..devices)
        .map(|d| {
            let (pool, rt, shapes) = (pool.clone(), rt.clone(), shapes.clone());
            std::thread::spawn(move || {
                rt.set_device(d).unwrap();
                let order = probe::order(shapes.len(), &format!("shuffle:{d}")).unwrap();
                let o = probe::run(&*pool, &shapes, &order, 2, d, d as u64, |_| {});
                assert!(o.correct, "device {d}: {:?}", o.failure);
                assert_eq!(o.transforms, 60);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn two_and_four_devices_share_one_ceiling_with_the_right_device_current() {
    for devices in [2, 4] {
        let sim = Arc::new(SimRuntime::new(SimConfig { devices, ..SimConfig::default() }));
        let rt: Arc<dyn Runtime> = sim.clone();
        let ceiling = 12;
        let pool = Arc::new(common::pool(&rt, 10, ceiling, Duration::from_secs(30)));
        let stop = Arc::new(AtomicBool::new(false));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let sampler = {
            let (sim, stop, max_seen) = (sim.clone(), stop.clone(), max_seen.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    max_seen.fetch_max(sim.live_handles(), Ordering::SeqCst);
                    std::thread::yield_now();
                }
            })
        };
        probe_on_every_device(devices, pool.clone(), rt.clone());
        stop.store(true, Ordering::SeqCst);
        sampler.join().unwrap();
        assert!(max_seen.load(Ordering::SeqCst) <= ceiling, "one process-wide ceiling over {devices} devices");
        let by_device = pool.metrics_by_device();
        assert_eq!(by_device.len(), devices as usize);
        for (d, m) in &by_device {
            assert!(m.creations > 0, "device {d}: {m:?}");
            assert_eq!(m.live, sim.live_handles_on(*d), "device {d}'s live count is the runtime's");
        }
        let text = pool.metrics_text();
        assert!(text.contains(&format!("hipfft_pool_creations_total{{device=\"{}\"}}", devices - 1)));
        pool.shutdown();
        assert_eq!(sim.live_handles(), 0);
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn a_per_device_ceiling_bounds_each_device() {
    let sim = Arc::new(SimRuntime::new(SimConfig { devices: 2, ..SimConfig::default() }));
    let rt: Arc<dyn Runtime> = sim.clone();
    // Unique per-device limits: the per-device ceilings are process-wide per device.
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(16)
        .per_device_ceiling(3)
        .acquire_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let pool = PlanPool::new(cfg, rt.clone()).unwrap();
    let held: Vec<_> = (0..3).map(|i| pool.acquire(&c2c(8 + i, 1)).unwrap()).collect();
    assert!(matches!(pool.acquire(&c2c(64, 1)), Err(hipfft_pool::Error::CeilingTimeout { device: 0, .. })));
    // Device 1 has its own 3.
    let other: Vec<_> = (0..3).map(|i| pool.acquire(&c2c(8 + i, 1).on_device(1)).unwrap()).collect();
    assert_eq!((sim.live_handles_on(0), sim.live_handles_on(1)), (3, 3));
    drop(held);
    // Room on device 0 comes from device 0's idle plans, not device 1's leased ones.
    drop(pool.acquire(&c2c(64, 1)).unwrap());
    assert_eq!(sim.live_handles_on(0), 3);
    assert_eq!(pool.metrics_for(1).live, 3);
    drop(other);
    pool.shutdown();
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn plans_of_one_device_are_destroyed_with_their_device_current_from_a_thread_on_another() {
    let sim = Arc::new(SimRuntime::new(SimConfig { devices: 2, exec_latency: Duration::from_millis(5), ..SimConfig::default() }));
    let rt: Arc<dyn Runtime> = sim.clone();
    let pool = common::pool(&rt, 2, 4, Duration::from_secs(5));
    rt.set_device(1).unwrap();
    let stream = Stream::new(&rt).unwrap();
    let lease = pool.acquire(&c2c(64, 2).on_device(1)).unwrap();
    let job = enqueue(&rt, &lease, &stream, 3);
    // SAFETY: the test's live stream of the pool's runtime.
    unsafe { lease.release_after(stream.raw()) }.unwrap();
    assert!(job.check(&stream) <= 1e-5);
    // This thread now works on device 0; evictions destroy device 1's plan from here.
    rt.set_device(0).unwrap();
    for n in [8, 16, 32] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    assert_eq!(rt.current_device().unwrap(), 0, "the caller's device is restored");
    // Inline when the completion thread had released it, else by the destroyer thread.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while sim.live_handles_on(1) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sim.live_handles_on(1), 0);
    pool.trim();
    rt.set_device(1).unwrap();
    drop(stream);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
