//! Leases: [`hfp_lease`], acquiring one, executing under it, releasing it now or after a
//! stream's work, and the debug checks that turn a double release into an error.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::sync::{LazyLock, Mutex};

use super::boundary::{Failure, guard, guard_value, hfp_status, out_ptr};
use super::pool::{hfp_pool, pool_ref};
use super::types::hfp_plan_desc;
use crate::desc::Direction;
use crate::pool::lease::Lease;
use crate::runtime::boundary::{DevicePtr, RawStream};

/// One execution's hold on a plan, from `hfp_acquire`. A plan with a lease out is never
/// destroyed. Released by `hfp_lease_release` or `hfp_lease_release_after`, each of which
/// consumes it: using a lease after that is undefined behaviour (builds with debug checks
/// report `HFP_INVALID_ARGUMENT` instead, see `hfp_debug_checks_enabled`). A lease may be
/// used from any thread, but must not be released while another thread uses it. It may
/// outlive its pool: releasing it after `hfp_pool_free` is allowed.
#[allow(non_camel_case_types)]
pub struct hfp_lease {
    /// `None` only while `hfp_lease_release_after` has the lease out.
    lease: Option<Lease>,
}

pub(super) fn debug_checks() -> bool {
    static ON: LazyLock<bool> = LazyLock::new(|| {
        cfg!(debug_assertions) || std::env::var_os("HIPFFT_POOL_DEBUG_CHECKS").is_some_and(|v| v == "1")
    });
    *ON
}

static LIVE_LEASES: LazyLock<Mutex<HashSet<usize>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

fn live_leases() -> std::sync::MutexGuard<'static, HashSet<usize>> {
    LIVE_LEASES.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_live(p: *const hfp_lease) -> Failure {
    Failure::invalid(format!(
        "invalid argument `lease` = {p:p}: lease released twice, or not a lease from hfp_acquire (debug checks)"
    ))
}

/// The lease behind `p`, checked for null (and, with debug checks, for being live).
///
/// # Safety
/// `p` is null or a lease from `hfp_acquire` not yet released (debug checks catch the rest).
unsafe fn lease_ref<'a>(p: *const hfp_lease) -> Result<&'a Lease, Failure> {
    if p.is_null() {
        return Err(Failure::null("lease"));
    }
    if debug_checks() && !live_leases().contains(&(p as usize)) {
        return Err(not_live(p));
    }
    // SAFETY: a live lease from hfp_acquire (the caller's promise, checked above in debug).
    unsafe { &*p }.lease.as_ref().ok_or_else(|| Failure::invalid("invalid argument `lease`: it is being released"))
}

/// Takes a lease on the plan for `*desc`, making the plan on a miss. On a miss at the
/// ceiling it destroys retired plans whose executions finished, evicts idle plans, calls
/// the flush hook (again at each wake-up), then waits up to the acquire timeout; it never
/// waits unbounded.
///
/// `pool`: borrowed. `desc`: borrowed for the call (its embed arrays too, `rank` entries
/// each). `out`: written with the lease, owned by the caller until `hfp_lease_release` or
/// `hfp_lease_release_after`; NULL on failure. Fails with `HFP_INVALID_DESCRIPTOR` naming
/// the field and value, `HFP_CEILING_TIMEOUT`, `HFP_CEILING_HELD` (every slot held by plans
/// no GPU work gives back), `HFP_RUNTIME_ERROR`, `HFP_SHUT_DOWN`, `HFP_FORKED` (the pool was
/// made before this process forked).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_acquire(pool: *mut hfp_pool, desc: *const hfp_plan_desc, out: *mut *mut hfp_lease) -> hfp_status {
    guard("hfp_acquire", || {
        let slot = out_ptr(out, "out")?;
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        if desc.is_null() {
            return Err(Failure::null("desc"));
        }
        // SAFETY: non-null, readable; its embeds hold `rank` entries (the caller's promise).
        let d = unsafe { (*desc).to_desc() }?;
        let lease = pool.acquire(&d)?;
        let p = Box::into_raw(Box::new(hfp_lease { lease: Some(lease) }));
        if debug_checks() {
            live_leases().insert(p as usize);
        }
        *slot = p;
        Ok(())
    })
}

/// The raw `hipfftHandle` bits (a pointer on AMD; on NVIDIA the `int` handle, widened), for
/// callers that drive hipFFT themselves. Valid while the lease is held; never destroy it.
///
/// `lease`: borrowed. NULL (or, with debug checks, a released lease): returns NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_plan(lease: *const hfp_lease) -> *mut c_void {
    guard_value("hfp_lease_plan", std::ptr::null_mut(), || {
        // SAFETY: the caller's promise on `lease`.
        Ok(unsafe { lease_ref(lease) }?.plan().0 as *mut c_void)
    })
    .0
}

