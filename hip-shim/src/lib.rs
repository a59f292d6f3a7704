//! hip-shim: one shared library that stands in for both `libhipfft.so` and `libamdhip64.so`.
//!
//! It exports, with the AMD ABI, exactly the entry points `hipfft_pool::runtime::hip::HipRuntime`
//! binds, and implements them over a `hipfft_pool::Runtime` backend chosen once per process:
//!
//! * the simulated runtime (`SimRuntime::from_env()`, so its `HIPFFT_POOL_SIM_*` fault
//!   injection applies), the default;
//! * with the cargo feature `cuda`, `hipfft_pool::runtime::cuda::CudaRuntime::new()` (the default
//!   then), so the hipFFT code path runs on an NVIDIA GPU.
//!
//! `HIP_SHIM_BACKEND=sim|cuda` picks at run time. `HIP_SHIM_TRACE=1` prints each call's
//! status to stderr.
//!
//! Load the same file under both names through symlinks (see `build-names.sh`): the
//! dynamic loader then maps it once, so plans, streams, events and memory share one backend.
//! Two *copies* would be two instances with two backends.
//!
//! hipFFT's plan lifecycle is `hipfftCreate` -> `hipfftSetAutoAllocation` ->
//! `hipfftMakePlanMany64`, while the backend makes a plan in one call, so a shim handle starts
//! "not made" and becomes the backend's `RawPlan` at `hipfftMakePlanMany64`. Stream and work
//! area are per-handle state consumed by `hipfftExec*`.
//!
//! Every export is behind a panic boundary (a panic returns `HIPFFT_INTERNAL_ERROR` /
//! `hipErrorUnknown`) and checks its pointers for null. What it cannot check is HIP's own
//! contract (a handle the library gave out, a pointer to memory of the size passed): the C
//! caller promises that, and each `SAFETY:` comment says which promise a call relies on. The
//! exports' `# Safety` is hipFFT's and HIP's documentation, so they carry none of their own.

#![allow(non_snake_case, clippy::missing_safety_doc)]
#![deny(missing_docs, clippy::undocumented_unsafe_blocks)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_longlong, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hipfft_pool::error::hipfft_result as fft;
use hipfft_pool::runtime::hip::result::hip_error_cname;
use hipfft_pool::runtime::hip::sys::{self, hip_error as he};
use hipfft_pool::{
    Api, DescError, DevicePtr, Direction, Error, Layout, PlanDesc, PlanOptions, RawEvent, RawPlan, RawStream, Runtime,
    TransformType,
};

use hipfft_pool::runtime::sim::SimRuntime;

mod graphs;

// ---------------------------------------------------------------------------------------
// Backend

/// The simulated runtime behind the shim, when that is the backend (its graph calls).
static SIM: OnceLock<Arc<SimRuntime>> = OnceLock::new();

fn make_backend() -> Result<Arc<dyn Runtime>, String> {
    let choice = std::env::var("HIP_SHIM_BACKEND").unwrap_or_default();
    let default = if cfg!(feature = "cuda") { "cuda" } else { "sim" };
    let choice = if choice.is_empty() { default } else { choice.as_str() };
    match choice {
        "sim" => {
            let sim = Arc::new(SimRuntime::from_env());
            let _ = SIM.set(sim.clone());
            Ok(sim as Arc<dyn Runtime>)
        }
        #[cfg(feature = "cuda")]
        "cuda" => hipfft_pool::runtime::cuda::CudaRuntime::new()
            .map(|r| Arc::new(r) as Arc<dyn Runtime>)
            .map_err(|e| format!("CUDA runtime: {e}")),
        #[cfg(not(feature = "cuda"))]
        "cuda" => Err("HIP_SHIM_BACKEND=cuda, but hip-shim was built without its `cuda` feature".to_string()),
        other => Err(format!("HIP_SHIM_BACKEND={other:?} is not `sim` or `cuda`")),
    }
}

