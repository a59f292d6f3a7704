//! The host-side cost of one call on the GPU path, measured on the CPU: what the pool adds
//! around an execution, over a runtime that does nothing (every call returns at once), so
//! only the provider's own work is timed. This is the part of the GPU benchmark's
//! "pool against the raw floor" gap that comes from the pool (small FFTs are bound by the
//! host's enqueue cost, so it adds to the per-call time almost one for one).
//!
//! - `raw_exec`: `Runtime::plan_exec` on a plan made beforehand (the floor);
//! - `pool_exec_release`: `acquire` + `Lease::exec` + release at once;
//! - `pool_exec_release_after`: `acquire` + `Lease::exec` + `release_after(stream)` (an
//!   event recorded, the lease handed to the completion thread);
//! - `pool_exec_release_in_batch`: `acquire` + `Lease::exec` + `release_in_batch(stream)`,
//!   the batch ended (one event) every 26 calls, as a host's commit would;
//! - `pool_acquire_release`: `acquire` + release, no exec (the hit path, for reference).
//!
//! 26 probe shapes in turn, capacity 128, every plan cached.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::{NullRuntime, shapes};
use criterion::{Criterion, criterion_group, criterion_main};
use hipfft_pool::{DevicePtr, Direction, PlanOptions, RawStream, Runtime};

fn direction(d: &hipfft_pool::PlanDesc) -> Direction {
    if d.transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward }
}

fn exec_path(c: &mut Criterion) {
    let shapes = shapes();
    let n = shapes.len();
    let dirs: Vec<Direction> = shapes.iter().map(direction).collect();
    let rt: Arc<dyn Runtime> = Arc::new(NullRuntime::default());
    let stream = RawStream(1);
    let (input, output, work) = (DevicePtr(0x10_0000), DevicePtr(0x20_0000), DevicePtr(0x30_0000));
    let plans: Vec<_> =
        shapes.iter().map(|d| rt.plan_create(d, PlanOptions::default()).expect("null plan").plan).collect();
    let pool = common::pool(rt.clone(), 128, 128);
    common::warm(&pool, &shapes);

    let mut g = c.benchmark_group("exec_path");
    let mut i = 0;
    g.bench_function("raw_exec", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { rt.plan_exec(black_box(plans[i]), shapes[i].transform, stream, Some(work), input, output, dirs[i]) }.unwrap()
        })
    });
    let mut i = 0;
    g.bench_function("pool_exec_release", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            let lease = pool.acquire(black_box(&shapes[i])).unwrap();
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { lease.exec(stream, input, output, dirs[i], Some(work)) }.unwrap();
            lease.release();
        })
    });
    let mut i = 0;
    g.bench_function("pool_exec_release_after", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            let lease = pool.acquire(black_box(&shapes[i])).unwrap();
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { lease.exec(stream, input, output, dirs[i], Some(work)) }.unwrap();
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { lease.release_after(stream) }.unwrap();
        })
    });
    // Not 0, 1 or 2 (those names take the release_after path).
    let batch_stream = RawStream(0x4000);
    let mut i = 0;
    g.bench_function("pool_exec_release_in_batch", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            let lease = pool.acquire(black_box(&shapes[i])).unwrap();
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { lease.exec(batch_stream, input, output, dirs[i], Some(work)) }.unwrap();
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe { lease.release_in_batch(batch_stream) }.unwrap();
            if i == 0 {
                // SAFETY: as above.
                unsafe { pool.end_batch(batch_stream) }.unwrap();
            }
        })
    });
    // SAFETY: as above.
    unsafe { pool.end_batch(batch_stream) }.unwrap();
    let mut i = 0;
    g.bench_function("pool_acquire_release", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            drop(black_box(pool.acquire(black_box(&shapes[i])).unwrap()));
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = exec_path
}
criterion_main!(benches);
