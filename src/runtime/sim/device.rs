//! The calling thread's current device, as `hipSetDevice` keeps it: per thread, default 0.
//! Keyed by runtime instance, so two sims in one test process do not share it.

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    static CURRENT: RefCell<HashMap<u64, i32>> = RefCell::new(HashMap::new());
}

/// The current device of runtime `runtime` on this thread.
pub(crate) fn current(runtime: u64) -> i32 {
    CURRENT.try_with(|c| c.borrow().get(&runtime).copied().unwrap_or(0)).unwrap_or(0)
}

/// Makes `device` current for runtime `runtime` on this thread (range checked by the caller).
pub(crate) fn set(runtime: u64, device: i32) {
    let _ = CURRENT.try_with(|c| c.borrow_mut().insert(runtime, device));
}