static BACKEND: OnceLock<Result<Arc<dyn Runtime>, String>> = OnceLock::new();

/// The process's backend, made on first use. A backend that cannot start is reported once on
/// stderr (a C caller has no other channel) and every call then fails.
fn backend() -> Option<&'static Arc<dyn Runtime>> {
    BACKEND
        .get_or_init(|| {
            let b = make_backend();
            if let Err(e) = &b {
                eprintln!("hip-shim: no backend: {e}");
            }
            b
        })
        .as_ref()
        .ok()
}

fn trace_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("HIP_SHIM_TRACE").is_some_and(|v| !v.is_empty() && v != "0"))
}

// ---------------------------------------------------------------------------------------
// Status mapping

/// A backend error as a `hipError_t`.
fn hip_status(e: &Error) -> c_int {
    match e {
        // HIP's numbering follows CUDA's for every code a runtime call here returns.
        Error::Runtime { code, .. } if matches!(code.api, Api::Hip | Api::Cuda) => code.value,
        Error::Runtime { code, .. } if code.value == fft::ALLOC_FAILED => he::hipErrorOutOfMemory,
        Error::Runtime { .. } => he::hipErrorUnknown,
        Error::InvalidArgument { .. } | Error::InvalidDesc(_) | Error::InvalidConfig { .. } => he::hipErrorInvalidValue,
        Error::Unavailable(_) => he::hipErrorNotInitialized,
        Error::ShutDown => he::hipErrorDeinitialized,
        _ => he::hipErrorUnknown,
    }
}

/// A backend error as a `hipfftResult`.
fn hipfft_status(e: &Error) -> c_int {
    match e {
        Error::Runtime { code, .. } if matches!(code.api, Api::Hipfft | Api::Cufft) => code.value,
        Error::Runtime { code, .. } if code.value == he::hipErrorOutOfMemory => fft::ALLOC_FAILED,
        Error::Runtime { .. } => fft::INTERNAL_ERROR,
        Error::InvalidDesc(DescError::UnknownTransform { .. }) => fft::INVALID_TYPE,
        Error::InvalidDesc(DescError::NegativeDevice { .. }) => fft::INVALID_DEVICE,
        Error::InvalidDesc(_) => fft::INVALID_SIZE,
        Error::InvalidArgument { .. } | Error::InvalidConfig { .. } => fft::INVALID_VALUE,
        Error::Unavailable(_) => fft::SETUP_FAILED,
        _ => fft::INTERNAL_ERROR,
    }
}

/// Runs an export's body behind the panic boundary, with optional tracing.
fn guard(name: &'static str, on_panic: c_int, body: impl FnOnce() -> c_int) -> c_int {
    let status = catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic);
    if trace_on() {
        eprintln!("hip-shim: {name} -> {status}");
    }
    status
}

fn hipfft_guard(name: &'static str, body: impl FnOnce(&'static Arc<dyn Runtime>) -> c_int) -> c_int {
    guard(name, fft::INTERNAL_ERROR, || match backend() {
        Some(b) => body(b),
        None => fft::SETUP_FAILED,
    })
}

fn hip_guard(name: &'static str, body: impl FnOnce(&'static Arc<dyn Runtime>) -> c_int) -> c_int {
    guard(name, he::hipErrorUnknown, || match backend() {
        Some(b) => body(b),
        None => he::hipErrorNotInitialized,
    })
}

fn fft_done(r: Result<(), Error>) -> c_int {
    match r {
        Ok(()) => fft::SUCCESS,
        Err(e) => {
            if trace_on() {
                eprintln!("hip-shim: backend: {e}");
            }
            hipfft_status(&e)
        }
    }
}

