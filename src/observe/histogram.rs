//! A fixed-bucket latency histogram, lock-free, for creation, destroy and ceiling waits.

use std::time::Duration;

use crate::sync::Ordering;
use crate::sync::stat::AtomicU64;

/// Upper bounds of the buckets, in seconds (Prometheus `le` values), from 10 us to 100 s.
pub const BUCKETS_S: [f64; 16] =
    [1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, f64::INFINITY];

#[derive(Debug, Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; 16],
    sum_ns: AtomicU64,
}

/// A histogram at one moment: counts per bucket (not cumulative), sum and count.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct HistogramSnapshot {
    /// Observations per bucket of [`BUCKETS_S`], not cumulative; the last counts the rest.
    pub counts: Vec<u64>,
    /// Sum of the observations, in seconds.
    pub sum_s: f64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    pub(crate) fn record(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS_S.iter().position(|b| s <= *b).unwrap_or(BUCKETS_S.len() - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        HistogramSnapshot {
            count: counts.iter().sum(),
            counts,
            sum_s: self.sum_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }
}

impl HistogramSnapshot {
    /// Adds another snapshot's counts (for process-wide totals over devices).
    pub fn merge(&mut self, o: &HistogramSnapshot) {
        if self.counts.is_empty() {
            self.counts = vec![0; o.counts.len()];
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.sum_s += o.sum_s;
        self.count += o.count;
    }
}
