//! `Mutex` and `RwLock` with parking_lot's API: parking_lot's own outside loom, thin
//! wrappers over loom's (which poison, like std's: recovered here, as [`super::lock`] does).

#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex, RwLock};

#[cfg(loom)]
pub(crate) use self::model::{Mutex, RwLock};

#[cfg(loom)]
mod model {
    use loom::sync::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    /// loom's `Mutex` with `lock()` returning the guard.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(loom::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        }
    }

    /// loom's `RwLock` with `read()`/`write()` returning the guards.
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(v: T) -> Self {
            RwLock(loom::sync::RwLock::new(v))
        }
        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|p| p.into_inner())
        }
        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|p| p.into_inner())
        }
        /// Under the model the read is taken at once (loom explores the interleavings).
        pub(crate) fn try_read_until(&self, _deadline: std::time::Instant) -> Option<RwLockReadGuard<'_, T>> {
            Some(self.read())
        }
    }
}
