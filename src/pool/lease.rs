//! `Lease`: one execution's hold on a plan.
//!
//! A plan with a lease out is never destroyed. Releasing never calls the GPU runtime (it is
//! one atomic decrement, plus a channel send for the last lease of an evicted plan), so it
//! is safe where HIP calls are forbidden, such as a stream host callback.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::pool::batch::Added;
use crate::pool::entry::{Core, Held, PlanEntry};
use crate::error::{Error, Result};
use crate::observe::counters::Counters;
use crate::runtime::boundary::{DevicePtr, RawPlan, RawStream, with_device};
use crate::sync::{AtomicUsize, Ordering};

/// One execution's hold on a cached plan, from [`PlanPool::acquire`](crate::PlanPool::acquire).
/// While it is held the plan is never destroyed; release it once the work enqueued under it
/// completed ([`Lease::release_after`] does that for a stream). Dropped without either, it
/// releases at once if nothing was executed under it, and otherwise once the work on the
/// stream of its last execution is done (an event the drop records there), never at once.
///
/// # Examples
///
/// ```
/// # use std::sync::Arc;
/// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
/// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
/// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
/// # let pool = PlanPool::new(config, runtime.clone())?;
/// let desc = PlanDesc::new(TransformType::R2C, &[400], 16);
/// let lease = pool.acquire(&desc)?;
/// assert_eq!(lease.desc(), &desc);
/// assert_eq!(pool.metrics().in_flight, 1);
/// drop(lease); // dropping releases, like `release`
/// assert_eq!(pool.metrics().in_flight, 0);
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
#[must_use = "dropping a lease releases it: after the work it enqueued when it executed, at once otherwise"]
pub struct Lease {
    pub(crate) entry: Held,
    /// The stream of the last execution enqueued under this lease ([`NOT_EXECUTED`] before
    /// any), so that a drop releases after that work instead of at once.
    pub(crate) last_stream: AtomicUsize,
}

/// `Lease::last_stream` before any execution (no stream handle has this value).
pub(crate) const NOT_EXECUTED: usize = usize::MAX;

impl Lease {
    /// The lease that `entry` stands for.
    pub(crate) fn new(entry: Held) -> Lease {
        Lease { entry, last_stream: AtomicUsize::new(NOT_EXECUTED) }
    }
}

/// `release_after` could not hand the lease to the completion thread; the lease comes back
/// so that it is neither lost nor released while its execution may be in flight.
pub struct ReleaseAfterError {
    /// Why: the pool shut down, or recording the event failed (named with its code).
    pub error: Error,
    /// The lease, still held: synchronize the stream, then drop it.
    pub lease: Lease,
}

impl fmt::Debug for ReleaseAfterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReleaseAfterError({})", self.error)
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease").field("plan", &self.entry.plan).field("desc", &self.entry.desc).finish()
    }
}

