//! The miss path at the ceiling: capacity = live ceiling = 8, cycling 9 keys (the first 9
//! probe shapes), so every acquire finds the ceiling full, evicts and destroys the least
//! recently used idle plan, and creates the new one; then the lease is dropped.
//!
//! - `pool/sim`, `baseline/sim`: both create and destroy through the sim (latency 0), so the
//!   difference is the cache's own bookkeeping;
//! - `pool/null`, `baseline/null`: over a runtime that does nothing (the baseline's default
//!   hooks), the cache's cost alone.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use common::{NullRuntime, keys, shapes};
use criterion::{Criterion, criterion_group, criterion_main};
use hipfft_pool::Runtime;

const CAP: usize = 8;
const KEYS: usize = 9;

fn miss_path(c: &mut Criterion) {
    let shapes: Vec<_> = shapes().into_iter().take(KEYS).collect();
    let keys = keys(&shapes);
    let n = shapes.len();
    let mut g = c.benchmark_group("miss_path");

    let runtimes: [(&str, Arc<dyn Runtime>); 2] =
        [("sim", common::sim(Duration::ZERO)), ("null", Arc::new(NullRuntime::default()))];
    for (name, rt) in runtimes {
        let pool = common::pool(rt.clone(), CAP, CAP);
        common::warm(&pool, &shapes);
        // The cycle goes on where warming left it: the first measured key is shapes[0].
        let mut i = n - 1;
        g.bench_function(format!("pool/{name}"), |b| {
            b.iter(|| {
                i = if i + 1 == n { 0 } else { i + 1 };
                drop(black_box(pool.acquire(&shapes[i]).unwrap()))
            })
        });
        let m = pool.metrics();
        assert_eq!(m.hits, 0, "every measured acquire was a miss");
        assert!(m.peak_live <= CAP);
        drop(pool);

        let base = if name == "null" { hfp_baseline::Baseline::new(CAP) } else { common::baseline_over(rt.clone(), CAP) };
        common::warm_baseline(&base, &keys);
        // The cycle goes on where warming left it: the first measured key is shapes[0].
        let mut i = n - 1;
        g.bench_function(format!("baseline/{name}"), |b| {
            b.iter(|| {
                i = if i + 1 == n { 0 } else { i + 1 };
                let k = keys[i];
                black_box(base.acquire(k.dev, k.ty, k.n, k.batch))
            })
        });
        base.clear();
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = miss_path
}
criterion_main!(benches);