/// Work-area bytes the plan needs per execution (0: it needs none).
///
/// `lease`: borrowed. NULL (or, with debug checks, a released lease): returns 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_work_size(lease: *const hfp_lease) -> usize {
    guard_value("hfp_lease_work_size", 0, || {
        // SAFETY: the caller's promise on `lease`.
        Ok(unsafe { lease_ref(lease) }?.work_size())
    })
    .0
}

/// Enqueues one transform on `stream`: set-stream, set-work-area and exec as one step for
/// this plan, so two threads never interleave them. The transform may still run after this
/// returns: keep the buffers and the lease until it completed (release the lease from a
/// completion handler, or with `hfp_lease_release_after`).
///
/// `lease`: borrowed. `stream`: a `hipStream_t` (NULL: the current device's null stream).
/// `input`, `output`: device pointers, not owned, non-NULL (in place when equal). Their
/// buffers must hold what the descriptor implies (C2R/Z2D may overwrite `input`).
/// `direction`: `HFP_FORWARD` (-1) or `HFP_INVERSE` (+1); R2C/D2Z are always forward and
/// C2R/Z2D always inverse; anything else is `HFP_INVALID_ARGUMENT`. `work_area`: a device
/// buffer of at least `hfp_lease_work_size()` bytes, not owned, used until the transform
/// completes; NULL only when the work size is 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_exec(
    lease: *mut hfp_lease,
    stream: *mut c_void,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
    work_area: *mut c_void,
) -> hfp_status {
    // SAFETY: the caller's promises, passed on.
    unsafe { exec("hfp_lease_exec", lease, stream, input, output, direction, work_area, None) }
}

/// Both executions: the arguments checked and converted once, then the plain one or the one
/// that copies its input to `scratch` first.
///
/// # Safety
/// `lease` as for the public entry points.
#[allow(clippy::too_many_arguments)]
unsafe fn exec(
    name: &'static str,
    lease: *mut hfp_lease,
    stream: *mut c_void,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
    work_area: *mut c_void,
    scratch: Option<*mut c_void>,
) -> hfp_status {
    guard(name, || {
        // SAFETY: the caller's promise on `lease`.
        let lease = unsafe { lease_ref(lease) }?;
        let direction = parse_direction(direction)?;
        let area = (!work_area.is_null()).then(|| DevicePtr::from_ptr(work_area));
        let (stream, input, output) = (RawStream(stream as usize), DevicePtr::from_ptr(input), DevicePtr::from_ptr(output));
        match scratch {
            // SAFETY: `hfp_lease_exec`'s C contract is `Lease::exec`'s: `stream` is a
            // `hipStream_t` of the pool's runtime (or NULL), `input`/`output` hold what the
            // descriptor implies and `work_area` `hfp_lease_work_size()` bytes, all kept
            // until the transform completed, and the lease is held that long.
            None => unsafe { lease.exec(stream, input, output, direction, area) }?,
            // SAFETY: as above, and `scratch` holds `hfp_lease_input_bytes()` bytes apart
            // from `input` and `output` (`hfp_lease_exec_preserving_input`'s contract).
            Some(s) => unsafe { lease.exec_preserving_input(stream, input, output, direction, area, DevicePtr::from_ptr(s)) }?,
        }
        Ok(())
    })
}

/// Bytes the input of one execution spans: the size `hfp_lease_exec_preserving_input`
/// needs for its scratch buffer.
///
/// `lease`: borrowed. NULL (or, with debug checks, a released lease): returns 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_input_bytes(lease: *const hfp_lease) -> usize {
    guard_value("hfp_lease_input_bytes", 0, || {
        // SAFETY: the caller's promise on `lease`.
        Ok(unsafe { lease_ref(lease) }?.input_bytes())
    })
    .0
}

/// Like `hfp_lease_exec`, but leaves `input` untouched: C2R and Z2D overwrite their input
/// on cuFFT and hipFFT (and hipFFT's R2C may too), so the input is first copied to
/// `scratch` on `stream` and the transform reads the copy.
///
/// `scratch`: a device buffer of at least `hfp_lease_input_bytes()` bytes, not owned,
/// non-NULL, distinct from `input` and `output`, used until the transform completes.
/// `output` must differ from `input` (an in-place transform cannot preserve its input).
/// The other arguments are `hfp_lease_exec`'s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_exec_preserving_input(
    lease: *mut hfp_lease,
    stream: *mut c_void,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
    work_area: *mut c_void,
    scratch: *mut c_void,
) -> hfp_status {
    // SAFETY: the caller's promises, passed on.
    unsafe { exec("hfp_lease_exec_preserving_input", lease, stream, input, output, direction, work_area, Some(scratch)) }
}

fn parse_direction(direction: c_int) -> Result<Direction, Failure> {
    Direction::from_raw(direction).ok_or_else(|| {
        Failure::invalid(format!("invalid argument `direction` = {direction}: expected -1 (HFP_FORWARD) or +1 (HFP_INVERSE)"))
    })
}