impl Lease {
    /// The raw `hipfftHandle` (a pointer on AMD, an `int` on NVIDIA), for callers that drive
    /// hipFFT themselves. Valid while this lease is held.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// assert_ne!(lease.plan().0, 0);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn plan(&self) -> RawPlan {
        self.entry.plan
    }

    /// The memory an execution under this lease reads first (the lease, its plan's two
    /// hot lines, the pool's core, the runtime, the device and the watchdog), as addresses
    /// to prefetch.
    ///
    /// After a host's own work has evicted the pool's lines, an execution finds each of
    /// them in memory, one after the other (each address is read from the one before). A
    /// host that knows an execution is coming (a framework setting the stream first) can
    /// prefetch them all at once instead ([`ExecLines::prefetch`]). The addresses stay
    /// valid while the lease is held and not moved (the first is the lease's own: take
    /// them where it stays, an `Arc` for one); a stale one is harmless (a prefetch never
    /// faults).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[1024], 4))?;
    /// let lines = lease.exec_lines(); // kept beside the handle
    /// lines.prefetch(); // later, when an execution is coming
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn exec_lines(&self) -> ExecLines {
        let e: &PlanEntry = &self.entry;
        let core = &*e.core;
        let base = e as *const PlanEntry as usize;
        let at = |p: *const u8| p as usize;
        ExecLines([
            at(self as *const Lease as *const u8),
            base,
            base + 64,
            at(&core.one_device as *const bool as *const u8),
            at(&core.runtime as *const _ as *const u8),
            at(std::sync::Arc::as_ptr(&core.runtime) as *const u8),
            at(std::sync::Arc::as_ptr(&core.watchdog) as *const u8),
            at(&e.dev.ceiling as *const _ as *const u8),
        ])
    }

    /// Work-area bytes the plan needs per execution (what `hipfftMakePlanMany64` returned).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[1024], 4))?;
    /// let work = runtime.malloc(lease.work_size())?; // what each execution needs
    /// // SAFETY: allocated above, used by nothing.
    /// unsafe { runtime.free(work) }?;
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn work_size(&self) -> usize {
        self.entry.work_size
    }

    /// Whether a miss waits for a slot of this plan's ceiling right now: a holder that keeps
    /// leases for later use (the interposer's sticky leases) lets this one go instead, since
    /// the waiter would sleep on it. One load of the ceiling's waiter count.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new(PoolConfig::builder().capacity(2).private_ceiling(2).build()?, runtime)?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// assert!(!lease.ceiling_has_waiters(), "no miss waits");
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    #[inline]
    pub fn ceiling_has_waiters(&self) -> bool {
        self.entry.dev.ceiling.waiters() > 0
    }

    /// Another lease on the same plan: the plan stays alive until both are released. A
    /// holder that keeps a plan for good (the interposer's resident plans) serves each of
    /// its executions from it instead of leasing a second plan of the same shape.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let kept = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let again = kept.share();
    /// assert_eq!(again.plan(), kept.plan());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn share(&self) -> Lease {
        Lease::new(self.entry.share())
    }

    /// The descriptor the plan was made for.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::Z2Z, &[32, 32], 2);
    /// assert_eq!(pool.acquire(&desc)?.desc(), &desc);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn desc(&self) -> &PlanDesc {
        &self.entry.desc
    }

    /// Enqueues one transform: set-stream, set-work-area and exec as one step for this plan,
    /// so two threads never interleave them. `work_area` must hold `work_size()` bytes when
    /// that is non-zero (unless the plan owns its area); a zero-byte area is never passed on
    /// as null. `direction` must be `Forward` for R2C/D2Z and `Inverse` for C2R/Z2D.
    ///
    /// Null pointers, a wrong direction and a missing work area are refused with
    /// [`Error::InvalidArgument`] before anything is enqueued; what cannot be checked is the
    /// caller's promise below.
    ///
    /// # Safety
    /// - `stream` is [`RawStream::NULL`] or a live stream of the pool's runtime on the plan's
    ///   device.
    /// - `input` and `output` are device memory of the plan's device holding the plan's input
    ///   and output extents (`input_bytes()` and the output's size; they may be equal for an
    ///   in-place transform), and `work_area`, when given, holds `work_size()` bytes.
    /// - All three stay allocated, and nothing else writes them, until the transform
    ///   completes on `stream`; the lease is held that long too (release it with
    ///   [`Lease::release_after`] on the same stream).
    /// - `stream` stays live until the lease is released, released after, or dropped: a
    ///   lease dropped after an execution releases once the work on its last stream is done
    ///   (an event recorded there by the drop), never at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::C2C, &[64], 1);
    /// let lease = pool.acquire(&desc)?;
    /// let ext = desc.extents()?;
    /// // On the sim device memory is host memory; on a GPU these come from the host's allocator.
    /// let (input, output) = (runtime.malloc(ext.input_bytes)?, runtime.malloc(ext.output_bytes)?);
    /// let work = runtime.malloc(lease.work_size())?;
    /// let stream = runtime.stream_create()?;
    /// // SAFETY: the buffers are the pool's runtime's, of the sizes the plan needs, and are freed
    /// // only after the stream finished; the lease is released after the stream's work too.
    /// unsafe {
    ///     runtime.memcpy_htod(input, &vec![0u8; ext.input_bytes])?;
    ///     lease.exec(stream, input, output, hipfft_pool::Direction::Forward, Some(work))?;
    ///     lease.release_after(stream)?;
    ///     runtime.stream_synchronize(stream)?;
    ///     for buffer in [input, output, work] {
    ///         runtime.free(buffer)?;
    ///     }
    ///     runtime.stream_destroy(stream)?;
    /// }
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    pub unsafe fn exec(
        &self,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        work_area: Option<DevicePtr>,
    ) -> Result<()> {
        let area = self.checked_area(input, output, direction, work_area)?;
        // SAFETY: the caller's promise, with the area checked against the plan above.
        unsafe { self.enqueue(stream, input, output, direction, area) }
    }

    /// Checks an execution's arguments; returns the work area to pass on.
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn checked_area(
        &self,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        work_area: Option<DevicePtr>,
    ) -> Result<Option<DevicePtr>> {
        let e = &*self.entry;
        if input.is_null() {
            return Err(null_device_pointer("input"));
        }
        if output.is_null() {
            return Err(null_device_pointer("output"));
        }
        check_direction(e.desc.transform, direction)?;
        match work_area.filter(|p| !p.is_null()) {
            Some(p) if e.work_size > 0 => Ok(Some(p)),
            // A zero-size plan needs no area: do not call SetWorkArea at all.
            _ if e.work_size == 0 || e.auto_allocation => Ok(None),
            _ => Err(no_work_area(e.work_size)),
        }
    }

    /// # Safety
    /// [`Lease::exec`]'s contract, with `area` checked by `checked_area`.
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    unsafe fn enqueue(
        &self,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        area: Option<DevicePtr>,
    ) -> Result<()> {
        let e = &*self.entry;
        let rt = &*e.core.runtime;
        let mut carried = e.exec_lock.lock();
        let _call = e.core.watchdog.enter(crate::observe::watchdog::CallKind::Exec, &e.desc, &e.dev.ceiling);
        let rebind = carried.rebind(stream, area);
        // SAFETY: the plan is live while this lease is held, made for its transform, and
        // `exec_lock` keeps other threads out; the caller vouched for stream and buffers;
        // what `rebind` skips, the plan carries (`Carried`, kept under the same lock).
        let r = e.core.on_device(e.desc.device, || unsafe {
            rt.plan_exec_bound(e.plan, e.desc.transform, stream, area, input, output, direction, rebind)
        });
        match r {
            Ok(()) => {
                carried.record(Some(stream), area);
                self.last_stream.store(stream.0, Ordering::Relaxed)
            }
            Err(_) => {
                // A failed call may have set either: know nothing.
                *carried = Default::default();
                Counters::bump(&e.dev.counters.exec_failures)
            }
        }
        r
    }

    /// Sets the stream (and work area) the plan's next executions run on, ahead of them:
    /// an execution that finds them set makes only the transform's call. What the plan
    /// already carries is not set again. A framework that sets both before a graph capture
    /// and executes inside it thus captures what it would natively. A zero-size plan takes
    /// no work area.
    ///
    /// # Safety
    /// `stream`, when given, is a live stream of the plan's device; `work_area`, when given,
    /// is device memory of at least [`Lease::work_size`] bytes that stays allocated while an
    /// execution that uses it is pending (an execution passes its own area anyway).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{Direction, PlanDesc, PlanPool, PoolConfig, RawStream, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::C2C, &[64], 1);
    /// let lease = pool.acquire(&desc)?;
    /// let buf = runtime.malloc(64 * 8)?;
    /// let work = runtime.malloc(lease.work_size().max(1))?;
    /// // SAFETY: the null stream; `work` holds the plan's work size and outlives the execution.
    /// unsafe { lease.bind(Some(RawStream::NULL), Some(work))? };
    /// // SAFETY: `buf` holds the transform in place; the area is the one bound.
    /// unsafe { lease.exec(RawStream::NULL, buf, buf, Direction::Forward, Some(work))? };
    /// # unsafe { runtime.stream_synchronize(RawStream::NULL)?; runtime.free(buf)?; runtime.free(work)?; }
    /// # lease.release();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub unsafe fn bind(&self, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<()> {
        let e = &*self.entry;
        if work_area.is_some_and(|w| w.is_null()) {
            return Err(Error::invalid_argument("work_area", "null device pointer"));
        }
        let mut carried = e.exec_lock.lock();
        let stream = stream.filter(|s| carried.stream != Some(*s));
        let work_area = work_area.filter(|w| e.work_size > 0 && carried.work_area != Some(*w));
        if stream.is_none() && work_area.is_none() {
            return Ok(());
        }
        let rt = &*e.core.runtime;
        // SAFETY: the plan is live while this lease is held and `exec_lock` keeps other
        // threads out; the caller vouched for the stream and the area's size and life.
        match e.core.on_device(e.desc.device, || unsafe { rt.plan_bind(e.plan, stream, work_area) }) {
            Ok(true) => carried.record(stream, work_area),
            Ok(false) => {}
            Err(err) => {
                *carried = Default::default();
                return Err(err);
            }
        }
        Ok(())
    }

    /// Bytes the input buffer of one execution spans (what a scratch copy needs).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::C2R, &[16], 2);
    /// // 2 batches of 9 complex floats (8 bytes each): the half spectrum of 16 points.
    /// assert_eq!(pool.acquire(&desc)?.input_bytes(), 2 * 9 * 8);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn input_bytes(&self) -> usize {
        self.entry.input_bytes
    }

    /// Like [`Lease::exec`], but leaves `input` untouched. C2R and Z2D overwrite their input
    /// on cuFFT and hipFFT (and hipFFT's R2C may too), so the input is first copied to
    /// `scratch` (at least [`Lease::input_bytes`] bytes, from the caller's allocator) on the
    /// same stream, and the transform reads the copy.
    ///
    /// # Safety
    /// [`Lease::exec`]'s contract, and `scratch` is device memory of the plan's device of at
    /// least [`Lease::input_bytes`] bytes, apart from `input` and `output`, that stays
    /// allocated until the transform completes on `stream`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::C2R, &[64], 1);
    /// let lease = pool.acquire(&desc)?;
    /// let ext = desc.extents()?;
    /// let (input, output) = (runtime.malloc(ext.input_bytes)?, runtime.malloc(ext.output_bytes)?);
    /// let (work, scratch) = (runtime.malloc(lease.work_size())?, runtime.malloc(lease.input_bytes())?);
    /// let stream = runtime.stream_create()?;
    /// let spectrum = vec![1u8; ext.input_bytes];
    /// // SAFETY: as for `exec`, and `scratch` holds `input_bytes()` bytes of its own.
    /// unsafe {
    ///     runtime.memcpy_htod(input, &spectrum)?;
    ///     lease.exec_preserving_input(stream, input, output, hipfft_pool::Direction::Inverse, Some(work), scratch)?;
    ///     lease.release_after(stream)?;
    ///     runtime.stream_synchronize(stream)?;
    ///     let mut after = vec![0u8; ext.input_bytes];
    ///     runtime.memcpy_dtoh(&mut after, input)?;
    ///     assert!(after == spectrum, "C2R overwrote the copy, not the input");
    ///     for buffer in [input, output, work, scratch] {
    ///         runtime.free(buffer)?;
    ///     }
    ///     runtime.stream_destroy(stream)?;
    /// }
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub unsafe fn exec_preserving_input(
        &self,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        work_area: Option<DevicePtr>,
        scratch: DevicePtr,
    ) -> Result<()> {
        // Every argument is checked before the copy is enqueued: a refused call leaves
        // nothing pending on `scratch`.
        let area = self.checked_area(input, output, direction, work_area)?;
        if scratch.is_null() {
            return Err(Error::invalid_argument("scratch", "null device pointer"));
        }
        if input == output {
            return Err(Error::invalid_argument("output", "equals the input: an in-place transform cannot preserve it"));
        }
        if scratch == input || scratch == output {
            return Err(Error::invalid_argument(
                "scratch",
                format!("equals the {}: the scratch copy needs its own buffer", if scratch == input { "input" } else { "output" }),
            ));
        }
        let rt = &*self.entry.core.runtime;
        // SAFETY: the caller promised `input` and `scratch` hold `input_bytes()` and `stream`
        // is live; both stay allocated until the stream passes the transform.
        with_device(rt, self.entry.desc.device, || unsafe {
            rt.memcpy_dtod_async(scratch, input, self.input_bytes(), stream)
        })?;
        // SAFETY: as above; the transform reads the copy, in stream order after it.
        unsafe { self.enqueue(stream, scratch, output, direction, area) }
    }

    /// Releases now. The caller vouches that no execution under this lease is still pending
    /// on the device (or uses [`Lease::release_after`]). Never calls the runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// lease.release(); // nothing was enqueued under it
    /// assert_eq!(pool.metrics().in_flight, 0);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn release(self) {
        // The caller vouches for completion: no event, no runtime call.
        self.last_stream.store(NOT_EXECUTED, Ordering::Relaxed);
        drop(self)
    }

    /// Releases once the work enqueued so far on `stream` completes: the pool records an
    /// event there and its completion thread releases the lease when the event fires.
    ///
    /// On a stream that is capturing a graph it is refused ([`Error::InvalidArgument`]
    /// naming `stream`) and the lease comes back: a captured execution runs each time a graph
    /// holding it is launched, and a framework may keep instantiated graphs and update them
    /// in place long after the launch. Hold the lease (as a [`StandingLease`], so that a full
    /// ceiling fails at once instead of waiting for it) until every graph and instantiated
    /// graph that holds the transform is destroyed, then [`release`](Lease::release) it.
    ///
    /// # Safety
    /// `stream` is [`RawStream::NULL`] or a live stream of the pool's runtime (an event is
    /// recorded on it now; it may be destroyed afterwards).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let stream = runtime.stream_create()?;
    /// // SAFETY: a live stream of the pool's runtime.
    /// unsafe { lease.release_after(stream) }?;
    /// // SAFETY: as above; destroyed once its work (none here) is done.
    /// unsafe {
    ///     runtime.stream_synchronize(stream)?;
    ///     runtime.stream_destroy(stream)?;
    /// }
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub unsafe fn release_after(self, stream: RawStream) -> Result<(), ReleaseAfterError> {
        // An event recorded during a capture proves nothing when queried, and a captured
        // execution runs whenever its graph is launched, as often as it is: only the holder
        // knows when the last graph that holds it is gone.
        // SAFETY: the caller's promise on `stream`.
        if let Ok(true) = unsafe { self.entry.core.runtime.stream_is_capturing(stream) } {
            self.entry.core.note_capture();
            return Err(ReleaseAfterError { error: captured_release(stream), lease: self });
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { PlanEntry::release_after(self.into_entry(), stream) }
            .map_err(|(error, entry)| ReleaseAfterError { error, lease: Lease::new(entry) })
    }

    /// Releases once the work enqueued on `stream` up to the end of the current batch
    /// completes: no event now; [`PlanPool::end_batch`](crate::PlanPool::end_batch) records
    /// one event that covers every lease of the batch (a later event on a stream covers all
    /// earlier work on it). A batch that reaches [`BATCH_LIMIT`](crate::BATCH_LIMIT) leases
    /// is ended by the call that fills it. For a host with a completion point per batch of
    /// executions (a command buffer's commit): one event per batch instead of one per call.
    ///
    /// Whether the stream is capturing a graph is asked once per batch, by the call that
    /// opens it, not on every call: on a capturing stream no batch opens and the lease takes
    /// the [`Lease::release_after`] path, which refuses it: the lease is then kept for the
    /// process's life as a [`StandingLease`] (nothing else could tell when the graphs that hold
    /// it are gone) and the error says so. So do the streams 0, 1 and 2 (legacy and per-thread default streams, which name a different
    /// stream on each thread). A batch is not ended inside a capture: the call that fills
    /// it then lets it grow, and `end_batch` returns an error and leaves it open. Until its
    /// batch ends, the lease holds its plan as any lease does: a miss at a full ceiling
    /// waits for it.
    ///
    /// If the event of a batch that fills here cannot be recorded, the stream is
    /// synchronized and the batch released; if that fails too, its leases stay held for good
    /// (logged) and the error is returned.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's runtime, and stays live until its batch is
    /// ended (by `end_batch(stream)`, or by a `release_in_batch` on it that fills the batch).
    /// A batch opened outside a capture covers work captured into a graph from its stream
    /// only if it ends after that graph was launched on the stream: end the batch before a
    /// capture begins on its stream, or after the graph's launch.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let stream = runtime.stream_create()?;
    /// for n in [64, 128, 64] {
    ///     let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[n], 1))?;
    ///     // (enqueue work on `stream` under the lease here)
    ///     // SAFETY: `stream` is live until its batch ends below.
    ///     unsafe { lease.release_in_batch(stream) }?;
    /// }
    /// assert_eq!(pool.metrics().in_flight, 3, "held until the batch ends and its work is done");
    /// // SAFETY: as above.
    /// unsafe { pool.end_batch(stream) }?;
    /// // SAFETY: destroyed once its work is done.
    /// unsafe { runtime.stream_synchronize(stream)?; runtime.stream_destroy(stream)? };
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub unsafe fn release_in_batch(self, stream: RawStream) -> Result<()> {
        if stream.0 <= 2 {
            // SAFETY: the caller's promise on `stream`.
            return unsafe { self.release_after_or_hold(stream) };
        }
        let device = self.entry.desc.device;
        let held = self.into_entry();
        // Not an `Arc` clone (a write to a line every thread's calls share): the core
        // outlives every lease on its plans, and `held` is one until `add` queues it, after
        // which the closures below no longer run.
        let core = NonNull::from(&*held.core);
        // SAFETY: the core is live while `held` (or the batch it joined, under the batch's
        // lock when `full_refused` runs) holds a lease on one of its plans.
        let capturing = || matches!(unsafe { core.as_ref().runtime.stream_is_capturing(stream) }, Ok(true) | Err(_));
        // SAFETY: as above.
        let mut claimed = Vec::new();
        // SAFETY: as above.
        let added = unsafe { core.as_ref() }.batches.add((device, stream.0), held, capturing, capturing, &mut claimed);
        // Leases of this stream's earlier batches, done: released here, on the thread whose
        // hits will take them again (`batch`'s index says why).
        for e in claimed {
            e.release();
        }
        match added {
            Added::Queued => Ok(()),
            // SAFETY: the caller's promise on `stream`.
            Added::Refused(held) => unsafe { Lease::new(held).release_after_or_hold(stream) },
            Added::Full(batch, home) => {
                // The leases of the batch are ours now: they keep the core alive.
                let core = batch[0].core.clone();
                // SAFETY: the caller's promise: the stream is live until its batch ends, here.
                match unsafe { core.end_batch(device, stream, batch, home) } {
                    Ok(()) => Ok(()),
                    Err((error, batch)) => release_after_failed(&core, device, stream, batch, error),
                }
            }
        }
    }

    /// [`Lease::release_after`]; when that fails, the stream is synchronized and the lease
    /// released, or, failing that too, kept for good ([`release_after_failed`]).
    ///
    /// # Safety
    /// As for [`Lease::release_after`].
    unsafe fn release_after_or_hold(self, stream: RawStream) -> Result<()> {
        let device = self.entry.desc.device;
        // SAFETY: the caller's promise.
        match unsafe { self.release_after(stream) } {
            Ok(()) => Ok(()),
            Err(ReleaseAfterError { error: error @ Error::InvalidArgument { name: "stream", .. }, lease }) => {
                // Captured: held for good, counted as standing on its ceiling.
                std::mem::forget(lease.into_standing());
                Err(error)
            }
            Err(ReleaseAfterError { error, lease }) => {
                let core = lease.entry.core.clone();
                release_after_failed(&core, device, stream, vec![lease.into_entry()], error)
            }
        }
    }

    /// The lease this value held, as the pool passes it on (not released).
    fn into_entry(self) -> Held {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or used again, so the lease is moved out of it
        // exactly once (the stream word is plain data and needs no drop).
        unsafe { std::ptr::read(&this.entry) }
    }
}

