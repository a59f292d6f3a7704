//! The calling thread's last failure message, as C reads it: shared by the C ABI
//! (`hfp_last_error_message`) and the interposers (`hfp_intercept_last_error`).
//!
//! The message lives in a thread-local of no drop glue and is freed when its thread ends
//! ([`ThreadEnd`](crate::ThreadEnd)), never by `exit()`: a process that calls `exit()` from
//! a signal handler which interrupted the allocator must not free on the way out.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_void};
use std::mem::ManuallyDrop;

use crate::ThreadEnd;

thread_local! {
    static LAST: RefCell<ManuallyDrop<Option<CString>>> = const { RefCell::new(ManuallyDrop::new(None)) };
}

unsafe extern "C" fn free_last(_: *mut c_void) {
    let _ = LAST.try_with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            // SAFETY: taken out and dropped once; the slot is left empty.
            drop(unsafe { ManuallyDrop::take(&mut *s) });
        }
    });
}

static FREE_LAST: ThreadEnd = ThreadEnd::new(free_last);

/// Stores `message` as this thread's last failure (interior NULs become spaces).
///
/// ```
/// hipfft_pool::ffi::last_error::set("plan 7: not found");
/// let c = unsafe { std::ffi::CStr::from_ptr(hipfft_pool::ffi::last_error::ptr()) };
/// assert_eq!(c.to_str().unwrap(), "plan 7: not found");
/// ```
pub fn set(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the message is then dropped.
    let _ = LAST.try_with(|slot| {
        let Ok(mut s) = slot.try_borrow_mut() else { return };
        let old = (**s).replace(c);
        drop(s);
        drop(old);
        FREE_LAST.arm();
    });
}

/// This thread's last failure message, "" if none; valid until this thread's next failure.
///
/// ```
/// std::thread::spawn(|| {
///     let c = unsafe { std::ffi::CStr::from_ptr(hipfft_pool::ffi::last_error::ptr()) };
///     assert_eq!(c.to_bytes(), b"", "a new thread has none");
/// })
/// .join()
/// .unwrap();
/// ```
pub fn ptr() -> *const c_char {
    LAST.try_with(|slot| slot.try_borrow().ok().and_then(|s| s.as_ref().map(|c| c.as_ptr())))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}
