//! The workload: the 26 probe shapes in turn, one acquire + release per call (no exec: the
//! GPU benchmark measures executions), at capacity 8, 26 and 128, on the sim with plan
//! creation taking the measured cuFFT mean (233 us on an H200). The pool against the C++
//! cache at the same capacity, both creating and destroying through the same sim.
//!
//! Capacity 8 is what MLX's ROCm port was cut down to: every call of the cycle misses
//! (LRU over a cycle longer than the cache). At 26 and 128 the set fits and every call hits.
//! The sim's latency is a `thread::sleep`; the bench sets this thread's timer slack to 1 ns
//! (Linux) and prints what a 233 us sleep really takes here.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{keys, shapes};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const CUFFT_CREATE_MEAN: Duration = Duration::from_micros(233);

fn workload(c: &mut Criterion) {
    let precise = common::precise_sleep();
    eprintln!(
        "workload: timer slack 1 ns: {precise}; thread::sleep(233 us) takes {:.1} us here (median)",
        common::measured_sleep(CUFFT_CREATE_MEAN).as_secs_f64() * 1e6
    );
    let shapes = shapes();
    let keys = keys(&shapes);
    let n = shapes.len();
    let mut g = c.benchmark_group("workload");
    for capacity in [8usize, 26, 128] {
        let rt = common::sim(CUFFT_CREATE_MEAN);
        let pool = common::pool(rt.clone(), capacity, capacity);
        common::warm(&pool, &shapes);
        // The cycle goes on where warming left it: the first measured key is shapes[0].
        let mut i = n - 1;
        g.bench_with_input(BenchmarkId::new("pool", capacity), &capacity, |b, _| {
            b.iter(|| {
                i = if i + 1 == n { 0 } else { i + 1 };
                drop(black_box(pool.acquire(&shapes[i]).unwrap()))
            })
        });
        let m = pool.metrics();
        eprintln!("workload: pool capacity {capacity}: {} hits, {} misses, peak live {}", m.hits, m.misses, m.peak_live);
        drop(pool);

        let rt = common::sim(CUFFT_CREATE_MEAN);
        let base = common::baseline_over(rt.clone(), capacity);
        common::warm_baseline(&base, &keys);
        // The cycle goes on where warming left it: the first measured key is shapes[0].
        let mut i = n - 1;
        g.bench_with_input(BenchmarkId::new("baseline", capacity), &capacity, |b, _| {
            b.iter(|| {
                i = if i + 1 == n { 0 } else { i + 1 };
                let k = keys[i];
                black_box(base.acquire(k.dev, k.ty, k.n, k.batch))
            })
        });
        eprintln!("workload: baseline capacity {capacity}: sim created {} plans", rt.created_total());
        base.clear();
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = workload
}
criterion_main!(benches);
