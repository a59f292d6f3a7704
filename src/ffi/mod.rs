//! The C ABI (`include/hipfft_pool.h`, generated from this module by cbindgen).
//!
//! Conventions, modelled on rustls-ffi: every entry point runs behind a panic boundary (a
//! panic becomes `HFP_INTERNAL_ERROR`, never an abort); every pointer is checked for null;
//! every failure leaves a message in `hfp_last_error_message()`; ownership and lifetime are
//! written on every pointer. Pools and leases are opaque boxes: `hfp_pool` is a
//! `Box<PlanPool>`, `hfp_lease` a `Box<Lease>`.
//!
//! The safety contract of each `unsafe extern "C"` function is its pointer contract, written
//! argument by argument in its C documentation (what may be NULL, who owns what, for how
//! long); clippy's `# Safety` section would repeat it in the header.
#![allow(clippy::missing_safety_doc)]

mod boundary;
mod types;

use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void};
use std::mem::size_of;
use std::sync::{LazyLock, Mutex, OnceLock};

pub use boundary::hfp_status;
use boundary::{Failure, guard, guard_value, last_error_ptr};
pub use types::{
    HFP_C2C, HFP_C2R, HFP_CEILING_PER_DEVICE, HFP_CEILING_PRIVATE, HFP_CEILING_PROCESS_WIDE, HFP_D2Z, HFP_FORWARD,
    HFP_INVERSE, HFP_R2C, HFP_Z2D, HFP_Z2Z, hfp_config, hfp_metrics, hfp_plan_desc,
};

use crate::pool::config::PoolConfig;
use crate::desc::Direction;
use crate::pool::lease::Lease;
use crate::pool::plan_pool::PlanPool;
use crate::runtime::boundary::{DevicePtr, RawStream};

/// A plan pool: a bounded cache of hipFFT plans in front of a hard live-handle ceiling.
/// Made by `hfp_pool_new` or `hfp_pool_from_env` (freed by `hfp_pool_free`), or the
/// process's `hfp_default_pool()` (never freed). Every function taking a pool may be called
/// from any thread, concurrently, except `hfp_pool_free`.
#[allow(non_camel_case_types)]
pub struct hfp_pool {
    pool: PlanPool,
}

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

// ---- debug checks: live lease addresses, so a double release is reported, not UB ----

fn debug_checks() -> bool {
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

/// # Safety
/// `p` is null or a pool from `hfp_pool_new`, `hfp_pool_from_env` or `hfp_default_pool`.
unsafe fn pool_ref<'a>(p: *const hfp_pool) -> Result<&'a PlanPool, Failure> {
    if p.is_null() {
        return Err(Failure::null("pool"));
    }
    // SAFETY: the caller's promise.
    Ok(&unsafe { &*p }.pool)
}

fn make_pool(config: PoolConfig, warnings: &[String]) -> Result<PlanPool, Failure> {
    for w in warnings {
        eprintln!("hipfft-pool: warning: {w}");
    }
    let selected = crate::runtime::select::open(config.runtime)?;
    Ok(PlanPool::new(config, selected.runtime)?)
}

/// Writes `value` to the out-pointer `out` after checking it for null.
fn out_ptr<'a, T>(out: *mut *mut T, name: &str) -> Result<&'a mut *mut T, Failure> {
    if out.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises it is writable.
    let slot = unsafe { &mut *out };
    *slot = std::ptr::null_mut();
    Ok(slot)
}

// ---- configuration and pools ----

/// Fills `*config` with the defaults: capacity 128, live ceiling 0 (= the capacity),
/// acquire timeout 10000 ms, no work-area budget, runtime NULL (= "auto"), shutdown
/// timeout 5000 ms, the process-wide ceiling, watchdog 10000 ms; `struct_size` =
/// `sizeof(hfp_config)`.
///
/// `config`: borrowed for the call, written; must point to a whole `hfp_config` of this
/// header's version. NULL: `HFP_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_config_default(config: *mut hfp_config) -> hfp_status {
    guard("hfp_config_default", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-null and writable for a whole hfp_config (the caller's promise).
        unsafe { config.write(hfp_config::defaults()) };
        Ok(())
    })
}

