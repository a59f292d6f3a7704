//! The workload that hung: the 26 probe shapes cycled with the simulated runtime blocking
//! (in a pipe read, as the real one did) once more than 12 handles are alive. The pool
//! under a ceiling of 8 or 12 completes; the pool at 26 and the old shared_ptr cache at 16
//! block, which proves the injected fault is real. Blocking is detected by a watchdog
//! (the simulated runtime's count of blocked calls) and then released, so the suite never hangs.

mod common;

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::check::probe::{self, PlanSource, ProbeLease, ProbeOutcome};
use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{CreatedPlan, Direction, PlanDesc, PlanOptions, Runtime, Result};
use lru::LruCache;

fn blocking_sim() -> Arc<SimRuntime> {
    Arc::new(SimRuntime::new(SimConfig { block_above_live: Some(12), ..SimConfig::default() }))
}

enum Ran {
    Finished(ProbeOutcome),
    Blocked { after_steps: usize },
}

/// Runs `f` on a thread; if the simulated runtime reports a blocked call, records how far
/// the probe got, unblocks it and reports a block.
fn watch(sim: &Arc<SimRuntime>, steps: Arc<Mutex<usize>>, f: impl FnOnce() -> ProbeOutcome + Send + 'static) -> Ran {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let ran = loop {
        if let Ok(o) = rx.recv_timeout(Duration::from_millis(20)) {
            break Ran::Finished(o);
        }
        if sim.blocked_calls() > 0 {
            // Blocked for good: a blocked create never returns on its own.
            std::thread::sleep(Duration::from_millis(100));
            assert!(sim.blocked_calls() > 0);
            let after_steps = *steps.lock().unwrap();
            sim.unblock_all();
            break Ran::Blocked { after_steps };
        }
        assert!(Instant::now() < deadline, "neither finished nor blocked in 120 s");
    };
    t.join().unwrap();
    ran
}

fn run_pool(capacity: usize, ceiling: usize) -> (Ran, Arc<SimRuntime>) {
    let sim = blocking_sim();
    let rt: Arc<dyn Runtime> = sim.clone();
    let steps = Arc::new(Mutex::new(0));
    let s2 = steps.clone();
    let ran = watch(&sim, steps, move || {
        let pool = common::pool(&rt, capacity, ceiling, Duration::from_secs(30));
        let shapes = probe::embedded_shapes();
        let order = probe::order(shapes.len(), "forward").unwrap();
        let o = probe::run(&pool, &shapes, &order, 3, 0, 7, |_| *s2.lock().unwrap() += 1);
        pool.shutdown();
        o
    });
    (ran, sim)
}

