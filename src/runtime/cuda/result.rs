//! Status-code mapping and thin, `Result`-returning calls into cudarc's raw `sys` layers.
//!
//! Each wrapper is one library call: it converts raw values (`usize` handles) to the C types,
//! calls the entry point, and maps the status by name and number. Nothing is owned here.
//! Callers must have gone through [`load`] first, so no cudarc loader can panic.

use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use cudarc::cufft::sys as fft;
use cudarc::driver::sys as drv;
use cudarc::runtime::sys as rt;

use crate::error::{Api, Error, Result, RuntimeCode};
use crate::runtime::boundary::{DevicePtr, RawEvent, RawPlan, RawStream};

/// The names of the `cudaError_t` values this crate expects to see (driver_types.h).
const CUDA_ERROR_NAMES: &[(i32, &str)] = &[
    (0, "cudaSuccess"),
    (1, "cudaErrorInvalidValue"),
    (2, "cudaErrorMemoryAllocation"),
    (3, "cudaErrorInitializationError"),
    (4, "cudaErrorCudartUnloading"),
    (35, "cudaErrorInsufficientDriver"),
    (46, "cudaErrorDevicesUnavailable"),
    (100, "cudaErrorNoDevice"),
    (101, "cudaErrorInvalidDevice"),
    (209, "cudaErrorNoKernelImageForDevice"),
    (400, "cudaErrorInvalidResourceHandle"),
    (600, "cudaErrorNotReady"),
    (700, "cudaErrorIllegalAddress"),
    (709, "cudaErrorContextIsDestroyed"),
    (719, "cudaErrorLaunchFailure"),
    (999, "cudaErrorUnknown"),
];

/// A `cudaError_t` by name and number, named from the table above.
pub fn cuda_code(value: i32) -> RuntimeCode {
    let name = CUDA_ERROR_NAMES.iter().find(|(v, _)| *v == value).map_or(UNRECOGNIZED, |(_, n)| *n);
    RuntimeCode { api: Api::Cuda, value, name }
}

const UNRECOGNIZED: &str = "cudaErrorUnrecognized";

/// A status the runtime returned; values outside the table are named by the runtime's own
/// `cudaGetErrorName` (static strings of a library that is never unloaded).
fn runtime_code(e: rt::cudaError_t) -> RuntimeCode {
    let mut code = cuda_code(e as i32);
    if code.name == UNRECOGNIZED {
        // SAFETY: cudaGetErrorName takes any value and returns a static string or null.
        let p = unsafe { rt::cudaGetErrorName(e) };
        // SAFETY: non-null: a NUL-terminated static string of a library never unloaded.
        if let Some(name) = (!p.is_null()).then(|| unsafe { CStr::from_ptr::<'static>(p) }.to_str().ok()).flatten() {
            code.name = name;
        }
    }
    code
}

fn check_cuda(call: &'static str, e: rt::cudaError_t) -> Result<()> {
    match e {
        rt::cudaError_t::cudaSuccess => Ok(()),
        e => Err(Error::Runtime { call, code: runtime_code(e) }),
    }
}

fn check_cufft(call: &'static str, r: fft::cufftResult) -> Result<()> {
    match r {
        fft::cufftResult::CUFFT_SUCCESS => Ok(()),
        r => Err(Error::Runtime { call, code: RuntimeCode::cufft(r as i32) }),
    }
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

/// One library this runtime needs: cudarc's short name (`cudart`), its presence check, and
/// a resolver that loads it and returns the first of `symbols` it lacks. Resolving every
/// symbol up front means no later call can reach cudarc's "Missing symbol" panic.
struct Lib {
    name: &'static str,
    present: unsafe fn() -> bool,
    first_missing: fn(&'static [&'static str]) -> Option<&'static str>,
    symbols: &'static [&'static str],
}

/// A `first_missing` for the sys module `$m` (written per module so the `Library` type
/// cudarc's `culib()` returns never has to be named).
macro_rules! first_missing {
    ($m:ident) => {
        |symbols: &'static [&'static str]| {
            // SAFETY: cudarc's loader opens the library (its initializers are what using it
            // requires); `present` ran first, so it is found.
            let library = unsafe { $m::culib() };
            // SAFETY: only looks the symbol up; the pointer is never called through here.
            symbols.iter().copied().find(|s| unsafe { library.get::<*const c_void>(s.as_bytes()) }.is_err())
        }
    };
}