/// Makes a pool with `*config` (see `hfp_config`; 0 in a field means its default).
///
/// `config`: borrowed for the call (its `runtime` string too). `out`: written with the new
/// pool, owned by the caller, who frees it with `hfp_pool_free`; set to NULL on failure.
/// Fails with `HFP_INVALID_ARGUMENT` for a bad field (the message names it, `struct_size`
/// included), `HFP_RUNTIME_UNAVAILABLE` when the runtime asked for is not there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_new(config: *const hfp_config, out: *mut *mut hfp_pool) -> hfp_status {
    guard("hfp_pool_new", || {
        let slot = out_ptr(out, "out")?;
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-null; the caller promises `struct_size` readable bytes.
        let cfg = unsafe { hfp_config::to_pool_config(config) }?;
        let pool = make_pool(cfg, &[])?;
        *slot = Box::into_raw(Box::new(hfp_pool { pool }));
        Ok(())
    })
}

/// Makes a pool configured from the environment: `HIPFFT_POOL_CAPACITY` (else
/// `MLX_ROCM_FFT_CACHE_SIZE`, else 128), `HIPFFT_POOL_LIVE_CEILING` (default: the capacity),
/// `HIPFFT_POOL_ACQUIRE_TIMEOUT_MS`, `HIPFFT_POOL_WORK_AREA_BUDGET`, `HIPFFT_POOL_WATCHDOG_MS`,
/// `HIPFFT_POOL_RUNTIME` (`auto|sim|hip|cuda`). A value that is not a whole number in range is ignored with a
/// one-line warning on stderr. The pool counts against the process-wide ceiling.
///
/// `out`: written with the new pool, owned by the caller (free it with `hfp_pool_free`);
/// NULL on failure.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_from_env(out: *mut *mut hfp_pool) -> hfp_status {
    guard("hfp_pool_from_env", || {
        let slot = out_ptr(out, "out")?;
        let (cfg, warnings) = PoolConfig::from_env();
        let pool = make_pool(cfg, &warnings)?;
        *slot = Box::into_raw(Box::new(hfp_pool { pool }));
        Ok(())
    })
}

/// Shuts `pool` down and frees it. Shutdown destroys the idle plans and waits, up to the
/// shutdown timeout, for outstanding leases; plans still leased after that are destroyed
/// when their last lease is released (leases stay valid after the pool is gone).
///
/// `pool`: consumed; NULL is a no-op. The default pool is never freed: passing it is a
/// no-op too (with a message in `hfp_last_error_message`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_free(pool: *mut hfp_pool) {
    guard("hfp_pool_free", || {
        if pool.is_null() {
            return Ok(());
        }
        if is_default_pool(pool) {
            return Err(Failure::invalid("invalid argument `pool`: the default pool is never freed"));
        }
        // SAFETY: a pool from hfp_pool_new / hfp_pool_from_env, given up by the caller.
        drop(unsafe { Box::from_raw(pool) });
        Ok(())
    });
}

static DEFAULT_POOL: OnceLock<Result<Box<hfp_pool>, String>> = OnceLock::new();

fn is_default_pool(p: *const hfp_pool) -> bool {
    matches!(DEFAULT_POOL.get(), Some(Ok(b)) if std::ptr::eq(&**b, p))
}

/// The process's default pool, configured from the environment like `hfp_pool_from_env`
/// and made on first use. Returns NULL if it could not be made, with the reason in
/// `hfp_last_error_message()` (every later call returns NULL with the same reason).
///
/// Returns: borrowed, valid until the process exits; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_default_pool() -> *mut hfp_pool {
    guard_value("hfp_default_pool", std::ptr::null_mut(), || {
        let made = DEFAULT_POOL.get_or_init(|| {
            let (cfg, warnings) = PoolConfig::from_env();
            make_pool(cfg, &warnings).map(|pool| Box::new(hfp_pool { pool })).map_err(|f| f.message)
        });
        match made {
            Ok(b) => Ok(&**b as *const hfp_pool as *mut hfp_pool),
            Err(why) => Err(Failure::new(
                hfp_status::HFP_RUNTIME_UNAVAILABLE,
                format!("the default pool could not be made: {why}"),
            )),
        }
    })
    .0
}

// ---- leases ----

