//! Processes that fork: which pools belong to this process, and the global locks a child must
//! not inherit held.
//!
//! A child of `fork()` has one thread, a copy of the one that forked. A pool made before the
//! fork is not the child's: its destroyer, completion, creation and watchdog threads stayed
//! with the parent, any of its locks may have been held by one of them at the moment of the
//! fork, and its plans belong to the parent's GPU context. So every pool remembers the fork
//! *generation* it was made in ([`generation`]: 0 in a process that never forked, one more in
//! each child); a pool of an earlier generation refuses every call with
//! [`Error::Forked`](crate::Error::Forked) and is left as it is when dropped (no thread is
//! joined, no plan destroyed, nothing written). What a child makes after the fork is its own
//! and works as anywhere (on CUDA, only as far as CUDA's own rule allows: a process that forked
//! after initializing CUDA cannot use it).
//!
//! The few process-wide structures a child's new pools share with nothing of the parent
//! (the ceiling waiters' registry, the per-device ceilings) are locked around the fork
//! (`pthread_atfork`), so the child never inherits one of their locks held.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The fork generation of this process: 0 in a process that never forked, its parent's plus
/// one in a child of `fork()`.
///
/// ```
/// assert_eq!(hipfft_pool::fork_generation(), 0, "this test process never forked");
/// ```
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Guards a locker took before a fork, released after it on both sides.
pub type Guard = Box<dyn Any>;

thread_local! {
    /// The guards `prepare` took (the forking thread's; the child's one thread is its copy).
    static HELD: RefCell<Vec<Guard>> = const { RefCell::new(Vec::new()) };
}

/// Functions that lock one process-wide structure and return the guard (`lock_around_fork`),
/// as addresses: a fixed table, so that registering and forking take no lock.
static LOCKERS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// Has `locker` (which locks one process-wide structure and returns its guard) called before
/// every fork, and its guard dropped after it in both processes, so that a child never
/// inherits that lock held. Idempotent; at most eight lockers in a process.
///
/// ```
/// static STATE: std::sync::Mutex<u32> = std::sync::Mutex::new(0);
/// hipfft_pool::lock_around_fork(|| Box::new(STATE.lock().unwrap()));
/// ```
pub fn lock_around_fork(locker: fn() -> Guard) {
    install();
    let f = locker as usize;
    for slot in &LOCKERS {
        match slot.compare_exchange(0, f, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(existing) if existing == f => return,
            Err(_) => {}
        }
    }
    debug_assert!(false, "more fork lockers than slots");
}

unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

unsafe extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let guards: Vec<Guard> = LOCKERS
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .filter(|f| *f != 0)
            // SAFETY: only `lock_around_fork` writes the slots, with `fn() -> Guard` addresses.
            .map(|f| unsafe { std::mem::transmute::<usize, fn() -> Guard>(f) }())
            .collect();
        let _ = HELD.try_with(|h| h.borrow_mut().extend(guards));
    });
}

unsafe extern "C" fn parent() {
    let _ = std::panic::catch_unwind(|| {
        let _ = HELD.try_with(|h| h.borrow_mut().clear());
    });
}

unsafe extern "C" fn child() {
    // Only an atomic and the guards' own unlocks: the child may call little until it execs.
    GENERATION.fetch_add(1, Ordering::Relaxed);
    let _ = std::panic::catch_unwind(|| {
        let _ = HELD.try_with(|h| h.borrow_mut().clear());
    });
}

/// Registers the fork handlers (once per process; a child inherits them). Making a pool
/// does it; the preloadable libraries do it when loaded, so that a child forked before the
/// first call is known as one ([`generation`]).
///
/// ```
/// hipfft_pool::track_forks();
/// assert_eq!(hipfft_pool::fork_generation(), 0);
/// ```
pub fn install() {
    static ONCE: Once = Once::new();
    // They never unwind (each catches).
    ONCE.call_once(|| atfork(Some(prepare), Some(parent), Some(child)));
}

/// `pthread_atfork`, declared once for the crate: registers handlers run before a fork (in
/// the parent), after it in the parent, and after it in the child.
pub(crate) fn atfork(
    prepare: Option<unsafe extern "C" fn()>,
    parent: Option<unsafe extern "C" fn()>,
    child: Option<unsafe extern "C" fn()>,
) {
    // SAFETY: plain functions of the C signature pthread_atfork takes; the callers' handlers
    // do not unwind.
    unsafe { pthread_atfork(prepare, parent, child) };
}
