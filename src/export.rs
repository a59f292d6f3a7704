//! Metrics exports: Prometheus text exposition, JSON (the snapshot is `serde::Serialize`),
//! the `metrics` crate facade (feature `metrics`), and a human summary.

use std::fmt::{self, Write};

use crate::histogram::{BUCKETS_S, HistogramSnapshot};
use crate::metrics::{Latency, MetricsSnapshot};
use crate::pool::PlanPool;

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

impl PlanPool {
    /// The pool's metrics as Prometheus text, one series per device.
    pub fn metrics_text(&self) -> String {
        prometheus_text_by_device(&self.metrics_by_device(), &self.metrics())
    }

    /// The pool's metrics as JSON: `{"total": {...}, "devices": {"0": {...}}}`.
    pub fn metrics_json(&self) -> String {
        let devices: std::collections::BTreeMap<String, MetricsSnapshot> =
            self.metrics_by_device().into_iter().map(|(d, m)| (d.to_string(), m)).collect();
        serde_json::json!({ "total": self.metrics(), "devices": devices }).to_string()
    }

    /// Pushes every count into the `metrics` crate facade, so whatever exporter the host
    /// installed picks them up. Call it periodically (a scrape handler, a timer).
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        for (d, m) in self.metrics_by_device() {
            let device = d.to_string();
            for spec in SPECS {
                let name = format!("hipfft_pool_{}", spec.name);
                let v = (spec.get)(&m);
                match spec.kind {
                    Kind::Gauge => metrics::gauge!(name, "device" => device.clone()).set(v),
                    Kind::Counter => metrics::counter!(name, "device" => device.clone()).absolute(v as u64),
                }
            }
        }
        let m = self.metrics();
        metrics::gauge!("hipfft_pool_process_live_handles").set(m.process_live as f64);
        metrics::gauge!("hipfft_pool_live_ceiling").set(m.ceiling as f64);
    }

    /// A human summary, in the spirit of CuPy's `show_plan_cache_info`.
    pub fn summary(&self) -> PoolSummary<'_> {
        PoolSummary(self)
    }
}

/// See [`PlanPool::summary`].
pub struct PoolSummary<'a>(&'a PlanPool);

impl fmt::Display for PoolSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        let m = p.metrics();
        let acquires = m.hits + m.misses;
        let rate = if acquires == 0 { 0.0 } else { 100.0 * m.hits as f64 / acquires as f64 };
        writeln!(f, "hipfft-pool on the {} runtime", p.runtime().kind())?;
        writeln!(
            f,
            "  capacity {}, live ceiling {}, acquire timeout {:?}",
            m.capacity,
            m.ceiling,
            p.acquire_timeout()
        )?;
        writeln!(
            f,
            "  live {} (peak {}), process live {}, cached {}, leased {}, retired {}, stalled {}",
            m.live, m.peak_live, m.process_live, m.cached, m.in_flight, m.retired_pending, m.stalled
        )?;
        writeln!(
            f,
            "  hits {} / {} acquires ({rate:.1}%), {} created, {} destroyed, {} evicted, {} ceiling waits, {} timeouts{}",
            m.hits,
            acquires,
            m.creations,
            m.destroys,
            m.evictions,
            m.ceiling_waits,
            m.ceiling_timeouts,
            if m.thrashing > 0 { ", THRASHING" } else { "" }
        )?;
        writeln!(f, "  cached plans, most recent first:")?;
        for c in p.cached_plans() {
            writeln!(f, "    {}  work {} B  hits {}  leases {}", c.desc, c.work_size, c.hits, c.leases)?;
        }
        Ok(())
    }
}
