//! The hit path, single thread: acquire + release of a cached plan (no exec), the pool
//! against the C++ cache it replaces, in the same run.
//!
//! - `pool/one_key`: `acquire(&desc)` then drop the lease, the same key every time;
//! - `pool/26_keys`: the same over the 26 probe shapes in turn;
//! - `pool/26_keys_from_ints`: the descriptor built from (dev, type, n, batch) on every call,
//!   as a host building it from its array would (what the C++ cache does with its string);
//! - `baseline/*`: the C++ cache (string key, mutex, list splice, shared_ptr copy; release
//!   drops the copy); `baseline/26_keys_handler` releases through a `std::function`
//!   completion handler, as MLX does.
//!
//! Both sides sit on the sim with every plan made beforehand; a hit calls no runtime.

mod common;

use std::hint::black_box;

use common::{Key, keys, shapes};
use criterion::{Criterion, criterion_group, criterion_main};

fn hit_path(c: &mut Criterion) {
    let shapes = shapes();
    let keys = keys(&shapes);
    let rt = common::sim(std::time::Duration::ZERO);
    let pool = common::pool(rt.clone(), 128, 128);
    common::warm(&pool, &shapes);
    let base = common::baseline_over(rt.clone(), 128);
    common::warm_baseline(&base, &keys);
    assert_eq!(base.len(), 26);

    let mut g = c.benchmark_group("hit_path");

    let one = shapes[4];
    g.bench_function("pool/one_key", |b| b.iter(|| drop(black_box(pool.acquire(black_box(&one)).unwrap()))));
    let k = Key::of(&one);
    g.bench_function("baseline/one_key", |b| {
        b.iter(|| black_box(base.hit(black_box(k.dev), k.ty, black_box(k.n), k.batch).unwrap()))
    });

    let mut i = 0;
    g.bench_function("pool/26_keys", |b| {
        b.iter(|| {
            i = if i + 1 == shapes.len() { 0 } else { i + 1 };
            drop(black_box(pool.acquire(black_box(&shapes[i])).unwrap()))
        })
    });
    let mut i = 0;
    g.bench_function("pool/26_keys_from_ints", |b| {
        b.iter(|| {
            i = if i + 1 == keys.len() { 0 } else { i + 1 };
            let d = black_box(keys[i]).desc();
            drop(black_box(pool.acquire(&d).unwrap()))
        })
    });
    let mut i = 0;
    g.bench_function("baseline/26_keys", |b| {
        b.iter(|| {
            i = if i + 1 == keys.len() { 0 } else { i + 1 };
            let k = black_box(keys[i]);
            black_box(base.hit(k.dev, k.ty, k.n, k.batch).unwrap())
        })
    });
    let mut i = 0;
    g.bench_function("baseline/26_keys_handler", |b| {
        b.iter(|| {
            i = if i + 1 == keys.len() { 0 } else { i + 1 };
            let k = black_box(keys[i]);
            black_box(base.hit_with_handler(k.dev, k.ty, k.n, k.batch).unwrap())
        })
    });
    g.finish();

    let m = pool.metrics();
    assert_eq!(m.misses, 26, "every measured acquire was a hit");
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = hit_path
}
criterion_main!(benches);
