//! Process-wide facts and counts of the interposer that every other file may read: which
//! library API this process loaded (`Flavor`), whether it runs on the simulated runtime,
//! and the counters the metrics report. A leaf: it imports nothing of this crate but
//! `codes`, so the files below the engine (capture, entry, real) need not reach up to it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::codes::Flavor;

static FLAVOR: OnceLock<Flavor> = OnceLock::new();
static FAILURES: AtomicU64 = AtomicU64::new(0);

/// The flavor of the library this process loaded, once any call was made.
pub fn flavor() -> Option<Flavor> {
    FLAVOR.get().copied()
}

/// Records the flavor of the first call (later calls keep it: one API per process).
pub(crate) fn set_flavor(flavor: Flavor) {
    let _ = FLAVOR.set(flavor);
}

/// Whether the interposer runs on the simulated runtime (`HIPFFT_POOL_RUNTIME=sim`).
pub fn is_sim() -> bool {
    static SIM: OnceLock<bool> = OnceLock::new();
    *SIM.get_or_init(|| std::env::var("HIPFFT_POOL_RUNTIME").is_ok_and(|v| v.trim() == "sim"))
}

/// A call failed with the library's error code.
pub(crate) fn count_failure() {
    FAILURES.fetch_add(1, Ordering::Relaxed);
}

/// Calls that failed with the library's error code so far.
pub(crate) fn failures() -> u64 {
    FAILURES.load(Ordering::Relaxed)
}
