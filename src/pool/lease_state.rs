//! The per-plan lease state: how many leases hold the plan, and whether it was evicted,
//! counted in stripes so that threads hitting one plan write lines of their own.
//!
//! This is the hand-off that decides who destroys a plan, exactly once, without a lock:
//! - a hit takes a lease on its thread's stripe while the plan is not evicted (`try_lease`);
//! - eviction marks every stripe evicted; a stripe no lease held at its marking closes
//!   there, and the release that drops a marked stripe's last lease closes it later;
//! - whoever closes the last stripe owns the plan's destroy: the evictor (`Evicted::Idle`)
//!   or that release (`Released::LastOfRetired`), which hands it to the destroyer.
//!
//! Each side is a single atomic read-modify-write on a stripe's word, so per stripe they
//! are totally ordered and exactly one of them sees the stripe both marked and unleased;
//! `open` counts the stripes not yet closed, plus one that the evictor holds until it has
//! marked them all, so it reaches zero exactly once. A stripe's word also counts its hits,
//! in the same read-modify-write that takes a hit's lease.
//!
//! Why stripes: with one word, every hit on a plan writes the same cache line, and 16
//! threads hitting the same plans spend their time moving it between cores. A lease is
//! released on the stripe that took it (`Stripe` travels with the lease), so a thread that
//! takes and releases its own leases keeps its stripe's line in its own cache.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per plan: one per core of the 16-core machines the pool is measured on; more
/// threads share them. Two under loom, enough to model a release racing the marking.
#[cfg(not(loom))]
pub(crate) const STRIPES: usize = 16;
#[cfg(loom)]
pub(crate) const STRIPES: usize = 2;

// A stripe's word: bit 63 evicted; bits 24..=62 the hits taken (`try_lease`), folded into
// `LeaseState::folded` before they reach bit 63; bits 0..24 the leases out.
const EVICTED: u64 = 1 << 63;
const COUNT: u64 = (1 << 24) - 1;
const HIT: u64 = 1 << 24;
/// The top bit of the hit field: when a hit finds it set, `2^38` hits move to `folded`.
const FOLD: u64 = 1 << 62;
const FOLDED_HITS: u64 = FOLD / HIT;

/// Which stripe of a plan's state counts a lease: the taking thread's (`Stripe::this_thread`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stripe(usize);

impl Stripe {
    /// Stripe `i` (`i < STRIPES`), for the model tests that place leases themselves.
    #[cfg(all(test, loom))]
    pub(crate) fn nth(i: usize) -> Stripe {
        assert!(i < STRIPES);
        Stripe(i)
    }

    /// The calling thread's stripe: threads are dealt stripes in turn, the first time they
    /// ask, so up to `STRIPES` threads each have one of their own.
    #[inline]
    pub(crate) fn this_thread() -> Stripe {
        #[cfg(not(loom))]
        {
            use std::cell::Cell;
            use std::sync::atomic::{AtomicUsize, Ordering};
            // Orders nothing: only the dealing matters.
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            std::thread_local! { static MINE: Cell<usize> = const { Cell::new(usize::MAX) }; }
            let s = MINE.try_with(|m| {
                if m.get() == usize::MAX {
                    m.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
                }
                m.get()
            });
            // A thread past its locals' teardown (a destructor's lease) shares stripe 0.
            Stripe(s.unwrap_or(0))
        }
        #[cfg(loom)]
        {
            // Dealt by a counter that loom resets for each execution, so the dealing is one
            // of the interleavings it explores, never state carried between them.
            loom::lazy_static! { static ref NEXT: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0); }
            loom::thread_local! { static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES; }
            Stripe(MINE.with(|m| *m))
        }
    }
}

/// One stripe's word, on a line pair of its own (adjacent-line prefetch pairs lines).
#[cfg_attr(not(loom), repr(align(128)))]
#[derive(Debug)]
struct Word(AtomicU64);