/// Takes a lease on the plan for `*desc`, making the plan on a miss. On a miss at the
/// ceiling it destroys retired plans whose executions finished, evicts idle plans, calls
/// the flush hook once, then waits up to the acquire timeout; it never waits unbounded.
///
/// `pool`: borrowed. `desc`: borrowed for the call (its embed arrays too, `rank` entries
/// each). `out`: written with the lease, owned by the caller until `hfp_lease_release` or
/// `hfp_lease_release_after`; NULL on failure. Fails with `HFP_INVALID_DESCRIPTOR` naming
/// the field and value, `HFP_CEILING_TIMEOUT`, `HFP_RUNTIME_ERROR`, `HFP_SHUT_DOWN`.
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
            None => lease.exec(stream, input, output, direction, area)?,
            Some(s) => lease.exec_preserving_input(stream, input, output, direction, area, DevicePtr::from_ptr(s))?,
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
        drop(unsafe { Box::from_raw(lease) });
        Ok(())
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
        match l.release_after(RawStream(stream as usize)) {
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

// ---- pool operations ----

/// Copies every count of the pool into `*out` (see `hfp_metrics`).
///
/// `pool`: borrowed. `out`: borrowed for the call; the caller sets `out->struct_size` to
/// `sizeof(hfp_metrics)` first; a smaller value is `HFP_INVALID_ARGUMENT` naming it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_metrics(pool: *const hfp_pool, out: *mut hfp_metrics) -> hfp_status {
    guard("hfp_pool_metrics", || {
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: non-null; the first field is readable.
        let size = unsafe { std::ptr::addr_of!((*out).struct_size).read() };
        if size < size_of::<hfp_metrics>() {
            return Err(Failure::invalid(format!(
                "invalid argument `struct_size` = {size}: set it to sizeof(hfp_metrics) = {}",
                size_of::<hfp_metrics>()
            )));
        }
        // SAFETY: `struct_size` bytes are writable, and they cover this version's struct.
        unsafe { out.write(hfp_metrics::from_snapshot(size, &pool.metrics())) };
        Ok(())
    })
}

/// Writes the pool's metrics as Prometheus text (`hipfft_pool_*`) into `buf`.
///
/// `pool`: borrowed. `needed`: written with the bytes the text takes including its NUL;
/// must not be NULL. `buf`, `len`: a caller-owned buffer of `len` bytes. With `len` 0 only
/// `*needed` is written (`buf` may then be NULL) and the call returns `HFP_OK`: a size
/// query. When `len` is too small, `buf` receives a truncated, NUL-terminated prefix and the
/// call returns `HFP_BUFFER_TOO_SMALL`. Whenever `len` > 0, `buf` is NUL-terminated. The
/// text can grow between two calls (counters change), so loop until `HFP_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_metrics_text(
    pool: *const hfp_pool,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> hfp_status {
    guard("hfp_pool_metrics_text", || {
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        if needed.is_null() {
            return Err(Failure::null("needed"));
        }
        let text = pool.metrics_text();
        let need = text.len() + 1;
        // SAFETY: non-null and writable (the caller's promise).
        unsafe { needed.write(need) };
        if len == 0 {
            return Ok(());
        }
        if buf.is_null() {
            return Err(Failure::invalid(format!("invalid argument `buf`: null pointer with `len` = {len}")));
        }
        let n = text.len().min(len - 1);
        // SAFETY: `buf` holds `len` > n bytes (the caller's promise).
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
        if len < need {
            return Err(Failure::new(
                hfp_status::HFP_BUFFER_TOO_SMALL,
                format!("`len` = {len} is too small for the metrics text ({need} bytes with the NUL); it was truncated"),
            ));
        }
        Ok(())
    })
}

/// Destroys every idle cached plan now (leased plans stay).
///
/// `pool`: borrowed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_trim(pool: *mut hfp_pool) -> hfp_status {
    guard("hfp_pool_trim", || {
        // SAFETY: the caller's promise on `pool`.
        unsafe { pool_ref(pool) }?.trim();
        Ok(())
    })
}

/// Changes the cache capacity (1 to the live ceiling), evicting least recently used plans
/// as needed. Anything else is `HFP_INVALID_ARGUMENT` naming `capacity`.
///
/// `pool`: borrowed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_set_capacity(pool: *mut hfp_pool, capacity: usize) -> hfp_status {
    guard("hfp_pool_set_capacity", || {
        // SAFETY: the caller's promise on `pool`.
        unsafe { pool_ref(pool) }?.set_capacity(capacity)?;
        Ok(())
    })
}

/// `ctx` of a flush hook, moved into the closure the pool calls.
struct HookCtx(*mut c_void);

// SAFETY: `hfp_pool_set_flush_hook` documents that the hook may be called with `ctx` from
// any thread that acquires, concurrently; the caller promises that is sound for its `ctx`.
// The pool itself never dereferences it.
unsafe impl Send for HookCtx {}
// SAFETY: as above; shared access only hands the pointer value to the hook.
unsafe impl Sync for HookCtx {}