fn check_direction(t: TransformType, d: Direction) -> Result<()> {
    let want = if t.is_forward_real() {
        Direction::Forward
    } else if t.is_inverse_real() {
        Direction::Inverse
    } else {
        return Ok(());
    };
    if d == want { Ok(()) } else { Err(wrong_direction(t, d, want)) }
}

// The errors of an execution's checks, out of line: the per-transform path's instructions
// stay on few cache lines, which a framework's own work between two calls evicts
// (docs/design.md, "The hot path's code").
#[cold]
#[inline(never)]
fn wrong_direction(t: TransformType, d: Direction, want: Direction) -> Error {
    Error::invalid_argument(
        "direction",
        format!("{} for {t}, which is always {}", d.raw(), if want == Direction::Forward { "forward (-1)" } else { "inverse (+1)" }),
    )
}

#[cold]
#[inline(never)]
fn null_device_pointer(name: &'static str) -> Error {
    Error::invalid_argument(name, "null device pointer")
}

#[cold]
#[inline(never)]
fn no_work_area(work_size: usize) -> Error {
    Error::invalid_argument("work_area", format!("null, but the plan needs a work area of {work_size} bytes"))
}

#[cold]
#[inline(never)]
fn captured_release(stream: RawStream) -> Error {
    Error::invalid_argument(
        "stream",
        format!(
            "{:#x} is capturing a graph: a captured execution runs each time a graph holding it is launched, so no event \
             can tell when its plan is free; hold the lease until every graph and instantiated graph holding the \
             transform is destroyed, then release it",
            stream.0
        ),
    )
}

