//! The panic boundary, the status enum and the thread's last error message.
//!
//! Modelled on rustls-ffi: every entry point runs its body through [`guard`] (or
//! [`guard_value`]), which catches a panic and turns it into `HFP_INTERNAL_ERROR` with a
//! message, so no panic ever unwinds into C and none aborts the process. A failure stores
//! its message in a thread-local `CString` that `hfp_last_error_message` hands out.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, panic_message};

/// The result of every `hfp_` call that can fail. `HFP_OK` is 0; any other value is a
/// failure, and `hfp_last_error_message()` then says what failed and why.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum hfp_status {
    /// Success.
    HFP_OK = 0,
    /// A null pointer, a bad configuration value, a direction that is not -1 or +1, a
    /// lease used after its release (debug checks), or similar. The message names the
    /// argument or field.
    HFP_INVALID_ARGUMENT = 1,
    /// The plan descriptor was rejected before any runtime call. The message names the
    /// field and its value (`n[1]`, `batch`, `inembed[0]`, `transform`, ...).
    HFP_INVALID_DESCRIPTOR = 2,
    /// The FFT or GPU runtime returned an error. The message names the call and the code.
    HFP_RUNTIME_ERROR = 3,
    /// A miss waited the whole acquire timeout for a free live handle. The message gives
    /// the live counts at that moment.
    HFP_CEILING_TIMEOUT = 4,
    /// The runtime that was asked for (`hip`, `cuda`) could not be loaded or has no device.
    HFP_RUNTIME_UNAVAILABLE = 5,
    /// The pool was shut down (its `hfp_pool_free` ran) and can serve nothing more.
    HFP_SHUT_DOWN = 6,
    /// A bug in hipfft-pool (a panic was caught at the boundary). The message says where.
    HFP_INTERNAL_ERROR = 7,
    /// `hfp_pool_metrics_text`: the buffer was too small. It holds a truncated,
    /// NUL-terminated prefix, and `*needed` says how many bytes to pass.
    HFP_BUFFER_TOO_SMALL = 8,
    /// A plan creation or destroy on the device has not returned for longer than the
    /// acquire timeout: misses on that device fail at once until it returns. The message
    /// names the call, the plan and how long it has been running.
    HFP_DEVICE_STUCK = 9,
    /// Every slot of the live ceiling is held by a plan that no GPU work will give back (a
    /// graph that can still run it, a plan kept for the process's life): the miss failed at
    /// once. The message says how many live plans it needs.
    HFP_CEILING_HELD = 10,
    /// The pool was made before this process forked: a forked child cannot use it. The
    /// message names both processes; make a new pool in the child.
    HFP_FORKED = 11,
}

impl hfp_status {
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            hfp_status::HFP_OK => c"HFP_OK",
            hfp_status::HFP_INVALID_ARGUMENT => c"HFP_INVALID_ARGUMENT",
            hfp_status::HFP_INVALID_DESCRIPTOR => c"HFP_INVALID_DESCRIPTOR",
            hfp_status::HFP_RUNTIME_ERROR => c"HFP_RUNTIME_ERROR",
            hfp_status::HFP_CEILING_TIMEOUT => c"HFP_CEILING_TIMEOUT",
            hfp_status::HFP_CEILING_HELD => c"HFP_CEILING_HELD",
            hfp_status::HFP_FORKED => c"HFP_FORKED",
            hfp_status::HFP_RUNTIME_UNAVAILABLE => c"HFP_RUNTIME_UNAVAILABLE",
            hfp_status::HFP_SHUT_DOWN => c"HFP_SHUT_DOWN",
            hfp_status::HFP_INTERNAL_ERROR => c"HFP_INTERNAL_ERROR",
            hfp_status::HFP_BUFFER_TOO_SMALL => c"HFP_BUFFER_TOO_SMALL",
            hfp_status::HFP_DEVICE_STUCK => c"HFP_DEVICE_STUCK",
        }
    }

    pub(crate) const ALL: [hfp_status; 12] = [
        hfp_status::HFP_OK,
        hfp_status::HFP_INVALID_ARGUMENT,
        hfp_status::HFP_INVALID_DESCRIPTOR,
        hfp_status::HFP_RUNTIME_ERROR,
        hfp_status::HFP_CEILING_TIMEOUT,
        hfp_status::HFP_RUNTIME_UNAVAILABLE,
        hfp_status::HFP_SHUT_DOWN,
        hfp_status::HFP_INTERNAL_ERROR,
        hfp_status::HFP_BUFFER_TOO_SMALL,
        hfp_status::HFP_DEVICE_STUCK,
        hfp_status::HFP_CEILING_HELD,
        hfp_status::HFP_FORKED,
    ];
}

/// A failed call: the status C sees and the message `hfp_last_error_message` returns.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: hfp_status,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(status: hfp_status, message: impl Into<String>) -> Self {
        Failure { status, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure::new(hfp_status::HFP_INVALID_ARGUMENT, message)
    }

    /// A null pointer where one is required.
    pub(crate) fn null(name: &str) -> Self {
        Failure::invalid(format!("invalid argument `{name}`: null pointer"))
    }
}

