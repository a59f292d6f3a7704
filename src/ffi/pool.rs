//! Pools: [`hfp_pool`], making and freeing one (configured, from the environment, the
//! process's default), and the calls on a pool (metrics, trim, capacity, the flush hook,
//! synchronize, the runtime's name).

use std::ffi::{c_char, c_void};
use std::mem::size_of;

use super::boundary::{Failure, guard, guard_value, hfp_status, out_ptr};
use super::types::{hfp_config, hfp_metrics};
use crate::pool::config::PoolConfig;
use crate::pool::plan_pool::PlanPool;
use crate::runtime::boundary::RawStream;

/// A plan pool: a bounded cache of hipFFT plans in front of a hard live-handle ceiling.
/// Made by `hfp_pool_new` or `hfp_pool_from_env` (freed by `hfp_pool_free`), or the
/// process's `hfp_default_pool()` (never freed). Every function taking a pool may be called
/// from any thread, concurrently, except `hfp_pool_free`.
#[allow(non_camel_case_types)]
pub struct hfp_pool {
    /// Shared with the warm-up thread the environment may start (`HIPFFT_POOL_WARMUP`).
    pool: std::sync::Arc<PlanPool>,
    /// The configuration warnings (the environment's and the pool's), one per line.
    warnings: std::ffi::CString,
}

impl hfp_pool {
    fn new(pool: std::sync::Arc<PlanPool>, env_warnings: &[String]) -> hfp_pool {
        let lines: Vec<&str> = env_warnings.iter().chain(pool.warnings()).map(String::as_str).collect();
        // A NUL inside a message cannot reach C: it is replaced.
        let warnings = std::ffi::CString::new(lines.join("\n").replace('\0', " ")).unwrap_or_default();
        hfp_pool { pool, warnings }
    }
}

/// # Safety
/// `p` is null or a pool from `hfp_pool_new`, `hfp_pool_from_env` or `hfp_default_pool`.
pub(super) unsafe fn pool_ref<'a>(p: *const hfp_pool) -> Result<&'a PlanPool, Failure> {
    if p.is_null() {
        return Err(Failure::null("pool"));
    }
    // SAFETY: the caller's promise.
    Ok(&unsafe { &*p }.pool)
}

fn make_pool(config: PoolConfig, warnings: &[String]) -> Result<std::sync::Arc<PlanPool>, Failure> {
    for w in warnings {
        eprintln!("hipfft-pool: warning: {w}");
    }
    let selected = crate::runtime::select::open(config.runtime)?;
    Ok(PlanPool::new_shared(config, selected.runtime)?)
}

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
        *slot = Box::into_raw(Box::new(hfp_pool::new(pool, &[])));
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
        *slot = Box::into_raw(Box::new(hfp_pool::new(pool, &warnings)));
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
        let pool = unsafe { Box::from_raw(pool) };
        if pool.pool.is_inherited() {
            // A forked child's copy of the parent's pool: left as it is (its threads, locks
            // and plans are the parent's), at once.
            std::mem::forget(pool);
        }
        Ok(())
    });
}

/// The default pool of each fork generation that asked for one (a forked child gets one of
/// its own: the parent's is the parent's).
static DEFAULT_POOLS: parking_lot::Mutex<Vec<(u64, Result<&'static hfp_pool, String>)>> = parking_lot::Mutex::new(Vec::new());

/// Locks the default pools' list (before a fork; the guard goes after it on both sides).
pub(crate) fn lock_for_fork() -> Box<dyn std::any::Any> {
    Box::new(DEFAULT_POOLS.lock())
}

/// The default pool of this process, if it made one.
fn own_default_pool() -> Option<&'static hfp_pool> {
    let generation = crate::sync::fork::generation();
    DEFAULT_POOLS.lock().iter().find(|(g, _)| *g == generation).and_then(|(_, p)| p.as_ref().ok().copied())
}