fn hip_done(r: Result<(), Error>) -> c_int {
    match r {
        Ok(()) => he::hipSuccess,
        Err(e) => {
            if trace_on() {
                eprintln!("hip-shim: backend: {e}");
            }
            hip_status(&e)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Plan handles

#[derive(Clone, Copy, Debug)]
struct PlanSlot {
    /// hipFFT's default is on.
    auto_allocation: bool,
    made: Option<(RawPlan, TransformType)>,
    stream: RawStream,
    work_area: Option<DevicePtr>,
}

fn plans() -> MutexGuard<'static, HashMap<usize, PlanSlot>> {
    static PLANS: OnceLock<Mutex<HashMap<usize, PlanSlot>>> = OnceLock::new();
    // A panic while holding the lock leaves the map consistent (every update is one insert or
    // field store), so poisoning is ignored.
    PLANS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Handles are never reused; they look like aligned pointers but are only keys.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(1);

/// Runs `f` on the slot of `plan`, or returns `HIPFFT_INVALID_PLAN`.
fn with_slot(plan: *mut c_void, f: impl FnOnce(&mut PlanSlot) -> c_int) -> c_int {
    match plans().get_mut(&(plan as usize)) {
        Some(slot) => f(slot),
        None => fft::INVALID_PLAN,
    }
}

/// Plans the shim holds, made or not (not part of hipFFT; the tests read it to check that
/// handles are destroyed).
#[unsafe(no_mangle)]
pub extern "C" fn hipShimLivePlanHandles() -> c_int {
    guard("hipShimLivePlanHandles", -1, || plans().len() as c_int)
}

// ---------------------------------------------------------------------------------------
// hipFFT

/// `hipfftResult hipfftCreate(hipfftHandle* plan);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftCreate(plan: *mut *mut c_void) -> c_int {
    hipfft_guard("hipfftCreate", |_| {
        if plan.is_null() {
            return fft::INVALID_VALUE;
        }
        let h = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) << 4;
        plans().insert(h, PlanSlot { auto_allocation: true, made: None, stream: RawStream::NULL, work_area: None });
        // SAFETY: non-null, and the caller promises it points to a writable handle.
        unsafe { *plan = h as *mut c_void };
        fft::SUCCESS
    })
}

/// `hipfftResult hipfftDestroy(hipfftHandle plan);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftDestroy(plan: *mut c_void) -> c_int {
    hipfft_guard("hipfftDestroy", |b| {
        let Some(slot) = plans().remove(&(plan as usize)) else { return fft::INVALID_PLAN };
        match slot.made {
            // SAFETY: the slot was just removed, so nobody else reaches `raw`; the caller
            // promises (as hipFFT requires) no execution of it is still pending.
            Some((raw, _)) => fft_done(unsafe { b.plan_destroy(raw) }),
            None => fft::SUCCESS,
        }
    })
}

/// `hipfftResult hipfftSetAutoAllocation(hipfftHandle plan, int autoAllocate);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftSetAutoAllocation(plan: *mut c_void, auto_allocate: c_int) -> c_int {
    hipfft_guard("hipfftSetAutoAllocation", |_| {
        with_slot(plan, |s| {
            s.auto_allocation = auto_allocate != 0;
            fft::SUCCESS
        })
    })
}

/// One side of the advanced layout: a null embed is the packed layout (stride and distance
/// ignored, as hipFFT does).
///
/// # Safety
/// `embed` is null or points to `rank` readable `long long`s.
unsafe fn side(rank: usize, embed: *const c_longlong, stride: c_longlong, dist: c_longlong) -> Option<Layout> {
    if embed.is_null() {
        return None;
    }
    // SAFETY: non-null, and the caller promises `rank` readable entries.
    let e = unsafe { std::slice::from_raw_parts(embed, rank) };
    Some(Layout::new(e, stride, dist))
}

