//! The recency clock of one pool.
//!
//! Hits must not write a cache line that every thread shares, so the clock is advanced only
//! on the slow path (each miss, before it looks at the LRU order) and a hit merely copies
//! its current value into the plan it leased: a relaxed load of a line that stays shared.
//! Hits between two misses therefore tie; the slow path replays the stamps into the LRU list
//! (stable for ties), so a plan hit since the last miss always ranks above one that was not,
//! which is what picking an eviction victim needs. (A time-stamp counter would order every
//! hit, but `rdtsc` costs more than the rest of the hit together in a virtual machine.)

use crate::sync::Ordering;
use crate::sync::stat::AtomicU64;

#[derive(Debug, Default)]
pub(crate) struct Recency(AtomicU64);

impl Recency {
    /// The stamp a hit records.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Starts a new period; returns its stamp. Slow path only.
    pub(crate) fn advance(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}