/// A lease that GPU completion does not give back: held for as long as something outside
/// the pool needs the plan (a graph that can still run its kernels, a plan kept for the
/// process's life). While a plan has one it counts as *standing* on its ceiling
/// ([`LiveCeiling::standing`](crate::LiveCeiling::standing)); a miss that finds every slot of
/// its ceiling standing fails at once with [`Error::CeilingHeld`] instead of waiting out its
/// timeout, since no completion would free a slot.
///
/// Dropping it releases the lease at once, as [`Lease::release`] does: the holder vouches
/// that nothing still runs the plan.
///
/// # Examples
///
/// ```
/// # use std::sync::Arc;
/// # use hipfft_pool::{Error, LiveCeiling, PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
/// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
/// let ceiling = LiveCeiling::new(1);
/// let pool = PlanPool::new(PoolConfig::builder().capacity(1).shared_ceiling(ceiling.clone()).build()?, runtime)?;
/// let held = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?.into_standing();
/// assert_eq!(ceiling.standing(), 1);
/// // The one slot is held by something no GPU work will release: a miss fails at once.
/// let e = pool.acquire(&PlanDesc::new(TransformType::C2C, &[128], 1)).unwrap_err();
/// assert!(matches!(e, Error::CeilingHeld { standing: 1, ceiling: 1, .. }), "{e}");
/// drop(held); // let go: the plan is idle, and the next miss evicts it
/// assert!(pool.acquire(&PlanDesc::new(TransformType::C2C, &[128], 1)).is_ok());
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
pub struct StandingLease {
    lease: ManuallyDrop<Lease>,
}

