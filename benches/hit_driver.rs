//! A small driver for instruction counts of the hit path under callgrind (repeatable on a
//! loaded machine, where wall-clock numbers are not). Not a criterion bench.
//!
//! ```sh
//! cargo bench --no-run --bench hit_driver       # prints the binary's path
//! valgrind --tool=callgrind --toggle-collect='hfp_loop_*' target/release/deps/hit_driver-* pool 1000000
//! ```
//!
//! Modes: `pool` (acquire(&desc) + drop over the 26 probe shapes), `pool_ints` (the
//! descriptor built from four integers first), `baseline` (the C++ cache's hit + release),
//! `baseline_handler` (released through a `std::function`), `miss_pool` / `miss_baseline`
//! (the miss path at a ceiling of 8 over 9 keys, on a runtime that does nothing; ITERS / 10
//! acquires), `exec_pool` (acquire + exec + release on that runtime), `exec_batch` and
//! `exec_after` (the same with `release_in_batch` and with `release_after`). Each runs its loop in an
//! unmangled `hfp_loop_<mode>` function, so `--toggle-collect` counts exactly the loop.
//! Under `cargo bench` (argument `--bench`) it runs every mode briefly and prints ns per op.

mod common;

use std::hint::black_box;
use std::time::Instant;

use common::{Key, keys, shapes};
use hfp_baseline::Baseline;
use hipfft_pool::{DevicePtr, Direction, PlanDesc, PlanPool, RawStream};

#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_pool(pool: &PlanPool, shapes: &[PlanDesc], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        drop(black_box(pool.acquire(&shapes[i]).unwrap()));
        i = if i + 1 == shapes.len() { 0 } else { i + 1 };
    }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_pool_ints(pool: &PlanPool, keys: &[Key], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        let d = black_box(keys[i]).desc();
        drop(black_box(pool.acquire(&d).unwrap()));
        i = if i + 1 == keys.len() { 0 } else { i + 1 };
    }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_baseline(base: &Baseline, keys: &[Key], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        let k = black_box(keys[i]);
        black_box(base.hit(k.dev, k.ty, k.n, k.batch).unwrap());
        i = if i + 1 == keys.len() { 0 } else { i + 1 };
    }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_baseline_handler(base: &Baseline, keys: &[Key], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        let k = black_box(keys[i]);
        black_box(base.hit_with_handler(k.dev, k.ty, k.n, k.batch).unwrap());
        i = if i + 1 == keys.len() { 0 } else { i + 1 };
    }
}

/// The miss path at the ceiling (capacity = ceiling = 8, 9 keys in turn) over a runtime
/// that does nothing: the pool's own slow path.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_miss_pool(pool: &PlanPool, shapes: &[PlanDesc], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        drop(black_box(pool.acquire(&shapes[i]).unwrap()));
        i = if i + 1 == shapes.len() { 0 } else { i + 1 };
    }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_miss_baseline(base: &Baseline, keys: &[Key], iters: u64) {
    let mut i = 0;
    for _ in 0..iters {
        let k = black_box(keys[i]);
        black_box(base.acquire(k.dev, k.ty, k.n, k.batch));
        i = if i + 1 == keys.len() { 0 } else { i + 1 };
    }
}

/// acquire + exec + release over a runtime that does nothing: the pool's cost per GPU call.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_exec_pool(pool: &PlanPool, shapes: &[PlanDesc], iters: u64) {
    let mut i = 0;
    let (input, output, work) = (DevicePtr(0x10_0000), DevicePtr(0x20_0000), DevicePtr(0x30_0000));
    for _ in 0..iters {
        let lease = pool.acquire(&shapes[i]).unwrap();
        let dir = if shapes[i].transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward };
        // SAFETY: the null runtime dereferences no handle and no pointer.
        unsafe { lease.exec(RawStream(1), input, output, dir, Some(work)) }.unwrap();
        lease.release();
        i = if i + 1 == shapes.len() { 0 } else { i + 1 };
    }
}

/// acquire + exec + `release_in_batch`, the batch ended every 26 calls, over a runtime that
/// does nothing: the batched release's own cost per call.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_exec_batch(pool: &PlanPool, shapes: &[PlanDesc], iters: u64) {
    exec_loop(pool, shapes, iters, |lease, stream, last| {
        // SAFETY: the null runtime dereferences no handle and no pointer.
        unsafe { lease.release_in_batch(stream) }.unwrap();
        if last {
            // SAFETY: as above.
            unsafe { pool.end_batch(stream) }.unwrap();
        }
    })
}

