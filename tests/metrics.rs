//! The exports, validated: Prometheus text through `promtool check metrics` (Debian's
//! `prometheus` package) and a parser of our own; JSON through serde; the summary; the
//! loopback endpoint over a pool (its HTTP behaviour is tested in `src/observe/tests.rs`);
//! and the watchdog and thrash warning firing on the sim's faults.
//!
//! Pools here evict in LRU order (`Eviction::Lru`): the tests state which plan an eviction
//! takes, and on the sim creations take no time, so the default cost eviction would rank
//! plans by clock noise (tests/warmup.rs covers it).

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use hipfft_pool::runtime::sim::SimConfig;
use hipfft_pool::{CallKind, PlanPool, PoolConfig};

/// A pool with some of everything: hits, misses, evictions, a timeout, two devices.
fn busy_pool() -> (Arc<hipfft_pool::runtime::sim::SimRuntime>, PlanPool, Vec<hipfft_pool::Lease>) {
    let (sim, rt) = sim(SimConfig { devices: 2, ..SimConfig::default() });
    let pool = pool(&rt, 2, 3, Duration::from_millis(20));
    for n in [8, 16, 8, 32, 64, 8] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    drop(pool.acquire(&c2c(8, 1).on_device(1)).unwrap());
    let held = vec![
        pool.acquire(&c2c(8, 1)).unwrap(),
        pool.acquire(&c2c(16, 1)).unwrap(),
        pool.acquire(&c2c(24, 1).on_device(1)).unwrap(),
    ];
    assert!(pool.acquire(&c2c(40, 1)).is_err());
    (sim, pool, held)
}

/// A strict reading of the text exposition format, for when promtool is absent too.
fn parse(text: &str) -> HashMap<String, f64> {
    let mut typed: HashMap<String, String> = HashMap::new();
    let mut samples = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(["gauge", "counter", "histogram"].contains(&kind), "{line}");
            assert!(typed.insert(name.to_string(), kind.to_string()).is_none(), "TYPE twice: {name}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counter {name} must end in _total");
            }
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("bad line {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let name = series.split('{').next().unwrap();
        assert!(name.starts_with("hipfft_pool_"), "{name}");
        let family = ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).filter(|f| typed.get(*f).is_some_and(|k| k == "histogram"));
        assert!(typed.contains_key(name) || family.is_some(), "sample before its TYPE: {line}");
        assert!(samples.insert(series.to_string(), value).is_none(), "duplicate series {series}");
    }
    samples
}

