//! Every-K-th fault injection: one counter per kind of call, reset when the settings change,
//! so a test knows exactly which call fails.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts calls of one kind; the K-th, 2K-th, ... hit.
#[derive(Default)]
pub(crate) struct EveryKth(AtomicU64);

impl EveryKth {
    /// Counts this call and says whether it is to fail. Uncounted while the fault is off.
    pub(crate) fn hit(&self, every: Option<u64>) -> bool {
        let Some(k) = every.filter(|k| *k > 0) else { return false };
        let n = self.0.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        n.is_multiple_of(k)
    }

    fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// The counters of every injectable fault.
#[derive(Default)]
pub(crate) struct Faults {
    pub create: EveryKth,
    pub exec: EveryKth,
    pub destroy: EveryKth,
    pub event: EveryKth,
    pub malloc: EveryKth,
    pub panic_create: EveryKth,
}

impl Faults {
    pub(crate) fn reset(&self) {
        for c in [&self.create, &self.exec, &self.destroy, &self.event, &self.malloc, &self.panic_create] {
            c.reset();
        }
    }
}