/// Releases the lease now. The caller vouches that no execution under it is still pending
/// on the device (use `hfp_lease_release_after` otherwise). Never calls the GPU runtime, so
/// it is safe in a stream callback or a completion handler.
///
/// `lease`: consumed; NULL is a no-op. Releasing it twice is undefined behaviour; with debug
/// checks the second release returns `HFP_INVALID_ARGUMENT` ("lease released twice").
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_release(lease: *mut hfp_lease) -> hfp_status {
    guard("hfp_lease_release", || {
        if lease.is_null() {
            return Ok(());
        }
        if debug_checks() && !live_leases().remove(&(lease as usize)) {
            return Err(not_live(lease));
        }
        // SAFETY: a live lease from hfp_acquire, given up by the caller.
        let holder = unsafe { Box::from_raw(lease) };
        // At once, as documented: the caller vouched for completion (no event is recorded,
        // so this is safe in a stream callback).
        if let Some(l) = holder.lease {
            l.release();
        }
        Ok(())
    })
}

/// Releases the lease once the work enqueued on `stream` up to the end of the current batch
/// completes, with no event now: `hfp_pool_end_batch(pool, stream)` records one event that
/// covers every lease of the batch. For a host with a completion point per batch of
/// executions (a command buffer's commit): one event per batch instead of one per call. A
/// batch that reaches 64 leases is ended by the call that fills it (not inside a capture:
/// it grows instead). Whether the stream is capturing a graph is asked by the call that
/// opens a batch: on a capturing stream no batch opens and the lease takes the
/// `hfp_lease_release_after` path, as on the NULL, legacy (1) and per-thread (2) streams.
///
/// `lease`: consumed, on success and on failure. `stream`: a `hipStream_t` of the pool's
/// runtime that stays live until its batch ends. Work captured into a graph from a stream
/// whose batch opened before the capture is covered only if the batch ends after that
/// graph was launched on the stream. If the event of a batch that fills here
/// cannot be recorded, the stream is synchronized and the batch released; if that fails
/// too, the batch's leases stay held for good and `HFP_RUNTIME_ERROR` is returned. NULL
/// `lease`: `HFP_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_release_in_batch(lease: *mut hfp_lease, stream: *mut c_void) -> hfp_status {
    guard("hfp_lease_release_in_batch", || {
        // SAFETY: the caller's promise on `lease`; checked for null and (debug) liveness.
        unsafe { lease_ref(lease) }?;
        // SAFETY: a live lease, exclusively the caller's while this call runs.
        let holder = unsafe { &mut *lease };
        let Some(l) = holder.lease.take() else {
            return Err(Failure::invalid("invalid argument `lease`: it is being released"));
        };
        if debug_checks() {
            live_leases().remove(&(lease as usize));
        }
        // SAFETY: consumed: the caller gave it up and no longer uses it.
        drop(unsafe { Box::from_raw(lease) });
        // SAFETY: `hfp_lease_release_in_batch`'s C contract: `stream` is a `hipStream_t` of
        // the pool's runtime, live until its batch ends.
        unsafe { l.release_in_batch(RawStream(stream as usize)) }.map_err(Into::into)
    })
}

/// Releases the lease once the work enqueued so far on `stream` completes: the pool records
/// an event there and its completion thread releases the lease when the event fires.
///
/// `lease`: consumed on success. On failure (`HFP_RUNTIME_ERROR` when the event could not
/// be recorded, `HFP_SHUT_DOWN` after `hfp_pool_free`) the lease is NOT consumed: it stays
/// the caller's, who must release it (after synchronizing the stream). `stream`: a
/// `hipStream_t` (NULL: the null stream). NULL `lease`: `HFP_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_lease_release_after(lease: *mut hfp_lease, stream: *mut c_void) -> hfp_status {
    guard("hfp_lease_release_after", || {
        // SAFETY: the caller's promise on `lease`; checked for null and (debug) liveness.
        unsafe { lease_ref(lease) }?;
        // SAFETY: a live lease, exclusively the caller's while this call runs.
        let holder = unsafe { &mut *lease };
        let Some(l) = holder.lease.take() else {
            return Err(Failure::invalid("invalid argument `lease`: it is being released"));
        };
        // SAFETY: `hfp_lease_release_after`'s C contract: `stream` is a `hipStream_t` of
        // the pool's runtime, or NULL for the null stream.
        match unsafe { l.release_after(RawStream(stream as usize)) } {
            Ok(()) => {
                if debug_checks() {
                    live_leases().remove(&(lease as usize));
                }
                // SAFETY: consumed: the caller gave it up and no longer uses it.
                drop(unsafe { Box::from_raw(lease) });
                Ok(())
            }
            Err(e) => {
                holder.lease = Some(e.lease);
                Err(e.error.into())
            }
        }
    })
}