/// `hipfftResult hipfftMakePlanMany64(hipfftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, long long int* onembed, long long int ostride, long long int odist, hipfftType type, long long int batch, size_t* workSize);`
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hipfftMakePlanMany64(
    plan: *mut c_void,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    ty: c_int,
    batch: c_longlong,
    work_size: *mut usize,
) -> c_int {
    hipfft_guard("hipfftMakePlanMany64", |b| {
        let Some(slot) = plans().get(&(plan as usize)).copied() else { return fft::INVALID_PLAN };
        if slot.made.is_some() {
            return fft::INVALID_PLAN;
        }
        if n.is_null() || !(1..=3).contains(&rank) {
            return fft::INVALID_VALUE;
        }
        // As cuFFT (and hipFFT over it): the advanced layout needs both embeds.
        if inembed.is_null() != onembed.is_null() {
            return fft::INVALID_VALUE;
        }
        let Ok(transform) = TransformType::from_raw(ty) else { return fft::INVALID_TYPE };
        let r = rank as usize;
        // SAFETY: non-null, rank checked; the caller promises `rank` lengths.
        let dims = unsafe { std::slice::from_raw_parts(n, r) };
        let mut desc = PlanDesc::new(transform, dims, batch);
        // SAFETY: the caller promises `rank` entries behind each non-null embed.
        desc.input = unsafe { side(r, inembed, istride, idist) };
        // SAFETY: as above.
        desc.output = unsafe { side(r, onembed, ostride, odist) };
        desc.device = match b.current_device() {
            Ok(d) => d,
            Err(e) => return hipfft_status(&e),
        };
        if let Err(e) = desc.extents() {
            return hipfft_status(&Error::InvalidDesc(e));
        }
        let created = match b.plan_create(&desc, PlanOptions { auto_allocation: slot.auto_allocation }) {
            Ok(c) => c,
            Err(e) => return fft_done(Err(e)),
        };
        let mut map = plans();
        match map.get_mut(&(plan as usize)) {
            Some(s) if s.made.is_none() => s.made = Some((created.plan, transform)),
            // Destroyed or made by another thread meanwhile (a caller bug): do not leak.
            _ => {
                drop(map);
                // SAFETY: just created here, never stored, never executed.
                let _ = unsafe { b.plan_destroy(created.plan) };
                return fft::INVALID_PLAN;
            }
        }
        if !work_size.is_null() {
            // SAFETY: non-null, and the caller promises it is writable.
            unsafe { *work_size = created.work_size };
        }
        fft::SUCCESS
    })
}

/// `hipfftResult hipfftSetStream(hipfftHandle plan, hipStream_t stream);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftSetStream(plan: *mut c_void, stream: *mut c_void) -> c_int {
    hipfft_guard("hipfftSetStream", |_| {
        with_slot(plan, |s| {
            s.stream = RawStream(stream as usize);
            fft::SUCCESS
        })
    })
}

/// `hipfftResult hipfftSetWorkArea(hipfftHandle plan, void* workArea);` (null clears it)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftSetWorkArea(plan: *mut c_void, work_area: *mut c_void) -> c_int {
    hipfft_guard("hipfftSetWorkArea", |_| {
        with_slot(plan, |s| {
            s.work_area = (!work_area.is_null()).then(|| DevicePtr::from_ptr(work_area));
            fft::SUCCESS
        })
    })
}

/// Every `hipfftExec*`: the slot's plan, stream and work area, and the caller's buffers.
///
/// # Safety
/// hipFFT's contract for the exec: `input` and `output` are device memory of the plan's
/// sizes, the stream set on the plan is live, and all stay valid until the transform
/// completes.
unsafe fn exec(
    name: &'static str,
    plan: *mut c_void,
    expect: TransformType,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> c_int {
    hipfft_guard(name, |b| {
        let Some(slot) = plans().get(&(plan as usize)).copied() else { return fft::INVALID_PLAN };
        let Some((raw, transform)) = slot.made else { return fft::INVALID_PLAN };
        if transform != expect || input.is_null() || output.is_null() {
            return fft::INVALID_VALUE;
        }
        let direction = if transform.is_complex() {
            match Direction::from_raw(direction) {
                Some(d) => d,
                None => return fft::INVALID_VALUE,
            }
        } else if transform.is_forward_real() {
            Direction::Forward
        } else {
            Direction::Inverse
        };
        // SAFETY: `raw` is the slot's live plan made for `transform`; the caller promises
        // the buffers, the stream and the work area it set (hipFFT's contract).
        fft_done(unsafe { b.plan_exec(
            raw,
            transform,
            slot.stream,
            slot.work_area,
            DevicePtr::from_ptr(input),
            DevicePtr::from_ptr(output),
            direction,
        ) })
    })
}

/// `hipfftResult hipfftExecC2C(hipfftHandle plan, hipfftComplex* idata, hipfftComplex* odata, int direction);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecC2C(plan: *mut c_void, i: *mut c_void, o: *mut c_void, direction: c_int) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecC2C", plan, TransformType::C2C, i, o, direction) }
}

