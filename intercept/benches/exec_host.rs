//! The interposer's own host time per execution, over a runtime that does nothing
//! ([`NullRuntime`]: every call returns at once), so only the interposer's work is timed.
//! The 26 probe shapes, one virtual handle each, executed in turn as a framework holding
//! 26 plans does; capacity and ceiling 128, so every execution after the first round is a
//! hit (a handle keeps its lease between executions, see `Engine::exec`).
//!
//! - `null_plan_exec`: `Runtime::plan_exec` on real plans made beforehand (the floor);
//! - `engine_exec`: `Engine::exec` (handle lookup, its settings, the capture query, the
//!   lease, the exec, the lease kept or released after the stream);
//! - `exported_exec`: the same inside the re-entrancy route and the panic boundary that
//!   every exported function (`cufftExecC2C`, ...) runs it in (`export!`);
//! - `exported_exec_one_handle`: one handle executed over and over.
//!
//! The target: `exported_exec` at most 300 ns over `null_plan_exec`.

mod common;

use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hipfft_pool::{DevicePtr, Direction, PlanOptions, RawStream, Runtime};
use hipfft_pool_intercept::{ExecKind, Flavor, entry};

fn exec_host(c: &mut Criterion) {
    let common::ProbeEngine { null, engine, shapes, handles, dirs } = common::probe_engine();
    let n = shapes.len();
    let rt: Arc<dyn Runtime> = null.clone();
    let kinds: Vec<ExecKind> = shapes
        .iter()
        .map(|d| ExecKind::Typed(d.transform))
        .collect();
    let (input, output) = (DevicePtr(0x10_0000), DevicePtr(0x20_0000));
    let exec = |i: usize| engine.exec(handles[i], kinds[i], "cufftExecC2C", input, output, dirs[i]);
    // The first round makes the 26 real plans; the measured ones are hits.
    (0..n).for_each(|i| exec(i).expect("first execution"));
    let made = null.plans_made();

    let plans: Vec<_> = shapes
        .iter()
        .map(|d| {
            rt.plan_create(d, PlanOptions::default())
                .expect("null plan")
                .plan
        })
        .collect();
    let mut g = c.benchmark_group("interposer_exec");
    let mut i = 0;
    g.bench_function("null_plan_exec", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            let d = if dirs[i] == 1 {
                Direction::Inverse
            } else {
                Direction::Forward
            };
            // SAFETY: the null runtime dereferences no handle and no pointer.
            unsafe {
                rt.plan_exec(
                    black_box(plans[i]),
                    shapes[i].transform,
                    RawStream(1),
                    None,
                    input,
                    output,
                    d,
                )
            }
            .unwrap()
        })
    });
    let mut i = 0;
    g.bench_function("engine_exec", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            exec(black_box(i)).unwrap()
        })
    });
    // What `export!` wraps every body in: the re-entrancy route, then the panic boundary.
    static REAL: OnceLock<usize> = OnceLock::new();
    let exported = |i: usize| -> i32 {
        match entry::reentry(Flavor::Cufft, "cufftExecC2C", &REAL) {
            entry::Route::Serve => entry::serve(Flavor::Cufft, "cufftExecC2C", || exec(i)),
            _ => unreachable!("the bench never calls from inside the interposer"),
        }
    };
    let mut i = 0;
    g.bench_function("exported_exec", |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            assert_eq!(exported(black_box(i)), 0)
        })
    });
    g.bench_function("exported_exec_one_handle", |b| {
        b.iter(|| assert_eq!(exported(black_box(4)), 0))
    });
    g.finish();

    // Ground truth from the runtime: the measured executions made no plan.
    assert_eq!(
        null.plans_made(),
        made + n,
        "only the floor's own plans were made after the first round"
    );
    let m = engine.pool().metrics();
    assert_eq!(m.misses, n as u64, "every measured execution was a hit");
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1)).sample_size(30);
    targets = exec_host
}
criterion_main!(benches);