/// At exit: the default pool's working set to `HIPFFT_POOL_MANIFEST_OUT`. Never unwinds; in
/// a forked child that made no default pool of its own, does nothing.
extern "C" fn save_default_manifest() {
    let _ = std::panic::catch_unwind(|| {
        let (Some(pool), Some(path)) = (own_default_pool(), std::env::var_os("HIPFFT_POOL_MANIFEST_OUT")) else { return };
        if let Err(e) = pool.pool.save_manifest(&path) {
            eprintln!("hipfft-pool: warning: HIPFFT_POOL_MANIFEST_OUT: {e}");
        }
    });
}

fn is_default_pool(p: *const hfp_pool) -> bool {
    DEFAULT_POOLS.lock().iter().any(|(_, d)| matches!(d, Ok(b) if std::ptr::eq(*b, p)))
}

/// The process's default pool, configured from the environment like `hfp_pool_from_env`
/// and made on first use. Returns NULL if it could not be made, with the reason in
/// `hfp_last_error_message()` (every later call returns NULL with the same reason).
///
/// Returns: borrowed, valid until the process exits; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_default_pool() -> *mut hfp_pool {
    guard_value("hfp_default_pool", std::ptr::null_mut(), || {
        crate::sync::fork::lock_around_fork(lock_for_fork);
        let generation = crate::sync::fork::generation();
        let mut pools = DEFAULT_POOLS.lock();
        if !pools.iter().any(|(g, _)| *g == generation) {
            let (cfg, warnings) = PoolConfig::from_env();
            let manifest_out = cfg.manifest_out.is_some();
            let made: Result<&'static hfp_pool, String> = make_pool(cfg, &warnings)
                .map(|pool| &*Box::leak(Box::new(hfp_pool::new(pool, &warnings))))
                .map_err(|f| f.message);
            // Once per process: a forked child inherits the registration.
            static ATEXIT: std::sync::Once = std::sync::Once::new();
            if manifest_out && made.is_ok() {
                ATEXIT.call_once(|| {
                    // The default pool is never dropped: its HIPFFT_POOL_MANIFEST_OUT is
                    // written at exit instead.
                    unsafe extern "C" {
                        fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
                    }
                    // SAFETY: registers a plain function; it only reads the pool and writes a file.
                    unsafe { atexit(save_default_manifest) };
                });
            }
            pools.push((generation, made));
        }
        let made = &pools.iter().find(|(g, _)| *g == generation).expect("pushed above").1;
        match made {
            Ok(b) => Ok(*b as *const hfp_pool as *mut hfp_pool),
            Err(why) => Err(Failure::new(
                hfp_status::HFP_RUNTIME_UNAVAILABLE,
                format!("the default pool could not be made: {why}"),
            )),
        }
    })
    .0
}

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