impl Lease {
    /// This lease as a [`StandingLease`]: its plan counts as standing on its ceiling until
    /// the last standing lease on it goes.
    ///
    /// # Examples
    ///
    /// See [`StandingLease`].
    pub fn into_standing(self) -> StandingLease {
        let e: &PlanEntry = &self.entry;
        if e.standing.fetch_add(1, Ordering::SeqCst) == 0 {
            e.dev.ceiling.stand();
        }
        StandingLease { lease: ManuallyDrop::new(self) }
    }
}

impl StandingLease {
    /// The lease again, no longer standing (to release it after its stream's work, say).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{LiveCeiling, PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let ceiling = LiveCeiling::new(4);
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).shared_ceiling(ceiling.clone()).build()?, runtime)?;
    /// let held = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?.into_standing();
    /// let lease = held.into_lease();
    /// assert_eq!(ceiling.standing(), 0);
    /// lease.release();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn into_lease(self) -> Lease {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or used again: the lease moves out exactly once.
        let lease = unsafe { ManuallyDrop::take(&mut this.lease) };
        unstand(&lease);
        lease
    }
}

fn unstand(lease: &Lease) {
    let e: &PlanEntry = &lease.entry;
    if e.standing.fetch_sub(1, Ordering::SeqCst) == 1 {
        e.dev.ceiling.unstand();
    }
}