/// `hipfftResult hipfftExecR2C(hipfftHandle plan, hipfftReal* idata, hipfftComplex* odata);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecR2C(plan: *mut c_void, i: *mut c_void, o: *mut c_void) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecR2C", plan, TransformType::R2C, i, o, sys::HIPFFT_FORWARD) }
}

/// `hipfftResult hipfftExecC2R(hipfftHandle plan, hipfftComplex* idata, hipfftReal* odata);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecC2R(plan: *mut c_void, i: *mut c_void, o: *mut c_void) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecC2R", plan, TransformType::C2R, i, o, sys::HIPFFT_BACKWARD) }
}

/// `hipfftResult hipfftExecZ2Z(hipfftHandle plan, hipfftDoubleComplex* idata, hipfftDoubleComplex* odata, int direction);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecZ2Z(plan: *mut c_void, i: *mut c_void, o: *mut c_void, direction: c_int) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecZ2Z", plan, TransformType::Z2Z, i, o, direction) }
}

/// `hipfftResult hipfftExecD2Z(hipfftHandle plan, hipfftDoubleReal* idata, hipfftDoubleComplex* odata);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecD2Z(plan: *mut c_void, i: *mut c_void, o: *mut c_void) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecD2Z", plan, TransformType::D2Z, i, o, sys::HIPFFT_FORWARD) }
}

/// `hipfftResult hipfftExecZ2D(hipfftHandle plan, hipfftDoubleComplex* idata, hipfftDoubleReal* odata);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftExecZ2D(plan: *mut c_void, i: *mut c_void, o: *mut c_void) -> c_int {
    // SAFETY: the caller's promise for this exec, passed on.
    unsafe { exec("hipfftExecZ2D", plan, TransformType::Z2D, i, o, sys::HIPFFT_BACKWARD) }
}

/// The shim's crate version as `major * 10_000 + minor * 100 + patch`.
fn version_small() -> c_int {
    let p = |s: &str| s.parse::<c_int>().unwrap_or(0);
    p(env!("CARGO_PKG_VERSION_MAJOR")) * 10_000
        + p(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + p(env!("CARGO_PKG_VERSION_PATCH"))
}

/// `hipfftResult hipfftGetVersion(int* version);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipfftGetVersion(version: *mut c_int) -> c_int {
    guard("hipfftGetVersion", fft::INTERNAL_ERROR, || {
        if version.is_null() {
            return fft::INVALID_VALUE;
        }
        // SAFETY: non-null, and the caller promises it is writable.
        unsafe { *version = version_small() };
        fft::SUCCESS
    })
}

// ---------------------------------------------------------------------------------------
// HIP runtime