/// Ends the open batch of `stream` (`hfp_lease_release_in_batch`): records one event there,
/// after which the pool releases every lease of the batch. Nothing to end is `HFP_OK`. If
/// the event cannot be recorded, the stream is synchronized and the batch released; if that
/// fails too, the batch's leases stay held and `HFP_RUNTIME_ERROR` is returned. A stream
/// that is capturing a graph gets `HFP_INVALID_ARGUMENT` naming `stream`, and its batch
/// stays open: end it once the capture ended and the graph was launched on the stream.
///
/// `pool`: borrowed. `stream`: a live `hipStream_t` of the pool's runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_end_batch(pool: *mut hfp_pool, stream: *mut c_void) -> hfp_status {
    guard("hfp_pool_end_batch", || {
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        // SAFETY: `hfp_pool_end_batch`'s C contract: `stream` is a live stream of the runtime.
        unsafe { pool.end_batch(RawStream(stream as usize)) }.map_err(Into::into)
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
        let pool = unsafe { pool_ref(pool) }?;
        // SAFETY: `hfp_pool_synchronize`'s C contract: `stream` is a `hipStream_t` of the
        // pool's runtime, or NULL for the current device's null stream.
        unsafe { pool.runtime().stream_synchronize(RawStream(stream as usize)) }?;
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

/// The pool's configuration warnings, one per line (`\n` between them), or "" when there
/// are none: variables of the environment that were ignored, and a process-wide live ceiling
/// asked for after the first pool had set another limit (the pool then shares the first
/// one). Each is also printed to stderr when the pool is made.
///
/// `pool`: borrowed. Returns a string owned by the pool, valid until `hfp_pool_free`;
/// NULL for a NULL pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_warnings(pool: *const hfp_pool) -> *const c_char {
    guard_value("hfp_pool_warnings", std::ptr::null(), || {
        if pool.is_null() {
            return Err(Failure::null("pool"));
        }
        // SAFETY: non-null; the caller's promise that it is a live pool.
        Ok(unsafe { &*pool }.warnings.as_ptr())
    })
    .0
}

/// A path argument: non-null, NUL-terminated, any bytes (Unix paths need not be UTF-8).
///
/// # Safety
/// `path` is null or a NUL-terminated string readable for the call.
unsafe fn path_arg(path: *const c_char) -> Result<std::path::PathBuf, Failure> {
    use std::os::unix::ffi::OsStrExt;
    if path.is_null() {
        return Err(Failure::null("path"));
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    if bytes.is_empty() {
        return Err(Failure::invalid("invalid argument `path`: empty"));
    }
    Ok(std::ffi::OsStr::from_bytes(bytes).into())
}

/// Writes the pool's working set to `path` as a manifest (JSON, versioned; see
/// docs/warmup.md): every descriptor it made a plan for, with its hits, creations, measured
/// creation time and work size, keyed by runtime, library version and device name. The
/// file is replaced whole (written beside it, then renamed).
///
/// `pool`: borrowed. `path`: borrowed, NUL-terminated. Fails with `HFP_INVALID_ARGUMENT`
/// naming the path when it cannot be written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_save_manifest(pool: *const hfp_pool, path: *const c_char) -> hfp_status {
    guard("hfp_pool_save_manifest", || {
        // SAFETY: the caller's promises on `pool` and `path`.
        let (pool, path) = unsafe { (pool_ref(pool)?, path_arg(path)?) };
        pool.save_manifest(path)?;
        Ok(())
    })
}

/// Makes the plans of the manifest at `path` on this thread, before they are needed: most
/// valuable first (creation time times uses), never above the capacity or the live ceiling
/// (it stops there and evicts nothing), waiting while real misses are being made. A
/// manifest of another runtime or library version makes nothing; a plan of a device whose
/// name differs is skipped; each with a warning on stderr naming both.
/// (`HIPFFT_POOL_WARMUP=PATH` does the same in the background when a pool is made from the
/// environment.)
///
/// `pool`: borrowed. `path`: borrowed, NUL-terminated. `made`: NULL, or written with the
/// number of plans made. Fails with `HFP_INVALID_ARGUMENT` when the file cannot be read or
/// is not a manifest of this version (the message says which).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_warm_up(pool: *const hfp_pool, path: *const c_char, made: *mut usize) -> hfp_status {
    guard("hfp_pool_warm_up", || {
        // SAFETY: the caller's promises on `pool` and `path`.
        let (pool, path) = unsafe { (pool_ref(pool)?, path_arg(path)?) };
        let manifest = crate::pool::manifest::Manifest::load(path)?;
        let report = pool.warm_up(&manifest);
        if !made.is_null() {
            // SAFETY: non-null and writable (the caller's promise).
            unsafe { made.write(report.made) };
        }
        Ok(())
    })
}

/// Waits up to `timeout_ms` for the background warm-up that `HIPFFT_POOL_WARMUP` started
/// when the pool was made, and reports once how many plans it made.
///
/// `pool`: borrowed. `made`: written with the number made, or with `SIZE_MAX` when there was
/// no warm-up, its report was taken already, or it was still running at the timeout (a
/// later call waits again). NULL: `HFP_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_pool_wait_warm_up(pool: *const hfp_pool, timeout_ms: u64, made: *mut usize) -> hfp_status {
    guard("hfp_pool_wait_warm_up", || {
        if made.is_null() {
            return Err(Failure::null("made"));
        }
        // SAFETY: the caller's promise on `pool`.
        let pool = unsafe { pool_ref(pool) }?;
        let report = pool.wait_warm_up(std::time::Duration::from_millis(timeout_ms));
        // SAFETY: non-null and writable (the caller's promise).
        unsafe { made.write(report.map_or(usize::MAX, |r| r.made)) };
        Ok(())
    })
}
