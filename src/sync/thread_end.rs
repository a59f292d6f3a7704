//! Per-thread state freed when its thread ends, and never by `exit()`.
//!
//! A `thread_local!` whose value needs dropping is destroyed by glibc's `exit()` too, on the
//! exiting thread, before the `atexit` handlers run. When that thread called `exit()` from a
//! signal handler that interrupted the allocator, the destructor's `free` waits for an
//! allocator lock the same thread holds, for ever. State that holds memory is therefore kept
//! in a thread-local of no drop glue (`ManuallyDrop`), and freed by a `pthread_key_create`
//! destructor, which runs when a thread ends and not at `exit()` (the operating system takes
//! the memory back then).

use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;

#[allow(non_camel_case_types)]
type pthread_key_t = c_uint;

unsafe extern "C" {
    fn pthread_key_create(key: *mut pthread_key_t, destructor: Option<unsafe extern "C" fn(*mut c_void)>) -> c_int;
    fn pthread_setspecific(key: pthread_key_t, value: *const c_void) -> c_int;
}

/// A cleanup run when a thread that armed it ends (not at `exit()`).
///
/// ```
/// use std::cell::Cell;
/// use hipfft_pool::ThreadEnd;
///
/// thread_local! { static MINE: Cell<usize> = const { Cell::new(0) }; }
/// unsafe extern "C" fn clear(_: *mut std::ffi::c_void) {
///     let _ = MINE.try_with(|m| m.set(0));
/// }
/// static CLEAR: ThreadEnd = ThreadEnd::new(clear);
/// std::thread::spawn(|| {
///     MINE.with(|m| m.set(7));
///     CLEAR.arm(); // `clear` runs as this thread ends
/// })
/// .join()
/// .unwrap();
/// ```
pub struct ThreadEnd {
    run: unsafe extern "C" fn(*mut c_void),
    key: OnceLock<Option<pthread_key_t>>,
}

impl ThreadEnd {
    /// A cleanup that calls `run` (its argument is not meaningful) on each thread that armed it.
    pub const fn new(run: unsafe extern "C" fn(*mut c_void)) -> ThreadEnd {
        ThreadEnd { run, key: OnceLock::new() }
    }

    /// Arms the cleanup for the calling thread (again is harmless). If the process is out of
    /// thread keys, the state is left for the operating system to take back at exit.
    pub fn arm(&'static self) {
        let key = self.key.get_or_init(|| {
            let mut k: pthread_key_t = 0;
            // SAFETY: `k` is writable; the destructor is a plain function of the C signature.
            (unsafe { pthread_key_create(&mut k, Some(self.run)) } == 0).then_some(k)
        });
        if let Some(k) = *key {
            // Any non-null value: a key's destructor runs only for threads whose value is set.
            // SAFETY: a key this `ThreadEnd` created.
            unsafe { pthread_setspecific(k, self as *const ThreadEnd as *const c_void) };
        }
    }
}
