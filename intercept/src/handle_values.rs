//! The values the interposer hands out as virtual handles, for a process that makes plans
//! for months.
//!
//! Values are issued in order through a fixed space and then come round again, skipping
//! the ones still live: a value is reused only after every other value of the space was
//! issued since it was (2^30 creations for cuFFT's `int` handles), so a stale copy of a
//! destroyed handle is refused (`INVALID_PLAN`, "was destroyed") for that long, and is never
//! taken for a live handle while its own plan could still be meant. The round is the
//! value's generation.

use std::sync::atomic::{AtomicU64, Ordering};

/// First cuFFT handle value: far above the small integers the real cuFFT hands out, so a
/// virtual handle that reaches the real library by mistake is refused there, never taken
/// for one of its plans. Values run from here to `i32::MAX`.
const CUFFT_BASE: u64 = 0x4000_0000;
/// First hipFFT handle value (a pointer-looking value that is never dereferenced), 16 apart.
const HIPFFT_BASE: u64 = 0x4850_0000_0000;

/// A space of handle values: `base + k * step` for `k` in `0..space`.
#[derive(Debug)]
pub(crate) struct HandleValues {
    base: u64,
    step: u64,
    space: u64,
    /// Values issued so far, all rounds (its remainder by `space` is the next `k`).
    issued: AtomicU64,
}

impl HandleValues {
    pub(crate) const fn new(base: u64, step: u64, space: u64) -> HandleValues {
        HandleValues { base, step, space, issued: AtomicU64::new(0) }
    }

    /// cuFFT's: `int` handles from `0x4000_0000` to `i32::MAX`.
    pub(crate) const fn cufft() -> HandleValues {
        HandleValues::new(CUFFT_BASE, 1, i32::MAX as u64 + 1 - CUFFT_BASE)
    }

    /// hipFFT's: pointer-sized handles, 2^40 of them 16 apart (a round takes centuries).
    pub(crate) const fn hipfft() -> HandleValues {
        HandleValues::new(HIPFFT_BASE, 16, 1 << 40)
    }

    /// The next value that `live` does not hold (`live_count` values at most), or `None` if
    /// every value of the space is live. The caller holds the lock that guards `live`.
    pub(crate) fn issue(&self, live_count: usize, live: impl Fn(u64) -> bool) -> Option<u64> {
        for _ in 0..=live_count.min(self.space as usize) {
            let k = self.issued.fetch_add(1, Ordering::Relaxed) % self.space;
            let h = self.base + k * self.step;
            if !live(h) {
                return Some(h);
            }
        }
        None
    }

    /// Whether `h` is a value of this space that was issued (and so, if not live, destroyed).
    pub(crate) fn was_issued(&self, h: u64) -> bool {
        if h < self.base || !(h - self.base).is_multiple_of(self.step) {
            return false;
        }
        let k = (h - self.base) / self.step;
        k < self.space && k < self.issued.load(Ordering::Relaxed)
    }

    /// How many values the space holds.
    pub(crate) fn space(&self) -> u64 {
        self.space
    }
}

#[cfg(test)]
mod tests {
    use super::HandleValues;
    use std::collections::{HashMap, HashSet, VecDeque};

    #[test]
    fn cufft_values_are_positive_ints_above_the_real_librarys() {
        let v = HandleValues::cufft();
        assert_eq!(v.space(), 1 << 30);
        let first = v.issue(0, |_| false).unwrap();
        assert_eq!(first, 0x4000_0000);
        let last = first + (v.space() - 1);
        assert_eq!(last, i32::MAX as u64);
    }

    /// A small space run through many rounds, as a process would over months: a value never
    /// comes back while it is live, and never sooner than a whole space of creations after it
    /// was last issued; stale values read as issued (destroyed), others as not ours.
    #[test]
    fn a_small_space_serves_rounds_without_handing_out_a_live_or_recent_value() {
        let space = 64;
        let v = HandleValues::new(1000, 16, space);
        let mut live: HashSet<u64> = HashSet::new();
        // Handles that stay live across rounds (a framework's long-lived plans).
        let mut kept: VecDeque<u64> = VecDeque::new();
        let mut last_issued_at: HashMap<u64, u64> = HashMap::new();
        for (made, i) in (0..50 * space).enumerate() {
            let made = made as u64;
            let h = v.issue(live.len(), |h| live.contains(&h)).expect("a value while the space is not full");
            assert!(live.insert(h), "value {h} handed out while live");
            assert!((h - 1000).is_multiple_of(16) && (h - 1000) / 16 < space);
            if let Some(&at) = last_issued_at.get(&h) {
                // Every value issued in between was another one.
                assert!(made - at >= space - kept.len() as u64 - 1, "value {h} back after {} creations", made - at);
            }
            last_issued_at.insert(h, made);
            if i % 7 == 0 && kept.len() < 10 {
                kept.push_back(h);
            } else {
                live.remove(&h);
                assert!(v.was_issued(h), "a destroyed value reads as ours");
            }
            if i % 97 == 0 {
                if let Some(k) = kept.pop_front() {
                    live.remove(&k);
                }
            }
        }
        assert!(!v.was_issued(999) && !v.was_issued(1001) && !v.was_issued(1000 + 16 * space));
    }

    #[test]
    fn a_full_space_issues_nothing() {
        let v = HandleValues::new(0, 1, 4);
        let mut live = HashSet::new();
        for _ in 0..4 {
            live.insert(v.issue(live.len(), |h| live.contains(&h)).unwrap());
        }
        assert_eq!(v.issue(live.len(), |h| live.contains(&h)), None);
        live.remove(&2);
        assert_eq!(v.issue(live.len(), |h| live.contains(&h)), Some(2));
    }

    #[test]
    fn values_never_issued_are_not_ours() {
        let v = HandleValues::cufft();
        assert!(!v.was_issued(0x4000_0000), "none issued yet");
        v.issue(0, |_| false);
        assert!(v.was_issued(0x4000_0000));
        assert!(!v.was_issued(0x4000_0001) && !v.was_issued(5));
    }
}