const LIBS: [Lib; 3] = [
    Lib {
        name: "cudart",
        present: rt::is_culib_present,
        first_missing: first_missing!(rt),
        symbols: &[
            "cudaGetDeviceCount",
            "cudaGetDevice",
            "cudaSetDevice",
            "cudaMalloc",
            "cudaFree",
            "cudaMemcpy",
            "cudaMemcpyAsync",
            "cudaStreamCreateWithFlags",
            "cudaStreamSynchronize",
            "cudaStreamDestroy",
            "cudaEventCreateWithFlags",
            "cudaEventRecord",
            "cudaEventQuery",
            "cudaEventSynchronize",
            "cudaEventDestroy",
            "cudaRuntimeGetVersion",
            "cudaDriverGetVersion",
            "cudaGetErrorName",
            "cudaStreamIsCapturing",
            "cudaLaunchHostFunc",
            "cudaThreadExchangeStreamCaptureMode",
        ],
    },
    Lib {
        name: "cufft",
        present: fft::is_culib_present,
        first_missing: first_missing!(fft),
        symbols: &[
            "cufftCreate",
            "cufftSetAutoAllocation",
            "cufftMakePlanMany64",
            "cufftSetStream",
            "cufftSetWorkArea",
            "cufftExecC2C",
            "cufftExecR2C",
            "cufftExecC2R",
            "cufftExecZ2Z",
            "cufftExecD2Z",
            "cufftExecZ2D",
            "cufftDestroy",
            "cufftGetVersion",
        ],
    },
    // The driver only names devices (`cuDeviceGetName`); cudart needs libcuda anyway.
    Lib {
        name: "cuda",
        present: drv::is_culib_present,
        first_missing: first_missing!(drv),
        symbols: &["cuInit", "cuDeviceGet", "cuDeviceGetName", "cuGetErrorName"],
    },
];

static LOADED: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();

/// Finds, loads and resolves every library and symbol this runtime uses, once per process.
///
/// `is_culib_present` runs first, so a missing library becomes `Error::Unavailable` naming
/// it and the file names cudarc tried; the loads themselves run under `catch_unwind` as a
/// second guard against cudarc's panicking loaders.
pub fn load() -> Result<()> {
    LOADED.get_or_init(load_uncached).clone().map_err(Error::Unavailable)
}

fn load_uncached() -> std::result::Result<(), String> {
    let mut missing = Vec::new();
    for lib in &LIBS {
        // SAFETY: cudarc's presence check only tries to open the library by its names.
        let present = catch_unwind(|| unsafe { (lib.present)() }).unwrap_or(false);
        if !present {
            // cudarc also tries Windows-style `lib{name}64_*` names; list the others.
            let mut tried = cudarc::get_lib_name_candidates(lib.name);
            tried.retain(|n| !n.contains("64"));
            tried.dedup();
            missing.push(format!("lib{} (looked for {})", lib.name, tried.join(", ")));
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "CUDA library not found: {}; install the CUDA toolkit and driver, or add their directory to LD_LIBRARY_PATH",
            missing.join("; ")
        ));
    }
    for lib in &LIBS {
        let resolved = catch_unwind(AssertUnwindSafe(|| (lib.first_missing)(lib.symbols)));
        match resolved {
            Ok(None) => {}
            Ok(Some(symbol)) => return Err(format!("lib{} was loaded but lacks `{symbol}` (too old?)", lib.name)),
            Err(_) => return Err(format!("loading lib{} panicked inside cudarc", lib.name)),
        }
    }
    Ok(())
}

