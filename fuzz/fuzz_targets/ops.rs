//! Arbitrary operation sequences against a pool on the simulated runtime, with faults
//! switched on and off between steps, the invariants checked after every step against the
//! sim's ground truth, and nothing left over at the end. Like tests/prop_pool.rs, but
//! coverage-guided, and with arbitrary descriptors (valid or not) next to a fixed table.
//!
//! Invariants after every step: live handles never above the ceiling; every leased plan
//! alive; no misuse recorded by the sim (destroy under a pending execution, use after
//! destroy, interleaved exec, wrong device); every error one of the expected kinds with a
//! message that names the field or the call and code. At the end: every transform checked
//! against the reference FFT, shutdown clean, no handle, event or byte left, the pool's
//! counts equal to the sim's.
#![no_main]

use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::reference;
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{Direction, Error, Layout, Lease, PlanDesc, PlanPool, PoolConfig, Runtime, TransformType};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    capacity: u8,
    extra_ceiling: u8,
    exec_latency_us: u8,
    budget: Option<u16>,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// A shape of the fixed table.
    Acquire(u8),
    /// Any descriptor at all (rejected, or made and executed when small).
    AcquireAny(AnyDesc),
    Exec { lease: u8, direction: bool },
    ReleaseNow(u8),
    ReleaseAfter(u8),
    Sync,
    SetCapacity(u8),
    Trim,
    Faults { create: Option<u8>, exec: Option<u8>, event: Option<u8>, destroy: Option<u8> },
    Metrics,
    Shutdown,
}

#[derive(Arbitrary, Debug)]
struct AnyDesc {
    transform: u8,
    rank: u8,
    n: [i16; 3],
    batch: i8,
    input: Option<AnyLayout>,
    output: Option<AnyLayout>,
}

#[derive(Arbitrary, Debug)]
struct AnyLayout {
    embed: [i16; 3],
    stride: i8,
    dist: i16,
}

impl AnyDesc {
    fn desc(&self) -> PlanDesc {
        let t = TransformType::ALL[self.transform as usize % 6];
        let rank = self.rank % 5; // 0 and 4 are invalid on purpose
        let mut d = PlanDesc::new(t, &[1], 1);
        d.rank = rank as u32;
        d.n = self.n.map(|v| v as i64);
        d.batch = self.batch as i64;
        let layout = |l: &AnyLayout| Layout { embed: l.embed.map(|v| v as i64), stride: l.stride as i64, dist: l.dist as i64 };
        d.input = self.input.as_ref().map(layout);
        d.output = self.output.as_ref().map(layout);
        d
    }
}

fn table() -> Vec<PlanDesc> {
    vec![
        PlanDesc::new(TransformType::C2C, &[8], 2),
        PlanDesc::new(TransformType::R2C, &[12], 1),
        PlanDesc::new(TransformType::C2R, &[10], 3),
        PlanDesc::new(TransformType::Z2Z, &[4, 6], 1),
        PlanDesc::new(TransformType::D2Z, &[16], 2),
        PlanDesc::new(TransformType::C2C, &[6], 2).with_input_layout(Layout::new(&[8], 2, 17)).with_output_layout(Layout::new(&[6], 1, 7)),
        PlanDesc::new(TransformType::Z2D, &[3, 4], 1),
        PlanDesc::new(TransformType::R2C, &[2, 3, 4], 1),
    ]
}

/// Small enough to execute and check here.
fn small(d: &PlanDesc) -> bool {
    d.validate().is_ok_and(|e| e.input_bytes <= 1 << 16 && e.output_bytes <= 1 << 16)
}

struct Job {
    desc: PlanDesc,
    direction: Direction,
    input: Vec<u8>,
    /// Kept until the stream finished (and for the check).
    _d_in: DeviceBuffer,
    d_out: DeviceBuffer,
    _work: Option<DeviceBuffer>,
}

fn direction_for(d: &PlanDesc, forward: bool) -> Direction {
    if d.transform.is_inverse_real() {
        Direction::Inverse
    } else if d.transform.is_forward_real() || forward {
        Direction::Forward
    } else {
        Direction::Inverse
    }
}

