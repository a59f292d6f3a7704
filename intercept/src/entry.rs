//! Every exported function runs through here: the re-entrancy guard, the panic boundary, the
//! thread's last message, and the one-time log of each failure.
//!
//! Re-entrancy: while a thread is inside the interposer (serving a call, or inside the real
//! library on the pool's behalf), any exported name it reaches again goes straight to the real
//! library's function of that name. That is what happens when the real cuFFT calls its own
//! exported entry points through the PLT (`cufftPlan1d` calling `cufftCreate`, say): under
//! `LD_PRELOAD` those calls would land here, and serving them from the pool would recurse.
//!
//! The panic boundary follows rustls-ffi: a panic becomes `INTERNAL_ERROR` with a message,
//! never an unwind across the C boundary.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::{c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::codes::{Fail, Flavor, code};

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread as inside the interposer until dropped (restoring what it was).
pub struct Inside {
    was: bool,
}

impl Inside {
    #[inline(always)]
    pub fn enter() -> Inside {
        let was = INSIDE.try_with(|c| c.replace(true)).unwrap_or(true);
        Inside { was }
    }
}

impl Drop for Inside {
    #[inline(always)]
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|c| c.set(self.was));
    }
}

/// Whether this thread is inside the interposer already.
#[inline(always)]
pub fn inside() -> bool {
    // During thread teardown the slot may be gone: treat that as inside, so the call is
    // forwarded rather than served by a half-torn-down thread.
    INSIDE.try_with(Cell::get).unwrap_or(true)
}

/// Where an exported call goes.
pub enum Route {
    /// Serve it from the pool.
    Serve,
    /// A re-entrant call: call the real function at this address.
    Forward(usize),
    /// A re-entrant call with no real library to forward to: return this code.
    Refuse(c_int),
}

/// Decides the route of the exported function `name`; `cache` keeps its real address.
///
/// Inlined into every export, as [`serve`] is, with the re-entrant case out of line: an
/// export's own code is then one function, which the hot ones keep in the hot text section
/// (see [`serve`]).
#[inline(always)]
pub fn reentry(flavor: Flavor, name: &'static str, cache: &OnceLock<usize>) -> Route {
    if !inside() {
        return Route::Serve;
    }
    reentered(flavor, name, cache)
}

#[cold]
#[inline(never)]
fn reentered(flavor: Flavor, name: &'static str, cache: &OnceLock<usize>) -> Route {
    let addr = *cache.get_or_init(|| crate::real::symbol(flavor, name).unwrap_or(0));
    if addr != 0 {
        Route::Forward(addr)
    } else {
        let f = Fail::new(
            code::INTERNAL_ERROR,
            format!("{name} was called from inside the interposer and no real {} library is loaded to serve it", flavor.library()),
        );
        report(flavor, name, &f);
        Route::Refuse(f.code)
    }
}

/// Runs `body` for the exported function `name` behind the panic boundary and returns the
/// library's result code. A failure is stored as the thread's last message and logged once.
///
/// Inlined into the export, with the failures out of line. A framework calls the
/// per-transform exports (set-stream, set-work-area, the execs) between long stretches of
/// its own work, which evict the interposer's code from the caches and the TLB: each page of
/// code such a call runs is then a miss. So the hot exports and what they call on a resident
/// plan are placed in one text section, `.text.hot.hipfft_pool` (the linker puts `.text.hot*`
/// together), and their own code is one function each. Under MLX this measured no change
/// (1.001x, docs/design.md): kept as the hot path's layout, not as a speed-up.
#[inline(always)]
pub fn serve(flavor: Flavor, name: &'static str, body: impl FnOnce() -> Result<(), Fail>) -> c_int {
    let _timed = crate::profile::Call::start(name);
    let _inside = Inside::enter();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => code::SUCCESS,
        Ok(Err(f)) => failed(flavor, name, f),
        Err(payload) => panicked(flavor, name, payload),
    }
}

#[cold]
#[inline(never)]
fn failed(flavor: Flavor, name: &'static str, f: Fail) -> c_int {
    report(flavor, name, &f);
    f.code
}

#[cold]
#[inline(never)]
fn panicked(flavor: Flavor, name: &'static str, payload: Box<dyn Any + Send>) -> c_int {
    let f = Fail::new(code::INTERNAL_ERROR, format!("internal error: {name} panicked: {}", panic_message(&*payload)));
    report(flavor, name, &f);
    f.code
}

/// [`serve`] for the `hfp_intercept_*` calls, which return 0 or -1 (never a library code).
pub fn serve_plain(name: &'static str, body: impl FnOnce() -> Result<(), Fail>) -> c_int {
    let flavor = crate::process::flavor().unwrap_or(Flavor::Cufft);
    match serve(flavor, name, body) {
        0 => 0,
        _ => -1,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic with a non-string payload)".to_string()
    }
}

/// The most distinct failures logged to stderr; later ones are only counted.
const MAX_LOGGED: usize = 256;

/// Stores the failure as the thread's last message, counts it, and logs it: through
/// `tracing` when the host installed a subscriber, else once per distinct message to stderr.
pub fn report(flavor: Flavor, call: &str, f: &Fail) {
    let line = format!("{call} returned {} ({}): {}", flavor.code_name(f.code), f.code, f.message);
    set_last_message(&line);
    crate::process::count_failure();
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(target: "hipfft_pool::intercept", "{line}");
        return;
    }
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut seen = SEEN.lock();
    let seen = seen.get_or_insert_with(HashSet::new);
    if seen.len() < MAX_LOGGED && seen.insert(line.clone()) {
        eprintln!("hipfft-pool interposer: {line}");
    }
}

fn set_last_message(message: &str) {
    hipfft_pool::ffi::last_error::set(message);
}

/// This thread's last failure message ("" if none), valid until its next failure.
pub fn last_message_ptr() -> *const c_char {
    hipfft_pool::ffi::last_error::ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: the pointer is this thread's live CString.
        unsafe { std::ffi::CStr::from_ptr(last_message_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_error_and_the_guard_is_restored() {
        assert!(!inside());
        let c = serve(Flavor::Cufft, "cufftTest", || panic!("boom {}", 7));
        assert_eq!(c, code::INTERNAL_ERROR);
        assert!(last().contains("cufftTest panicked: boom 7"), "{}", last());
        assert!(!inside(), "the guard is dropped even after a panic");
    }

    #[test]
    fn a_failure_keeps_its_code_and_names_it() {
        let c = serve(Flavor::Hipfft, "hipfftTest", || Err(Fail::invalid("nx", "0")));
        assert_eq!(c, code::INVALID_VALUE);
        assert_eq!(last(), "hipfftTest returned HIPFFT_INVALID_VALUE (4): invalid argument `nx`: 0");
    }

    #[test]
    fn inside_the_interposer_a_call_is_never_served_again() {
        let _g = Inside::enter();
        let cache = OnceLock::new();
        // No real library in unit tests: the nested call is refused, not served.
        assert!(matches!(reentry(Flavor::Cufft, "cufftCreate", &cache), Route::Refuse(code::INTERNAL_ERROR)));
    }
}
