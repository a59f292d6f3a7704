//! The manifest and the warm-up, on the sim: what is recorded, what a warm-up
//! makes (counted by the sim), its order and bounds, what it skips, and its single flight
//! with a real miss; what a manifest file may be (its caps and type, counted in the bytes
//! the reading thread read) and the warm-up's time in its entries. And the cost eviction
//! against LRU on the H200's creation costs.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hipfft_pool::check::trace::{Trace, run_trace, traces};
use hipfft_pool::manifest::{MANIFEST_MAX_BYTES, Manifest, ManifestPlan};
use hipfft_pool::{Eviction, LiveCeiling, PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};

fn sim(config: SimConfig) -> (Arc<SimRuntime>, Arc<dyn Runtime>) {
    let sim = Arc::new(SimRuntime::new(config));
    let rt: Arc<dyn Runtime> = sim.clone();
    (sim, rt)
}

/// LRU: the recording test states which plan an eviction takes (on the sim creations take
/// no measurable time, so cost eviction would rank by clock noise).
fn pool(rt: &Arc<dyn Runtime>, capacity: usize, ceiling: usize) -> PlanPool {
    let config = PoolConfig::builder().capacity(capacity).private_ceiling(ceiling).eviction(Eviction::Lru).build().unwrap();
    PlanPool::new(config, rt.clone()).unwrap()
}

fn pool_with(rt: &Arc<dyn Runtime>, capacity: usize) -> PlanPool {
    pool(rt, capacity, capacity)
}

fn c2c(n: i64) -> PlanDesc {
    PlanDesc::new(TransformType::C2C, &[n], 2)
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hfp-warmup-{name}-{}.json", std::process::id()))
}

