//! The C++ plan cache that hipfft-pool replaces, compiled from `baseline.cpp` (see its
//! header for the design), behind a thin safe wrapper for the benchmarks.

use std::ffi::{c_int, c_void};

/// Makes a plan for a miss: returns the handle.
pub type CreateFn = extern "C" fn(ctx: *mut c_void, dev: c_int, ty: c_int, n: i64, batch: i64) -> i64;
/// Destroys a plan when its last `shared_ptr` goes.
pub type DestroyFn = extern "C" fn(ctx: *mut c_void, handle: i64);

unsafe extern "C" {
    fn hfp_baseline_new(capacity: usize) -> *mut c_void;
    fn hfp_baseline_free(cache: *mut c_void);
    fn hfp_baseline_set_hooks(cache: *mut c_void, create: Option<CreateFn>, destroy: Option<DestroyFn>, ctx: *mut c_void);
    fn hfp_baseline_hit(cache: *mut c_void, dev: c_int, ty: c_int, n: i64, batch: i64) -> i64;
    fn hfp_baseline_hit_handler(cache: *mut c_void, dev: c_int, ty: c_int, n: i64, batch: i64) -> i64;
    fn hfp_baseline_acquire(cache: *mut c_void, dev: c_int, ty: c_int, n: i64, batch: i64) -> i64;
    fn hfp_baseline_len(cache: *mut c_void) -> usize;
    fn hfp_baseline_clear(cache: *mut c_void);
}

/// One C++ cache. Thread-safe (one `std::mutex` inside), as the original is.
pub struct Baseline {
    raw: *mut c_void,
}

// SAFETY: every entry point locks the cache's mutex; the pointer is only freed on drop.
unsafe impl Send for Baseline {}
unsafe impl Sync for Baseline {}

impl Baseline {
    /// A cache of `capacity` plans. Misses make fake handles until [`Baseline::set_hooks`].
    pub fn new(capacity: usize) -> Self {
        // SAFETY: returns a fresh object or aborts (operator new).
        Baseline { raw: unsafe { hfp_baseline_new(capacity) } }
    }

    /// Creation and destruction hooks (misses call `create`; the last reference of an
    /// evicted plan calls `destroy`).
    ///
    /// # Safety
    /// `ctx` must stay valid, and the hooks callable with it from any thread, for as long
    /// as this cache (or a plan it made) lives.
    pub unsafe fn set_hooks(&self, create: CreateFn, destroy: DestroyFn, ctx: *mut c_void) {
        unsafe { hfp_baseline_set_hooks(self.raw, Some(create), Some(destroy), ctx) }
    }

    /// Hit + release: the handle, or `None` on a miss.
    #[inline]
    pub fn hit(&self, dev: i32, ty: i32, n: i64, batch: i64) -> Option<i64> {
        // SAFETY: `raw` is a live cache.
        let h = unsafe { hfp_baseline_hit(self.raw, dev, ty, n, batch) };
        (h >= 0).then_some(h)
    }

    /// Hit + release through a `std::function` completion handler, as MLX releases.
    #[inline]
    pub fn hit_with_handler(&self, dev: i32, ty: i32, n: i64, batch: i64) -> Option<i64> {
        // SAFETY: `raw` is a live cache.
        let h = unsafe { hfp_baseline_hit_handler(self.raw, dev, ty, n, batch) };
        (h >= 0).then_some(h)
    }

    /// Hit or create (evicting past the capacity), then release: the handle.
    #[inline]
    pub fn acquire(&self, dev: i32, ty: i32, n: i64, batch: i64) -> i64 {
        // SAFETY: `raw` is a live cache.
        unsafe { hfp_baseline_acquire(self.raw, dev, ty, n, batch) }
    }

    pub fn len(&self) -> usize {
        // SAFETY: `raw` is a live cache.
        unsafe { hfp_baseline_len(self.raw) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached plan.
    pub fn clear(&self) {
        // SAFETY: `raw` is a live cache.
        unsafe { hfp_baseline_clear(self.raw) }
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        // SAFETY: made by hfp_baseline_new, freed once.
        unsafe { hfp_baseline_free(self.raw) }
    }
}
