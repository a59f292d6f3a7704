//! Synchronization primitives, swapped for loom's under `--cfg loom` so the concurrency
//! core (the lease state machine and the live ceiling) can be model-checked.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// A `SeqCst` fence under loom, nothing otherwise. The wake-up protocols here are store-buffer
/// patterns (each side writes one atomic, then reads the other's), correct because all four
/// accesses are `SeqCst`, which C11 orders totally. Loom models `SeqCst` accesses as `AcqRel`
/// only (its README: "false alarms"), but it models `SeqCst` fences fully; a fence between
/// each side's write and read gives loom the guarantee the real accesses already have.
#[inline(always)]
pub(crate) fn loom_sc_fence() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// Locks a mutex, recovering from poisoning: the pool's invariants live in atomics and
/// in code that does not panic, so a poisoned guard still holds consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