/// The files the loaded libraries were mapped from (Linux `/proc/self/maps`), else the
/// short name with "path unknown".
pub fn library_paths() -> Vec<(String, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    LIBS.iter()
        .map(|lib| {
            let prefix = format!("lib{}.so", lib.name);
            let path = maps
                .lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .find(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with(&prefix)))
                .map_or_else(|| "(path unknown)".to_string(), str::to_string);
            (format!("lib{}", lib.name), path)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// CUDA runtime
// ---------------------------------------------------------------------------------------------

fn stream_t(s: RawStream) -> rt::cudaStream_t {
    s.0 as rt::cudaStream_t
}

fn event_t(e: RawEvent) -> rt::cudaEvent_t {
    e.0 as rt::cudaEvent_t
}

pub fn device_count() -> Result<i32> {
    let mut n: c_int = 0;
    // SAFETY: loaded cudart (`load`); `n` is a valid out pointer.
    check_cuda("cudaGetDeviceCount", unsafe { rt::cudaGetDeviceCount(&mut n) })?;
    Ok(n)
}

pub fn get_device() -> Result<i32> {
    let mut d: c_int = 0;
    // SAFETY: loaded cudart; `d` is a valid out pointer.
    check_cuda("cudaGetDevice", unsafe { rt::cudaGetDevice(&mut d) })?;
    Ok(d)
}

pub fn set_device(device: i32) -> Result<()> {
    // SAFETY: loaded cudart; any ordinal is checked by the library.
    check_cuda("cudaSetDevice", unsafe { rt::cudaSetDevice(device) })
}

pub fn malloc(bytes: usize) -> Result<DevicePtr> {
    let mut p: *mut c_void = ptr::null_mut();
    // SAFETY: loaded cudart; `p` is a valid out pointer.
    check_cuda("cudaMalloc", unsafe { rt::cudaMalloc(&mut p, bytes) })?;
    Ok(DevicePtr::from_ptr(p))
}

/// `cudaFree`.
///
/// # Safety
/// `p` is null or from [`malloc`], not freed, and no pending work uses it.
pub unsafe fn free(p: DevicePtr) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaFree", unsafe { rt::cudaFree(p.as_ptr()) })
}

/// `cudaMemcpy` host to device.
///
/// # Safety
/// `dst` is device memory of at least `src.len()` bytes.
pub unsafe fn memcpy_htod(dst: DevicePtr, src: &[u8]) -> Result<()> {
    let kind = rt::cudaMemcpyKind::cudaMemcpyHostToDevice;
    // SAFETY: the caller's promise on `dst`; `src` is a live slice of that length.
    check_cuda("cudaMemcpy", unsafe { rt::cudaMemcpy(dst.as_ptr(), src.as_ptr().cast(), src.len(), kind) })
}

/// `cudaMemcpy` device to host.
///
/// # Safety
/// `src` is device memory of at least `dst.len()` bytes.
pub unsafe fn memcpy_dtoh(dst: &mut [u8], src: DevicePtr) -> Result<()> {
    let kind = rt::cudaMemcpyKind::cudaMemcpyDeviceToHost;
    // SAFETY: the caller's promise on `src`; `dst` is a live, writable slice of that length.
    check_cuda("cudaMemcpy", unsafe { rt::cudaMemcpy(dst.as_mut_ptr().cast(), src.as_ptr(), dst.len(), kind) })
}

/// `cudaMemcpyAsync` device to device.
///
/// # Safety
/// `dst` and `src` are device memory of at least `bytes` bytes that stay allocated until
/// the copy completes on `stream`, a live stream (or the null stream).
pub unsafe fn memcpy_dtod_async(dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
    let kind = rt::cudaMemcpyKind::cudaMemcpyDeviceToDevice;
    // SAFETY: the caller's promise.
    let e = unsafe { rt::cudaMemcpyAsync(dst.as_ptr(), src.as_ptr(), bytes, kind, stream_t(stream)) };
    check_cuda("cudaMemcpyAsync", e)
}

pub fn stream_create() -> Result<RawStream> {
    let mut s: rt::cudaStream_t = ptr::null_mut();
    // SAFETY: loaded cudart; `s` is a valid out pointer.
    check_cuda("cudaStreamCreateWithFlags", unsafe {
        rt::cudaStreamCreateWithFlags(&mut s, rt::cudaStreamNonBlocking)
    })?;
    Ok(RawStream(s as usize))
}

/// `cudaStreamIsCapturing`: whether `s` is capturing a graph now (an invalidated capture
/// counts as capturing: work enqueued there does not run).
///
/// # Safety
/// `s` is a live stream of this runtime, or the null stream.
pub unsafe fn stream_is_capturing(s: RawStream) -> Result<bool> {
    let mut status = rt::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    // SAFETY: the caller's promise; the out pointer is a live local.
    check_cuda("cudaStreamIsCapturing", unsafe { rt::cudaStreamIsCapturing(stream_t(s), &mut status) })?;
    Ok(status != rt::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone)
}

/// `cudaLaunchHostFunc`.
///
/// # Safety
/// `s` is a live stream of this runtime; `f(data)` may run on any thread and calls no CUDA.
pub unsafe fn launch_host_func(s: RawStream, f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaLaunchHostFunc", unsafe { rt::cudaLaunchHostFunc(stream_t(s), Some(f), data) })
}

/// Runs `f` with this thread's stream-capture mode relaxed, so that the allocations inside
/// a plan's creation or destroy are allowed while another thread captures in global mode
/// (MLX's mode), and break nobody's capture. The mode is restored after.
pub fn relaxed_capture<T>(f: impl FnOnce() -> T) -> T {
    let mut mode = rt::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: exchanges this thread's mode through a live local.
    let swapped = unsafe { rt::cudaThreadExchangeStreamCaptureMode(&mut mode) } == rt::cudaError::cudaSuccess;
    let r = f();
    if swapped {
        // SAFETY: as above; puts the previous mode back.
        unsafe { rt::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    }
    r
}

/// `cudaStreamSynchronize`.
///
/// # Safety
/// `s` is a live stream or the null stream.
pub unsafe fn stream_synchronize(s: RawStream) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaStreamSynchronize", unsafe { rt::cudaStreamSynchronize(stream_t(s)) })
}

/// `cudaStreamDestroy`.
///
/// # Safety
/// `s` is a live stream from [`stream_create`] that nobody uses afterwards.
pub unsafe fn stream_destroy(s: RawStream) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaStreamDestroy", unsafe { rt::cudaStreamDestroy(stream_t(s)) })
}

