//! Metrics exports: Prometheus text exposition.

use std::fmt::Write;

use crate::metrics::MetricsSnapshot;
use crate::pool::PlanPool;

/// One metric line group: name, type, help, value.
fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP hipfft_pool_{name} {help}");
    let _ = writeln!(out, "# TYPE hipfft_pool_{name} {kind}");
    let _ = writeln!(out, "hipfft_pool_{name} {value}");
}

/// The snapshot as Prometheus text (`hipfft_pool_*`, counters ending in `_total`).
pub fn prometheus_text(m: &MetricsSnapshot) -> String {
    let mut s = String::with_capacity(4096);
    metric(&mut s, "live_handles", "gauge", "hipFFT handles alive in this pool (cached, retired, being created).", m.live);
    metric(&mut s, "peak_live_handles", "gauge", "Most handles alive at once in this pool.", m.peak_live);
    metric(&mut s, "process_live_handles", "gauge", "hipFFT handles alive across every pool sharing the ceiling.", m.process_live);
    metric(&mut s, "live_ceiling", "gauge", "Hard bound on live handles.", m.ceiling);
    metric(&mut s, "capacity", "gauge", "Plans the cache holds.", m.capacity);
    metric(&mut s, "cached_plans", "gauge", "Plans in the cache.", m.cached);
    metric(&mut s, "leased", "gauge", "Leases not yet released (executions possibly in flight).", m.in_flight);
    metric(&mut s, "retired_pending", "gauge", "Evicted plans waiting for their last lease.", m.retired_pending);
    metric(&mut s, "creating", "gauge", "Plans being created now.", m.creating);
    metric(&mut s, "work_area_bytes", "gauge", "Work-area bytes of cached plans.", m.work_area_bytes);
    metric(&mut s, "hits_total", "counter", "Acquires served by a cached plan.", m.hits);
    metric(&mut s, "misses_total", "counter", "Acquires that found no cached plan.", m.misses);
    metric(&mut s, "evictions_total", "counter", "Plans evicted from the cache.", m.evictions);
    metric(&mut s, "creations_total", "counter", "Plans created.", m.creations);
    metric(&mut s, "destroys_total", "counter", "Plans destroyed.", m.destroys);
    metric(&mut s, "ceiling_waits_total", "counter", "Misses that waited at the live ceiling.", m.ceiling_waits);
    metric(&mut s, "ceiling_timeouts_total", "counter", "Misses that gave up at the live ceiling.", m.ceiling_timeouts);
    metric(&mut s, "create_failures_total", "counter", "Plan creations that failed.", m.create_failures);
    metric(&mut s, "destroy_failures_total", "counter", "Plan destroys that failed.", m.destroy_failures);
    s
}

impl PlanPool {
    /// The pool's metrics as Prometheus text.
    pub fn metrics_text(&self) -> String {
        prometheus_text(&self.metrics())
    }
}
