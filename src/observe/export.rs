//! Metrics exports: Prometheus text exposition, JSON (the snapshot is `serde::Serialize`),
//! and the `metrics` crate facade (feature `metrics`). The formats take snapshots; the pool
//! calls them (`PlanPool::metrics_text` and the rest, in `pool/report.rs`).

use std::fmt::Write;

use crate::observe::histogram::{BUCKETS_S, HistogramSnapshot};
use crate::observe::counters::{Latency, MetricsSnapshot};

/// How one snapshot field is exported.
struct Spec {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    get: fn(&MetricsSnapshot) -> f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Gauge,
    Counter,
}

macro_rules! spec {
    ($name:literal, $kind:ident, $help:literal, $field:ident) => {
        Spec { name: $name, kind: Kind::$kind, help: $help, get: |m| m.$field as f64 }
    };
}

/// Every per-device series, in exposition order. Counters end in `_total`.
const SPECS: &[Spec] = &[
    spec!("live_handles", Gauge, "hipFFT handles alive in this pool: cached, retired awaiting their last lease, being created.", live),
    spec!("peak_live_handles", Gauge, "Most hipFFT handles alive at once in this pool.", peak_live),
    spec!("cached_plans", Gauge, "Plans held in the cache.", cached),
    spec!("leased", Gauge, "Leases not yet released (executions possibly in flight).", in_flight),
    spec!("retired_pending", Gauge, "Evicted plans waiting for their last lease before they are destroyed.", retired_pending),
    spec!("creating", Gauge, "Plans being created right now.", creating),
    spec!("stalled_calls", Gauge, "Runtime calls (create, exec, destroy) running past the watchdog threshold.", stalled),
    spec!("work_area_bytes", Gauge, "Work-area bytes the cached plans need.", work_area_bytes),
    spec!("thrashing", Gauge, "1 while recent misses keep re-creating plans evicted moments earlier.", thrashing),
    spec!("hits_total", Counter, "Acquires served by a cached plan.", hits),
    spec!("misses_total", Counter, "Acquires that found no cached plan.", misses),
    spec!("evictions_total", Counter, "Plans evicted from the cache.", evictions),
    spec!("creations_total", Counter, "Plans created.", creations),
    spec!("destroys_total", Counter, "Plans destroyed.", destroys),
    spec!("ceiling_waits_total", Counter, "Misses that waited at the live-handle ceiling.", ceiling_waits),
    spec!("ceiling_timeouts_total", Counter, "Misses that gave up at the live-handle ceiling.", ceiling_timeouts),
    spec!("create_failures_total", Counter, "Plan creations that failed.", create_failures),
    spec!("destroy_failures_total", Counter, "Plan destroys that failed.", destroy_failures),
    spec!("exec_failures_total", Counter, "Executions the runtime refused.", exec_failures),
    spec!("event_failures_total", Counter, "Event record or query failures on release_after.", event_failures),
    spec!("flush_hook_calls_total", Counter, "Times the host's flush hook was called at the ceiling.", flush_hook_calls),
    spec!("thrash_misses_total", Counter, "Misses on plans evicted moments earlier.", thrash_misses),
    spec!("thrash_warnings_total", Counter, "Thrash warnings logged.", thrash_warnings),
];

/// A histogram's name, help line, and where the snapshot keeps it.
type HistogramSpec = (&'static str, &'static str, fn(&MetricsSnapshot) -> &HistogramSnapshot);

const HISTOGRAMS: &[HistogramSpec] = &[
    (Latency::Create.name(), "Time to create a plan (hipfftCreate to hipfftMakePlanMany64).", |m| &m.create_latency),
    (Latency::Destroy.name(), "Time hipfftDestroy took.", |m| &m.destroy_latency),
    (Latency::CeilingWait.name(), "Time a miss waited at the live-handle ceiling, per wait.", |m| &m.ceiling_wait_latency),
];

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP hipfft_pool_{name} {help}");
    let _ = writeln!(out, "# TYPE hipfft_pool_{name} {kind}");
}

/// Prometheus text exposition of per-device snapshots (`device` label) plus the
/// process-wide live count and ceiling.
pub fn prometheus_text_by_device(devices: &[(i32, MetricsSnapshot)], process: &MetricsSnapshot) -> String {
    let mut s = String::with_capacity(8192);
    header(&mut s, "process_live_handles", "gauge", "hipFFT handles alive across every pool sharing the ceiling.");
    let _ = writeln!(s, "hipfft_pool_process_live_handles {}", process.process_live);
    header(&mut s, "process_peak_live_handles", "gauge", "Most handles alive at once across the ceiling's pools.");
    let _ = writeln!(s, "hipfft_pool_process_peak_live_handles {}", process.process_peak_live);
    header(&mut s, "live_ceiling", "gauge", "Hard bound on live hipFFT handles.");
    let _ = writeln!(s, "hipfft_pool_live_ceiling {}", process.ceiling);
    header(&mut s, "capacity", "gauge", "Plans the cache holds.");
    let _ = writeln!(s, "hipfft_pool_capacity {}", process.capacity);
    for spec in SPECS {
        header(&mut s, spec.name, if spec.kind == Kind::Gauge { "gauge" } else { "counter" }, spec.help);
        for (d, m) in devices {
            let _ = writeln!(s, "hipfft_pool_{}{{device=\"{d}\"}} {}", spec.name, (spec.get)(m));
        }
    }
    for (name, help, get) in HISTOGRAMS {
        header(&mut s, name, "histogram", help);
        for (d, m) in devices {
            let h = get(m);
            let mut cumulative = 0;
            for (i, bound) in BUCKETS_S.iter().enumerate() {
                cumulative += h.counts.get(i).copied().unwrap_or(0);
                let le = if bound.is_infinite() { "+Inf".to_string() } else { format!("{bound}") };
                let _ = writeln!(s, "hipfft_pool_{name}_bucket{{device=\"{d}\",le=\"{le}\"}} {cumulative}");
            }
            let _ = writeln!(s, "hipfft_pool_{name}_sum{{device=\"{d}\"}} {}", h.sum_s);
            let _ = writeln!(s, "hipfft_pool_{name}_count{{device=\"{d}\"}} {}", h.count);
        }
    }
    s
}

/// The JSON form: `{"total": {...}, "devices": {"0": {...}}}`.
pub fn json_by_device(devices: Vec<(i32, MetricsSnapshot)>, process: &MetricsSnapshot) -> String {
    let devices: std::collections::BTreeMap<String, MetricsSnapshot> =
        devices.into_iter().map(|(d, m)| (d.to_string(), m)).collect();
    serde_json::json!({ "total": process, "devices": devices }).to_string()
}

/// Pushes every count into the `metrics` crate facade, one series per device.
#[cfg(feature = "metrics")]
pub fn publish(devices: &[(i32, MetricsSnapshot)], process: &MetricsSnapshot) {
    for (d, m) in devices {
        let device = d.to_string();
        for spec in SPECS {
            let name = format!("hipfft_pool_{}", spec.name);
            let v = (spec.get)(m);
            match spec.kind {
                Kind::Gauge => metrics::gauge!(name, "device" => device.clone()).set(v),
                Kind::Counter => metrics::counter!(name, "device" => device.clone()).absolute(v as u64),
            }
        }
    }
    metrics::gauge!("hipfft_pool_process_live_handles").set(process.process_live as f64);
    metrics::gauge!("hipfft_pool_live_ceiling").set(process.ceiling as f64);
}
