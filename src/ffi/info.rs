//! What the library says about itself and about the last failure: the thread's last error
//! message, status names, whether debug checks are on, the version.

use std::ffi::{c_char, c_int};

use super::boundary::{guard_value, hfp_status, last_error_ptr};
use super::lease::debug_checks;

/// This thread's message for its last failed `hfp_` call; "" if none has failed. A success
/// does not clear it.
///
/// Returns: borrowed, NUL-terminated, owned by the library; valid until the next `hfp_`
/// call on this thread. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_last_error_message() -> *const c_char {
    std::panic::catch_unwind(last_error_ptr).unwrap_or(c"".as_ptr())
}

/// The enumerator's name ("HFP_CEILING_TIMEOUT"), or "HFP_UNKNOWN_STATUS" for a value that
/// is not an `hfp_status`.
///
/// Returns: a static string; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_status_name(status: c_int) -> *const c_char {
    hfp_status::ALL
        .into_iter()
        .find(|s| *s as c_int == status)
        .map_or(c"HFP_UNKNOWN_STATUS".as_ptr(), |s| s.name().as_ptr())
}

/// 1 when this library checks lease pointers (a double release or a use after release
/// returns `HFP_INVALID_ARGUMENT` instead of being undefined behaviour): always in debug
/// builds, and in release builds when `HIPFFT_POOL_DEBUG_CHECKS=1` is in the environment
/// the first time the library consults it (its first lease call, or this function).
/// 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_debug_checks_enabled() -> c_int {
    guard_value("hfp_debug_checks_enabled", 0, || Ok(debug_checks() as c_int)).0
}

/// The library's version ("0.1.0").
///
/// Returns: a static string; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
