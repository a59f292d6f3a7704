//! Which idle plan a miss evicts: the least recently used ([`Eviction::Lru`]), or the one
//! that is cheapest to make again weighed by its reuse ([`Eviction::Cost`]).
//!
//! `Cost` is GreedyDual-Size-Frequency (Cherkasova, 1998) with every plan of size one (a plan
//! is one live handle whatever its work area): a plan's priority is `L + f * c`, where `c` is
//! its measured creation time, `f` its uses (hits plus creations, remembered across evictions
//! by a ghost list), and `L` the inflation: the priority of the last plan evicted, as it was
//! when this plan was last used. The victim is the idle plan of lowest priority, so a plan
//! that is expensive to rebuild and reused stays, while one not used for a long time ages
//! out as `L` rises past it. Ghost entries keep the use count of evicted keys (four times the
//! capacity of them, at least 64), so a key that comes back is known as reused.
//!
//! Hits never take a lock: they stamp the plan and count a hit (`PlanEntry::last_used`,
//! `hits`); the slow path brings the stamped plans' `L` up to date (`Cache::sync_recency`)
//! before it picks a victim, as it replays the stamps into the LRU list.

use lru::LruCache;
use rustc_hash::FxBuildHasher;

use crate::desc::PlanDesc;

/// Which idle plan a miss evicts (`HIPFFT_POOL_EVICTION=lru|cost`).
///
/// # Examples
///
/// ```
/// use hipfft_pool::Eviction;
/// assert_eq!(Eviction::parse("COST"), Some(Eviction::Cost));
/// assert_eq!(Eviction::default().name(), "cost");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Eviction {
    /// The least recently used idle plan.
    Lru,
    /// GreedyDual-Size-Frequency over measured creation times, with ghost entries: the
    /// default, since on every trace measured (`examples/eviction_trace.rs`, docs/warmup.md)
    /// it spent no more creation time than LRU, and up to 60% less.
    #[default]
    Cost,
}

impl Eviction {
    /// From its name, any case: `lru` or `cost`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::Eviction;
    /// assert_eq!(Eviction::parse("lru"), Some(Eviction::Lru));
    /// assert_eq!(Eviction::parse("lfu"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Eviction> {
        match s.to_ascii_lowercase().as_str() {
            "lru" => Some(Eviction::Lru),
            "cost" => Some(Eviction::Cost),
            _ => None,
        }
    }

    /// Its name, as `parse` reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::Eviction;
    /// assert_eq!(Eviction::Cost.name(), "cost");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Eviction::Lru => "lru",
            Eviction::Cost => "cost",
        }
    }
}

/// The state GreedyDual-Size-Frequency keeps besides the plans: the inflation and the ghosts.
pub(crate) struct CostState {
    inflation: f64,
    ghosts: LruCache<PlanDesc, u64, FxBuildHasher>,
    ghost_limit: usize,
}

impl CostState {
    pub(crate) fn new(capacity: usize) -> CostState {
        CostState { inflation: 0.0, ghosts: LruCache::unbounded_with_hasher(FxBuildHasher), ghost_limit: ghost_limit(capacity) }
    }

    /// The inflation `L`: the priority of the last plan evicted.
    pub(crate) fn inflation(&self) -> f64 {
        self.inflation
    }

    /// A plan's priority: `base + uses * cost`, `base` being `L` when it was last used.
    pub(crate) fn priority(base: f64, uses: u64, cost_us: f64) -> f64 {
        // A creation measured as 0 (a clock tick) still weighs its uses.
        base + uses as f64 * cost_us.max(1e-3)
    }

    /// A plan was made for `key`: the uses it had before it was evicted, if a ghost
    /// remembers them.
    pub(crate) fn admitted(&mut self, key: &PlanDesc) -> u64 {
        self.ghosts.pop(key).unwrap_or(0)
    }

    /// A plan of priority `priority` and `uses` uses was evicted.
    pub(crate) fn evicted(&mut self, key: PlanDesc, priority: f64, uses: u64) {
        self.inflation = self.inflation.max(priority);
        self.ghosts.put(key, uses);
        while self.ghosts.len() > self.ghost_limit {
            self.ghosts.pop_lru();
        }
    }

    /// The capacity changed: so does the number of ghosts kept.
    pub(crate) fn resize(&mut self, capacity: usize) {
        self.ghost_limit = ghost_limit(capacity);
        while self.ghosts.len() > self.ghost_limit {
            self.ghosts.pop_lru();
        }
    }

    #[cfg(test)]
    pub(crate) fn ghosts(&self) -> usize {
        self.ghosts.len()
    }
}

fn ghost_limit(capacity: usize) -> usize {
    capacity.saturating_mul(4).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TransformType;

    #[test]
    fn the_inflation_is_the_last_victims_priority_and_ghosts_remember_uses() {
        let mut s = CostState::new(1);
        let a = PlanDesc::new(TransformType::C2C, &[8], 1);
        assert_eq!(s.admitted(&a), 0);
        let p = CostState::priority(s.inflation(), 3, 100.0);
        assert_eq!(p, 300.0);
        s.evicted(a, p, 3);
        assert_eq!(s.inflation(), 300.0);
        assert_eq!(s.admitted(&a), 3, "the ghost keeps the uses of the evicted key");
        assert_eq!(s.admitted(&a), 0, "and is consumed");
    }

    #[test]
    fn ghosts_are_bounded() {
        let mut s = CostState::new(2);
        for n in 1..200 {
            s.evicted(PlanDesc::new(TransformType::C2C, &[n], 1), 1.0, 1);
        }
        assert_eq!(s.ghosts(), 64);
        s.resize(100);
        for n in 200..700 {
            s.evicted(PlanDesc::new(TransformType::C2C, &[n], 1), 1.0, 1);
        }
        assert_eq!(s.ghosts(), 400);
    }
}
