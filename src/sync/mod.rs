//! Synchronization for the pool, swapped for loom's under `--cfg loom`, so that the real
//! pool, lease and ceiling code (not a copy of it) is what loom model-checks.
//!
//! Everything the pool's concurrency uses comes from here; under `--cfg loom` each piece is
//! backed by loom's primitives, otherwise by the crates the pool has always used, re-exported
//! unchanged, so the normal build pays nothing for the shim:
//!
//! - this file: atomics, `Mutex`/`Condvar` (std's, with poisoning recovered by [`lock`]),
//!   and the `SeqCst` fence loom needs for the store-buffer wake-ups ([`loom_sc_fence`]);
//! - `parking`: the `Mutex` and `RwLock` with parking_lot's API (no poisoning, guards
//!   straight from `lock()`/`read()`/`write()`); parking_lot itself outside loom;
//! - `channel`: the multi-producer multi-consumer channel of the destroyer and completion
//!   queues; crossbeam-channel outside loom, a `Mutex` + `Condvar` queue under it (loom's
//!   `mpsc` has one receiver and no disconnect on drop, which the pool relies on);
//! - `thread`: spawning the pool's own threads (destroyer, completion) as loom threads, and
//!   the pause of a polling loop (a `yield_now` under loom, where time does not pass);
//! - `stat`: std atomics in every build, for counts that order nothing (see there);
//! - `map`: the cache's concurrent map; dashmap outside loom, one `Mutex<HashMap>` behind
//!   the same small API under it. Loom then checks the pool's use of the map (a hit holds
//!   the entry's guard across its `try_lease`), not dashmap's internal sharding.
//!
//! - `fork`: which pools belong to this process after a `fork()`, and the global locks a child
//!   must not inherit held (`pthread_atfork`).
//!
//! Model tests sit next to the code they check, in `pool/tests/loom_*.rs`.

pub(crate) mod channel;
pub(crate) mod fork;
pub(crate) mod map;
pub(crate) mod parking;
pub(crate) mod thread;
pub mod thread_end;

/// Atomics for statistics and recency stamps (counters, histograms, hit counts): std's in
/// every build. They order nothing the pool relies on, so loom need not explore them, and
/// loom's bounded store history fails on counters bumped this often (tokio-rs/loom#252).
/// Loom runs one model thread at a time, so they still read consistently under it.
pub(crate) mod stat {
    pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize};
}

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