impl HookCtx {
    /// A method, so that the closure captures the whole `HookCtx` (Send + Sync), not its
    /// raw-pointer field.
    fn get(&self) -> *mut c_void {
        self.0
    }
}

/// Sets the flush hook: `hook(ctx)` is called once by a miss that found the ceiling full and
/// nothing idle to evict, before it waits, on the thread that called `hfp_acquire`. A host
/// that batches GPU work (graphs, deferred command buffers) must submit it there, or the
/// executions holding the live plans can never complete. NULL `hook` clears it.
///
/// `hook` must not unwind: a C++ exception escaping it is undefined behaviour (catch
/// everything inside; `hipfft_pool.hpp`'s trampoline does). It may call `hfp_` functions,
/// including releasing leases. `ctx`: borrowed by the pool until the hook is replaced or
/// cleared and every call in progress has returned, or until the pool is freed; it may be
/// used from several threads at once. `pool`: borrowed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_set_flush_hook(
    pool: *mut hfp_pool,
    hook: Option<unsafe extern "C" fn(ctx: *mut c_void)>,
    ctx: *mut c_void,
) -> hfp_status {
    guard("hfp_pool_set_flush_hook", || {
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        let hook = hook.map(|f| {
            let ctx = HookCtx(ctx);
            // SAFETY: the caller promises `f(ctx)` may be called from any acquiring thread.
            std::sync::Arc::new(move || unsafe { f(ctx.get()) }) as crate::pool::plan_pool::FlushHook
        });
        pool.set_flush_hook(hook);
        Ok(())
    })
}

/// Waits until the work enqueued so far on `stream` completed (`hipStreamSynchronize`).
///
/// `pool`: borrowed. `stream`: a `hipStream_t` of the pool's runtime (NULL: the current
/// device's null stream).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_synchronize(pool: *mut hfp_pool, stream: *mut c_void) -> hfp_status {
    guard("hfp_pool_synchronize", || {
        // SAFETY: the caller's promise on `pool`.
        unsafe { pool_ref(pool) }?.runtime().stream_synchronize(RawStream(stream as usize))?;
        Ok(())
    })
}

/// The name of the runtime the pool runs on: "hip", "cuda" or "sim". A pool configured
/// with "auto" falls back to "sim" when neither hip nor cuda has a device; a host that
/// passes real device pointers should check this (the simulated runtime's device memory
/// is host memory).
///
/// `pool`: borrowed. Returns a static string, never freed; NULL for a NULL pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_runtime(pool: *const hfp_pool) -> *const c_char {
    guard_value("hfp_pool_runtime", std::ptr::null(), || {
        // SAFETY: the caller's promise on `pool`.
        let name = match unsafe { pool_ref(pool) }?.runtime().kind() {
            crate::runtime::boundary::RuntimeKind::Sim => c"sim",
            crate::runtime::boundary::RuntimeKind::Hip => c"hip",
            crate::runtime::boundary::RuntimeKind::Cuda => c"cuda",
        };
        Ok(name.as_ptr())
    })
    .0
}

// ---- errors and introspection ----

/// This thread's message for its last failed `hfp_` call; "" if none has failed. A success
/// does not clear it.
///
/// Returns: borrowed, NUL-terminated, owned by the library; valid until the next `hfp_`
/// call on this thread. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_last_error_message() -> *const c_char {
    std::panic::catch_unwind(last_error_ptr).unwrap_or(c"".as_ptr())
}

/// The enumerator's name ("HFP_CEILING_TIMEOUT"), or "HFP_UNKNOWN_STATUS" for a value that
/// is not an `hfp_status`.
///
/// Returns: a static string; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_status_name(status: c_int) -> *const c_char {
    hfp_status::ALL
        .into_iter()
        .find(|s| *s as c_int == status)
        .map_or(c"HFP_UNKNOWN_STATUS".as_ptr(), |s| s.name().as_ptr())
}

/// 1 when this library checks lease pointers (a double release or a use after release
/// returns `HFP_INVALID_ARGUMENT` instead of being undefined behaviour): always in debug
/// builds, and in release builds when `HIPFFT_POOL_DEBUG_CHECKS=1` is in the environment
/// the first time the library consults it (its first lease call, or this function).
/// 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_debug_checks_enabled() -> c_int {
    guard_value("hfp_debug_checks_enabled", 0, || Ok(debug_checks() as c_int)).0
}

/// The library's version ("0.1.0").
///
/// Returns: a static string; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