#[test]
fn prometheus_text_is_valid_and_carries_device_labels_and_histograms() {
    let (_sim, pool, _held) = busy_pool();
    let text = pool.metrics_text();
    let s = parse(&text);
    assert_eq!(s["hipfft_pool_live_ceiling"], 3.0);
    assert_eq!(s["hipfft_pool_process_live_handles"], 3.0);
    assert_eq!(s["hipfft_pool_ceiling_timeouts_total{device=\"0\"}"], 1.0);
    assert!(s["hipfft_pool_hits_total{device=\"0\"}"] >= 2.0);
    assert_eq!(s["hipfft_pool_creations_total{device=\"1\"}"], 2.0);
    let count = s["hipfft_pool_create_seconds_count{device=\"0\"}"];
    assert_eq!(s["hipfft_pool_create_seconds_bucket{device=\"0\",le=\"+Inf\"}"], count);
    assert!(count >= 4.0);
    match std::process::Command::new("promtool").args(["check", "metrics"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn() {
        Ok(mut child) => {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            let msg = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && msg.trim().is_empty(), "promtool check metrics:\n{msg}\n{text}");
        }
        Err(e) => println!("skipped promtool (not installed: {e}); the built-in parser checked the text"),
    }
}

#[test]
fn json_and_summary_say_the_same_as_the_snapshot() {
    let (_sim, pool, _held) = busy_pool();
    let v: serde_json::Value = serde_json::from_str(&pool.metrics_json()).unwrap();
    let m = pool.metrics();
    assert_eq!(v["total"]["creations"], m.creations);
    assert_eq!(v["devices"]["1"]["cached"], 1);
    assert_eq!(v["devices"]["0"]["retired_pending"], 1);
    let text = pool.summary().to_string();
    assert!(text.contains("capacity 2, live ceiling 3"), "{text}");
    assert!(text.contains("dev1 C2C n=24"), "most recent first, with descriptors: {text}");
    let first = text.lines().position(|l| l.contains("n=24")).unwrap();
    let older = text.lines().position(|l| l.contains("dev0 C2C n=16")).unwrap();
    assert!(first < older, "{text}");
}

#[test]
fn the_loopback_endpoint_serves_the_text() {
    let (_sim, pool, held) = busy_pool();
    drop(held);
    let pool = Arc::new(pool);
    let server = hipfft_pool::observe::serve::MetricsServer::start("127.0.0.1:0", &pool).unwrap();
    let get = |path: &str| {
        let mut conn = std::net::TcpStream::connect(server.addr()).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        (head.to_string(), body.to_string())
    };
    let (head, body) = get("/metrics");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(body.contains("hipfft_pool_live_handles{device=\"0\"}"));
    let (head, body) = get("/metrics.json");
    assert!(head.starts_with("HTTP/1.1 200 OK") && head.contains("Content-Type: application/json"), "{head}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["total"]["creations"], pool.metrics().creations);
    assert!(get("/").0.starts_with("HTTP/1.1 404 "));
    assert!(hipfft_pool::observe::serve::MetricsServer::start("0.0.0.0:0", &pool).unwrap_err().to_string().contains("loopback"));
}

#[test]
fn the_watchdog_reports_a_destroy_that_does_not_return() {
    let (sim, rt) = sim(SimConfig { block_destroy: true, ..SimConfig::default() });
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru)
        .capacity(1)
        .private_ceiling(2)
        .watchdog_threshold(Duration::from_millis(100))
        .build()
        .unwrap();
    let pool = Arc::new(PlanPool::new(cfg, rt).unwrap());
    drop(pool.acquire(&c2c(8, 1)).unwrap());
    let p = pool.clone();
    // Evicting the idle plan hands its destroy to the destroyer thread, which blocks in the sim.
    let t = std::thread::spawn(move || drop(p.acquire(&c2c(16, 1))));
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.metrics().stalled == 0 {
        assert!(Instant::now() < deadline, "the stalled destroy was never reported");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stalled = pool.stalled_calls();
    assert_eq!(stalled.len(), 1);
    assert_eq!(stalled[0].kind, CallKind::Destroy);
    assert!(stalled[0].message.contains("hipfftDestroy has not returned"), "{}", stalled[0].message);
    assert!(stalled[0].message.contains("hipFree, which synchronizes every stream"), "{}", stalled[0].message);
    assert!(stalled[0].message.contains("C2C n=8"), "{}", stalled[0].message);
    assert!(pool.metrics_text().contains("hipfft_pool_stalled_calls{device=\"0\"} 1"));
    sim.set_faults(SimConfig::default());
    sim.unblock_all();
    t.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.metrics().stalled != 0 {
        assert!(Instant::now() < deadline, "still reported stalled after the call returned");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_watchdog_reports_a_creation_that_does_not_return() {
    let (sim, rt) = sim(SimConfig { block_create: true, ..SimConfig::default() });
    let cfg = PoolConfig::builder().eviction(hipfft_pool::Eviction::Lru).capacity(1).private_ceiling(1).watchdog_threshold(Duration::from_millis(50)).build().unwrap();
    let pool = Arc::new(PlanPool::new(cfg, rt).unwrap());
    let p = pool.clone();
    let t = std::thread::spawn(move || p.acquire(&c2c(8, 1)).is_err());
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.stalled_calls().is_empty() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(pool.stalled_calls()[0].kind, CallKind::Create);
    sim.unblock_all();
    assert!(t.join().unwrap(), "the unblocked creation reports its error");
}

#[test]
fn a_thrashing_cache_warns_and_one_that_holds_the_set_does_not() {
    let shapes = hipfft_pool::check::probe::embedded_shapes();
    for (capacity, thrashes) in [(8, true), (26, false)] {
        let (_sim, rt) = sim(SimConfig::default());
        let pool = pool(&rt, capacity, capacity, Duration::from_secs(5));
        for _ in 0..4 {
            for s in &shapes {
                drop(pool.acquire(&s.desc(0).unwrap()).unwrap());
            }
        }
        let m = pool.metrics();
        assert_eq!(m.thrash_warnings > 0, thrashes, "capacity {capacity}: {m:?}");
        assert_eq!(m.thrashing > 0, thrashes);
        assert!(m.thrash_warnings <= 1, "rate-limited");
    }
}
