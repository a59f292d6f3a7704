//! The watchdog for runtime calls that do not return.
//!
//! Every create, exec-enqueue and destroy the pool makes is registered for its duration. A
//! thread looks at them a few times per threshold; a call older than the threshold is
//! reported once while it lasts (an error log with the descriptor, live counts, thread and
//! elapsed time) and counts in the `stalled` gauge until it returns. The library never kills
//! anything: a stalled call is information for a person.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::desc::PlanDesc;

/// The live counts a stall report quotes: what the pool's ceiling implements. A trait, so
/// that this layer (below the pool) never names the pool's types.
pub trait LiveCounts: Send + Sync {
    /// Handles alive now under this ceiling.
    fn live(&self) -> usize;
    /// The most that may be alive at once.
    fn limit(&self) -> usize;
}

/// The call a stalled thread is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CallKind {
    /// Inside `hipfftMakePlanMany64` (plan creation).
    Create,
    /// Inside an `hipfftExec*` (with its set-stream and set-work-area).
    Exec,
    /// Inside `hipfftDestroy`.
    Destroy,
}

impl CallKind {
    /// The library call this kind stands for, for messages.
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
    /// The call it is stuck in.
    pub kind: CallKind,
    /// The plan's descriptor, as text.
    pub desc: String,
    /// The thread's name (or id).
    pub thread: String,
    /// Seconds since the call began.
    pub elapsed_s: f64,
    /// The sentence logged for it, with the likely cause.
    pub message: String,
}

struct Call {
    kind: CallKind,
    /// Valid while the call is registered: the caller holds its device (and so its
    /// ceiling) for the whole call, and the registration ends before the call returns.
    ceiling: *const dyn LiveCounts,
    desc: PlanDesc,
    thread: Arc<str>,
    /// Scans that have seen this call; it is stalled once they span the threshold.
    age: u32,
    reported: bool,
}

// SAFETY: `ceiling` is only read under the slab lock while the call is registered (see above).
unsafe impl Send for Call {}

#[derive(Default)]
struct Slab {
    calls: Vec<Option<Call>>,
    free: Vec<usize>,
}

/// Registered calls. Entering and leaving cost a lock and a slot, no allocation once the
/// slab has grown, no clock read: the scanning thread ages the calls instead.
pub(crate) struct Watchdog {
    threshold: Duration,
    period: Duration,
    slab: parking_lot::Mutex<Slab>,
}

thread_local! {
    /// The calling thread's name, made once per thread.
    static THREAD_NAME: Arc<str> = {
        let t = std::thread::current();
        match t.name() {
            Some(n) => n.into(),
            None => format!("{:?}", t.id()).into(),
        }
    };
}

pub(crate) struct CallGuard<'a> {
    dog: &'a Watchdog,
    slot: usize,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let mut slab = self.dog.slab.lock();
        let call = slab.calls[self.slot].take();
        slab.free.push(self.slot);
        drop(slab);
        if let Some(c) = call
            && c.reported
        {
            tracing::warn!(call = c.kind.api_name(), desc = %c.desc, "a stalled call returned");
        }
    }
}

impl Watchdog {
    pub(crate) fn new(threshold: Duration) -> Self {
        let period = (threshold / 4).clamp(Duration::from_millis(5), Duration::from_millis(500));
        Watchdog { threshold, period, slab: Default::default() }
    }

    /// Registers a call until the guard drops. `ceiling` is the call's device's: a raw
    /// pointer to it is kept (no reference count on the hot path), valid because the caller
    /// holds the `Arc` for longer than the guard.
    pub(crate) fn enter<C: LiveCounts + 'static>(&self, kind: CallKind, desc: &PlanDesc, ceiling: &Arc<C>) -> CallGuard<'_> {
        let thread = THREAD_NAME.with(|n| n.clone());
        let ceiling: *const C = Arc::as_ptr(ceiling);
        let ceiling = ceiling as *const dyn LiveCounts;
        let call = Call { kind, ceiling, desc: *desc, thread, age: 0, reported: false };
        let mut slab = self.slab.lock();
        let slot = match slab.free.pop() {
            Some(i) => {
                slab.calls[i] = Some(call);
                i
            }
            None => {
                slab.calls.push(Some(call));
                slab.calls.len() - 1
            }
        };
        CallGuard { dog: self, slot }
    }

    /// Scans needed before a call counts as stalled.
    fn stalled_age(&self) -> u32 {
        (self.threshold.as_nanos().div_ceil(self.period.as_nanos().max(1))).max(1) as u32
    }

    fn elapsed(&self, c: &Call) -> Duration {
        self.period * c.age
    }

    /// Calls past the threshold right now.
    pub(crate) fn stalled(&self) -> Vec<StalledCall> {
        let limit = self.stalled_age();
        self.slab.lock().calls.iter().flatten().filter(|c| c.age >= limit).map(|c| describe(c, self.elapsed(c))).collect()
    }

    /// Calls past the threshold now, of one device or all.
    pub(crate) fn scan_device(&self, device: Option<i32>) -> usize {
        let limit = self.stalled_age();
        self.slab
            .lock()
            .calls
            .iter()
            .flatten()
            .filter(|c| device.is_none_or(|d| d == c.desc.device) && c.age >= limit)
            .count()
    }

    /// Ages every call by one scan and reports each that crossed the threshold, once.
    fn scan(&self) {
        let limit = self.stalled_age();
        let mut reports = Vec::new();
        {
            let mut slab = self.slab.lock();
            for c in slab.calls.iter_mut().flatten() {
                c.age = c.age.saturating_add(1);
                if c.age >= limit && !c.reported {
                    c.reported = true;
                    reports.push((c.kind, c.desc, describe(c, self.period * c.age)));
                }
            }
        }
        for (kind, desc, s) in reports {
            tracing::error!(call = kind.api_name(), desc = %desc, thread = %s.thread, "{}", s.message);
        }
    }

    /// Starts the thread that scans `dog`. It ends at once when the returned sender is
    /// dropped (or when `dog` is gone), so a pool's teardown can join it.
    pub(crate) fn spawn(
        dog: Weak<Watchdog>,
        period: Duration,
    ) -> std::io::Result<(std::thread::JoinHandle<()>, crossbeam_channel::Sender<()>)> {
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::Builder::new().name("hipfft-pool-watchdog".into()).spawn(move || {
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(period) {
                match dog.upgrade() {
                    Some(d) => d.scan(),
                    None => return,
                }
            }
        })?;
        Ok((handle, stop_tx))
    }

    pub(crate) fn period(&self) -> Duration {
        self.period
    }
}

fn describe(c: &Call, elapsed: Duration) -> StalledCall {
    // SAFETY: called under the slab lock while `c` is registered (see `Call::ceiling`).
    let ceiling = unsafe { &*c.ceiling };
    let hint = match c.kind {
        CallKind::Destroy => {
            "; hipfftDestroy can reach hipFree, which synchronizes every stream of the device: \
             look for work that never completes (a graph not submitted, a stream waiting on the host)"
        }
        CallKind::Create => "; rocFFT compiles kernels at plan time (helper processes, the RTC cache)",
        CallKind::Exec => "",
    };
    let message = format!(
        "{} has not returned after about {:.1} s (desc {}, thread {}, {} live of ceiling {}){}",
        c.kind.api_name(),
        elapsed.as_secs_f64(),
        c.desc,
        c.thread,
        ceiling.live(),
        ceiling.limit(),
        hint
    );
    StalledCall { kind: c.kind, desc: c.desc.to_string(), thread: c.thread.to_string(), elapsed_s: elapsed.as_secs_f64(), message }
}
