//! The per-plan state word: how many leases hold the plan, and whether it was evicted.
//!
//! This is the hand-off that decides who destroys a plan, exactly once, without a lock:
//! - a hit takes a lease only while the plan is not evicted (`try_lease`);
//! - eviction sets the evicted bit; if no lease held the plan at that instant the evictor
//!   destroys it now (`Evicted::Idle`), otherwise the plan is retired;
//! - the release that drops the last lease of a retired plan hands it to the destroyer
//!   (`Released::LastOfRetired`).
//!
//! Both sides are single atomic read-modify-writes on one word, so they are totally ordered
//! and exactly one of them sees the plan both evicted and unleased. The word also counts the
//! plan's hits, in the same read-modify-write that takes a hit's lease.

use crate::sync::{AtomicU64, Ordering};

// The word: bit 63 evicted; bits 24..=62 the hits taken (`try_lease`), folded into
// `LeaseState::folded` before they reach bit 63; bits 0..24 the leases out. Counting hits
// in the lease's own read-modify-write saves a hit the separate increment it cost before.
const EVICTED: u64 = 1 << 63;
const COUNT: u64 = (1 << 24) - 1;
const HIT: u64 = 1 << 24;
/// The top bit of the hit field: when a hit finds it set, `2^38` hits move to `folded`.
const FOLD: u64 = 1 << 62;
const FOLDED_HITS: u64 = FOLD / HIT;

#[derive(Debug)]
pub(crate) struct LeaseState {
    word: AtomicU64,
    /// Hits moved out of the word (multiples of `2^38`): a statistic, ordering nothing.
    folded: crate::sync::stat::AtomicU64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Released {
    /// Other leases still hold the plan.
    StillLeased,
    /// The plan is cached and now idle: it may be evicted, so waiters should look again.
    Idle,
    /// The plan was evicted and this was its last lease: the caller hands it to the destroyer.
    LastOfRetired,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Evicted {
    /// No lease held the plan: the evictor destroys it.
    Idle,
    /// Leases hold the plan: it is retired, and its last release hands it on.
    Leased,
}

impl LeaseState {
    /// A fresh plan, held by the lease of the thread that made it.
    pub(crate) fn new_leased() -> Self {
        LeaseState { word: AtomicU64::new(1), folded: crate::sync::stat::AtomicU64::new(0) }
    }

    /// Takes a lease for a hit (counted as one) unless the plan was evicted.
    #[inline]
    pub(crate) fn try_lease(&self) -> bool {
        self.try_take(1 + HIT)
    }

    /// Takes a lease for a miss that joined the plan's creation (not a hit) unless the plan
    /// was evicted.
    pub(crate) fn try_join(&self) -> bool {
        self.try_take(1)
    }

    #[inline]
    fn try_take(&self, add: u64) -> bool {
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            if cur & EVICTED != 0 || cur & COUNT == COUNT {
                return false;
            }
            if cur & FOLD != 0 {
                cur = self.fold(cur);
                continue;
            }
            match self.word.compare_exchange_weak(cur, cur + add, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Moves `2^38` hits out of the word (once in `2^38` hits); returns the word as it is now.
    #[cold]
    fn fold(&self, cur: u64) -> u64 {
        match self.word.compare_exchange(cur, cur - FOLD, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                self.folded.fetch_add(FOLDED_HITS, std::sync::atomic::Ordering::Relaxed);
                cur - FOLD
            }
            Err(now) => now,
        }
    }

    /// Hits taken so far (a statistic: it orders nothing).
    pub(crate) fn hits(&self) -> u64 {
        let word = self.word.load(Ordering::Relaxed);
        self.folded.load(std::sync::atomic::Ordering::Relaxed) + ((word & !EVICTED) >> HIT.trailing_zeros())
    }

    /// Takes one more lease for a holder that has one: allowed on an evicted plan too, which
    /// stays alive while any lease holds it (the count is above zero throughout).
    #[inline]
    pub(crate) fn add_lease(&self) {
        let prev = self.word.fetch_add(1, Ordering::Relaxed);
        debug_assert!(prev & COUNT != 0 && prev & COUNT != COUNT, "add_lease without a lease held");
    }

    /// Drops one lease. SeqCst pairs with the ceiling's waiter count (see `LiveCeiling`).
    #[inline]
    pub(crate) fn release(&self) -> Released {
        let prev = self.word.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev & COUNT != 0, "lease released more often than taken");
        if prev & COUNT != 1 {
            Released::StillLeased
        } else if prev & EVICTED != 0 {
            Released::LastOfRetired
        } else {
            Released::Idle
        }
    }

    /// Marks the plan evicted (once; the caller removed it from the cache first).
    pub(crate) fn evict(&self) -> Evicted {
        let prev = self.word.fetch_or(EVICTED, Ordering::AcqRel);
        debug_assert!(prev & EVICTED == 0, "plan evicted twice");
        if prev & COUNT == 0 { Evicted::Idle } else { Evicted::Leased }
    }

    /// Leases out now. `SeqCst`: a miss registered at the ceiling reads it to decide whether
    /// to wait, against a release's `SeqCst` decrement (see `LiveCeiling::register`).
    pub(crate) fn leases(&self) -> usize {
        (self.word.load(Ordering::SeqCst) & COUNT) as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn evicting_an_idle_plan_gives_it_to_the_evictor() {
        let s = LeaseState::new_leased();
        assert_eq!(s.release(), Released::Idle);
        assert_eq!(s.evict(), Evicted::Idle);
        assert!(!s.try_lease());
    }

    #[test]
    fn the_last_release_of_a_retired_plan_hands_it_on() {
        let s = LeaseState::new_leased();
        assert!(s.try_lease());
        assert_eq!(s.evict(), Evicted::Leased);
        assert!(!s.try_lease(), "no new lease after eviction");
        assert_eq!(s.release(), Released::StillLeased);
        assert_eq!(s.release(), Released::LastOfRetired);
    }

    #[test]
    fn hits_are_counted_by_the_lease_that_takes_them_only() {
        let s = LeaseState::new_leased();
        assert!(s.try_lease() && s.try_lease());
        assert!(s.try_join(), "a joined creation is no hit");
        s.add_lease();
        assert_eq!((s.hits(), s.leases()), (2, 5));
        for _ in 0..5 {
            s.release();
        }
        assert_eq!((s.hits(), s.leases()), (2, 0));
        assert_eq!(s.evict(), Evicted::Idle);
        assert_eq!(s.hits(), 2, "the evicted bit is not a hit");
    }

    #[test]
    fn hits_fold_out_of_the_word_before_they_reach_the_evicted_bit() {
        let s = LeaseState::new_leased();
        // One hit short of the fold, with the first lease still out.
        s.word.fetch_add(FOLD - HIT, Ordering::Relaxed);
        assert_eq!(s.hits(), FOLDED_HITS - 1);
        assert!(s.try_lease());
        assert_eq!(s.hits(), FOLDED_HITS);
        assert!(s.try_lease(), "this hit folds first");
        assert_eq!(s.word.load(Ordering::Relaxed) & FOLD, 0);
        assert_eq!((s.hits(), s.leases()), (FOLDED_HITS + 1, 3));
        for _ in 0..3 {
            assert_ne!(s.release(), Released::LastOfRetired);
        }
        assert_eq!(s.evict(), Evicted::Idle, "the fold left the count whole");
    }
}