/// `hipError_t hipGetDeviceCount(int* count);` (`hipErrorNoDevice` with 0, like HIP)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> c_int {
    hip_guard("hipGetDeviceCount", |b| {
        if count.is_null() {
            return he::hipErrorInvalidValue;
        }
        match b.device_count() {
            Ok(n) => {
                // SAFETY: non-null, and the caller promises it is writable.
                unsafe { *count = n };
                if n == 0 { he::hipErrorNoDevice } else { he::hipSuccess }
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipGetDeviceFlags(unsigned int* flags);` (the sim's `HIPFFT_POOL_SIM_DEVICE_FLAGS`)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceFlags(flags: *mut std::ffi::c_uint) -> c_int {
    hip_guard("hipGetDeviceFlags", |b| {
        if flags.is_null() {
            return he::hipErrorInvalidValue;
        }
        match b.device_flags() {
            Ok(f) => {
                // SAFETY: non-null, and the caller promises it is writable.
                unsafe { *flags = f.unwrap_or(0) };
                he::hipSuccess
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipGetDevice(int* deviceId);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(device: *mut c_int) -> c_int {
    hip_guard("hipGetDevice", |b| {
        if device.is_null() {
            return he::hipErrorInvalidValue;
        }
        match b.current_device() {
            Ok(d) => {
                // SAFETY: non-null, and the caller promises it is writable.
                unsafe { *device = d };
                he::hipSuccess
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipSetDevice(int deviceId);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipSetDevice(device: c_int) -> c_int {
    hip_guard("hipSetDevice", |b| hip_done(b.set_device(device)))
}

/// `hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> c_int {
    hip_guard("hipDeviceGetName", |b| {
        if name.is_null() || len <= 0 {
            return he::hipErrorInvalidValue;
        }
        match b.device_count() {
            Ok(n) if (0..n).contains(&device) => {}
            Ok(_) => return he::hipErrorInvalidDevice,
            Err(e) => return hip_status(&e),
        }
        let info = b.info();
        let text = match info.devices.get(device as usize) {
            Some(d) => format!("hip-shim over {}: {d}", b.kind()),
            None => format!("hip-shim over {} device {device}", b.kind()),
        };
        let bytes: Vec<u8> = text.bytes().filter(|&c| c != 0).take(len as usize - 1).collect();
        // SAFETY: `name` holds `len` bytes (the caller's promise) and at most `len - 1` are
        // copied, plus the NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), name, bytes.len());
            *name.add(bytes.len()) = 0;
        }
        he::hipSuccess
    })
}

/// The shim's crate version in `HIP_VERSION` form (`major * 10_000_000 + minor * 100_000 + patch`).
fn version_hip() -> c_int {
    let p = |s: &str| s.parse::<c_int>().unwrap_or(0);
    p(env!("CARGO_PKG_VERSION_MAJOR")) * 10_000_000
        + p(env!("CARGO_PKG_VERSION_MINOR")) * 100_000
        + p(env!("CARGO_PKG_VERSION_PATCH"))
}

/// `hipError_t hipRuntimeGetVersion(int* runtimeVersion);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut c_int) -> c_int {
    guard("hipRuntimeGetVersion", he::hipErrorUnknown, || {
        if version.is_null() {
            return he::hipErrorInvalidValue;
        }
        // SAFETY: non-null, and the caller promises it is writable.
        unsafe { *version = version_hip() };
        he::hipSuccess
    })
}

/// `hipError_t hipDriverGetVersion(int* driverVersion);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDriverGetVersion(version: *mut c_int) -> c_int {
    guard("hipDriverGetVersion", he::hipErrorUnknown, || {
        if version.is_null() {
            return he::hipErrorInvalidValue;
        }
        // SAFETY: non-null, and the caller promises it is writable.
        unsafe { *version = version_hip() };
        he::hipSuccess
    })
}

/// `hipError_t hipMalloc(void** ptr, size_t size);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> c_int {
    hip_guard("hipMalloc", |b| {
        if ptr.is_null() {
            return he::hipErrorInvalidValue;
        }
        // hipMalloc(0) succeeds with a null pointer.
        if size == 0 {
            // SAFETY: non-null, and the caller promises it is writable.
            unsafe { *ptr = std::ptr::null_mut() };
            return he::hipSuccess;
        }
        match b.malloc(size) {
            Ok(p) => {
                // SAFETY: as above.
                unsafe { *ptr = p.as_ptr() };
                he::hipSuccess
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipFree(void* ptr);` (null is a no-op)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFree(ptr: *mut c_void) -> c_int {
    hip_guard("hipFree", |b| {
        if ptr.is_null() {
            return he::hipSuccess;
        }
        // SAFETY: HIP's contract: `ptr` came from hipMalloc and is not used after this call.
        hip_done(unsafe { b.free(DevicePtr::from_ptr(ptr)) })
    })
}

/// `hipMemcpy` and `hipMemcpyAsync`.
///
/// # Safety
/// HIP's contract: `dst` and `src` hold `bytes` bytes of the memory `kind` names, and
/// `stream` is live; for an asynchronous copy, both stay valid until it completes.
unsafe fn copy(
    b: &Arc<dyn Runtime>,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: c_int,
    stream: Option<RawStream>,
) -> c_int {
    if bytes == 0 {
        return he::hipSuccess;
    }
    if dst.is_null() || src.is_null() {
        return he::hipErrorInvalidValue;
    }
    let r = match kind {
        sys::hipMemcpyHostToHost => {
            // SAFETY: host memory of `bytes` bytes on both sides (the caller's promise).
            unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), bytes) };
            Ok(())
        }
        // The backend's host copies are synchronous and ordered after the device's prior
        // work, which satisfies hipMemcpyAsync too.
        sys::hipMemcpyHostToDevice => {
            // SAFETY: `src` is host memory of `bytes` bytes (the caller's promise).
            let host = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), bytes) };
            // SAFETY: `dst` is device memory of `bytes` bytes (the caller's promise).
            unsafe { b.memcpy_htod(DevicePtr::from_ptr(dst), host) }
        }
        sys::hipMemcpyDeviceToHost => {
            // SAFETY: `dst` is writable host memory of `bytes` bytes (the caller's promise).
            let host = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), bytes) };
            // SAFETY: `src` is device memory of `bytes` bytes (the caller's promise).
            unsafe { b.memcpy_dtoh(host, DevicePtr::from_ptr(src)) }
        }
        sys::hipMemcpyDeviceToDevice => {
            let s = stream.unwrap_or(RawStream::NULL);
            // SAFETY: device memory of `bytes` bytes on both sides, kept until the copy
            // completes, and a live stream (the caller's promise).
            unsafe { b.memcpy_dtod_async(DevicePtr::from_ptr(dst), DevicePtr::from_ptr(src), bytes, s) }.and_then(|()| {
                // SAFETY: the null stream is always live.
                if stream.is_none() { unsafe { b.stream_synchronize(RawStream::NULL) } } else { Ok(()) }
            })
        }
        // hipMemcpyDefault needs unified addressing the backends do not promise.
        _ => return he::hipErrorInvalidMemcpyDirection,
    };
    hip_done(r)
}

/// `hipError_t hipMemcpy(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(dst: *mut c_void, src: *const c_void, bytes: usize, kind: c_int) -> c_int {
    // SAFETY: the caller's promise for hipMemcpy, passed on.
    hip_guard("hipMemcpy", |b| unsafe { copy(b, dst, src, bytes, kind, None) })
}

/// `hipError_t hipMemcpyAsync(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind, hipStream_t stream);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: c_int,
    stream: *mut c_void,
) -> c_int {
    // SAFETY: the caller's promise for hipMemcpyAsync, passed on.
    hip_guard("hipMemcpyAsync", |b| unsafe { copy(b, dst, src, bytes, kind, Some(RawStream(stream as usize))) })
}

/// `hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);`
/// (the backend's streams are non-blocking whatever the flags)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut *mut c_void, _flags: c_uint) -> c_int {
    hip_guard("hipStreamCreateWithFlags", |b| {
        if stream.is_null() {
            return he::hipErrorInvalidValue;
        }
        match b.stream_create() {
            Ok(s) => {
                // SAFETY: non-null, and the caller promises it is writable.
                unsafe { *stream = s.0 as *mut c_void };
                he::hipSuccess
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipStreamSynchronize(hipStream_t stream);` (null: the null stream)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamSynchronize(stream: *mut c_void) -> c_int {
    // SAFETY: HIP's contract: `stream` is a live stream, or null for the null stream.
    hip_guard("hipStreamSynchronize", |b| hip_done(unsafe { b.stream_synchronize(RawStream(stream as usize)) }))
}

/// `hipError_t hipStreamDestroy(hipStream_t stream);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamDestroy(stream: *mut c_void) -> c_int {
    hip_guard("hipStreamDestroy", |b| {
        if stream.is_null() {
            return he::hipErrorInvalidResourceHandle;
        }
        // SAFETY: HIP's contract: a live stream from hipStreamCreate*, not used afterwards.
        hip_done(unsafe { b.stream_destroy(RawStream(stream as usize)) })
    })
}

/// `hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut *mut c_void, _flags: c_uint) -> c_int {
    hip_guard("hipEventCreateWithFlags", |b| {
        if event.is_null() {
            return he::hipErrorInvalidValue;
        }
        match b.event_create() {
            Ok(e) => {
                // SAFETY: non-null, and the caller promises it is writable.
                unsafe { *event = e.0 as *mut c_void };
                he::hipSuccess
            }
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventRecord(event: *mut c_void, stream: *mut c_void) -> c_int {
    hip_guard("hipEventRecord", |b| {
        if event.is_null() {
            return he::hipErrorInvalidResourceHandle;
        }
        // SAFETY: HIP's contract: a live event and a live (or null) stream.
        hip_done(unsafe { b.event_record(RawEvent(event as usize), RawStream(stream as usize)) })
    })
}

/// `hipError_t hipEventQuery(hipEvent_t event);` (`hipErrorNotReady` while pending)
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventQuery(event: *mut c_void) -> c_int {
    hip_guard("hipEventQuery", |b| {
        if event.is_null() {
            return he::hipErrorInvalidResourceHandle;
        }
        // SAFETY: HIP's contract: a live event.
        match unsafe { b.event_query(RawEvent(event as usize)) } {
            Ok(true) => he::hipSuccess,
            Ok(false) => he::hipErrorNotReady,
            Err(e) => hip_status(&e),
        }
    })
}

/// `hipError_t hipEventSynchronize(hipEvent_t event);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventSynchronize(event: *mut c_void) -> c_int {
    hip_guard("hipEventSynchronize", |b| {
        if event.is_null() {
            return he::hipErrorInvalidResourceHandle;
        }
        // SAFETY: HIP's contract: a live event.
        hip_done(unsafe { b.event_synchronize(RawEvent(event as usize)) })
    })
}

/// `hipError_t hipEventDestroy(hipEvent_t event);`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventDestroy(event: *mut c_void) -> c_int {
    hip_guard("hipEventDestroy", |b| {
        if event.is_null() {
            return he::hipErrorInvalidResourceHandle;
        }
        // SAFETY: HIP's contract: a live event, not used afterwards.
        hip_done(unsafe { b.event_destroy(RawEvent(event as usize)) })
    })
}

/// `const char* hipGetErrorName(hipError_t hip_error);`
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorName(error: c_int) -> *const c_char {
    catch_unwind(|| hip_error_cname(error).unwrap_or(c"hipErrorUnknown")).unwrap_or(c"hipErrorUnknown").as_ptr()
}

// Keep the exported names and hipfft_pool's binding list in step.
#[cfg(test)]
mod tests {
    #[test]
    fn cstr_table_is_static() {
        let p = super::hipGetErrorName(600);
        // SAFETY: hipGetErrorName returns a static NUL-terminated string.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap(), "hipErrorNotReady");
    }
}
