//! The pool's hand-offs with polling forced on (`HIPFFT_POOL_POLL_US`; by default a machine
//! with fewer than 4 cores, such as CI's, never polls): misses at a small ceiling from several
//! threads, checked against the sim's own counts. One test per process: the budget is read once.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use hipfft_pool::runtime::sim::SimConfig;

#[test]
fn misses_at_the_ceiling_with_polling_hand_offs_keep_every_promise() {
    // SAFETY: set before any pool exists in this process (the only test here), read once.
    unsafe { std::env::set_var("HIPFFT_POOL_POLL_US", "500") };
    let (sim, rt) = sim(SimConfig { create_latency: Duration::from_micros(200), ..SimConfig::default() });
    let pool = Arc::new(pool(&rt, 3, 4, Duration::from_secs(30)));
    let shapes = small_shapes(9);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (pool, shapes, rt) = (pool.clone(), shapes.clone(), rt.clone());
            std::thread::spawn(move || {
                let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
                for i in 0..60 {
                    let lease = pool.acquire(&shapes[(i * 5 + t * 7) % shapes.len()]).unwrap();
                    let job = enqueue(&rt, &lease, &stream, (t * 100 + i) as u64);
                    // SAFETY: the thread's live stream of the pool's runtime.
                    unsafe { lease.release_after(stream.raw()) }.unwrap();
                    assert!(job.check(&stream) <= 1e-5, "a transform through a polled hand-off is wrong");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(sim.peak_live_handles() <= 4, "peak {} over the ceiling of 4", sim.peak_live_handles());
    let report = pool.shutdown();
    assert!(!report.timed_out);
    assert_eq!(sim.live_handles(), 0);
    assert_eq!(sim.created_total(), sim.destroyed_total());
    assert!(sim.created_total() > 9, "the workload missed: {} creations", sim.created_total());
    assert!(sim.violations().is_empty(), "{:#?}", sim.violations());
}