/// An error must say what failed: a descriptor error names its field, a runtime error its
/// call and code by name and number.
fn clear(e: &Error) -> bool {
    let t = e.to_string();
    match e {
        Error::InvalidDesc(_) => t.contains('`') && t.contains(" = "),
        Error::Runtime { code, .. } => t.contains(" failed with ") && t.contains(&format!("{} ({})", code.name, code.value)),
        Error::CeilingTimeout { .. } => t.contains("live of ceiling"),
        Error::DeviceStuck { call, .. } => t.contains("is stuck") && t.contains(call),
        Error::InvalidConfig { .. } | Error::InvalidArgument { .. } => t.contains('`'),
        Error::ShutDown => true,
        _ => false,
    }
}

fuzz_target!(|input: Input| {
    if input.ops.len() > 64 {
        return;
    }
    let capacity = 1 + (input.capacity % 5) as usize;
    let ceiling = capacity + (input.extra_ceiling % 4) as usize;
    let base = SimConfig { exec_latency: Duration::from_micros(input.exec_latency_us as u64 % 50), ..SimConfig::default() };
    let sim = Arc::new(SimRuntime::new(base.clone()));
    let rt: Arc<dyn Runtime> = sim.clone();
    let baseline = sim.allocated_bytes();
    let mut b = PoolConfig::builder()
        .capacity(capacity)
        .private_ceiling(ceiling)
        .acquire_timeout(Duration::from_millis(20))
        .shutdown_timeout(Duration::from_millis(20));
    if let Some(bytes) = input.budget {
        b = b.work_area_budget(bytes as usize);
    }
    let pool = PlanPool::new(b.build().unwrap(), rt.clone()).unwrap();
    let stream = Stream::new(&rt).unwrap();
    let table = table();
    let mut held: Vec<Lease> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut faults = base.clone();
    let mut shut_down = false;

    for op in &input.ops {
        match op {
            Op::Acquire(i) => acquire(&pool, &sim, &table[*i as usize % table.len()], ceiling, shut_down, &mut held),
            Op::AcquireAny(a) => acquire(&pool, &sim, &a.desc(), ceiling, shut_down, &mut held),
            Op::Exec { lease, direction } if !held.is_empty() => {
                let l = &held[*lease as usize % held.len()];
                let desc = *l.desc();
                if !small(&desc) {
                    continue;
                }
                let ext = desc.validate().unwrap();
                let direction = direction_for(&desc, *direction);
                let input = reference::random_input(&desc, jobs.len() as u64);
                let bufs = (|| {
                    let d_in = DeviceBuffer::from_host(&rt, &input)?;
                    let d_out = DeviceBuffer::new(&rt, ext.output_bytes)?;
                    let work = if l.work_size() > 0 { Some(DeviceBuffer::new(&rt, l.work_size())?) } else { None };
                    Ok::<_, Error>((d_in, d_out, work))
                })();
                let Ok((d_in, d_out, work)) = bufs else { continue };
                // SAFETY: buffers of the pool's runtime sized from the validated extents and the
                // work size; they live in `jobs` (and the stream here) past the transform.
                match unsafe { l.exec(stream.raw(), d_in.ptr(), d_out.ptr(), direction, work.as_ref().map(|w| w.ptr())) } {
                    Ok(()) => jobs.push(Job { desc, direction, input, _d_in: d_in, d_out, _work: work }),
                    Err(e) => {
                        assert!(faults.fail_exec_every.is_some(), "exec failed without an injected fault: {e}");
                        assert!(clear(&e), "unclear exec error: {e}");
                        stream.synchronize().unwrap();
                    }
                }
            }
            Op::ReleaseNow(i) if !held.is_empty() => {
                // Honest: the lease's work finished first.
                stream.synchronize().unwrap();
                held.swap_remove(*i as usize % held.len()).release();
            }
            Op::ReleaseAfter(i) if !held.is_empty() => {
                let l = held.swap_remove(*i as usize % held.len());
                // SAFETY: the target's live stream of the pool's runtime.
                if let Err(e) = unsafe { l.release_after(stream.raw()) } {
                    assert!(faults.fail_event_every.is_some() || shut_down, "release_after failed: {}", e.error);
                    assert!(clear(&e.error), "unclear release_after error: {}", e.error);
                    stream.synchronize().unwrap();
                    drop(e.lease);
                }
            }
            Op::Sync => stream.synchronize().unwrap(),
            Op::SetCapacity(c) => {
                let c = *c as usize % (ceiling + 2);
                let r = pool.set_capacity(c);
                assert_eq!(r.is_ok(), (1..=ceiling).contains(&c), "set_capacity({c}) with ceiling {ceiling}: {r:?}");
                if let Err(e) = r {
                    assert!(clear(&e), "unclear: {e}");
                }
            }
            Op::Trim => {
                pool.trim();
            }
            Op::Faults { create, exec, event, destroy } => {
                let every = |k: &Option<u8>| k.map(|k| 1 + (k % 8) as u64);
                faults = SimConfig {
                    fail_create_every: every(create),
                    fail_exec_every: every(exec),
                    fail_event_every: every(event),
                    fail_destroy_every: every(destroy),
                    ..base.clone()
                };
                sim.set_faults(faults.clone());
            }
            Op::Metrics => {
                let m = pool.metrics();
                assert!(m.live <= ceiling && m.process_live <= ceiling && m.cached <= m.capacity, "{m:?}");
            }
            Op::Shutdown => {
                stream.synchronize().unwrap();
                pool.shutdown();
                shut_down = true;
            }
            _ => {}
        }
        assert!(sim.live_handles() <= ceiling, "{} live > ceiling {ceiling}", sim.live_handles());
        for l in &held {
            assert!(sim.is_live(l.plan()), "a leased plan was destroyed");
        }
        let v = sim.violations();
        assert!(v.is_empty(), "misuse: {v:?}");
    }

    sim.set_faults(base.clone());
    stream.synchronize().unwrap();
    for job in jobs.drain(..) {
        let got = job.d_out.to_host().unwrap();
        let want = reference::expected_output(&job.desc, job.direction, &job.input);
        let err = reference::rel_l2_error(&reference::gather_output(&job.desc, &got), &want);
        assert!(err <= 1e-4, "{}: relative error {err}", job.desc);
    }
    drop(held);
    // A shutdown that timed out earlier (leases were out) returns at once now; the plans
    // released since are destroyed by the destroyer thread: wait for it, boundedly.
    pool.shutdown();
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while sim.live_handles() > 0 || pool.metrics().retired_pending > 0 {
        assert!(std::time::Instant::now() < until, "handles left after shutdown: {:?}", pool.metrics());
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sim.created_total(), sim.destroyed_total());
    let m = pool.metrics();
    assert_eq!(m.creations, sim.created_total());
    assert_eq!(m.destroys + m.destroy_failures, sim.destroyed_total());
    drop(stream);
    drop(pool);
    assert_eq!(sim.live_events(), 0);
    assert_eq!(sim.live_streams(), 0);
    assert_eq!(sim.allocated_bytes(), baseline);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
});

