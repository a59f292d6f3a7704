//! Counters kept by the pool and the snapshot it reports.
//!
//! Counters live on slow paths only (misses, creations, destroys, waits). The hit path
//! bumps nothing shared: hits are counted per plan and summed when a snapshot is taken.

use crate::observe::histogram::{Histogram, HistogramSnapshot};
use crate::sync::Ordering;
use crate::sync::stat::{AtomicU64, AtomicUsize};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub misses: AtomicU64,
    pub creations: AtomicU64,
    pub destroys: AtomicU64,
    pub evictions: AtomicU64,
    pub ceiling_waits: AtomicU64,
    pub ceiling_timeouts: AtomicU64,
    pub create_failures: AtomicU64,
    pub destroy_failures: AtomicU64,
    pub exec_failures: AtomicU64,
    pub event_failures: AtomicU64,
    pub flush_hook_calls: AtomicU64,
    /// Hits of plans already destroyed (live plans keep their own count).
    pub hits_of_destroyed: AtomicU64,
    /// This pool's live handles on the device: cached + retired + being created.
    pub live: AtomicUsize,
    /// The most at once (summed over devices, the pool-wide figure is an upper bound).
    pub peak_live: AtomicUsize,
    pub creating: AtomicUsize,
    /// Misses on a plan evicted moments earlier (the signature of a thrashing cache).
    pub thrash_misses: AtomicU64,
    pub thrash_warnings: AtomicU64,
    pub thrashing: AtomicUsize,
    pub create_latency: Histogram,
    pub destroy_latency: Histogram,
    pub ceiling_wait_latency: Histogram,
}

/// The three latencies the pool measures.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Latency {
    Create,
    Destroy,
    CeilingWait,
}

impl Latency {
    /// The Prometheus name (without the `hipfft_pool_` prefix).
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Latency::Create => "create_seconds",
            Latency::Destroy => "destroy_seconds",
            Latency::CeilingWait => "ceiling_wait_seconds",
        }
    }
}

impl Counters {
    /// Records one latency in the pool's histogram and, with the `metrics` feature, as a
    /// sample in the facade (a facade histogram takes samples, not bucket counts). Slow
    /// paths only: creation, destroy, a wait at the ceiling.
    pub(crate) fn record_latency(&self, which: Latency, device: i32, d: std::time::Duration) {
        let h = match which {
            Latency::Create => &self.create_latency,
            Latency::Destroy => &self.destroy_latency,
            Latency::CeilingWait => &self.ceiling_wait_latency,
        };
        h.record(d);
        #[cfg(feature = "metrics")]
        metrics::histogram!(format!("hipfft_pool_{}", which.name()), "device" => device.to_string()).record(d.as_secs_f64());
        #[cfg(not(feature = "metrics"))]
        let _ = device;
    }

    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn live_up(&self) {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_live.fetch_max(now, Ordering::Relaxed);
    }

    pub(crate) fn live_down(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }

    /// Adds this device's counts to a snapshot.
    pub(crate) fn add_to(&self, m: &mut MetricsSnapshot) {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        m.live += self.live.load(Ordering::SeqCst);
        m.peak_live += self.peak_live.load(Ordering::Relaxed);
        m.creating += self.creating.load(Ordering::SeqCst);
        m.hits += ld(&self.hits_of_destroyed);
        m.misses += ld(&self.misses);
        m.evictions += ld(&self.evictions);
        m.creations += ld(&self.creations);
        m.destroys += ld(&self.destroys);
        m.ceiling_waits += ld(&self.ceiling_waits);
        m.ceiling_timeouts += ld(&self.ceiling_timeouts);
        m.create_failures += ld(&self.create_failures);
        m.destroy_failures += ld(&self.destroy_failures);
        m.exec_failures += ld(&self.exec_failures);
        m.event_failures += ld(&self.event_failures);
        m.flush_hook_calls += ld(&self.flush_hook_calls);
        m.thrash_misses += ld(&self.thrash_misses);
        m.thrash_warnings += ld(&self.thrash_warnings);
        m.thrashing = m.thrashing.max(self.thrashing.load(Ordering::Relaxed));
        m.create_latency.merge(&self.create_latency.snapshot());
        m.destroy_latency.merge(&self.destroy_latency.snapshot());
        m.ceiling_wait_latency.merge(&self.ceiling_wait_latency.snapshot());
    }
}

/// Every count the pool keeps, at one moment. Exact when the pool is quiescent; under
/// concurrent use each field is exact but fields may be from slightly different instants.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MetricsSnapshot {
    /// This pool's live handles (cached + retired awaiting their last lease + being created).
    pub live: usize,
    /// The most live handles this pool has had at once.
    pub peak_live: usize,
    /// Live handles of every pool sharing the ceiling.
    pub process_live: usize,
    /// The most live handles of the ceiling's pools at once.
    pub process_peak_live: usize,
    /// The live ceiling: the most handles that may be alive at once.
    pub ceiling: usize,
    /// The most plans the cache keeps.
    pub capacity: usize,
    /// Plans in the cache now.
    pub cached: usize,
    /// Leases not yet released (executions possibly in flight).
    pub in_flight: usize,
    /// Evicted plans waiting for their last lease.
    pub retired_pending: usize,
    /// Plans being created right now (their slots are taken).
    pub creating: usize,
    /// Bytes of work areas the pool's plans own (auto-allocated plans only).
    pub work_area_bytes: usize,
    /// Acquires served from the cache.
    pub hits: u64,
    /// Acquires that had to create a plan (or join a creation).
    pub misses: u64,
    /// Plans evicted from the cache (destroyed now, or retired until their last lease).
    pub evictions: u64,
    /// Plans created.
    pub creations: u64,
    /// Plans destroyed.
    pub destroys: u64,
    /// Misses that waited at the ceiling.
    pub ceiling_waits: u64,
    /// Misses that gave up at the ceiling after the acquire timeout.
    pub ceiling_timeouts: u64,
    /// Plan creations the runtime refused.
    pub create_failures: u64,
    /// Plan destroys the runtime reported as failed (the slot is given back anyway).
    pub destroy_failures: u64,
    /// Executions the runtime refused.
    pub exec_failures: u64,
    /// Event creates, records or queries that failed (release then falls back to synchronizing).
    pub event_failures: u64,
    /// Times the flush hook was called before a wait at the ceiling.
    pub flush_hook_calls: u64,
    /// Runtime calls past the watchdog threshold right now.
    pub stalled: usize,
    /// Misses on a key evicted shortly before (a sign the capacity is too small).
    pub thrash_misses: u64,
    /// Thrash warnings logged.
    pub thrash_warnings: u64,
    /// 1 while the recent misses look like thrashing.
    pub thrashing: usize,
    /// Time spent in plan creation.
    pub create_latency: HistogramSnapshot,
    /// Time spent in plan destruction.
    pub destroy_latency: HistogramSnapshot,
    /// Time misses spent waiting at the ceiling.
    pub ceiling_wait_latency: HistogramSnapshot,
}
