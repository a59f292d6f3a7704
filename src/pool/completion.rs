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
//!
//! Completing an item may lend its last step to another thread (`Completes::complete`
//! returns a [`Lent`]): the thread that will use what it frees finishes it there, on its own
//! lines. The completion thread keeps every loan and finishes what is still unclaimed once
//! the loan is due, so nothing waits on a thread that never comes back.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

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
    /// Called once, on the completion thread, after `poll` said done; what it lends out,
    /// if anything, the completion thread keeps until it is due.
    fn complete(self) -> Option<Self::Lent>;
    /// The last step of a completion, lent to another thread.
    type Lent: Lent;
}

/// Work lent to another thread, which the completion thread finishes if that thread has not.
pub(crate) trait Lent: Send + 'static {
    /// Whether to finish it now rather than wait longer (`waited`: since it was lent).
    fn due(&self, waited: Duration) -> bool;
    /// Finishes what the other thread did not claim (nothing, when it claimed it all).
    fn finish(self);
}

/// The items the completion thread holds: per in-order queue in push order, and the rest.
pub(crate) struct Pending<T: Completes> {
    by_queue: HashMap<T::Queue, VecDeque<T>>,
    unordered: Vec<T>,
    /// Loans, oldest first, with when each was made.
    lent: VecDeque<(T::Lent, Instant)>,
}

impl<T: Completes> Default for Pending<T> {
    fn default() -> Self {
        Pending { by_queue: HashMap::new(), unordered: Vec::new(), lent: VecDeque::new() }
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

    /// Whether nothing is held (no item, no loan).
    pub(crate) fn is_empty(&self) -> bool {
        self.by_queue.is_empty() && self.unordered.is_empty() && self.lent.is_empty()
    }

    /// One polling round: completes what is done, then finishes the loans that are due;
    /// returns how many items completed.
    pub(crate) fn poll_round(&mut self) -> usize {
        let mut completed = 0;
        let mut lent = Vec::new();
        let mut i = 0;
        while i < self.unordered.len() {
            if self.unordered[i].poll() {
                lent.extend(self.unordered.swap_remove(i).complete());
                completed += 1;
            } else {
                i += 1;
            }
        }
        self.by_queue.retain(|_, q| {
            while q.front().is_some_and(T::poll) {
                if let Some(item) = q.pop_front() {
                    lent.extend(item.complete());
                    completed += 1;
                }
            }
            !q.is_empty()
        });
        let now = Instant::now();
        self.lent.extend(lent.into_iter().map(|l| (l, now)));
        // Every loan is asked (not only the oldest): a due one behind a young one must
        // not wait for it.
        let mut i = 0;
        while i < self.lent.len() {
            let (loan, at) = &self.lent[i];
            if loan.due(now.saturating_duration_since(*at)) {
                if let Some((loan, _)) = self.lent.remove(i) {
                    loan.finish();
                }
            } else {
                i += 1;
            }
        }
        completed
    }
}

/// The thread body: receives items, polls them with a short backoff, completes them. Ends
/// when every sender is gone and nothing is held.
///
/// While it holds items it sleeps between rounds instead of waiting on the channel: a
/// sender then never has to wake it (with a timed receive, every `release_after` that came
/// during the wait woke this thread). Measured on the H200 it changed nothing visible:
/// `release_after` took 1.31x of the floor with and without it, so that gap is not this
/// hand-off (docs/history/2026-12.md). New items wait for the next
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
                // Every sender is gone and nothing is held, loans included.
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
