//! `Lease`: one execution's hold on a plan.
//!
//! A plan with a lease out is never destroyed. Releasing never calls the GPU runtime (it is
//! one atomic decrement, plus a channel send for the last lease of an evicted plan), so it
//! is safe where HIP calls are forbidden, such as a stream host callback.

use std::fmt;
use std::sync::Arc;

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::pool::entry::PlanEntry;
use crate::error::{Error, Result};
use crate::pool::lease_state::Released;
use crate::observe::counters::Counters;
use crate::runtime::boundary::{DevicePtr, RawPlan, RawStream, with_device};

pub struct Lease {
    pub(crate) entry: Arc<PlanEntry>,
}

/// `release_after` could not hand the lease to the completion thread; the lease comes back
/// so that it is neither lost nor released while its execution may be in flight.
pub struct ReleaseAfterError {
    pub error: Error,
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
    pub fn plan(&self) -> RawPlan {
        self.entry.plan
    }

    /// Work-area bytes the plan needs per execution (what `hipfftMakePlanMany64` returned).
    pub fn work_size(&self) -> usize {
        self.entry.work_size
    }

    pub fn desc(&self) -> &PlanDesc {
        &self.entry.desc
    }

    /// Enqueues one transform: set-stream, set-work-area and exec as one step for this plan,
    /// so two threads never interleave them. `work_area` must hold `work_size()` bytes when
    /// that is non-zero (unless the plan owns its area); a zero-byte area is never passed on
    /// as null. `direction` must be `Forward` for R2C/D2Z and `Inverse` for C2R/Z2D.
    pub fn exec(
        &self,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        work_area: Option<DevicePtr>,
    ) -> Result<()> {
        let area = self.checked_area(input, output, direction, work_area)?;
        self.enqueue(stream, input, output, direction, area)
    }

    /// Checks an execution's arguments; returns the work area to pass on.
    fn checked_area(
        &self,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        work_area: Option<DevicePtr>,
    ) -> Result<Option<DevicePtr>> {
        let e = &*self.entry;
        if input.is_null() {
            return Err(Error::invalid_argument("input", "null device pointer"));
        }
        if output.is_null() {
            return Err(Error::invalid_argument("output", "null device pointer"));
        }
        check_direction(e.desc.transform, direction)?;
        match work_area.filter(|p| !p.is_null()) {
            Some(p) if e.work_size > 0 => Ok(Some(p)),
            // A zero-size plan needs no area: do not call SetWorkArea at all.
            _ if e.work_size == 0 || e.auto_allocation => Ok(None),
            _ => Err(Error::invalid_argument(
                "work_area",
                format!("null, but the plan needs a work area of {} bytes", e.work_size),
            )),
        }
    }

    fn enqueue(
        &self,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        area: Option<DevicePtr>,
    ) -> Result<()> {
        let e = &*self.entry;
        let rt = &*e.core.runtime;
        let _serial = e.exec_lock.lock();
        let _call = e.core.watchdog.enter(crate::observe::watchdog::CallKind::Exec, &e.desc, &e.dev.ceiling);
        let r = with_device(rt, e.desc.device, || rt.plan_exec(e.plan, e.desc.transform, stream, area, input, output, direction));
        if r.is_err() {
            Counters::bump(&e.dev.counters.exec_failures);
        }
        r
    }

    /// Bytes the input buffer of one execution spans (what a scratch copy needs).
    pub fn input_bytes(&self) -> usize {
        self.entry.input_bytes
    }

    /// Like [`Lease::exec`], but leaves `input` untouched. C2R and Z2D overwrite their input
    /// on cuFFT and hipFFT (and hipFFT's R2C may too), so the input is first copied to
    /// `scratch` (at least [`Lease::input_bytes`] bytes, from the caller's allocator) on the
    /// same stream, and the transform reads the copy.
    pub fn exec_preserving_input(
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
        with_device(rt, self.entry.desc.device, || rt.memcpy_dtod_async(scratch, input, self.input_bytes(), stream))?;
        self.enqueue(stream, scratch, output, direction, area)
    }

    /// Releases now. The caller vouches that no execution under this lease is still pending
    /// on the device (or uses [`Lease::release_after`]). Never calls the runtime.
    pub fn release(self) {
        drop(self)
    }

    /// Releases once the work enqueued so far on `stream` completes: the pool records an
    /// event there and its completion thread releases the lease when the event fires.
    pub fn release_after(self, stream: RawStream) -> Result<(), ReleaseAfterError> {
        crate::pool::completion::release_after(self, stream)
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
    if d == want {
        Ok(())
    } else {
        Err(Error::invalid_argument(
            "direction",
            format!("{} for {t}, which is always {}", d.raw(), if want == Direction::Forward { "forward (-1)" } else { "inverse (+1)" }),
        ))
    }
}

impl Drop for Lease {
    #[inline]
    fn drop(&mut self) {
        match self.entry.state.release() {
            Released::StillLeased => {}
            Released::Idle => {
                // An idle plan may be evicted: a miss waiting at the ceiling should look again.
                self.entry.dev.ceiling.notify_if_waiting();
            }
            Released::LastOfRetired => {
                // Hand it to the destroyer thread; if that is gone (process teardown), the
                // plan is destroyed by whoever drains the queue, never here.
                let _ = self.entry.core.retire_tx.send(self.entry.clone());
            }
        }
    }
}