#[derive(Debug)]
pub(crate) struct LeaseState {
    stripes: [Word; STRIPES],
    /// Stripes not yet closed after eviction, plus the evictor's own hold (see the top).
    open: AtomicUsize,
    /// Hits moved out of the words (multiples of `2^38`): a statistic, ordering nothing.
    folded: crate::sync::stat::AtomicU64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Released {
    /// Other leases still hold the plan on this stripe.
    StillLeased,
    /// The plan is cached and this stripe is now idle: the plan may be idle, so waiters
    /// should look again.
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
    /// A fresh plan, held by one lease on `stripe` (the thread that made it).
    pub(crate) fn new_leased(stripe: Stripe) -> Self {
        let state = LeaseState {
            stripes: std::array::from_fn(|_| Word(AtomicU64::new(0))),
            open: AtomicUsize::new(STRIPES + evictors_hold()),
            folded: crate::sync::stat::AtomicU64::new(0),
        };
        state.word(stripe).fetch_add(1, Ordering::Relaxed);
        state
    }

    #[inline]
    fn word(&self, stripe: Stripe) -> &AtomicU64 {
        &self.stripes[stripe.0].0
    }

    /// Takes a lease on `stripe` for a hit (counted as one) unless the plan was evicted.
    #[inline]
    pub(crate) fn try_lease(&self, stripe: Stripe) -> bool {
        self.try_take(stripe, 1 + HIT)
    }

    /// Takes a lease on `stripe` for a miss that joined the plan's creation (not a hit)
    /// unless the plan was evicted.
    pub(crate) fn try_join(&self, stripe: Stripe) -> bool {
        self.try_take(stripe, 1)
    }

    #[inline]
    fn try_take(&self, stripe: Stripe, add: u64) -> bool {
        let word = self.word(stripe);
        let mut cur = word.load(Ordering::Relaxed);
        loop {
            if cur & EVICTED != 0 || cur & COUNT == COUNT {
                return false;
            }
            if cur & FOLD != 0 {
                cur = self.fold(word, cur);
                continue;
            }
            match word.compare_exchange_weak(cur, cur + add, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Moves `2^38` hits out of a word (once in `2^38` hits); returns the word as it is now.
    #[cold]
    fn fold(&self, word: &AtomicU64, cur: u64) -> u64 {
        match word.compare_exchange(cur, cur - FOLD, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                self.folded.fetch_add(FOLDED_HITS, std::sync::atomic::Ordering::Relaxed);
                cur - FOLD
            }
            Err(now) => now,
        }
    }

    /// Whether the plan was marked evicted (a hint: the first stripe is marked first).
    pub(crate) fn evicted(&self) -> bool {
        self.stripes[0].0.load(Ordering::Relaxed) & EVICTED != 0
    }

    /// Hits taken so far (a statistic: it orders nothing).
    pub(crate) fn hits(&self) -> u64 {
        let in_words: u64 =
            self.stripes.iter().map(|w| (w.0.load(Ordering::Relaxed) & !EVICTED) >> HIT.trailing_zeros()).sum();
        self.folded.load(std::sync::atomic::Ordering::Relaxed) + in_words
    }

    /// Takes one more lease on `stripe` for a holder of one there: allowed on an evicted
    /// plan too, whose stripe stays open while any lease holds it (its count is above zero
    /// throughout).
    #[inline]
    pub(crate) fn add_lease(&self, stripe: Stripe) {
        let prev = self.word(stripe).fetch_add(1, Ordering::Relaxed);
        debug_assert!(prev & COUNT != 0 && prev & COUNT != COUNT, "add_lease without a lease held");
    }

    /// Drops one lease taken on `stripe`. SeqCst pairs with the ceiling's waiter count (see
    /// `LiveCeiling`).
    #[inline]
    pub(crate) fn release(&self, stripe: Stripe) -> Released {
        let prev = self.word(stripe).fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev & COUNT != 0, "lease released more often than taken");
        if prev & COUNT != 1 {
            Released::StillLeased
        } else if prev & EVICTED == 0 {
            Released::Idle
        } else if self.close(1) {
            Released::LastOfRetired
        } else {
            // Another stripe still holds a lease: its last release hands the plan on.
            Released::StillLeased
        }
    }

    /// Closes `n` stripes; true for the caller that closed the last one. AcqRel: whoever
    /// destroys the plan sees every release made before each stripe closed.
    fn close(&self, n: usize) -> bool {
        let prev = self.open.fetch_sub(n, Ordering::AcqRel);
        debug_assert!(prev >= n, "more stripes closed than a plan has");
        prev == n
    }

    /// Marks the plan evicted (once; the caller removed it from the cache first).
    pub(crate) fn evict(&self) -> Evicted {
        let mut idle = 0;
        for w in &self.stripes {
            let prev = w.0.fetch_or(EVICTED, Ordering::AcqRel);
            debug_assert!(prev & EVICTED == 0, "plan evicted twice");
            if prev & COUNT == 0 {
                idle += 1;
            }
        }
        // The idle stripes close here, and so does the evictor's own hold: without it, with
        // every stripe leased at its marking and each lease given back before this line, the
        // releases would close them all and the evictor's `close(0)` would own the plan too.
        if self.close(idle + evictors_hold()) { Evicted::Idle } else { Evicted::Leased }
    }

    /// Leases out now. `SeqCst`: a miss registered at the ceiling reads it to decide whether
    /// to wait, against a release's `SeqCst` decrement (see `LiveCeiling::register`); per
    /// stripe that is the same pairing as with one word.
    pub(crate) fn leases(&self) -> usize {
        self.stripes.iter().map(|w| (w.0.load(Ordering::SeqCst) & COUNT) as usize).sum()
    }
}

/// The one count of `open` the evictor holds while it marks the stripes (none in the loom
/// regression that shows it is needed).
#[inline(always)]
fn evictors_hold() -> usize {
    #[cfg(all(test, loom))]
    if crate::pool::tests::regressed(crate::pool::tests::Regression::EvictorHoldsNoStripe) {
        return 0;
    }
    1
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const A: Stripe = Stripe(0);
    const B: Stripe = Stripe(STRIPES - 1);

    #[test]
    fn evicting_an_idle_plan_gives_it_to_the_evictor() {
        let s = LeaseState::new_leased(A);
        assert_eq!(s.release(A), Released::Idle);
        assert_eq!(s.evict(), Evicted::Idle);
        assert!(!s.try_lease(A) && !s.try_lease(B), "no stripe leases an evicted plan");
    }

    #[test]
    fn the_last_release_of_a_retired_plan_hands_it_on() {
        let s = LeaseState::new_leased(A);
        assert!(s.try_lease(A));
        assert_eq!(s.evict(), Evicted::Leased);
        assert!(!s.try_lease(A), "no new lease after eviction");
        assert_eq!(s.release(A), Released::StillLeased);
        assert_eq!(s.release(A), Released::LastOfRetired);
    }

    #[test]
    fn a_retired_plan_leased_on_two_stripes_is_handed_on_by_the_last_release_of_either() {
        for last in [A, B] {
            let s = LeaseState::new_leased(A);
            assert!(s.try_lease(B));
            assert_eq!(s.evict(), Evicted::Leased);
            let first = if last == A { B } else { A };
            assert_eq!(s.release(first), Released::StillLeased, "the other stripe still holds it");
            assert_eq!(s.release(last), Released::LastOfRetired);
        }
    }

    #[test]
    fn a_stripe_idle_before_the_eviction_closes_at_it() {
        let s = LeaseState::new_leased(A);
        assert!(s.try_lease(B));
        assert_eq!(s.release(B), Released::Idle, "B idle, A still leased");
        assert_eq!(s.evict(), Evicted::Leased);
        assert_eq!(s.release(A), Released::LastOfRetired);
    }

    #[test]
    fn leases_and_hits_sum_over_the_stripes() {
        let s = LeaseState::new_leased(A);
        assert!(s.try_lease(A) && s.try_lease(B));
        assert!(s.try_join(B), "a joined creation is no hit");
        s.add_lease(B);
        assert_eq!((s.hits(), s.leases()), (2, 5));
        for st in [A, A, B, B, B] {
            s.release(st);
        }
        assert_eq!((s.hits(), s.leases()), (2, 0));
        assert_eq!(s.evict(), Evicted::Idle);
        assert_eq!(s.hits(), 2, "the evicted bit is not a hit");
    }

    #[test]
    fn hits_fold_out_of_the_word_before_they_reach_the_evicted_bit() {
        let s = LeaseState::new_leased(A);
        // One hit short of the fold, with the first lease still out.
        s.word(A).fetch_add(FOLD - HIT, Ordering::Relaxed);
        assert_eq!(s.hits(), FOLDED_HITS - 1);
        assert!(s.try_lease(A));
        assert_eq!(s.hits(), FOLDED_HITS);
        assert!(s.try_lease(A), "this hit folds first");
        assert_eq!(s.word(A).load(Ordering::Relaxed) & FOLD, 0);
        assert_eq!((s.hits(), s.leases()), (FOLDED_HITS + 1, 3));
        for _ in 0..3 {
            assert_ne!(s.release(A), Released::LastOfRetired);
        }
        assert_eq!(s.evict(), Evicted::Idle, "the fold left the count whole");
    }

    #[test]
    fn a_thread_keeps_the_stripe_it_was_dealt() {
        let got: std::collections::HashSet<usize> =
            (0..STRIPES).map(|_| std::thread::spawn(|| Stripe::this_thread().0)).map(|t| t.join().unwrap()).collect();
        // Other tests deal stripes concurrently, so only the range is certain here; the
        // dealing itself is a counter modulo STRIPES.
        assert!(got.iter().all(|&s| s < STRIPES));
        assert_eq!(Stripe::this_thread(), Stripe::this_thread(), "a thread keeps its stripe");
    }
}