fn acquire(pool: &PlanPool, sim: &SimRuntime, desc: &PlanDesc, ceiling: usize, shut_down: bool, held: &mut Vec<Lease>) {
    if held.len() >= 8 {
        return;
    }
    match pool.acquire(desc) {
        Ok(l) => {
            assert!(!shut_down, "served after shutdown");
            assert!(desc.validate().is_ok(), "a plan for an invalid descriptor {desc}");
            assert!(sim.is_live(l.plan()));
            held.push(l);
        }
        Err(e) => {
            assert!(clear(&e), "unclear error for {desc}: {e}");
            match &e {
                Error::InvalidDesc(_) => assert!(desc.validate().is_err()),
                Error::ShutDown => assert!(shut_down),
                // A wait for a free handle: only when leases (ours, or pending release_after) pin
                // every slot.
                Error::CeilingTimeout { state, joined_creation: false, .. } => assert_eq!(state.live, ceiling, "{e}"),
                // A wait for a creation that had not returned within the 20 ms timeout, or a
                // creation still running past it (the device marked stuck): the sim injects no
                // latency here, so only a loaded machine (ASan, 2 cores) gets these.
                Error::CeilingTimeout { joined_creation: true, .. } | Error::DeviceStuck { .. } => {}
                Error::Runtime { .. } => {}
                _ => panic!("unexpected error for {desc}: {e}"),
            }
        }
    }
}
