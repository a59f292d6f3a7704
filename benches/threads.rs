//! The hit path from 1, 2, 4, ... N threads (N = available cores, or
//! `HFP_BENCH_MAX_THREADS`), hits spread over the 26 probe shapes: total throughput
//! (criterion's elements/s = acquire+release pairs per second over all threads), the pool
//! against the C++ cache in the same run.
//!
//! Each sample starts its threads once; they meet at a barrier, and the sample's time runs
//! from the first thread's start after the barrier to the last thread's end of its `iters`
//! pairs. Thread `t`
//! starts its walk through the shapes at `t * 26 / threads`, so threads hit different
//! plans at any moment, as concurrent streams would.

mod common;

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{keys, shapes};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Runs `op(key)` `iters` times on each of `threads` threads, each walking the `n` keys from
/// its own offset; the wall time until the slowest finishes, from the barrier.
fn run_threads<F: Fn(usize) + Sync>(threads: usize, iters: u64, n: usize, op: F) -> Duration {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, op) = (&barrier, &op);
                s.spawn(move || {
                    let mut k = t * n / threads;
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        op(k);
                        k = if k + 1 == n { 0 } else { k + 1 };
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        let spans: Vec<(Instant, Instant)> = handles.into_iter().map(|h| h.join().expect("bench thread")).collect();
        let start = spans.iter().map(|s| s.0).min().unwrap();
        let end = spans.iter().map(|s| s.1).max().unwrap();
        // Never zero (criterion refuses that), even for a sample of one iteration.
        end.duration_since(start).max(Duration::from_nanos(1))
    })
}

/// One thread's word, on a line pair of its own.
#[derive(Default)]
#[repr(align(128))]
struct Unshared(AtomicU64);

fn threads(c: &mut Criterion) {
    let shapes = shapes();
    let keys = keys(&shapes);
    let n = shapes.len();
    let rt = common::sim(Duration::ZERO);
    let pool = common::pool(rt.clone(), 128, 128);
    common::warm(&pool, &shapes);
    let base = common::baseline_over(rt.clone(), 128);
    common::warm_baseline(&base, &keys);

    let mut g = c.benchmark_group("threads");
    for t in common::thread_counts() {
        g.throughput(Throughput::Elements(t as u64));
        g.bench_with_input(BenchmarkId::new("pool", t), &t, |b, &t| {
            b.iter_custom(|iters| {
                run_threads(t, iters, n, |k| {
                    drop(black_box(pool.acquire(&shapes[k]).unwrap()));
                })
            })
        });
        // The machine's own ceiling: the two locked read-modify-writes a hit pays (a CAS
        // that takes, a SeqCst decrement that gives back), on a line only that thread
        // writes. Nothing is shared, so this is as far as any hit path can scale here.
        g.bench_with_input(BenchmarkId::new("unshared", t), &t, |b, &t| {
            b.iter_custom(|iters| {
                let words: Vec<Unshared> = (0..t).map(|_| Unshared::default()).collect();
                let next = AtomicUsize::new(0);
                run_threads(t, iters, n, |_| {
                    thread_local! { static MINE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) }; }
                    let i = MINE.with(|m| {
                        if m.get() >= t {
                            m.set(next.fetch_add(1, Ordering::Relaxed) % t);
                        }
                        m.get()
                    });
                    let w = &words[i].0;
                    let cur = w.load(Ordering::Relaxed);
                    let _ = black_box(w.compare_exchange(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed));
                    black_box(w.fetch_sub(1, Ordering::SeqCst));
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("baseline", t), &t, |b, &t| {
            b.iter_custom(|iters| {
                run_threads(t, iters, n, |k| {
                    let k = keys[k];
                    black_box(base.hit(k.dev, k.ty, k.n, k.batch).unwrap());
                })
            })
        });
    }
    g.finish();
    assert_eq!(pool.metrics().misses, 26, "every measured acquire was a hit");
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = threads
}
criterion_main!(benches);
