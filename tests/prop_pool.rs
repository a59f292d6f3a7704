//! Random operation sequences against a pool on the simulated runtime, with random
//! capacities, ceilings and injected faults. After every step the simulated runtime's own
//! records must agree: live handles never above the ceiling, no handle destroyed while
//! leased or with an execution pending, and every executed transform right. At the end
//! every handle is destroyed exactly once and the pool's metrics equal the runtime's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use hipfft_pool::check::buffer::Stream;
use hipfft_pool::runtime::sim::SimConfig;
use hipfft_pool::{Error, Lease};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Acquire { large_pool: bool, shape: usize },
    Exec { lease: usize },
    ReleaseNow { lease: usize },
    ReleaseAfter { lease: usize },
    SetCapacity(usize),
    Trim,
    FailNextCreates(bool),
    FailExecs(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<bool>(), 0usize..12).prop_map(|(large_pool, shape)| Op::Acquire { large_pool, shape }),
        3 => (0usize..8).prop_map(|lease| Op::Exec { lease }),
        3 => (0usize..8).prop_map(|lease| Op::ReleaseNow { lease }),
        2 => (0usize..8).prop_map(|lease| Op::ReleaseAfter { lease }),
        1 => (1usize..8).prop_map(Op::SetCapacity),
        1 => Just(Op::Trim),
        1 => any::<bool>().prop_map(Op::FailNextCreates),
        1 => any::<bool>().prop_map(Op::FailExecs),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_operation_sequences_keep_every_invariant(
        capacity in 1usize..6,
        extra in 0usize..4,
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let ceiling = capacity + extra;
        let (sim, rt) = sim(SimConfig { exec_latency: Duration::from_micros(200), ..SimConfig::default() });
        let pool = pool(&rt, capacity, ceiling, Duration::from_millis(30));
        let small = small_shapes(3);
        let large = small_shapes(12);
        let stream = Stream::new(&rt).unwrap();
        let mut held: Vec<Lease> = Vec::new();
        let mut jobs = Vec::new();
        let mut fail_creates = false;
        let mut fail_execs = false;
        for op in ops {
            match op {
                Op::Acquire { large_pool, shape } => {
                    let d = if large_pool { large[shape % large.len()] } else { small[shape % small.len()] };
                    match pool.acquire(&d) {
                        Ok(l) => {
                            prop_assert!(sim.is_live(l.plan()));
                            held.push(l);
                        }
                        Err(Error::CeilingTimeout { state, .. }) => {
                            // Only legitimate when leased plans pin every slot.
                            prop_assert_eq!(state.live, ceiling);
                            prop_assert!(!held.is_empty());
                        }
                        Err(Error::Runtime { code, .. }) => prop_assert!(fail_creates, "unexpected {}", code),
                        Err(e) => prop_assert!(false, "unexpected error {}", e),
                    }
                }
                Op::Exec { lease } if !held.is_empty() => {
                    let l = &held[lease % held.len()];
                    if fail_execs {
                        let e = common::try_enqueue(&rt, l, &stream, jobs.len() as u64);
                        prop_assert!(e.is_err());
                    } else {
                        jobs.push(enqueue(&rt, l, &stream, jobs.len() as u64));
                    }
                }
                Op::ReleaseNow { lease } if !held.is_empty() => {
                    // A release "now" is only honest once the lease's work finished.
                    stream.synchronize().unwrap();
                    held.swap_remove(lease % held.len()).release();
                }
                Op::ReleaseAfter { lease } if !held.is_empty() => {
                    let l = held.swap_remove(lease % held.len());
                    // SAFETY: `stream` is the test's live stream of the sim.
                    let released = unsafe { l.release_after(stream.raw()) };
                    prop_assert!(released.is_ok());
                }
                Op::SetCapacity(c) => {
                    let r = pool.set_capacity(c);
                    prop_assert_eq!(r.is_ok(), c <= ceiling);
                }
                Op::Trim => {
                    pool.trim();
                }
                Op::FailNextCreates(on) => {
                    fail_creates = on;
                    sim.set_faults(SimConfig {
                        exec_latency: Duration::from_micros(200),
                        fail_create_every: on.then_some(1),
                        fail_exec_every: fail_execs.then_some(1),
                        ..SimConfig::default()
                    });
                }
                Op::FailExecs(on) => {
                    fail_execs = on;
                    sim.set_faults(SimConfig {
                        exec_latency: Duration::from_micros(200),
                        fail_create_every: fail_creates.then_some(1),
                        fail_exec_every: on.then_some(1),
                        ..SimConfig::default()
                    });
                }
                _ => {}
            }
            prop_assert!(sim.live_handles() <= ceiling, "{} live > ceiling {}", sim.live_handles(), ceiling);
            for l in &held {
                prop_assert!(sim.is_live(l.plan()), "a leased plan was destroyed");
            }
            let v = sim.violations();
            prop_assert!(v.is_empty(), "{:?}", v);
        }
        for job in jobs {
            prop_assert!(job.check(&stream) <= 1e-5);
        }
        drop(held);
        let report = pool.shutdown();
        prop_assert!(report.still_leased.is_empty(), "{:?}", report);
        prop_assert_eq!(sim.live_handles(), 0);
        prop_assert_eq!(sim.created_total(), sim.destroyed_total());
        let m = pool.metrics();
        prop_assert_eq!(m.creations, sim.created_total());
        prop_assert_eq!(m.destroys + m.destroy_failures, sim.destroyed_total());
        prop_assert_eq!(m.live, 0);
        prop_assert!(sim.peak_live_handles() <= ceiling);
        let v = sim.violations();
        prop_assert!(v.is_empty(), "{:?}", v);
        drop(stream);
        drop(pool);
        let _ = Arc::strong_count(&sim);
    }
}