pub fn event_create() -> Result<RawEvent> {
    let mut e: rt::cudaEvent_t = ptr::null_mut();
    // SAFETY: loaded cudart; `e` is a valid out pointer.
    check_cuda("cudaEventCreateWithFlags", unsafe {
        rt::cudaEventCreateWithFlags(&mut e, rt::cudaEventDisableTiming)
    })?;
    Ok(RawEvent(e as usize))
}

/// `cudaEventRecord`.
///
/// # Safety
/// `e` is a live event and `s` a live stream (or the null stream).
pub unsafe fn event_record(e: RawEvent, s: RawStream) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaEventRecord", unsafe { rt::cudaEventRecord(event_t(e), stream_t(s)) })
}

/// `cudaEventQuery`; `Ok(false)` on `cudaErrorNotReady`: the event's work is still
/// pending, not an error.
///
/// # Safety
/// `e` is a live event.
pub unsafe fn event_query(e: RawEvent) -> Result<bool> {
    // SAFETY: the caller's promise.
    match unsafe { rt::cudaEventQuery(event_t(e)) } {
        rt::cudaError_t::cudaErrorNotReady => Ok(false),
        r => check_cuda("cudaEventQuery", r).map(|()| true),
    }
}

/// `cudaEventSynchronize`.
///
/// # Safety
/// `e` is a live event.
pub unsafe fn event_synchronize(e: RawEvent) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaEventSynchronize", unsafe { rt::cudaEventSynchronize(event_t(e)) })
}

/// `cudaEventDestroy`.
///
/// # Safety
/// `e` is a live event from [`event_create`] that nobody uses afterwards.
pub unsafe fn event_destroy(e: RawEvent) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cuda("cudaEventDestroy", unsafe { rt::cudaEventDestroy(event_t(e)) })
}

/// `cudaRuntimeGetVersion`, e.g. 13000 for 13.0.
pub fn runtime_version() -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: loaded cudart; `v` is a valid out pointer.
    check_cuda("cudaRuntimeGetVersion", unsafe { rt::cudaRuntimeGetVersion(&mut v) })?;
    Ok(v)
}