#[test]
fn the_pool_under_a_ceiling_of_8_or_12_completes_every_cycle() {
    for (capacity, ceiling) in [(8, 8), (12, 12)] {
        let (ran, sim) = run_pool(capacity, ceiling);
        match ran {
            Ran::Finished(o) => {
                assert!(o.correct, "{capacity}/{ceiling}: {:?}", o.failure);
                assert_eq!(o.transforms, 3 * 30, "26 shapes, the 4 c2c both ways, 3 cycles");
                assert!(o.max_rel_error <= 1e-5);
            }
            Ran::Blocked { after_steps } => panic!("pool {capacity}/{ceiling} blocked after {after_steps} steps"),
        }
        assert!(sim.peak_live_handles() <= ceiling);
        assert_eq!(sim.live_handles(), 0);
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn the_pool_at_26_blocks_on_the_13th_plan() {
    let (ran, _sim) = run_pool(26, 26);
    match ran {
        Ran::Blocked { after_steps } => assert_eq!(after_steps, 13, "the 13th distinct shape needs the 13th live plan"),
        Ran::Finished(o) => panic!("expected the injected block, finished: {:?}", o.failure),
    }
}

/// The design being replaced: an LRU of shared pointers; a plan is destroyed when its last
/// reference drops, and nothing bounds the handles alive.
struct LegacyCache {
    rt: Arc<dyn Runtime>,
    lru: Mutex<LruCache<PlanDesc, Arc<LegacyPlan>>>,
}

struct LegacyPlan {
    rt: Arc<dyn Runtime>,
    desc: PlanDesc,
    made: CreatedPlan,
}

impl Drop for LegacyPlan {
    fn drop(&mut self) {
        // SAFETY: the last reference to the plan, whose executions were synchronized.
        let _ = unsafe { self.rt.plan_destroy(self.made.plan) };
    }
}

/// A shared reference to a plan, held for one execution.
struct LegacyLease(Arc<LegacyPlan>);

impl PlanSource for LegacyCache {
    type Lease = LegacyLease;
    fn acquire(&self, desc: &PlanDesc) -> Result<LegacyLease> {
        if let Some(p) = self.lru.lock().unwrap().get(desc) {
            return Ok(LegacyLease(p.clone()));
        }
        let made = self.rt.plan_create(desc, PlanOptions::default())?;
        let p = Arc::new(LegacyPlan { rt: self.rt.clone(), desc: *desc, made });
        let evicted = self.lru.lock().unwrap().push(*desc, p.clone());
        drop(evicted); // destroyed here if nothing else holds it, as the shared_ptr cache did
        Ok(LegacyLease(p))
    }
    fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.rt
    }
}

impl ProbeLease for LegacyLease {
    fn work_size(&self) -> usize {
        self.0.made.work_size
    }
    fn exec(&self, stream: &Stream, input: &DeviceBuffer, output: &DeviceBuffer, direction: Direction, work: Option<&DeviceBuffer>) -> Result<()> {
        let p = &self.0;
        // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
        unsafe { p.rt.plan_exec(p.made.plan, p.desc.transform, stream.raw(), work.map(|w| w.ptr()), input.ptr(), output.ptr(), direction) }
    }
    fn finish(self, stream: &Stream) -> Result<()> {
        stream.synchronize()
    }
}

#[test]
fn the_old_shared_ptr_cache_at_16_blocks() {
    let sim = blocking_sim();
    let rt: Arc<dyn Runtime> = sim.clone();
    let steps = Arc::new(Mutex::new(0));
    let s2 = steps.clone();
    let ran = watch(&sim, steps, move || {
        let cache = LegacyCache { rt: rt.clone(), lru: Mutex::new(LruCache::new(16.try_into().unwrap())) };
        let shapes = probe::embedded_shapes();
        let order = probe::order(shapes.len(), "forward").unwrap();
        probe::run(&cache, &shapes, &order, 3, 0, 7, |_| *s2.lock().unwrap() += 1)
    });
    assert!(matches!(ran, Ran::Blocked { after_steps: 13 }), "the legacy cache at 16 must block on the 13th plan");
}

#[test]
fn the_embedded_shapes_equal_the_repository_file() {
    // Always: the copy compiled into the binary is the repository's data file.
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/probe-shapes.json");
    let text = std::fs::read_to_string(&data).unwrap_or_else(|e| panic!("{}: {e}", data.display()));
    assert_eq!(text, probe::EMBEDDED_SHAPES_JSON, "the embedded shapes are out of date with data/probe-shapes.json");
    let shapes = probe::embedded_shapes();
    assert_eq!(shapes.len(), 26);
    assert_eq!(probe::load_shapes(&data).unwrap(), shapes);
}

#[test]
fn the_repository_file_equals_the_shared_one_where_it_exists() {
    // Only inside the workspace that ships `../shared/`: a clone anywhere else has none, and
    // no test may depend on files outside the repository to pass.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/probe-shapes.json");
    let Ok(text) = std::fs::read_to_string(&shared) else {
        println!("no {}: nothing to compare (a clone outside the workspace)", shared.display());
        return;
    };
    let data = std::fs::read_to_string(root.join("data/probe-shapes.json")).unwrap();
    assert_eq!(text, data, "data/probe-shapes.json is out of date with ../shared/probe-shapes.json");
}