/// acquire + exec + `release_after` over a runtime that does nothing: the per-call event's
/// bookkeeping (the hand-off to the completion thread).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn hfp_loop_exec_after(pool: &PlanPool, shapes: &[PlanDesc], iters: u64) {
    exec_loop(pool, shapes, iters, |lease, stream, _| {
        // SAFETY: the null runtime dereferences no handle and no pointer.
        unsafe { lease.release_after(stream) }.unwrap()
    })
}

fn exec_loop(pool: &PlanPool, shapes: &[PlanDesc], iters: u64, mut release: impl FnMut(hipfft_pool::Lease, RawStream, bool)) {
    let mut i = 0;
    let (input, output, work) = (DevicePtr(0x10_0000), DevicePtr(0x20_0000), DevicePtr(0x30_0000));
    // Not 0, 1 or 2 (those take the release_after path).
    let stream = RawStream(0x4000);
    for _ in 0..iters {
        let lease = pool.acquire(&shapes[i]).unwrap();
        let dir = if shapes[i].transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward };
        // SAFETY: the null runtime dereferences no handle and no pointer.
        unsafe { lease.exec(stream, input, output, dir, Some(work)) }.unwrap();
        release(lease, stream, i + 1 == shapes.len());
        i = if i + 1 == shapes.len() { 0 } else { i + 1 };
    }
}

const MODES: [&str; 9] =
    ["pool", "pool_ints", "baseline", "baseline_handler", "miss_pool", "miss_baseline", "exec_pool", "exec_batch", "exec_after"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (modes, iters): (Vec<&str>, u64) = match args.first().map(String::as_str) {
        // `cargo bench` passes `--bench` (and maybe a filter): a quick run of every mode.
        None | Some("--bench") => (MODES.to_vec(), 2_000_000),
        Some(m) if MODES.contains(&m) => (vec![m], args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1_000_000)),
        Some(other) => {
            eprintln!("usage: hit_driver [{}] [ITERS]   (got {other:?})", MODES.join("|"));
            std::process::exit(2);
        }
    };
    let shapes = shapes();
    let keys = keys(&shapes);
    let rt = common::sim(std::time::Duration::ZERO);
    let pool = common::pool(rt.clone(), 128, 128);
    common::warm(&pool, &shapes);
    let base = common::baseline_over(rt.clone(), 128);
    common::warm_baseline(&base, &keys);
    // The miss path: 9 keys through 8 slots, nothing under it.
    let miss_shapes = &shapes[..9];
    let miss_keys = &keys[..9];
    let miss_pool = common::pool(std::sync::Arc::new(common::NullRuntime::default()), 8, 8);
    common::warm(&miss_pool, miss_shapes);
    let miss_base = Baseline::new(8);
    common::warm_baseline(&miss_base, miss_keys);
    let exec_pool = common::pool(std::sync::Arc::new(common::NullRuntime::default()), 128, 128);
    common::warm(&exec_pool, &shapes);
    for mode in modes {
        let t = Instant::now();
        match mode {
            "pool" => hfp_loop_pool(&pool, &shapes, iters),
            "pool_ints" => hfp_loop_pool_ints(&pool, &keys, iters),
            "baseline" => hfp_loop_baseline(&base, &keys, iters),
            "baseline_handler" => hfp_loop_baseline_handler(&base, &keys, iters),
            // Warming left key 0 evicted: start there, so every acquire misses.
            "exec_pool" => hfp_loop_exec_pool(&exec_pool, &shapes, iters),
            "exec_batch" => hfp_loop_exec_batch(&exec_pool, &shapes, iters),
            "exec_after" => hfp_loop_exec_after(&exec_pool, &shapes, iters),
            "miss_pool" => hfp_loop_miss_pool(&miss_pool, miss_shapes, iters / 10),
            _ => hfp_loop_miss_baseline(&miss_base, miss_keys, iters / 10),
        }
        let ops = if mode.starts_with("miss") { iters / 10 } else { iters };
        let ns = t.elapsed().as_nanos() as f64 / ops as f64;
        println!("hit_driver {mode:<17} {ops:>8} ops  {ns:8.1} ns/op");
    }
}
