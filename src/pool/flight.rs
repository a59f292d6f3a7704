//! Single flight: one creation that concurrent misses on the same key wait for.
//!
//! Generic over the result so that the hand-off can be model-checked on its own (loom).

use std::time::Instant;

use crate::sync::{Condvar, Mutex, lock};

pub(crate) struct Flight<T> {
    state: Mutex<State<T>>,
    cond: Condvar,
}

struct State<T> {
    result: Option<T>,
    /// Waiters asleep on `cond` now: `finish` wakes only when there is one (a wake-up is a
    /// system call, and most creations have nobody joined to them).
    parked: usize,
}

impl<T: Clone> Flight<T> {
    pub(crate) fn new() -> Self {
        Flight { state: Mutex::new(State { result: None, parked: 0 }), cond: Condvar::new() }
    }

    /// Publishes the result and wakes every waiter.
    pub(crate) fn finish(&self, r: T) {
        let mut s = lock(&self.state);
        s.result = Some(r);
        let parked = s.parked > 0;
        drop(s);
        if parked {
            self.cond.notify_all();
        }
    }

    /// The result, or `None` when the deadline passed first.
    pub(crate) fn wait(&self, deadline: Instant) -> Option<T> {
        let mut g = lock(&self.state);
        loop {
            if let Some(r) = g.result.as_ref() {
                return Some(r.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            // Counted under the lock `finish` takes: it sees this waiter, or this waiter
            // saw its result above.
            g.parked += 1;
            g = match self.cond.wait_timeout(g, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            g.parked -= 1;
        }
    }
}
