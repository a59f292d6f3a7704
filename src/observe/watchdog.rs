//! The watchdog for runtime calls that do not return.
//!
//! Every create, exec-enqueue and destroy the pool makes is registered for its duration. A
//! thread looks at them a few times per threshold; a call older than the threshold is
//! reported once while it lasts (an error log with the descriptor, live counts, thread and
//! elapsed time) and counts in the `stalled` gauge until it returns. The library never kills
//! anything: a stalled call is information for a person.
//!
//! A call registers in its own thread's slot ([`CallSlot`]) with plain stores and leaves
//! with one atomic swap, on a line only that thread writes: every execution registers, and
//! a lock shared by all threads cost half the interposer's host time per execution (a lock
//! per thread still cost two lock round trips per execution). A call made while the slot is
//! taken (a nested one) goes to the thread's locked list. The scanners walk every thread's
//! slot and list and take the calls of their own watchdog; a scanner pins a slot's call while
//! it reads it, and the owner, leaving, waits for that read to end.

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

#[derive(Clone, Copy)]
struct Call {
    kind: CallKind,
    /// Valid while the call is registered: the caller holds its device (and so its
    /// ceiling) for the whole call, and the registration ends before the call returns.
    ceiling: *const dyn LiveCounts,
    /// Valid while the call is registered, as `ceiling`: the guard borrows it (no copy of
    /// the descriptor on the hot path).
    desc: *const PlanDesc,
    /// The [`Watchdog::id`] it registered with.
    dog: u64,
    /// Scans that have seen this call; it is stalled once they span the threshold.
    age: u32,
    reported: bool,
}

impl Call {
    /// Only under the lock of the list holding the call, while it is registered.
    fn desc(&self) -> &PlanDesc {
        // SAFETY: see `Call::desc`; the caller holds the list's lock.
        unsafe { &*self.desc }
    }
}

// SAFETY: `ceiling` and `desc` are only read under the lock of the list holding the call while it is
// registered (see above).
unsafe impl Send for Call {}

#[cfg_attr(loom, allow(dead_code))]
/// One thread's registered calls (none or one, more only when calls nest), in slots that
/// keep their index while registered. Only its thread writes it, apart from the scans.
struct ThreadCalls {
    name: Arc<str>,
    /// The thread's call when it is in one (the usual case): no lock.
    slot: CallSlot,
    /// Calls made while `slot` is taken (nested ones).
    calls: parking_lot::Mutex<Vec<Option<Call>>>,
}

/// Set in [`CallSlot::current`] while a scanner reads the slot's call.
#[cfg_attr(loom, allow(dead_code))]
const PINNED: u64 = 1 << 63;

/// One thread's current call, registered without a lock.
///
/// The owner writes `call` only while `current` is 0 and no scanner reads it, then publishes
/// it with a release store of a fresh id. A scanner reads `call` only after pinning it (a
/// compare-exchange of that id to `id | PINNED`), inside `readers` raised. The owner leaves
/// with a swap of `current` to 0; if the call was pinned it waits until `readers` is 0
/// before it touches `call` again. So the owner and a scanner never access `call` at once,
/// and the descriptor and ceiling a pinned call points to stay valid while it is read (the
/// owner is still in the call, which borrows them).
#[cfg_attr(loom, allow(dead_code))]
struct CallSlot {
    /// 0 when empty; else the call's id, with [`PINNED`] while a scanner reads it.
    current: std::sync::atomic::AtomicU64,
    /// Scanners that may be reading `call` now (a counter: two watchdogs may scan one thread).
    readers: std::sync::atomic::AtomicU32,
    /// The last id handed out; written by the owner only (a store, not a locked add).
    last_id: std::sync::atomic::AtomicU64,
    call: std::cell::UnsafeCell<Option<Call>>,
}

// SAFETY: `call` is accessed by the owner and by one pinning scanner at a time, never at
// once (the protocol above); everything else is atomic.
unsafe impl Sync for CallSlot {}

#[cfg_attr(loom, allow(dead_code))]
impl CallSlot {
    fn new() -> Self {
        CallSlot {
            current: std::sync::atomic::AtomicU64::new(0),
            readers: std::sync::atomic::AtomicU32::new(0),
            last_id: std::sync::atomic::AtomicU64::new(0),
            call: std::cell::UnsafeCell::new(None),
        }
    }

