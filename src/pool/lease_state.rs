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
//! and exactly one of them sees the plan both evicted and unleased.

use crate::sync::{AtomicUsize, Ordering};

const EVICTED: usize = 1 << (usize::BITS - 1);
const COUNT: usize = EVICTED - 1;

#[derive(Debug)]
pub(crate) struct LeaseState(AtomicUsize);

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
        LeaseState(AtomicUsize::new(1))
    }

    /// Takes a lease unless the plan was evicted.
    #[inline]
    pub(crate) fn try_lease(&self) -> bool {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            if cur & EVICTED != 0 || cur & COUNT == COUNT {
                return false;
            }
            match self.0.compare_exchange_weak(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Takes one more lease for a holder that has one: allowed on an evicted plan too, which
    /// stays alive while any lease holds it (the count is above zero throughout).
    #[inline]
    pub(crate) fn add_lease(&self) {
        let prev = self.0.fetch_add(1, Ordering::Relaxed);
        debug_assert!(prev & COUNT != 0 && prev & COUNT != COUNT, "add_lease without a lease held");
    }

    /// Drops one lease. SeqCst pairs with the ceiling's waiter count (see `LiveCeiling`).
    #[inline]
    pub(crate) fn release(&self) -> Released {
        let prev = self.0.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev & COUNT != 0, "lease released more often than taken");
        if prev == EVICTED | 1 {
            Released::LastOfRetired
        } else if prev == 1 {
            Released::Idle
        } else {
            Released::StillLeased
        }
    }

    /// Marks the plan evicted (once; the caller removed it from the cache first).
    pub(crate) fn evict(&self) -> Evicted {
        let prev = self.0.fetch_or(EVICTED, Ordering::AcqRel);
        debug_assert!(prev & EVICTED == 0, "plan evicted twice");
        if prev & COUNT == 0 { Evicted::Idle } else { Evicted::Leased }
    }

    /// Leases out now. `SeqCst`: a miss registered at the ceiling reads it to decide whether
    /// to wait, against a release's `SeqCst` decrement (see `LiveCeiling::register`).
    pub(crate) fn leases(&self) -> usize {
        self.0.load(Ordering::SeqCst) & COUNT
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
}
