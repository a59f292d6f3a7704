//! The watchdog for runtime calls that do not return.
//!
//! Every create, exec-enqueue and destroy the pool makes is registered for its duration. A
//! thread looks at them a few times per threshold; a call older than the threshold is
//! reported once while it lasts (an error log with the descriptor, live counts, thread and
//! elapsed time) and counts in the `stalled` gauge until it returns. The library never kills
//! anything: a stalled call is information for a person.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::ceiling::LiveCeiling;
use crate::desc::PlanDesc;
use crate::sync::{AtomicU64, Ordering};

/// The call a stalled thread is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CallKind {
    Create,
    Exec,
    Destroy,
}

impl CallKind {
    pub fn api_name(self) -> &'static str {
        match self {
            CallKind::Create => "hipfftMakePlanMany64",
            CallKind::Exec => "hipfftExec",
            CallKind::Destroy => "hipfftDestroy",
        }
    }
}

/// A call past the threshold, as reported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StalledCall {
    pub kind: CallKind,
    pub desc: String,
    pub thread: String,
    pub elapsed_s: f64,
    pub message: String,
}

struct Call {
    kind: CallKind,
    ceiling: Arc<LiveCeiling>,
    desc: PlanDesc,
    thread: String,
    started: Instant,
    reported: bool,
}

pub(crate) struct Watchdog {
    threshold: Duration,
    next: AtomicU64,
    calls: parking_lot::Mutex<HashMap<u64, Call>>,
}

pub(crate) struct CallGuard<'a> {
    dog: &'a Watchdog,
    id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.dog.calls.lock().remove(&self.id)
            && c.reported
        {
            tracing::warn!(call = c.kind.api_name(), desc = %c.desc, elapsed = ?c.started.elapsed(), "a stalled call returned");
        }
    }
}

impl Watchdog {
    pub(crate) fn new(threshold: Duration) -> Self {
        Watchdog { threshold, next: AtomicU64::new(0), calls: parking_lot::Mutex::new(HashMap::new()) }
    }

    pub(crate) fn enter(&self, kind: CallKind, desc: &PlanDesc, ceiling: &Arc<LiveCeiling>) -> CallGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let t = std::thread::current();
        let thread = match t.name() {
            Some(n) => n.to_string(),
            None => format!("{:?}", t.id()),
        };
        self.calls.lock().insert(id, Call { kind, ceiling: ceiling.clone(), desc: *desc, thread, started: Instant::now(), reported: false });
        CallGuard { dog: self, id }
    }

    /// Calls past the threshold right now.
    pub(crate) fn stalled(&self) -> Vec<StalledCall> {
        self.calls
            .lock()
            .values()
            .filter(|c| c.started.elapsed() >= self.threshold)
            .map(describe)
            .collect()
    }

    /// Calls past the threshold now, of one device or all.
    pub(crate) fn scan_device(&self, device: Option<i32>) -> usize {
        self.scan();
        self.calls
            .lock()
            .values()
            .filter(|c| device.is_none_or(|d| d == c.desc.device) && c.started.elapsed() >= self.threshold)
            .count()
    }

    /// Reports each call past the threshold once. Returns how many are stalled.
    pub(crate) fn scan(&self) -> usize {
        let mut calls = self.calls.lock();
        let mut stalled = 0;
        for c in calls.values_mut() {
            if c.started.elapsed() < self.threshold {
                continue;
            }
            stalled += 1;
            if !c.reported {
                c.reported = true;
                let s = describe(c);
                tracing::error!(call = c.kind.api_name(), desc = %c.desc, thread = %c.thread, "{}", s.message);
            }
        }
        stalled
    }

    /// Starts the thread that scans `dog`. It ends at once when the returned sender is
    /// dropped (or when `dog` is gone), so a pool's teardown can join it.
    pub(crate) fn spawn(
        dog: Weak<Watchdog>,
        threshold: Duration,
    ) -> std::io::Result<(std::thread::JoinHandle<()>, crossbeam_channel::Sender<()>)> {
        let period = (threshold / 4).clamp(Duration::from_millis(5), Duration::from_millis(500));
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::Builder::new().name("hipfft-pool-watchdog".into()).spawn(move || {
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(period) {
                match dog.upgrade() {
                    Some(d) => {
                        d.scan();
                    }
                    None => return,
                }
            }
        })?;
        Ok((handle, stop_tx))
    }
}

fn describe(c: &Call) -> StalledCall {
    let ceiling = &c.ceiling;
    let elapsed = c.started.elapsed();
    let hint = match c.kind {
        CallKind::Destroy => {
            "; hipfftDestroy can reach hipFree, which synchronizes every stream of the device: \
             look for work that never completes (a graph not submitted, a stream waiting on the host)"
        }
        CallKind::Create => "; rocFFT compiles kernels at plan time (helper processes, the RTC cache)",
        CallKind::Exec => "",
    };
    let message = format!(
        "{} has not returned after {:.1} s (desc {}, thread {}, {} live of ceiling {}){}",
        c.kind.api_name(),
        elapsed.as_secs_f64(),
        c.desc,
        c.thread,
        ceiling.live(),
        ceiling.limit(),
        hint
    );
    StalledCall { kind: c.kind, desc: c.desc.to_string(), thread: c.thread.clone(), elapsed_s: elapsed.as_secs_f64(), message }
}