impl std::ops::Deref for StandingLease {
    type Target = Lease;
    fn deref(&self) -> &Lease {
        &self.lease
    }
}

impl fmt::Debug for StandingLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StandingLease").field(&*self.lease).finish()
    }
}

impl Drop for StandingLease {
    /// Releases at once (see the type's comment). Never panics.
    fn drop(&mut self) {
        // SAFETY: dropped once: the lease moves out exactly once.
        let lease = unsafe { ManuallyDrop::take(&mut self.lease) };
        unstand(&lease);
        lease.release();
    }
}

impl Drop for Lease {
    /// Releases at once when nothing was executed under the lease (or [`Lease::release`]
    /// vouched for completion); after the work on its last stream otherwise, never under
    /// pending work. If no event can be recorded there, the stream is synchronized first;
    /// if that fails too, the plan stays leased for good (counted live, logged), which is
    /// better than destroying it under work that may still run. Never panics.
    #[inline]
    fn drop(&mut self) {
        let last = self.last_stream.load(Ordering::Relaxed);
        // SAFETY: `self.entry` is not used again (a `Held` has no drop of its own), so the
        // lease moves out of the dropped `Lease` exactly once.
        let held = unsafe { std::ptr::read(&self.entry) };
        if last == NOT_EXECUTED {
            held.release();
        } else {
            release_after_drop(held, RawStream(last));
        }
    }
}

