//! The completion thread: releases leases once the GPU work they cover has completed.
//!
//! `release_after(stream)` records an event on the stream (reused from a free list, so the
//! steady state creates none) and hands the lease and the event over. This thread polls
//! the events it holds, with a short backoff, and releases each lease when its event fires.
//! Polling rather than blocking on the oldest event keeps one stalled stream from holding
//! up releases on the others.

use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::entry::Core;
use crate::error::Error;
use crate::lease::{Lease, ReleaseAfterError};
use crate::metrics::Counters;
use crate::runtime::{RawEvent, RawStream, with_device};
use crate::sync::lock;

pub(crate) struct PendingRelease {
    lease: Lease,
    event: RawEvent,
}

pub(crate) fn release_after(lease: Lease, stream: RawStream) -> Result<(), ReleaseAfterError> {
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
        match rt.event_record(event, stream) {
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
        Some(tx) => tx.send(PendingRelease { lease, event }).map_err(|e| {
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
    if let Err(e) = with_device(rt, device, || rt.event_destroy(event)) {
        tracing::warn!(error = %e, "event destroy failed");
    }
}

/// The thread body. Ends when every sender is gone and nothing is pending.
pub(crate) fn run(rx: Receiver<PendingRelease>) {
    const MIN_BACKOFF: Duration = Duration::from_micros(20);
    const MAX_BACKOFF: Duration = Duration::from_millis(1);
    let mut pending: Vec<PendingRelease> = Vec::new();
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
        let before = pending.len();
        pending.retain(|p| !poll(p));
        if pending.len() < before {
            backoff = MIN_BACKOFF;
            continue;
        }
        match rx.recv_timeout(backoff) {
            Ok(p) => pending.push(p),
            Err(RecvTimeoutError::Timeout) => backoff = (backoff * 2).min(MAX_BACKOFF),
            Err(RecvTimeoutError::Disconnected) => {}
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
    let fired = with_device(rt, device, || match rt.event_query(p.event) {
        Ok(done) => Ok(done),
        Err(err) => {
            Counters::bump(&e.dev.counters.event_failures);
            tracing::warn!(error = %err, plan = ?e.plan, "event query failed; synchronizing the event instead");
            if let Err(err) = rt.event_synchronize(p.event) {
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