    /// The owner: registers `call` if the slot is free; its id, or the call back.
    fn enter(&self, call: Call) -> Result<u64, Call> {
        use std::sync::atomic::Ordering;
        if self.current.load(Ordering::Relaxed) != 0 {
            return Err(call);
        }
        let id = self.last_id.load(Ordering::Relaxed) + 1;
        self.last_id.store(id, Ordering::Relaxed);
        // SAFETY: `current` is 0, so no scanner can pin the slot, and the last pinned read
        // ended before the owner's leave returned (see the type).
        unsafe { *self.call.get() = Some(call) };
        self.current.store(id, Ordering::Release);
        Ok(id)
    }

    /// The owner: ends the call `enter` registered and returns it.
    fn leave(&self) -> Option<Call> {
        use std::sync::atomic::Ordering;
        if self.current.swap(0, Ordering::AcqRel) & PINNED != 0 {
            // A scanner is reading the call: it is done within a format of the descriptor.
            while self.readers.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
        }
        // SAFETY: `current` is 0 and no scanner reads: the owner's alone (see the type).
        unsafe { (*self.call.get()).take() }
    }

    /// A scanner: runs `f` on the slot's call, pinned, if there is one. A call another
    /// scanner has pinned is waited for (it is done within a format of the descriptor), not
    /// skipped: a skipped call would miss a scan's aging and be left out of `stalled`.
    fn with_call(&self, f: impl FnOnce(&mut Call)) {
        use std::sync::atomic::Ordering;
        if self.current.load(Ordering::Acquire) == 0 {
            return;
        }
        self.readers.fetch_add(1, Ordering::SeqCst);
        loop {
            let id = self.current.load(Ordering::Acquire);
            if id == 0 {
                break;
            }
            if id & PINNED != 0 {
                std::hint::spin_loop();
                continue;
            }
            // Fails if another scanner pinned it or the owner moved on meanwhile: look again.
            if self.current.compare_exchange(id, id | PINNED, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                // SAFETY: pinned: the owner is still in the call and waits for `readers`
                // before it touches `call` (see the type); no other scanner can pin it meanwhile.
                if let Some(c) = unsafe { (*self.call.get()).as_mut() } {
                    f(c);
                }
                // Fails only if the owner left meanwhile (it then waits for `readers`).
                let _ = self.current.compare_exchange(id | PINNED, id, Ordering::AcqRel, Ordering::Relaxed);
                break;
            }
        }
        self.readers.fetch_sub(1, Ordering::Release);
    }
}

/// Every thread that registered a call, for the scanners; a thread's list goes with it.
#[cfg_attr(loom, allow(dead_code))]
static THREADS: parking_lot::Mutex<Vec<Weak<ThreadCalls>>> = parking_lot::Mutex::new(Vec::new());

thread_local! {
    /// The calling thread's list, registered in [`THREADS`] on its first call.
    static MINE: Arc<ThreadCalls> = {
        let t = std::thread::current();
        let name: Arc<str> = match t.name() {
            Some(n) => n.into(),
            None => format!("{:?}", t.id()).into(),
        };
        let mine = Arc::new(ThreadCalls { name, slot: CallSlot::new(), calls: parking_lot::Mutex::new(Vec::new()) });
        let mut all = THREADS.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&mine));
        mine
    };
}

/// Prefetches the calling thread's call slot, which every runtime call under the watchdog
/// writes ([`crate::ExecLines::prefetch`]). A thread that has made no call yet registers
/// here, as the call it is about to make would.
#[inline]
pub(crate) fn prefetch_this_thread(prefetch: impl Fn(usize)) {
    #[cfg(not(loom))]
    let _ = MINE.try_with(|mine| prefetch(&mine.slot as *const CallSlot as usize));
    #[cfg(loom)]
    let _ = prefetch;
}

/// Where a call goes when its thread's list cannot be reached (a thread-local destructor
/// running, or the loom build, whose model threads share one OS thread's locals).
#[derive(Default)]
struct Slab {
    calls: Vec<Option<(Call, Arc<str>)>>,
    free: Vec<usize>,
}

/// Registered calls. Entering and leaving cost an uncontended lock, no allocation once a
/// thread's list has grown, no clock read: the scanning thread ages the calls instead.
pub(crate) struct Watchdog {
    id: u64,
    threshold: Duration,
    period: Duration,
    slab: parking_lot::Mutex<Slab>,
}


