//! A recency stamp for the hit path.
//!
//! Hits must not write a cache line that every thread shares, so the stamp is the CPU's
//! time-stamp counter where there is one (synchronized across cores on current x86-64
//! machines), read without a lock and without a shared write. Eviction compares stamps.

#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn stamp() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(crate) fn stamp() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static TICK: AtomicU64 = AtomicU64::new(0);
    TICK.fetch_add(1, Ordering::Relaxed)
}