/// Every `Error` variant has its status; a new variant fails to compile here until mapped.
pub(crate) fn status_of(e: &Error) -> hfp_status {
    match e {
        Error::InvalidDesc(_) => hfp_status::HFP_INVALID_DESCRIPTOR,
        Error::InvalidArgument { .. } => hfp_status::HFP_INVALID_ARGUMENT,
        Error::InvalidConfig { .. } => hfp_status::HFP_INVALID_ARGUMENT,
        Error::Runtime { .. } => hfp_status::HFP_RUNTIME_ERROR,
        Error::CeilingTimeout { .. } => hfp_status::HFP_CEILING_TIMEOUT,
        Error::CeilingHeld { .. } => hfp_status::HFP_CEILING_HELD,
        Error::Forked { .. } => hfp_status::HFP_FORKED,
        Error::DeviceStuck { .. } => hfp_status::HFP_DEVICE_STUCK,
        Error::Unavailable(_) => hfp_status::HFP_RUNTIME_UNAVAILABLE,
        Error::ShutDown => hfp_status::HFP_SHUT_DOWN,
        Error::Internal(_) => hfp_status::HFP_INTERNAL_ERROR,
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::new(status_of(&e), e.to_string())
    }
}

impl From<crate::desc::DescError> for Failure {
    fn from(e: crate::desc::DescError) -> Self {
        Error::from(e).into()
    }
}

/// Stores `message` as this thread's last error (see [`super::last_error`]).
pub(crate) fn set_last_error(message: &str) {
    super::last_error::set(message);
}

/// This thread's last error message; "" if none. Valid until this thread's next failure.
pub(crate) fn last_error_ptr() -> *const c_char {
    super::last_error::ptr()
}

/// Writes `value` to the out-pointer `out` after checking it for null.
pub(crate) fn out_ptr<'a, T>(out: *mut *mut T, name: &str) -> Result<&'a mut *mut T, Failure> {
    if out.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises it is writable.
    let slot = unsafe { &mut *out };
    *slot = std::ptr::null_mut();
    Ok(slot)
}


/// Runs `body` behind the panic boundary and returns its value, or `fallback` after
/// storing the failure's message. `what` names the entry point, for panic messages.
pub(crate) fn guard_value<T>(what: &str, fallback: T, body: impl FnOnce() -> Result<T, Failure>) -> (T, hfp_status) {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => (v, hfp_status::HFP_OK),
        Ok(Err(f)) => {
            set_last_error(&f.message);
            (fallback, f.status)
        }
        Err(payload) => {
            let msg = format!("internal error: {what} panicked: {}", panic_message(&*payload));
            set_last_error(&msg);
            (fallback, hfp_status::HFP_INTERNAL_ERROR)
        }
    }
}

/// [`guard_value`] for the entry points that return only a status.
pub(crate) fn guard(what: &str, body: impl FnOnce() -> Result<(), Failure>) -> hfp_status {
    guard_value(what, (), body).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: the pointer is this thread's live CString.
        unsafe { CStr::from_ptr(last_error_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let st = guard("hfp_test", || panic!("boom {}", 42));
        assert_eq!(st, hfp_status::HFP_INTERNAL_ERROR);
        assert_eq!(last(), "internal error: hfp_test panicked: boom 42");
        let (v, st) = guard_value("hfp_test", 7usize, || panic!("static str"));
        assert_eq!((v, st), (7, hfp_status::HFP_INTERNAL_ERROR));
        assert!(last().ends_with("static str"));
    }

    #[test]
    fn failures_set_the_message_and_successes_keep_it() {
        assert_eq!(guard("t", || Err(Failure::null("pool"))), hfp_status::HFP_INVALID_ARGUMENT);
        assert_eq!(last(), "invalid argument `pool`: null pointer");
        assert_eq!(guard("t", || Ok(())), hfp_status::HFP_OK);
        assert_eq!(last(), "invalid argument `pool`: null pointer");
        set_last_error("a\0b");
        assert_eq!(last(), "a b");
    }

    #[test]
    fn every_error_maps_to_its_status() {
        use hfp_status::*;
        let cases = [
            (Error::from(crate::desc::DescError::RankOutOfRange { value: 0 }), HFP_INVALID_DESCRIPTOR),
            (Error::invalid_argument("x", "y"), HFP_INVALID_ARGUMENT),
            (Error::InvalidConfig { field: "capacity", value: "0".into(), reason: "r" }, HFP_INVALID_ARGUMENT),
            (Error::Runtime { call: "hipfftCreate", code: crate::error::RuntimeCode::hipfft(2) }, HFP_RUNTIME_ERROR),
            (Error::Unavailable("no".into()), HFP_RUNTIME_UNAVAILABLE),
            (Error::ShutDown, HFP_SHUT_DOWN),
            (Error::Internal("bug".into()), HFP_INTERNAL_ERROR),
        ];
        for (e, want) in cases {
            assert_eq!(status_of(&e), want, "{e}");
        }
        for s in hfp_status::ALL {
            assert!(s.name().to_str().unwrap().starts_with("HFP_"));
        }
    }
}