pub(crate) struct CallGuard<'a> {
    dog: &'a Watchdog,
    at: Registered,
    /// The registered call's descriptor lives at least as long as the guard.
    _desc: std::marker::PhantomData<&'a PlanDesc>,
}

#[cfg_attr(loom, allow(dead_code))]
enum Registered {
    /// The calling thread's [`CallSlot`] (the pointer as for `Thread`).
    Slot(*const ThreadCalls),
    /// Slot `usize` of the calling thread's list. The pointer is the thread-local `Arc`'s,
    /// alive as long as the thread, and the guard never leaves the thread (it is `!Send`).
    Thread(*const ThreadCalls, usize),
    Slab(usize),
}

impl Drop for CallGuard<'_> {
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn drop(&mut self) {
        let call = match self.at {
            // SAFETY: see `Registered::Thread`.
            Registered::Slot(mine) => unsafe { &*mine }.slot.leave(),
            _ => self.leave_elsewhere(),
        };
        if let Some(c) = call
            && c.reported
        {
            returned_after_stall(&c);
        }
    }
}

impl CallGuard<'_> {
    /// Ends a call registered in its thread's list or the slab (see `Watchdog::enter_slab`).
    #[cold]
    #[inline(never)]
    fn leave_elsewhere(&self) -> Option<Call> {
        match self.at {
            Registered::Slot(_) => None,
            Registered::Thread(mine, slot) => {
                // SAFETY: see `Registered::Thread`.
                let mine = unsafe { &*mine };
                let mut calls = mine.calls.lock();
                let call = calls[slot].take();
                while calls.last().is_some_and(Option::is_none) {
                    calls.pop();
                }
                call
            }
            Registered::Slab(slot) => {
                let mut slab = self.dog.slab.lock();
                let call = slab.calls[slot].take().map(|(c, _)| c);
                slab.free.push(slot);
                call
            }
        }
    }
}

/// A call reported as stalled has returned: said once, out of the hot path.
#[cold]
#[inline(never)]
fn returned_after_stall(c: &Call) {
    // SAFETY: called from the guard's drop, which borrows the descriptor (`_desc`).
    let desc = unsafe { &*c.desc };
    tracing::warn!(call = c.kind.api_name(), desc = %desc, "a stalled call returned");
}