#[cold]
fn release_after_drop(entry: Held, stream: RawStream) {
    // The lease goes on in a fresh, unexecuted `Lease`.
    // SAFETY: `Lease::exec`'s contract keeps the last stream live until the lease is dropped.
    let Err(ReleaseAfterError { error, lease }) = (unsafe { Lease::new(entry).release_after(stream) }) else { return };
    let rt = &*lease.entry.core.runtime;
    // SAFETY: as above.
    match with_device(rt, lease.entry.desc.device, || unsafe { rt.stream_synchronize(stream) }) {
        Ok(()) => lease.release(),
        Err(sync) => {
            tracing::error!(
                plan = ?lease.entry.plan, %error, %sync,
                "a lease dropped after an execution could not be released after its work; it stays leased"
            );
            std::mem::forget(lease);
        }
    }
}

/// What a batch whose event could not be recorded comes to: the stream is synchronized and
/// the batch released; when that fails too its leases stay held for good (counted live,
/// logged) rather than released under work that may still run, and the error is returned.
pub(crate) fn release_after_failed(core: &Core, device: i32, stream: RawStream, batch: Vec<Held>, error: Error) -> Result<()> {
    let rt = &*core.runtime;
    // SAFETY: the callers' contracts keep `stream` live until the batch ends (here).
    match with_device(rt, device, || unsafe { rt.stream_synchronize(stream) }) {
        Ok(()) => {
            tracing::warn!(leases = batch.len(), %error, "no event for a batch of releases: the stream was synchronized instead");
            for e in batch {
                e.release();
            }
            Ok(())
        }
        Err(sync) => {
            tracing::error!(
                leases = batch.len(), %error, %sync,
                "a batch of releases could not be released after its work; its leases stay held"
            );
            // Dropped unreleased, the leases stay taken: the plans are never reused or destroyed.
            drop(batch);
            Err(error)
        }
    }
}

