//! The completion queue: a thread that polls what it holds and completes each item once it
//! is done. A leaf, generic over what it holds ([`Completes`]): the pool's item is a lease
//! waiting for its event (`entry::PendingRelease`), but nothing here knows that.
//!
//! Polling rather than blocking on the oldest item keeps one stalled stream from holding up
//! the others. Items of one in-order queue (a stream's events complete in the order they
//! were recorded) are polled from the oldest and the round stops at the first that is not
//! done: one poll per queue per round, however many items wait, instead of one per item
//! (each event query takes the driver's lock that the submitting thread needs too). Items
//! with no in-order queue are polled one by one.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use crate::sync::channel::Receiver;
use crate::sync::thread;

/// What the completion queue holds.
pub(crate) trait Completes: Send + 'static {
    /// Names an in-order queue: items of one queue are done in the order they were pushed.
    type Queue: Copy + Eq + Hash + Send;
    /// The item's in-order queue, or `None` when it may complete in any order.
    fn queue(&self) -> Option<Self::Queue>;
    /// Whether the item is done. May call the runtime; never blocks for long.
    fn poll(&self) -> bool;
    /// Called once, on the completion thread, after `poll` said done.
    fn complete(self);
}

/// The items the completion thread holds: per in-order queue in push order, and the rest.
pub(crate) struct Pending<T: Completes> {
    by_queue: HashMap<T::Queue, VecDeque<T>>,
    unordered: Vec<T>,
}

impl<T: Completes> Default for Pending<T> {
    fn default() -> Self {
        Pending { by_queue: HashMap::new(), unordered: Vec::new() }
    }
}

impl<T: Completes> Pending<T> {
    /// Adds an item behind those already in its queue.
    pub(crate) fn push(&mut self, item: T) {
        match item.queue() {
            Some(key) => self.by_queue.entry(key).or_default().push_back(item),
            None => self.unordered.push(item),
        }
    }

    /// Whether nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_queue.is_empty() && self.unordered.is_empty()
    }

    /// One polling round: completes what is done; returns how many.
    pub(crate) fn poll_round(&mut self) -> usize {
        let mut completed = 0;
        let mut i = 0;
        while i < self.unordered.len() {
            if self.unordered[i].poll() {
                self.unordered.swap_remove(i).complete();
                completed += 1;
            } else {
                i += 1;
            }
        }
        self.by_queue.retain(|_, q| {
            while q.front().is_some_and(T::poll) {
                if let Some(item) = q.pop_front() {
                    item.complete();
                    completed += 1;
                }
            }
            !q.is_empty()
        });
        completed
    }
}

/// The thread body: receives items, polls them with a short backoff, completes them. Ends
/// when every sender is gone and nothing is held.
///
/// While it holds items it sleeps between rounds instead of waiting on the channel: a
/// sender then never has to wake it (with a timed receive, every `release_after` that came
/// during the wait woke this thread). Measured on the H200 it changed nothing visible:
/// `release_after` took 1.31x of the floor before and after (runs 03 and 04 of
/// docs/performance.md), so that gap is not this hand-off. New items wait for the next
/// round, which polls them anyway. Empty, it polls the channel for the pool's poll budget
/// (none on small machines, as the creation workers do), then blocks.
pub(crate) fn run<T: Completes>(rx: Receiver<T>) {
    const MIN_BACKOFF: Duration = Duration::from_micros(20);
    const MAX_BACKOFF: Duration = Duration::from_millis(1);
    let mut pending = Pending::default();
    let mut backoff = MIN_BACKOFF;
    loop {
        if pending.is_empty() {
            match thread::poll_recv(&rx).map(Ok).unwrap_or_else(|| rx.recv()) {
                Ok(item) => pending.push(item),
                Err(_) => return,
            }
            backoff = MIN_BACKOFF;
        }
        while let Ok(item) = rx.try_recv() {
            pending.push(item);
        }
        if pending.poll_round() > 0 {
            backoff = MIN_BACKOFF;
            continue;
        }
        thread::pause(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
