//! The multi-producer multi-consumer channel of the destroyer and completion queues:
//! crossbeam-channel outside loom; under loom a `VecDeque` under a `Mutex` with a `Condvar`,
//! with crossbeam's API and error types and its disconnect semantics (a receive fails once
//! every sender is gone and the queue is empty; a send fails once every receiver is gone).
//!
//! Under loom, time does not pass: `recv_timeout` on an empty, connected channel yields
//! and reports a timeout at once, and `bounded(n)` is unbounded (the pool uses `bounded(0)`
//! only for channels that are never sent on, whose disconnect is the signal).

pub(crate) use crossbeam_channel::RecvTimeoutError;
#[cfg(loom)]
use crossbeam_channel::{RecvError, SendError, TryRecvError};

#[cfg(not(loom))]
pub(crate) use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

#[cfg(loom)]
pub(crate) use self::model::{Receiver, Sender, bounded, unbounded};

#[cfg(loom)]
mod model {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::time::Duration;

    use super::{RecvError, RecvTimeoutError, SendError, TryRecvError};
    use crate::sync::{Condvar, Mutex, lock};

    struct State<T> {
        items: VecDeque<T>,
        senders: usize,
        receivers: usize,
    }

    struct Shared<T> {
        state: Mutex<State<T>>,
        cond: Condvar,
    }

    /// The sending side; clones share the queue.
    pub(crate) struct Sender<T>(Arc<Shared<T>>);
    /// The receiving side; clones share the queue (each item goes to one receiver).
    pub(crate) struct Receiver<T>(Arc<Shared<T>>);

    pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { items: VecDeque::new(), senders: 1, receivers: 1 }),
            cond: Condvar::new(),
        });
        (Sender(shared.clone()), Receiver(shared))
    }

    pub(crate) fn bounded<T>(_cap: usize) -> (Sender<T>, Receiver<T>) {
        unbounded()
    }

    impl<T> Sender<T> {
        pub(crate) fn send(&self, item: T) -> Result<(), SendError<T>> {
            let mut s = lock(&self.0.state);
            if s.receivers == 0 {
                return Err(SendError(item));
            }
            s.items.push_back(item);
            drop(s);
            self.0.cond.notify_all();
            Ok(())
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            lock(&self.0.state).senders += 1;
            Sender(self.0.clone())
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let last = {
                let mut s = lock(&self.0.state);
                s.senders -= 1;
                s.senders == 0
            };
            if last {
                self.0.cond.notify_all();
            }
        }
    }

    impl<T> Receiver<T> {
        pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
            let mut s = lock(&self.0.state);
            match s.items.pop_front() {
                Some(item) => Ok(item),
                None if s.senders == 0 => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }

        pub(crate) fn recv(&self) -> Result<T, RecvError> {
            let mut s = lock(&self.0.state);
            loop {
                if let Some(item) = s.items.pop_front() {
                    return Ok(item);
                }
                if s.senders == 0 {
                    return Err(RecvError);
                }
                s = self.0.cond.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        }

        pub(crate) fn recv_timeout(&self, _timeout: Duration) -> Result<T, RecvTimeoutError> {
            match self.try_recv() {
                Ok(item) => Ok(item),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {
                    loom::thread::yield_now();
                    Err(RecvTimeoutError::Timeout)
                }
            }
        }
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Self {
            lock(&self.0.state).receivers += 1;
            Receiver(self.0.clone())
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            lock(&self.0.state).receivers -= 1;
        }
    }
}
