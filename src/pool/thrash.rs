//! Thrash detection: the warning that the working set is larger than the cache.

use std::time::{Duration, Instant};

use lru::LruCache;
use rustc_hash::FxBuildHasher;

use crate::desc::PlanDesc;
use crate::observe::counters::Counters;
use crate::sync::Ordering;

/// Tells a thrashing cache from a cold one: a thrashing cache keeps re-creating plans it
/// evicted moments ago. Recently evicted keys are remembered (a ghost list four times the
/// capacity); when at least half of the last `2 * capacity` misses hit a ghost, the pool
/// warns, at most once a minute, and never fails for it.
pub(crate) struct ThrashDetector {
    ghosts: LruCache<PlanDesc, (), FxBuildHasher>,
    window: std::collections::VecDeque<bool>,
    last_warning: Option<Instant>,
}

impl ThrashDetector {
    pub(crate) fn new() -> Self {
        ThrashDetector { ghosts: LruCache::unbounded_with_hasher(FxBuildHasher), window: Default::default(), last_warning: None }
    }

    pub(crate) fn evicted(&mut self, key: PlanDesc, capacity: usize) {
        self.ghosts.put(key, ());
        // Long enough to recognise a cycle a few times the capacity (26 shapes at 8, say).
        while self.ghosts.len() > capacity.saturating_mul(4).max(64) {
            self.ghosts.pop_lru();
        }
    }

    /// Records a miss; returns the warning to log, if one is due.
    pub(crate) fn missed(&mut self, key: &PlanDesc, capacity: usize, ceiling: usize, c: &Counters) -> Option<String> {
        let ghost = self.ghosts.pop(key).is_some();
        if ghost {
            Counters::bump(&c.thrash_misses);
        }
        let window = capacity.saturating_mul(2).max(16);
        self.window.push_back(ghost);
        while self.window.len() > window {
            self.window.pop_front();
        }
        let recent = self.window.iter().filter(|g| **g).count();
        let thrashing = self.window.len() == window && 2 * recent >= window;
        c.thrashing.store(thrashing as usize, Ordering::Relaxed);
        if !thrashing || self.last_warning.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
            return None;
        }
        self.last_warning = Some(Instant::now());
        Counters::bump(&c.thrash_warnings);
        Some(format!(
            "plan cache thrashing: {recent} of the last {window} misses re-created plans evicted moments earlier; the working set is larger than the capacity {capacity}: raise HIPFFT_POOL_CAPACITY (and HIPFFT_POOL_LIVE_CEILING, now {ceiling})"
        ))
    }
}