#[test]
fn the_manifest_records_what_the_sim_made_with_hits_and_measured_creation_time() {
    let (sim, rt) = sim(SimConfig { create_latency: Duration::from_millis(3), ..SimConfig::default() });
    let p = pool(&rt, 2, 2);
    // 8: three acquires (1 miss, 2 hits); 16 and 32 evict each other and 8 once.
    for n in [8, 8, 8, 16, 32, 16, 8] {
        p.acquire(&c2c(n)).unwrap().release();
    }
    let m = p.manifest();
    assert_eq!((m.format.as_str(), m.version, m.runtime.as_str()), ("hipfft-pool manifest", 1, "sim"));
    assert_eq!(m.devices[0].name, "Simulated device 0");
    let creations: u64 = m.plans.iter().map(|p| p.creations).sum();
    assert_eq!(creations, sim.created_total(), "every creation the sim counted is recorded");
    let hits: u64 = m.plans.iter().map(|p| p.hits).sum();
    assert_eq!(hits, 7 - sim.created_total(), "every acquire that made nothing is a hit");
    let eight = m.plans.iter().find(|p| p.n == vec![8]).unwrap();
    assert_eq!((eight.hits, eight.creations), (2, 2), "hits of an evicted plan are kept");
    assert!(eight.creation_us >= 3000.0, "the creation time is measured: {}", eight.creation_us);
    assert!(m.plans.windows(2).all(|w| w[0].value() >= w[1].value()), "most valuable first");

    let path = temp("record");
    p.save_manifest(&path).unwrap();
    assert_eq!(Manifest::load(&path).unwrap(), m);
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_warm_up_makes_the_plans_before_the_first_call_and_the_first_calls_are_hits() {
    let shapes: Vec<PlanDesc> = [8, 16, 32, 64].into_iter().map(c2c).collect();
    let manifest = {
        let (_, rt) = sim(SimConfig::default());
        let p = pool(&rt, 8, 8);
        for d in &shapes {
            p.acquire(d).unwrap().release();
        }
        p.manifest()
    };
    let path = temp("restart");
    manifest.save(&path).unwrap();
    // "After a restart": a fresh runtime and pool, warmed from the file.
    let (sim, rt) = sim(SimConfig { create_latency: Duration::from_millis(2), ..SimConfig::default() });
    let config = PoolConfig::builder().capacity(8).private_ceiling(8).warmup(&path).build().unwrap();
    let p = PlanPool::new_shared(config, rt).unwrap();
    let report = p.wait_warm_up(Duration::from_secs(30)).expect("the warm-up reports");
    assert_eq!((report.made, report.already, report.stopped.as_deref()), (4, 0, None), "{report:?}");
    assert_eq!(sim.live_handles(), 4, "the sim holds the four plans");
    let made = sim.created_total();
    for d in &shapes {
        p.acquire(d).unwrap().release();
    }
    assert_eq!(sim.created_total(), made, "the first calls made nothing");
    assert_eq!(p.metrics().misses, 0);
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_warm_up_goes_by_value_and_stops_at_the_capacity_and_at_the_ceiling() {
    let (sim, rt) = sim(SimConfig::default());
    let mut m = Manifest::empty_for(&*rt);
    // Values (creation_us x uses): 64 > 32 > 16 > 8.
    m.plans = vec![
        ManifestPlan::new(&c2c(8), 0, 1, 10.0, 0),
        ManifestPlan::new(&c2c(16), 5, 1, 10.0, 0),
        ManifestPlan::new(&c2c(32), 0, 1, 500.0, 0),
        ManifestPlan::new(&c2c(64), 9, 1, 500.0, 0),
    ];
    let p = pool(&rt, 2, 4);
    let r = p.warm_up(&m);
    assert_eq!(r.made, 2);
    assert!(r.stopped.as_deref().unwrap().contains("capacity 2"), "{r:?}");
    let cached: Vec<String> = p.cached_plans().into_iter().map(|c| c.desc).collect();
    assert!(cached.iter().any(|d| d.contains("64")) && cached.iter().any(|d| d.contains("32")), "{cached:?}");
    assert_eq!(sim.live_handles(), 2);

    // A ceiling shared with another pool that holds two leases: room for one plan only,
    // and nothing of the other pool is evicted.
    let (sim, rt) = self::sim(SimConfig::default());
    let ceiling = LiveCeiling::new(3);
    let other = PlanPool::new(PoolConfig::builder().capacity(3).shared_ceiling(ceiling.clone()).build().unwrap(), rt.clone()).unwrap();
    let held = [other.acquire(&c2c(128)).unwrap(), other.acquire(&c2c(256)).unwrap()];
    let p = PlanPool::new(PoolConfig::builder().capacity(3).shared_ceiling(ceiling).build().unwrap(), rt).unwrap();
    let r = p.warm_up(&m);
    assert_eq!(r.made, 1);
    assert!(r.stopped.as_deref().unwrap().contains("live ceiling"), "{r:?}");
    assert_eq!(sim.live_handles(), 3, "never above the ceiling");
    assert_eq!(other.metrics().evictions, 0);
    drop(held);
}

#[test]
fn a_manifest_of_another_library_or_device_is_skipped_with_a_warning_naming_both() {
    let (sim, rt) = sim(SimConfig::default());
    let mut m = Manifest::empty_for(&*rt);
    m.plans = vec![ManifestPlan::new(&c2c(8), 1, 1, 100.0, 0)];
    let p = pool(&rt, 4, 4);

    let mut other_lib = m.clone();
    other_lib.library = "cuFFT 11.0.0 (11000)".into();
    let r = p.warm_up(&other_lib);
    assert_eq!(r.made, 0);
    let w = &r.skipped[0];
    assert!(w.contains("cuFFT 11.0.0 (11000)") && w.contains(&m.library), "{w}");

    let mut other_device = m.clone();
    other_device.devices[0].name = "0: NVIDIA H200".into();
    let r = p.warm_up(&other_device);
    assert_eq!(r.made, 0);
    let w = &r.skipped[0];
    assert!(w.contains("NVIDIA H200") && w.contains("Simulated device 0"), "{w}");
    assert_eq!(sim.created_total(), 0);

    // A bad entry is skipped, naming its field; the rest is made.
    let mut bad = m.clone();
    let mut zero = ManifestPlan::new(&c2c(16), 1, 1, 100.0, 0);
    zero.n = vec![0];
    bad.plans.insert(0, zero);
    let r = p.warm_up(&bad);
    assert_eq!(r.made, 1);
    assert!(r.skipped[0].contains("n[0]"), "{:?}", r.skipped);
    assert_eq!(sim.created_total(), 1);

    // An unreadable file is a warning in the warm-up's report, not an error.
    let config = PoolConfig::builder().capacity(4).private_ceiling(4).warmup("/nonexistent/plans.json").build().unwrap();
    let shared = PlanPool::new_shared(config, rt).unwrap();
    let r = shared.wait_warm_up(Duration::from_secs(10)).expect("the warm-up reports");
    let w = r.stopped.unwrap_or_default();
    assert!(w.contains("HIPFFT_POOL_WARMUP") && w.contains("/nonexistent/plans.json"), "{w}");
}

#[test]
fn a_miss_on_a_plan_being_warmed_joins_its_creation() {
    let (sim, rt) = sim(SimConfig { create_latency: Duration::from_millis(300), ..SimConfig::default() });
    let mut m = Manifest::empty_for(&*rt);
    m.plans = vec![ManifestPlan::new(&c2c(8), 1, 1, 100.0, 0)];
    let p = Arc::new(pool(&rt, 4, 4));
    let rx = p.warm_up_in_background(m).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while sim.live_handles() == 0 {
        assert!(Instant::now() < until, "the warm-up never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    p.acquire(&c2c(8)).unwrap().release();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap().made, 1);
    assert_eq!(sim.created_total(), 1, "one creation served both");
    assert_eq!(p.metrics().misses, 1, "the miss waited for it");
}

#[test]
fn a_warm_up_waits_for_a_real_miss_in_progress() {
    let latency = Duration::from_millis(200);
    let (sim, rt) = sim(SimConfig { create_latency: latency, ..SimConfig::default() });
    let mut m = Manifest::empty_for(&*rt);
    m.plans = vec![ManifestPlan::new(&c2c(16), 1, 1, 100.0, 0)];
    let p = Arc::new(pool(&rt, 4, 4));
    let real = {
        let p = p.clone();
        std::thread::spawn(move || {
            p.acquire(&c2c(8)).unwrap().release();
            Instant::now()
        })
    };
    while sim.live_handles() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let r = p.warm_up(&m);
    let warmed = Instant::now();
    let real_done = real.join().unwrap();
    assert_eq!(r.made, 1);
    // Had the warm-up run beside the real miss, both would end together.
    assert!(warmed >= real_done + latency.mul_f64(0.9), "the warm-up's creation ran beside the real miss");
}

#[test]
fn a_warm_up_makes_no_plan_while_a_stream_captures_a_graph() {
    let (sim, rt) = sim(SimConfig::default());
    let p = Arc::new(pool(&rt, 4, 4));
    let stream = hipfft_pool::check::buffer::Stream::new(&rt).unwrap();
    let lease = p.acquire(&c2c(64)).unwrap();
    sim.begin_capture(stream.raw()).unwrap();
    let job = common::enqueue(&rt, &lease, &stream, 5);
    let mut m = Manifest::empty_for(&*rt);
    m.plans = vec![ManifestPlan::new(&c2c(8), 1, 1, 100.0, 0), ManifestPlan::new(&c2c(16), 1, 1, 100.0, 0)];
    let rx = p.warm_up_in_background(m).unwrap();
    // The capture goes on for a while (a framework capturing tells the pool on each exec).
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        p.capture_seen();
        assert_eq!(sim.created_total(), 1, "a plan was made during the capture");
        std::thread::sleep(Duration::from_millis(10));
    }
    let graph = sim.end_capture(stream.raw()).unwrap();
    let exec = sim.graph_instantiate(graph).unwrap();
    sim.graph_launch(exec, stream.raw()).unwrap();
    assert!(job.check(&stream) < 1e-4);
    // The graph is done with: the lease the captured execution ran under goes.
    sim.graph_exec_destroy(exec).unwrap();
    sim.graph_destroy(graph).unwrap();
    lease.release();
    let r = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(r.made, 2, "{r:?}");
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn the_manifest_is_written_when_the_pool_is_dropped() {
    let (_, rt) = sim(SimConfig::default());
    let path = temp("drop");
    let config = PoolConfig::builder().capacity(4).private_ceiling(4).manifest_out(&path).build().unwrap();
    let p = PlanPool::new(config, rt).unwrap();
    p.acquire(&c2c(8)).unwrap().release();
    p.acquire(&c2c(8)).unwrap().release();
    drop(p);
    let m = Manifest::load(&path).unwrap();
    assert_eq!((m.plans.len(), m.plans[0].hits), (1, 1));
    std::fs::remove_file(&path).ok();
}

#[test]
fn malformed_manifests_are_refused_naming_what_is_wrong() {
    for (text, says) in [
        ("not json", "not a manifest"),
        (r#"{"format": "other", "version": 1}"#, "format \"other\""),
        (r#"{"format": "hipfft-pool manifest", "version": 2}"#, "version 2"),
        (r#"{"format": "hipfft-pool manifest", "version": 1, "runtime": "sim"}"#, "malformed"),
    ] {
        let e = Manifest::parse(text).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("manifest"), "{text}: {e}");
    }
}

// ---- what a manifest file may be: the caps, the file types, linear time, skipped entries ----

/// Bytes this thread has read so far (`rchar`: every `read` of any file), so that a test can
/// tell what a refusal read.
fn bytes_read_by_this_thread() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("/proc/thread-self/io");
    io.lines().find_map(|l| l.strip_prefix("rchar: ")).and_then(|v| v.parse().ok()).expect("rchar")
}

/// `f` on a thread of its own, or `None` when it has not returned within `limit` (the
/// thread is left blocked: the test fails instead of hanging).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

/// `Manifest::load(path)` with a bound on its time, and the bytes it read.
fn load_within(path: &std::path::Path, limit: Duration) -> (String, u64) {
    let owned = path.to_path_buf();
    within(limit, move || {
        let before = bytes_read_by_this_thread();
        let e = Manifest::load(&owned).map(|m| format!("loaded {} plans", m.plans.len()));
        (e.unwrap_or_else(|e| e.to_string()), bytes_read_by_this_thread() - before)
    })
    .unwrap_or_else(|| panic!("Manifest::load({}) blocked for {limit:?}", path.display()))
}

/// The warnings logged through `tracing` on this thread while `f` runs.
fn warnings_of<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    use std::sync::Mutex;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    struct Collect(Arc<Mutex<Vec<String>>>);
    struct Message(String);
    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    impl tracing::Subscriber for Collect {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if *event.metadata().level() == tracing::Level::WARN {
                let mut m = Message(String::new());
                event.record(&mut m);
                self.0.lock().unwrap().push(m.0);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = tracing::subscriber::with_default(Collect(lines.clone()), f);
    let lines = lines.lock().unwrap().clone();
    (out, lines)
}

#[test]
fn a_manifest_above_the_byte_cap_is_refused_before_a_byte_of_it_is_read() {
    let path = temp("too-big");
    let file = std::fs::File::create(&path).unwrap();
    // Sparse: the size is what the file claims, not what the disk holds.
    for size in [MANIFEST_MAX_BYTES + 1, MANIFEST_MAX_BYTES + (1 << 20), 1 << 30] {
        file.set_len(size).unwrap();
        let (e, read) = load_within(&path, Duration::from_secs(10));
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains(&format!("{size} bytes, above the manifest cap of {MANIFEST_MAX_BYTES} bytes")), "{e}");
        assert!(read < 64 << 10, "{read} bytes read to refuse a file of {size}");
    }
    // The same file named by HIPFFT_POOL_WARMUP: the pool is made at once, the warm-up
    // reports the refusal.
    let (sim, rt) = sim(SimConfig::default());
    let config = PoolConfig::builder().capacity(4).private_ceiling(4).warmup(&path).build().unwrap();
    let started = Instant::now();
    let pool = PlanPool::new_shared(config, rt).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "new_shared took {:?}", started.elapsed());
    let r = pool.wait_warm_up(Duration::from_secs(10)).expect("the warm-up reports");
    let w = r.stopped.unwrap_or_default();
    assert!(w.contains("HIPFFT_POOL_WARMUP") && w.contains(&path.display().to_string()) && w.contains("cap"), "{w}");
    assert_eq!((r.made, sim.created_total()), (0, 0));
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_fifo_is_refused_at_once_and_never_blocks() {
    let path = std::env::temp_dir().join(format!("hfp-warmup-fifo-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let made = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo");
    assert!(made.success());
    // Opening a FIFO for reading waits for a writer: none ever comes.
    let (e, read) = load_within(&path, Duration::from_secs(5));
    assert!(e.contains(&path.display().to_string()) && e.contains("a FIFO, not a regular file"), "{e}");
    assert!(read < 4096, "{read} bytes read: {e}");
    // Named by HIPFFT_POOL_WARMUP: neither the thread making the pool nor the warm-up waits.
    let (sim, rt) = sim(SimConfig::default());
    let config = PoolConfig::builder().capacity(4).private_ceiling(4).warmup(&path).build().unwrap();
    let pool = within(Duration::from_secs(5), move || PlanPool::new_shared(config, rt).unwrap()).expect("new_shared blocked");
    let r = pool.wait_warm_up(Duration::from_secs(5)).expect("the warm-up blocked");
    let w = r.stopped.unwrap_or_default();
    assert!(w.contains("HIPFFT_POOL_WARMUP") && w.contains(&path.display().to_string()) && w.contains("FIFO"), "{w}");
    assert_eq!(sim.created_total(), 0);
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_device_or_a_directory_is_refused_as_not_a_regular_file() {
    for (path, kind) in [("/dev/zero", "a character device"), ("/dev/null", "a character device"), ("/", "a directory")] {
        let (e, read) = load_within(std::path::Path::new(path), Duration::from_secs(5));
        assert!(e.contains(&format!("{path}: {kind}, not a regular file")), "{e}");
        assert!(read < 4096, "{read} bytes read: {e}");
    }
}

#[test]
fn a_warm_up_takes_time_linear_in_its_entries() {
    let entry = |n: i64| ManifestPlan::new(&c2c(n).with_input_layout(hipfft_pool::Layout::new(&[n], 1, n)), 1, 1, 100.0, 0);
    // The most entries a manifest file holds, through HIPFFT_POOL_WARMUP: every one made.
    let path = temp("linear");
    let mut m = Manifest::empty_for(&*sim(SimConfig::default()).1);
    m.plans = (1..=hipfft_pool::manifest::WORKING_SET_LIMIT as i64).map(entry).collect();
    m.save(&path).unwrap();
    let (sim_rt, rt) = sim(SimConfig::default());
    let config = PoolConfig::builder().capacity(4096).private_ceiling(4096).warmup(&path).build().unwrap();
    let pool = PlanPool::new_shared(config, rt).unwrap();
    let r = pool.wait_warm_up(Duration::from_secs(60)).expect("the warm-up reports");
    assert_eq!((r.made, sim_rt.created_total(), r.stopped.as_deref()), (4096, 4096, None), "{:?}", r.skipped.first());
    std::fs::remove_file(&path).ok();
    // 4 x 10^4 entries of 64 shapes, as a program may build in memory: 64 made, the rest
    // found cached, each in constant time. A clone of the manifest per entry made this take
    // a minute; it takes milliseconds, and the bound leaves a slow machine a hundred times
    // over. (A miss scans the cached plans, so entries that are made cost the capacity each.)
    let (sim_rt, rt) = sim(SimConfig::default());
    m.plans = (0..40_000).map(|i| entry(1 + i % 64)).collect();
    let pool = Arc::new(pool_with(&rt, 64));
    let started = Instant::now();
    let r = pool.warm_up_in_background(m).unwrap().recv_timeout(Duration::from_secs(300)).expect("the warm-up reports");
    let took = started.elapsed();
    assert_eq!((r.made, r.already, sim_rt.created_total()), (64, 40_000 - 64, 64));
    assert!(took < Duration::from_secs(5), "40000 entries took {took:?}");
}

#[test]
fn entries_with_negative_or_overflowing_lengths_are_skipped_and_named_in_one_warning() {
    let (sim, rt) = sim(SimConfig::default());
    let mut m = Manifest::empty_for(&*rt);
    let entry = |n: &[i64], batch: i64| {
        let mut p = ManifestPlan::new(&PlanDesc::new(TransformType::C2C, &vec![8; n.len()], 1), 1, 1, 100.0, 0);
        (p.n, p.batch) = (n.to_vec(), batch);
        p
    };
    // Equal values: the warm-up takes them in the manifest's order.
    m.plans = vec![
        entry(&[16], 2),
        entry(&[-8], 2),
        entry(&[1 << 40, 1 << 40], 1),
        entry(&[8], i64::MAX),
        entry(&[32], 2),
    ];
    let path = temp("negative");
    m.save(&path).unwrap();
    let m = Manifest::load(&path).unwrap();
    let p = pool(&rt, 8, 8);
    let (r, warnings) = warnings_of(|| p.warm_up(&m));
    assert_eq!((r.made, sim.created_total()), (2, 2), "{r:?}");
    assert_eq!(r.skipped.len(), 3, "{:?}", r.skipped);
    assert!(r.skipped[0].starts_with("entry 1 (C2C n=[-8] batch=2): ") && r.skipped[0].contains("`n[0]` = -8"), "{:?}", r.skipped);
    assert!(r.skipped[1].starts_with("entry 2 ") && r.skipped[1].contains("`n[0]` = 1099511627776 makes the element count"));
    assert!(r.skipped[2].starts_with("entry 3 ") && r.skipped[2].contains("`batch` = 9223372036854775807 makes"), "{:?}", r.skipped);
    let said: Vec<&String> = warnings.iter().filter(|w| w.contains("skipped")).collect();
    assert_eq!(said.len(), 1, "one line for all: {warnings:?}");
    assert_eq!(*said[0], format!("warm-up skipped 3 manifest entries; the first: {}", r.skipped[0]));
    std::fs::remove_file(&path).ok();
}

// ---- cost eviction against LRU, counted by the sim (creations, creation time spent) ----

#[test]
fn cost_eviction_spends_less_creation_time_than_lru_where_costs_differ_and_never_more_on_a_cycle() {
    let all = traces(6);
    let cycle = &all[0];
    for capacity in [8, 20] {
        let lru = run_trace(cycle, capacity, Eviction::Lru).unwrap();
        let cost = run_trace(cycle, capacity, Eviction::Cost).unwrap();
        assert!(cost.creations <= lru.creations, "cycle at {capacity}: {cost:?} against {lru:?}");
    }
    let lru = run_trace(cycle, 20, Eviction::Lru).unwrap();
    let cost = run_trace(cycle, 20, Eviction::Cost).unwrap();
    assert_eq!(lru.creations, cycle.steps.len() as u64, "LRU misses every call of a cycle longer than its capacity");
    assert!(cost.creation_ms < 0.8 * lru.creation_ms, "{cost:?} against {lru:?}");
    // Hot shapes, two of them slow, with a scan of the rest between: LRU lets the scan
    // push the hot set out at capacity 4; the cost policy keeps the slow hot ones.
    let scan = &all[2];
    let lru = run_trace(scan, 4, Eviction::Lru).unwrap();
    let cost = run_trace(scan, 4, Eviction::Cost).unwrap();
    assert!(cost.creation_ms < 0.7 * lru.creation_ms, "{cost:?} against {lru:?}");
}

#[test]
fn cost_eviction_at_capacity_one_makes_every_plan_again() {
    // Capacity 1 is the degenerate case: every miss evicts the only plan; the trace must
    // still work and count every creation.
    let t = Trace { name: "alternating", steps: vec![5, 0, 5, 0, 5, 0] };
    let c = run_trace(&t, 1, Eviction::Cost).unwrap();
    assert_eq!(c.creations, 6);
}

