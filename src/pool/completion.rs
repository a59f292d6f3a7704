//! The completion thread: releases leases once the GPU work they cover has completed.
//!
//! `release_after(stream)` records an event on the stream (reused from a free list, so the
//! steady state creates none) and hands the lease and the event over. This thread polls
//! the events it holds, with a short backoff, and releases each lease when its event fires.
//! Polling rather than blocking on the oldest event keeps one stalled stream from holding
//! up releases on the others. Events on one stream complete in the order they were recorded,
//! so each stream's queue is polled from its oldest event and stops at the first that has
//! not fired: one query per stream per round, however many leases wait, instead of one per
//! lease (each query takes the driver's lock that the submitting thread needs too). The
//! special handles (0, and HIP/CUDA's legacy and per-thread 1 and 2) may name a different
//! stream on each thread, so their events are polled one by one.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::pool::entry::Core;
use crate::error::Error;
use crate::pool::lease::{Lease, ReleaseAfterError};
use crate::observe::counters::Counters;
use crate::runtime::boundary::{RawEvent, RawStream, with_device};
use crate::sync::lock;

pub(crate) struct PendingRelease {
    lease: Lease,
    event: RawEvent,
    stream: RawStream,
}

impl PendingRelease {
    /// The in-order queue this release joins; `None` for a handle that may name a
    /// different stream on each thread.
    fn queue(&self) -> Option<(i32, usize)> {
        (self.stream.0 > 2).then_some((self.lease.entry.desc.device, self.stream.0))
    }
}

/// # Safety
/// `stream` is a live stream of the pool's runtime ([`Lease::release_after`]).
pub(crate) unsafe fn release_after(lease: Lease, stream: RawStream) -> Result<(), ReleaseAfterError> {
    let core = lease.entry.core.clone();
    let device = lease.entry.desc.device;
    let rt = &*core.runtime;
    if core.completion_tx.lock().is_none() {
        // Shut down: no event to make (nobody would ever destroy it).
        return Err(ReleaseAfterError { error: Error::ShutDown, lease });
    }
    let recorded = with_device(rt, device, || {
        let event = match lock(&core.free_events).get_mut(&device).and_then(|v| v.pop()) {
            Some(e) => e,
            None => rt.event_create()?,
        };
        // SAFETY: `event` is live (made above or kept on the free list); the caller
        // promised `stream` is a live stream of this runtime.
        match unsafe { rt.event_record(event, stream) } {
            Ok(()) => Ok(event),
            Err(e) => {
                recycle(&core, device, event);
                Err(e)
            }
        }
    });
    let event = match recorded {
        Ok(e) => e,
        Err(error) => {
            Counters::bump(&lease.entry.dev.counters.event_failures);
            return Err(ReleaseAfterError { error, lease });
        }
    };
    let tx = core.completion_tx.lock().clone();
    match tx {
        Some(tx) => tx.send(PendingRelease { lease, event, stream }).map_err(|e| {
            let p = e.into_inner();
            ReleaseAfterError { error: Error::ShutDown, lease: p.lease }
        }),
        None => {
            recycle(&core, device, event);
            Err(ReleaseAfterError { error: Error::ShutDown, lease })
        }
    }
}

/// Puts an event back on the free list, or destroys it once the pool has shut down (its
/// free list is destroyed by `shutdown`; one recycled later would never be). Checked under
/// the free-list lock, which `shutdown` takes only after it cleared `completion_tx`.
fn recycle(core: &Core, device: i32, event: RawEvent) {
    {
        let mut free = lock(&core.free_events);
        if core.completion_tx.lock().is_some() {
            free.entry(device).or_default().push(event);
            return;
        }
    }
    let rt = &*core.runtime;
    // SAFETY: the event is live and no longer recorded or queried by anyone.
    if let Err(e) = with_device(rt, device, || unsafe { rt.event_destroy(event) }) {
        tracing::warn!(error = %e, "event destroy failed");
    }
}

/// What the completion thread holds: per-stream queues in record order, and the releases
/// on special handles.
#[derive(Default)]
struct Pending {
    by_stream: HashMap<(i32, usize), VecDeque<PendingRelease>>,
    unordered: Vec<PendingRelease>,
}

impl Pending {
    fn push(&mut self, p: PendingRelease) {
        match p.queue() {
            Some(key) => self.by_stream.entry(key).or_default().push_back(p),
            None => self.unordered.push(p),
        }
    }

    fn is_empty(&self) -> bool {
        self.by_stream.is_empty() && self.unordered.is_empty()
    }

    /// Releases what completed; returns how many.
    fn poll(&mut self) -> usize {
        let before = self.unordered.len();
        self.unordered.retain(|p| !poll(p));
        let mut released = before - self.unordered.len();
        self.by_stream.retain(|_, q| {
            while q.front().is_some_and(poll) {
                q.pop_front();
                released += 1;
            }
            !q.is_empty()
        });
        released
    }
}

/// The thread body. Ends when every sender is gone and nothing is pending.
pub(crate) fn run(rx: Receiver<PendingRelease>) {
    const MIN_BACKOFF: Duration = Duration::from_micros(20);
    const MAX_BACKOFF: Duration = Duration::from_millis(1);
    let mut pending = Pending::default();
    let mut backoff = MIN_BACKOFF;
    loop {
        if pending.is_empty() {
            match rx.recv() {
                Ok(p) => pending.push(p),
                Err(_) => return,
            }
        }
        while let Ok(p) = rx.try_recv() {
            pending.push(p);
        }
        if pending.poll() > 0 {
            backoff = MIN_BACKOFF;
            continue;
        }
        match rx.recv_timeout(backoff) {
            Ok(p) => pending.push(p),
            Err(RecvTimeoutError::Timeout) => backoff = (backoff * 2).min(MAX_BACKOFF),
            // Every sender is gone but work is still pending: sleep instead of spinning.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// True when the lease was released (its event fired, or the event broke and the wait fell
/// back to synchronizing it).
fn poll(p: &PendingRelease) -> bool {
    let e = &p.lease.entry;
    let core = &e.core;
    let rt = &*core.runtime;
    let device = e.desc.device;
    // SAFETY: a pending release owns its live event until `recycle`.
    let fired = with_device(rt, device, || match unsafe { rt.event_query(p.event) } {
        Ok(done) => Ok(done),
        Err(err) => {
            Counters::bump(&e.dev.counters.event_failures);
            tracing::warn!(error = %err, plan = ?e.plan, "event query failed; synchronizing the event instead");
            // SAFETY: as for the query.
            if let Err(err) = unsafe { rt.event_synchronize(p.event) } {
                tracing::error!(error = %err, plan = ?e.plan, "event synchronize failed; releasing the lease anyway (the device is in error)");
            }
            Ok(true)
        }
    });
    if fired.unwrap_or(true) {
        recycle(core, device, p.event);
        true
    } else {
        false
    }
}