/// `cudaDriverGetVersion`: the newest CUDA version the installed driver supports.
pub fn driver_version() -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: loaded cudart; `v` is a valid out pointer.
    check_cuda("cudaDriverGetVersion", unsafe { rt::cudaDriverGetVersion(&mut v) })?;
    Ok(v)
}

/// The device's name through the driver API (`cuDeviceGetName`), which, unlike
/// `cudaGetDeviceProperties`, has no struct whose layout changes between CUDA versions.
pub fn device_name(device: i32) -> Result<String> {
    let driver = |call: &'static str, r: drv::CUresult| match r {
        drv::CUresult::CUDA_SUCCESS => Ok(()),
        r => {
            let mut p: *const std::ffi::c_char = ptr::null();
            // SAFETY: loaded driver; takes any value and a valid out pointer.
            let named = unsafe { drv::cuGetErrorName(r, &mut p) } == drv::CUresult::CUDA_SUCCESS && !p.is_null();
            // The driver's error strings are static and the library is never unloaded.
            // SAFETY: `named`: a non-null, NUL-terminated static string.
            let name = if named { unsafe { CStr::from_ptr::<'static>(p) }.to_str().ok() } else { None };
            Err(Error::Runtime {
                call,
                code: RuntimeCode { api: Api::Cuda, value: r as i32, name: name.unwrap_or("CUresult") },
            })
        }
    };
    // SAFETY: loaded driver; cuInit takes flags only.
    driver("cuInit", unsafe { drv::cuInit(0) })?;
    let mut dev: drv::CUdevice = 0;
    // SAFETY: `dev` is a valid out pointer; the ordinal is checked by the driver.
    driver("cuDeviceGet", unsafe { drv::cuDeviceGet(&mut dev, device) })?;
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: `buf` is writable for the length passed; `dev` came from cuDeviceGet.
    driver("cuDeviceGetName", unsafe { drv::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
    // SAFETY: cuDeviceGetName NUL-terminates within the buffer it was given.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------------------------
// cuFFT
// ---------------------------------------------------------------------------------------------

/// `RawPlan` carries the `cufftHandle` int's bits.
fn handle(p: RawPlan) -> fft::cufftHandle {
    p.0 as u32 as fft::cufftHandle
}

pub fn cufft_create() -> Result<RawPlan> {
    let mut h: fft::cufftHandle = 0;
    // SAFETY: loaded cuFFT; `h` is a valid out pointer.
    check_cufft("cufftCreate", unsafe { fft::cufftCreate(&mut h) })?;
    Ok(RawPlan(h as u32 as usize))
}

/// `cufftSetAutoAllocation`.
///
/// # Safety
/// `p` is a live handle from [`cufft_create`], not yet made.
pub unsafe fn cufft_set_auto_allocation(p: RawPlan, auto: bool) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cufft("cufftSetAutoAllocation", unsafe { fft::cufftSetAutoAllocation(handle(p), auto as c_int) })
}

pub fn cufft_type(t: crate::desc::TransformType) -> fft::cufftType {
    use crate::desc::TransformType as T;
    use fft::cufftType::*;
    match t {
        T::R2C => CUFFT_R2C,
        T::C2R => CUFFT_C2R,
        T::C2C => CUFFT_C2C,
        T::D2Z => CUFFT_D2Z,
        T::Z2D => CUFFT_Z2D,
        T::Z2Z => CUFFT_Z2Z,
    }
}

/// `cufftMakePlanMany64`; a `None` embed passes a null pointer (packed layout, strides
/// ignored). Returns the work size cuFFT reports.
///
/// # Safety
/// `p` is a live handle from [`cufft_create`], not yet made; the embeds, when given, hold
/// `n.len()` entries.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cufft_make_plan_many64(
    p: RawPlan,
    n: &mut [i64],
    inembed: Option<&mut [i64]>,
    istride: i64,
    idist: i64,
    onembed: Option<&mut [i64]>,
    ostride: i64,
    odist: i64,
    t: crate::desc::TransformType,
    batch: i64,
) -> Result<usize> {
    let embed = |e: Option<&mut [i64]>| e.map_or(ptr::null_mut(), |e| e.as_mut_ptr() as *mut std::ffi::c_longlong);
    let mut work: usize = 0;
    // SAFETY: the caller's promise on `p` and the embeds; `n` and `work` are live.
    let r = unsafe {
        fft::cufftMakePlanMany64(
            handle(p),
            n.len() as c_int,
            n.as_mut_ptr() as *mut std::ffi::c_longlong,
            embed(inembed),
            istride,
            idist,
            embed(onembed),
            ostride,
            odist,
            cufft_type(t),
            batch,
            &mut work,
        )
    };
    check_cufft("cufftMakePlanMany64", r)?;
    Ok(work)
}

/// `cufftSetStream`.
///
/// # Safety
/// `p` is a live plan and `s` a live stream (or the null stream).
pub unsafe fn cufft_set_stream(p: RawPlan, s: RawStream) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cufft("cufftSetStream", unsafe { fft::cufftSetStream(handle(p), s.0 as fft::cudaStream_t) })
}

/// `cufftSetWorkArea`.
///
/// # Safety
/// `p` is a live plan and `work` device memory of its work size, kept until every
/// execution using it completed.
pub unsafe fn cufft_set_work_area(p: RawPlan, work: DevicePtr) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cufft("cufftSetWorkArea", unsafe { fft::cufftSetWorkArea(handle(p), work.as_ptr()) })
}

