//! Single flight: one creation that concurrent misses on the same key wait for.
//!
//! Generic over the result so that the hand-off can be model-checked on its own (loom).

use std::time::Instant;

use crate::sync::{Condvar, Mutex, lock};

pub(crate) struct Flight<T> {
    result: Mutex<Option<T>>,
    cond: Condvar,
}

impl<T: Clone> Flight<T> {
    pub(crate) fn new() -> Self {
        Flight { result: Mutex::new(None), cond: Condvar::new() }
    }

    /// Publishes the result and wakes every waiter.
    pub(crate) fn finish(&self, r: T) {
        *lock(&self.result) = Some(r);
        self.cond.notify_all();
    }

    /// The result, or `None` when the deadline passed first.
    pub(crate) fn wait(&self, deadline: Instant) -> Option<T> {
        let mut g = lock(&self.result);
        loop {
            if let Some(r) = g.as_ref() {
                return Some(r.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = match self.cond.wait_timeout(g, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}
