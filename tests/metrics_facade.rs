//! The `metrics` crate facade (feature `metrics`): what a host's exporter would receive,
//! checked against the simulated runtime's own counts. `.ci/run` runs this file with the
//! feature on; without it the file is empty.
#![cfg(feature = "metrics")]

mod common;

use std::time::{Duration, Instant};

use common::*;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Every series the recorder holds, by "name{label=value,...}".
fn read(s: &Snapshotter) -> Vec<(String, DebugValue)> {
    s.snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let k = key.key();
            let labels: Vec<String> = k.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            (format!("{}{{{}}}", k.name(), labels.join(",")), value)
        })
        .collect()
}

fn find<'a>(series: &'a [(String, DebugValue)], name: &str) -> &'a DebugValue {
    series
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("{name} was not published; got {:?}", series.iter().map(|(k, _)| k).collect::<Vec<_>>()))
}

fn gauge(series: &[(String, DebugValue)], name: &str) -> f64 {
    match find(series, name) {
        DebugValue::Gauge(v) => v.into_inner(),
        other => panic!("{name} is not a gauge: {other:?}"),
    }
}

fn counter(series: &[(String, DebugValue)], name: &str) -> u64 {
    match find(series, name) {
        DebugValue::Counter(v) => *v,
        other => panic!("{name} is not a counter: {other:?}"),
    }
}

fn samples(series: &[(String, DebugValue)], name: &str) -> usize {
    match find(series, name) {
        DebugValue::Histogram(v) => v.len(),
        other => panic!("{name} is not a histogram: {other:?}"),
    }
}

#[test]
fn the_facade_receives_the_live_counts_and_every_latency() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder of this test binary");

    let (sim, rt) = sim(Default::default());
    let pool = pool(&rt, 2, 3, Duration::from_millis(50));
    // Four keys through capacity 2: two evictions, two destroys; one lease held.
    for n in [8, 16, 24, 32] {
        drop(pool.acquire(&c2c(n, 1)).unwrap());
    }
    let held = pool.acquire(&c2c(8, 1)).unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    // The evicted plans are destroyed on the destroyer thread: wait until only the two
    // cached plans are alive and the pool has counted the destroys (after each call returns).
    while sim.live_handles() > 2
        || pool.metrics().destroys != sim.destroyed_total()
        || pool.metrics().live != sim.live_handles()
    {
        assert!(Instant::now() < until, "destroys never finished");
        std::thread::sleep(Duration::from_millis(1));
    }

    pool.publish_metrics();
    let s = read(&snapshotter);
    let live = sim.live_handles();
    assert_eq!(gauge(&s, "hipfft_pool_live_handles{device=0}"), live as f64);
    assert_eq!(gauge(&s, "hipfft_pool_process_live_handles{}"), live as f64);
    assert_eq!(gauge(&s, "hipfft_pool_live_ceiling{}"), 3.0);
    assert_eq!(gauge(&s, "hipfft_pool_leased{device=0}"), 1.0);
    assert_eq!(counter(&s, "hipfft_pool_creations_total{device=0}"), sim.created_total());
    assert_eq!(counter(&s, "hipfft_pool_destroys_total{device=0}"), sim.destroyed_total());
    assert!(sim.destroyed_total() >= 2);
    // One latency sample per call into the runtime.
    assert_eq!(samples(&s, "hipfft_pool_create_seconds{device=0}") as u64, sim.created_total());
    assert_eq!(samples(&s, "hipfft_pool_destroy_seconds{device=0}") as u64, sim.destroyed_total());

    // Counters are absolute: publishing again after more work moves them to the new totals.
    drop(held);
    drop(pool.acquire(&c2c(48, 1)).unwrap());
    pool.publish_metrics();
    let s = read(&snapshotter);
    assert_eq!(counter(&s, "hipfft_pool_creations_total{device=0}"), sim.created_total());
    assert_eq!(counter(&s, "hipfft_pool_misses_total{device=0}"), pool.metrics().misses);
}