/// The `cufftExec*` for `t`; `direction` (-1/+1) is passed to C2C and Z2Z only.
///
/// # Safety
/// `p` is a live plan made for `t`; `i` and `o` are device memory of its input and output
/// extents, kept until the transform completes on the plan's stream.
pub unsafe fn cufft_exec(p: RawPlan, t: crate::desc::TransformType, i: DevicePtr, o: DevicePtr, direction: i32) -> Result<()> {
    use crate::desc::TransformType as T;
    let h = handle(p);
    // SAFETY: the caller's promise.
    let (call, r) = unsafe {
        match t {
            T::C2C => ("cufftExecC2C", fft::cufftExecC2C(h, i.as_ptr(), o.as_ptr(), direction)),
            T::R2C => ("cufftExecR2C", fft::cufftExecR2C(h, i.as_ptr(), o.as_ptr())),
            T::C2R => ("cufftExecC2R", fft::cufftExecC2R(h, i.as_ptr(), o.as_ptr())),
            T::Z2Z => ("cufftExecZ2Z", fft::cufftExecZ2Z(h, i.as_ptr(), o.as_ptr(), direction)),
            T::D2Z => ("cufftExecD2Z", fft::cufftExecD2Z(h, i.as_ptr(), o.as_ptr())),
            T::Z2D => ("cufftExecZ2D", fft::cufftExecZ2D(h, i.as_ptr(), o.as_ptr())),
        }
    };
    check_cufft(call, r)
}

/// `cufftDestroy`.
///
/// # Safety
/// `p` is a live plan with no pending execution; nobody uses it afterwards.
pub unsafe fn cufft_destroy(p: RawPlan) -> Result<()> {
    // SAFETY: the caller's promise.
    check_cufft("cufftDestroy", unsafe { fft::cufftDestroy(handle(p)) })
}

/// `cufftGetVersion`, e.g. 12000 for cuFFT 12.0.0.
pub fn cufft_version() -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: loaded cuFFT; `v` is a valid out pointer.
    check_cufft("cufftGetVersion", unsafe { fft::cufftGetVersion(&mut v) })?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_carry_name_and_number() {
        let c = cuda_code(600);
        assert_eq!((c.api, c.value, c.name), (Api::Cuda, 600, "cudaErrorNotReady"));
        assert_eq!(cuda_code(101).name, "cudaErrorInvalidDevice");
        assert_eq!(RuntimeCode::cufft(1).name, "CUFFT_INVALID_PLAN");
        assert_eq!(RuntimeCode::cufft(1).api, Api::Cufft);
    }

    #[test]
    fn cufft_types_match_the_descriptor_numbers() {
        for t in crate::desc::TransformType::ALL {
            assert_eq!(cufft_type(t) as i32, t.raw());
        }
    }
}