impl Watchdog {
    pub(crate) fn new(threshold: Duration) -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let period = (threshold / 4).clamp(Duration::from_millis(5), Duration::from_millis(500));
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Watchdog { id, threshold, period, slab: Default::default() }
    }

    /// Registers a call until the guard drops. `ceiling` is the call's device's: a raw
    /// pointer to it is kept (no reference count on the hot path), valid because the caller
    /// holds the `Arc` for longer than the guard.
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    pub(crate) fn enter<'a, C: LiveCounts + 'static>(&'a self, kind: CallKind, desc: &'a PlanDesc, ceiling: &Arc<C>) -> CallGuard<'a> {
        let ceiling: *const C = Arc::as_ptr(ceiling);
        let ceiling = ceiling as *const dyn LiveCounts;
        let call = Call { kind, ceiling, desc, dog: self.id, age: 0, reported: false };
        #[cfg(not(loom))]
        let call = match MINE.try_with(|mine| match mine.slot.enter(call) {
            Ok(_) => Registered::Slot(Arc::as_ptr(mine)),
            Err(call) => enter_nested(mine, call),
        }) {
            Ok(at) => return CallGuard { dog: self, at, _desc: std::marker::PhantomData },
            Err(_) => call,
        };
        self.enter_slab(call)
    }

    /// [`Watchdog::enter`] where the thread's list cannot be reached. Out of line, as are
    /// the nested call's and a reported call's paths: what every execution runs stays on
    /// few instruction lines (docs/design.md, "The hot path's code").
    #[cold]
    #[inline(never)]
    fn enter_slab(&self, call: Call) -> CallGuard<'_> {
        let thread: Arc<str> = format!("{:?}", std::thread::current().id()).into();
        let mut slab = self.slab.lock();
        let slot = match slab.free.pop() {
            Some(i) => {
                slab.calls[i] = Some((call, thread));
                i
            }
            None => {
                slab.calls.push(Some((call, thread)));
                slab.calls.len() - 1
            }
        };
        CallGuard { dog: self, at: Registered::Slab(slot), _desc: std::marker::PhantomData }
    }

    /// Runs `f` on each call registered with this watchdog and the name of its thread,
    /// under the lock of the list holding it.
    fn each_call(&self, mut f: impl FnMut(&mut Call, &str)) {
        let threads: Vec<Arc<ThreadCalls>> = THREADS.lock().iter().filter_map(Weak::upgrade).collect();
        for t in &threads {
            t.slot.with_call(|c| {
                if c.dog == self.id {
                    f(c, &t.name)
                }
            });
            for c in t.calls.lock().iter_mut().flatten().filter(|c| c.dog == self.id) {
                f(c, &t.name);
            }
        }
        for (c, name) in self.slab.lock().calls.iter_mut().flatten() {
            f(c, name);
        }
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
        let mut out = Vec::new();
        self.each_call(|c, thread| {
            if c.age >= limit {
                out.push(describe(c, thread, self.elapsed(c)));
            }
        });
        out
    }

    /// Calls past the threshold now, of one device or all.
    pub(crate) fn scan_device(&self, device: Option<i32>) -> usize {
        let limit = self.stalled_age();
        let mut n = 0;
        self.each_call(|c, _| n += usize::from(device.is_none_or(|d| d == c.desc().device) && c.age >= limit));
        n
    }

    /// Ages every call by one scan and reports each that crossed the threshold, once.
    fn scan(&self) {
        let limit = self.stalled_age();
        let mut reports = Vec::new();
        self.each_call(|c, thread| {
            c.age = c.age.saturating_add(1);
            if c.age >= limit && !c.reported {
                c.reported = true;
                reports.push((c.kind, *c.desc(), describe(c, thread, self.period * c.age)));
            }
        });
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

/// A call made while the thread's slot holds another (a nested one): the thread's list.
#[cfg_attr(loom, allow(dead_code))]
#[cold]
#[inline(never)]
fn enter_nested(mine: &Arc<ThreadCalls>, call: Call) -> Registered {
    let mut calls = mine.calls.lock();
    calls.push(Some(call));
    Registered::Thread(Arc::as_ptr(mine), calls.len() - 1)
}

fn describe(c: &Call, thread: &str, elapsed: Duration) -> StalledCall {
    // SAFETY: called under the lock of the list holding `c`, while it is registered (see
    // `Call::ceiling`).
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
        c.desc(),
        thread,
        ceiling.live(),
        ceiling.limit(),
        hint
    );
    StalledCall { kind: c.kind, desc: c.desc().to_string(), thread: thread.to_string(), elapsed_s: elapsed.as_secs_f64(), message }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::desc::TransformType;

    struct Counts;
    impl LiveCounts for Counts {
        fn live(&self) -> usize {
            3
        }
        fn limit(&self) -> usize {
            4
        }
    }

    /// A watchdog whose every registered call is stalled after one scan.
    fn dog() -> Watchdog {
        Watchdog::new(Duration::from_millis(1))
    }

    #[test]
    fn each_watchdog_sees_only_its_own_calls_and_names_the_thread() {
        let (a, b, c) = (dog(), dog(), Arc::new(Counts));
        let d8 = PlanDesc::new(TransformType::C2C, &[8], 1);
        let d16 = PlanDesc::new(TransformType::R2C, &[16], 2);
        let name = std::thread::Builder::new()
            .name("watched-thread".into())
            .spawn(move || {
                let _one = a.enter(CallKind::Create, &d8, &c);
                let _two = b.enter(CallKind::Destroy, &d16, &c);
                a.scan();
                let stalled = a.stalled();
                assert_eq!(stalled.len(), 1, "a sees its one call, not b's");
                assert_eq!((stalled[0].kind, stalled[0].desc.as_str()), (CallKind::Create, d8.to_string().as_str()));
                assert!(stalled[0].message.contains("3 live of ceiling 4"), "{}", stalled[0].message);
                assert_eq!(b.scan_device(None), 0, "b's call was never scanned");
                b.scan();
                assert_eq!(b.scan_device(Some(0)), 1);
                assert_eq!(b.scan_device(Some(1)), 0);
                stalled[0].thread.clone()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(name, "watched-thread");
    }

    #[test]
    fn guards_dropped_out_of_order_leave_no_call_behind() {
        let (w, c) = (dog(), Arc::new(Counts));
        let d = PlanDesc::new(TransformType::C2C, &[8], 1);
        let outer = w.enter(CallKind::Exec, &d, &c);
        let inner = w.enter(CallKind::Destroy, &d, &c);
        w.scan();
        assert_eq!(w.scan_device(None), 2);
        drop(outer);
        assert_eq!(w.stalled().iter().map(|s| s.kind).collect::<Vec<_>>(), [CallKind::Destroy]);
        drop(inner);
        assert!(w.stalled().is_empty());
        // The slots are reused: a new call registers and leaves like the first.
        let again = w.enter(CallKind::Create, &d, &c);
        w.scan();
        assert_eq!(w.stalled().len(), 1);
        drop(again);
        assert_eq!(w.scan_device(None), 0);
        MINE.with(|m| assert!(m.calls.lock().is_empty(), "the thread's list is empty again"));
    }

    /// Two scanners at one slot: the second, finding the call pinned by the first, waits
    /// for it rather than skipping the call (before the fix it skipped it: that scan did not
    /// age the call, and `stalled` could leave out a call past the threshold).
    #[test]
    fn a_call_another_scanner_has_pinned_is_waited_for_not_skipped() {
        use std::sync::atomic::Ordering;
        let slot = CallSlot::new();
        let ceiling = Arc::new(Counts);
        let d = PlanDesc::new(TransformType::C2C, &[8], 1);
        let ceiling_ptr: *const Counts = Arc::as_ptr(&ceiling);
        let call = Call { kind: CallKind::Create, ceiling: ceiling_ptr, desc: &d, dog: 1, age: 0, reported: false };
        assert!(slot.enter(call).is_ok(), "the slot is free");
        let (pinned_tx, pinned_rx) = crossbeam_channel::bounded::<()>(0);
        let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(0);
        std::thread::scope(|s| {
            let first = s.spawn(|| {
                slot.with_call(|_| {
                    pinned_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                })
            });
            pinned_rx.recv().unwrap();
            let second = s.spawn(|| {
                let mut visited = false;
                slot.with_call(|c| {
                    c.age += 1;
                    visited = true;
                });
                visited
            });
            // The second scanner is in once it counts as a reader (or it returned at once).
            while slot.readers.load(Ordering::SeqCst) < 2 && !second.is_finished() {
                std::thread::yield_now();
            }
            go_tx.send(()).unwrap();
            first.join().unwrap();
            assert!(second.join().unwrap(), "the second scanner visited the call once the first unpinned it");
        });
        assert_eq!(slot.leave().map(|c| c.age), Some(1), "the second scan aged the call");
        assert_eq!(slot.current.load(Ordering::SeqCst), 0);
    }

    /// The lock-free slot under a scanner on another thread: every call the owner is in is
    /// seen whole (its own descriptor, never another call's), none is seen after it left,
    /// and the owner's leave never returns while a scan reads its call.
    #[test]
    fn a_scanner_on_another_thread_sees_slot_calls_whole_and_never_after_they_left() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let w = Arc::new(dog());
        let c = Arc::new(Counts);
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let scanner = {
            let (w, stop, seen) = (w.clone(), stop.clone(), seen.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    w.each_call(|call, thread| {
                        assert_eq!(thread, "slot-owner");
                        let d = call.desc();
                        // Each call's descriptor is [n] with batch n: a torn read breaks that.
                        assert_eq!(d.dims()[0], d.batch, "a call read whole");
                        seen.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
        };
        let owner = {
            let (w, c, seen) = (w.clone(), c.clone(), seen.clone());
            std::thread::Builder::new()
                .name("slot-owner".into())
                .spawn(move || {
                    // At least 200 000 calls, and on until the scanner has seen 1 000 of
                    // them (a loaded machine may not run it at first), for at most 20 s.
                    let until = std::time::Instant::now() + Duration::from_secs(20);
                    let mut i = 0i64;
                    while i < 200_000 || (seen.load(Ordering::Relaxed) < 1_000 && std::time::Instant::now() < until) {
                        i += 1;
                        let n = 1 + (i % 64);
                        let d = PlanDesc::new(TransformType::C2C, &[n], n);
                        let g = w.enter(CallKind::Exec, &d, &c);
                        std::hint::black_box(&d);
                        drop(g);
                    }
                    MINE.with(|m| assert_eq!(m.slot.current.load(Ordering::SeqCst), 0, "the slot is empty after the last call"));
                })
                .unwrap()
        };
        owner.join().unwrap();
        stop.store(true, Ordering::SeqCst);
        scanner.join().unwrap();
        assert!(w.stalled().is_empty(), "no call outlives its guard");
        assert!(seen.load(Ordering::Relaxed) > 0, "the scanner saw calls in progress");
    }
}