// So that `?` works on `release_after` in any function returning the crate's `Result`.

impl std::fmt::Display for ReleaseAfterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "release_after failed (the lease came back to the caller): {}", self.error)
    }
}

impl std::error::Error for ReleaseAfterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// `?` on [`Lease::release_after`] keeps the error and drops the lease that came back.
/// Dropping a lease releases it at once, so only convert where its execution is known to be
/// complete (or the device is in error); to wait first, match the error and synchronize the
/// stream before dropping `lease`.
impl From<ReleaseAfterError> for Error {
    fn from(e: ReleaseAfterError) -> Self {
        e.error
    }
}

/// Addresses an execution reads first ([`Lease::exec_lines`]), to prefetch ahead of it.
/// Plain numbers: never read through, so holding them is safe anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecLines([usize; 8]);

impl ExecLines {
    /// Asks the CPU to bring the lines into its caches, all at once; reads nothing and never
    /// faults, whatever the addresses (a no-op where the target has no prefetch hint). The
    /// calling thread's watchdog slot, which the execution writes, comes with them.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::R2C, &[400], 4))?;
    /// lease.exec_lines().prefetch();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    #[inline]
    pub fn prefetch(&self) {
        for &p in &self.0 {
            prefetch_line(p);
        }
        crate::observe::watchdog::prefetch_this_thread(prefetch_line);
    }

    /// The addresses as numbers, for a host that keeps them where an `ExecLines` cannot go
    /// (atomics that other threads read without a lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{ExecLines, PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[256], 1))?;
    /// let kept = lease.exec_lines().addresses();
    /// assert_eq!(ExecLines::from_addresses(kept), lease.exec_lines());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    #[inline]
    pub fn addresses(&self) -> [usize; 8] {
        self.0
    }

    /// Lines from addresses kept apart ([`ExecLines::addresses`]). Any numbers at all are
    /// safe: a prefetch never reads through them.
    ///
    /// # Examples
    ///
    /// ```
    /// hipfft_pool::ExecLines::from_addresses([0; 8]).prefetch(); // a hint, never a fault
    /// ```
    #[inline]
    pub fn from_addresses(addresses: [usize; 8]) -> ExecLines {
        ExecLines(addresses)
    }
}

/// A prefetch hint for the line at `p`.
#[inline(always)]
fn prefetch_line(p: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint: it reads nothing the program can see and never faults,
    // whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The promise `ExecLines` is sound on: any address at all, unmapped or in the kernel's
    /// half, is only a hint.
    #[test]
    fn prefetching_any_address_never_faults() {
        ExecLines([0, 1, 64, 4096, usize::MAX, usize::MAX - 63, 1 << 47, 0xffff_8000_0000_0000]).prefetch();
    }

    /// The lines named are the lease's own and its plan's: inside the lease and the entry it
    /// holds, so that what is prefetched is what the execution reads.
    #[test]
    fn the_lines_are_the_lease_and_its_plans_entry() {
        use crate::{PlanDesc, PlanPool, PoolConfig, SimConfig, SimRuntime};
        let rt: std::sync::Arc<dyn crate::Runtime> = std::sync::Arc::new(SimRuntime::new(SimConfig::default()));
        let pool = PlanPool::new(PoolConfig::builder().capacity(2).private_ceiling(2).build().unwrap(), rt).unwrap();
        let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1)).unwrap();
        let ExecLines(lines) = lease.exec_lines();
        assert_eq!(lines[0], &lease as *const Lease as usize);
        let entry: &PlanEntry = &lease.entry;
        let base = entry as *const PlanEntry as usize;
        assert_eq!((lines[1], lines[2]), (base, base + 64));
        assert!(std::ptr::addr_of!(entry.exec_lock) as usize >= lines[2] && (std::ptr::addr_of!(entry.exec_lock) as usize) < lines[2] + 64);
    }
}
