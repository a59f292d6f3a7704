//! Thin `Result`-returning wrappers over [`super::sys`], one per entry point.
//!
//! Status codes become [`Error::Runtime`] with the call's name and the code by name and
//! number: `hipfftResult` through [`RuntimeCode::hipfft`], `hipError_t` through [`hip_code`].
//! The wrappers hold no state and check nothing the library checks itself.

use std::ffi::{CStr, c_int, c_void};

use super::sys::{self, HipLib, HipfftLib, hip_error, hipEvent_t, hipStream_t, hipfftHandle};
use crate::error::{Error, Result, RuntimeCode};

pub use crate::runtime::codes::{UNKNOWN_HIP_ERROR, hip_code, hip_error_cname, hip_error_name};

/// `Ok(())` for `HIPFFT_SUCCESS`, else the code by name and number.
pub fn hipfft_check(call: &'static str, status: sys::hipfftResult) -> Result<()> {
    if status == crate::error::hipfft_result::SUCCESS {
        Ok(())
    } else {
        Err(Error::Runtime { call, code: RuntimeCode::hipfft(status) })
    }
}

/// `Ok(())` for `hipSuccess`, else the code by name and number. For a code this crate does
/// not list, the library's own `hipGetErrorName` is asked (the library is never unloaded, so
/// its static strings live for the process).
pub fn hip_check(lib: &HipLib, call: &'static str, status: sys::hipError_t) -> Result<()> {
    if status == hip_error::hipSuccess {
        return Ok(());
    }
    let mut code = hip_code(status);
    if hip_error_cname(status).is_none() {
        if let Some(get_name) = lib.hipGetErrorName {
            // SAFETY: hipGetErrorName accepts any value and returns a static string or null.
            let p = unsafe { get_name(status) };
            if !p.is_null() {
                // SAFETY: a NUL-terminated static string of the (never unloaded) library.
                if let Ok(s) = unsafe { CStr::from_ptr(p) }.to_str() {
                    code.name = s;
                }
            }
        }
    }
    Err(Error::Runtime { call, code })
}

// ---------------------------------------------------------------------------------------
// hipFFT

/// `hipfftCreate`.
///
/// # Safety
/// `lib` must be a resolved hipFFT.
pub unsafe fn create(lib: &HipfftLib) -> Result<hipfftHandle> {
    let mut plan: hipfftHandle = std::ptr::null_mut();
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hipfft_check("hipfftCreate", unsafe { (lib.hipfftCreate)(&mut plan) })?;
    Ok(plan)
}

/// `hipfftDestroy`.
///
/// # Safety
/// `plan` must be a live handle of `lib`.
pub unsafe fn destroy(lib: &HipfftLib, plan: hipfftHandle) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftDestroy", unsafe { (lib.hipfftDestroy)(plan) })
}

/// `hipfftSetAutoAllocation`.
///
/// # Safety
/// `plan` must be a live handle of `lib`.
pub unsafe fn set_auto_allocation(lib: &HipfftLib, plan: hipfftHandle, auto: bool) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftSetAutoAllocation", unsafe { (lib.hipfftSetAutoAllocation)(plan, auto as c_int) })
}

/// One side of `hipfftMakePlanMany64`: `embed` null means the packed layout.
pub struct Side<'a> {
    /// Storage lengths, or `None` (a null pointer) for the packed layout.
    pub embed: Option<&'a mut [i64; 3]>,
    /// Element stride (ignored by the library for a packed side).
    pub stride: i64,
    /// Batch distance (ignored by the library for a packed side).
    pub dist: i64,
}

/// `hipfftMakePlanMany64`; returns the work size.
///
/// # Safety
/// `plan` must be a live, not yet made handle of `lib`; `n` must hold `rank` lengths.
#[allow(clippy::too_many_arguments)]
pub unsafe fn make_plan_many64(
    lib: &HipfftLib,
    plan: hipfftHandle,
    rank: i32,
    n: &mut [i64; 3],
    input: Side<'_>,
    output: Side<'_>,
    transform: sys::hipfftType,
    batch: i64,
) -> Result<usize> {
    let mut work_size: usize = 0;
    let ptr = |e: Option<&mut [i64; 3]>| e.map_or(std::ptr::null_mut(), |a| a.as_mut_ptr());
    // SAFETY: the caller's promise on `plan` and `n`; the embeds and `work_size` are live.
    let status = unsafe {
        (lib.hipfftMakePlanMany64)(
            plan,
            rank,
            n.as_mut_ptr(),
            ptr(input.embed),
            input.stride,
            input.dist,
            ptr(output.embed),
            output.stride,
            output.dist,
            transform,
            batch,
            &mut work_size,
        )
    };
    hipfft_check("hipfftMakePlanMany64", status)?;
    Ok(work_size)
}

/// `hipfftSetStream`.
///
/// # Safety
/// `plan` must be a live handle of `lib`, `stream` a stream of its HIP runtime (or null).
pub unsafe fn set_stream(lib: &HipfftLib, plan: hipfftHandle, stream: hipStream_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftSetStream", unsafe { (lib.hipfftSetStream)(plan, stream) })
}

/// `hipfftSetWorkArea`.
///
/// # Safety
/// `plan` must be a live handle of `lib`; `area` a device allocation of at least its work size.
pub unsafe fn set_work_area(lib: &HipfftLib, plan: hipfftHandle, area: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftSetWorkArea", unsafe { (lib.hipfftSetWorkArea)(plan, area) })
}

/// `hipfftExecC2C`.
///
/// # Safety
/// A made plan of this type; device buffers of the plan's extents.
pub unsafe fn exec_c2c(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void, dir: c_int) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecC2C", unsafe { (lib.hipfftExecC2C)(plan, i.cast(), o.cast(), dir) })
}

/// `hipfftExecZ2Z`.
///
/// # Safety
/// As [`exec_c2c`].
pub unsafe fn exec_z2z(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void, dir: c_int) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecZ2Z", unsafe { (lib.hipfftExecZ2Z)(plan, i.cast(), o.cast(), dir) })
}

/// `hipfftExecR2C`.
///
/// # Safety
/// As [`exec_c2c`].
pub unsafe fn exec_r2c(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecR2C", unsafe { (lib.hipfftExecR2C)(plan, i.cast(), o.cast()) })
}

/// `hipfftExecC2R`.
///
/// # Safety
/// As [`exec_c2c`].
pub unsafe fn exec_c2r(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecC2R", unsafe { (lib.hipfftExecC2R)(plan, i.cast(), o.cast()) })
}

/// `hipfftExecD2Z`.
///
/// # Safety
/// As [`exec_c2c`].
pub unsafe fn exec_d2z(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecD2Z", unsafe { (lib.hipfftExecD2Z)(plan, i.cast(), o.cast()) })
}

/// `hipfftExecZ2D`.
///
/// # Safety
/// As [`exec_c2c`].
pub unsafe fn exec_z2d(lib: &HipfftLib, plan: hipfftHandle, i: *mut c_void, o: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hipfft_check("hipfftExecZ2D", unsafe { (lib.hipfftExecZ2D)(plan, i.cast(), o.cast()) })
}

/// `hipfftGetVersion`.
///
/// # Safety
/// `lib` must be a resolved hipFFT.
pub unsafe fn get_version(lib: &HipfftLib) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hipfft_check("hipfftGetVersion", unsafe { (lib.hipfftGetVersion)(&mut v) })?;
    Ok(v)
}

// ---------------------------------------------------------------------------------------
// HIP runtime

/// `hipGetDeviceCount`. `hipErrorNoDevice` is returned as an error, like the library does.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn get_device_count(lib: &HipLib) -> Result<i32> {
    let mut n: c_int = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipGetDeviceCount", unsafe { (lib.hipGetDeviceCount)(&mut n) })?;
    Ok(n)
}

/// `hipGetDevice`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn get_device(lib: &HipLib) -> Result<i32> {
    let mut d: c_int = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipGetDevice", unsafe { (lib.hipGetDevice)(&mut d) })?;
    Ok(d)
}

/// `hipGetDeviceFlags`, when the library has it.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn get_device_flags(lib: &HipLib) -> Result<Option<u32>> {
    let Some(get) = lib.hipGetDeviceFlags else { return Ok(None) };
    let mut flags: std::ffi::c_uint = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipGetDeviceFlags", unsafe { get(&mut flags) })?;
    Ok(Some(flags))
}

/// `hipStreamIsCapturing`: whether `stream` is capturing a graph. A runtime without the call
/// has no graph capture either: `false`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime and `stream` one of its streams (or null).
pub unsafe fn stream_is_capturing(lib: &HipLib, stream: super::sys::hipStream_t) -> Result<bool> {
    let Some(is) = lib.hipStreamIsCapturing else { return Ok(false) };
    let mut status: std::ffi::c_int = 0;
    // SAFETY: the caller's promise; the out pointer is a live local.
    hip_check(lib, "hipStreamIsCapturing", unsafe { is(stream, &mut status) })?;
    Ok(status != 0)
}

/// `hipLaunchHostFunc`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime, `stream` one of its streams (or null), and `data`
/// valid for every run of `f` (each run of a graph that captured it).
pub unsafe fn launch_host_func(
    lib: &HipLib,
    stream: super::sys::hipStream_t,
    f: unsafe extern "C" fn(*mut std::ffi::c_void),
    data: *mut std::ffi::c_void,
) -> Result<()> {
    let Some(launch) = lib.hipLaunchHostFunc else {
        return Err(crate::error::Error::Unavailable("this HIP runtime has no hipLaunchHostFunc".into()));
    };
    // SAFETY: the caller's promise.
    hip_check(lib, "hipLaunchHostFunc", unsafe { launch(stream, f, data) })
}

/// Runs `body` with this thread's capture mode relaxed (`hipStreamCaptureModeRelaxed`, 2),
/// so that an allocation or free on a pool thread neither fails nor invalidates another
/// thread's global-mode capture; as is where the runtime cannot switch modes.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn relaxed<T>(lib: &HipLib, body: impl FnOnce() -> T) -> T {
    let Some(exchange) = lib.hipThreadExchangeStreamCaptureMode else { return body() };
    let mut mode: std::ffi::c_int = 2;
    // SAFETY: exchanges this thread's mode through a live local.
    let swapped = unsafe { exchange(&mut mode) } == 0;
    let out = body();
    if swapped {
        // SAFETY: as above; restores the mode that was there.
        unsafe { exchange(&mut mode) };
    }
    out
}

/// `hipSetDevice`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn set_device(lib: &HipLib, device: i32) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipSetDevice", unsafe { (lib.hipSetDevice)(device) })
}

/// `hipDeviceGetName`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn device_get_name(lib: &HipLib, device: i32) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: a resolved library; `buf` is writable for the length passed.
    hip_check(lib, "hipDeviceGetName", unsafe {
        (lib.hipDeviceGetName)(buf.as_mut_ptr(), buf.len() as c_int, device)
    })?;
    *buf.last_mut().unwrap() = 0;
    // SAFETY: NUL-terminated by the line above at the latest.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

/// `hipRuntimeGetVersion`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn runtime_get_version(lib: &HipLib) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipRuntimeGetVersion", unsafe { (lib.hipRuntimeGetVersion)(&mut v) })?;
    Ok(v)
}

/// `hipDriverGetVersion`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn driver_get_version(lib: &HipLib) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipDriverGetVersion", unsafe { (lib.hipDriverGetVersion)(&mut v) })?;
    Ok(v)
}

/// `hipMalloc`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn malloc(lib: &HipLib, bytes: usize) -> Result<*mut c_void> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipMalloc", unsafe { (lib.hipMalloc)(&mut p, bytes) })?;
    Ok(p)
}

/// `hipFree`.
///
/// # Safety
/// `ptr` must come from `hipMalloc` of `lib` (or be null).
pub unsafe fn free(lib: &HipLib, ptr: *mut c_void) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipFree", unsafe { (lib.hipFree)(ptr) })
}

/// `hipMemcpy`.
///
/// # Safety
/// `dst` and `src` must be valid for `bytes` on the sides `kind` names.
pub unsafe fn memcpy(
    lib: &HipLib,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: sys::hipMemcpyKind,
) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipMemcpy", unsafe { (lib.hipMemcpy)(dst, src, bytes, kind) })
}

/// `hipMemcpyAsync`.
///
/// # Safety
/// As [`memcpy`], for as long as the copy runs on `stream`.
pub unsafe fn memcpy_async(
    lib: &HipLib,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: sys::hipMemcpyKind,
    stream: hipStream_t,
) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipMemcpyAsync", unsafe { (lib.hipMemcpyAsync)(dst, src, bytes, kind, stream) })
}

/// `hipStreamCreateWithFlags`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn stream_create_with_flags(lib: &HipLib, flags: u32) -> Result<hipStream_t> {
    let mut s: hipStream_t = std::ptr::null_mut();
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipStreamCreateWithFlags", unsafe { (lib.hipStreamCreateWithFlags)(&mut s, flags) })?;
    Ok(s)
}

/// `hipStreamSynchronize`.
///
/// # Safety
/// `stream` must be a live stream of `lib` (or null).
pub unsafe fn stream_synchronize(lib: &HipLib, stream: hipStream_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipStreamSynchronize", unsafe { (lib.hipStreamSynchronize)(stream) })
}

/// `hipStreamDestroy`.
///
/// # Safety
/// `stream` must be a live stream of `lib`.
pub unsafe fn stream_destroy(lib: &HipLib, stream: hipStream_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipStreamDestroy", unsafe { (lib.hipStreamDestroy)(stream) })
}

/// `hipEventCreateWithFlags`.
///
/// # Safety
/// `lib` must be a resolved HIP runtime.
pub unsafe fn event_create_with_flags(lib: &HipLib, flags: u32) -> Result<hipEvent_t> {
    let mut e: hipEvent_t = std::ptr::null_mut();
    // SAFETY: a resolved library (the caller's promise); the out pointer is a live local.
    hip_check(lib, "hipEventCreateWithFlags", unsafe { (lib.hipEventCreateWithFlags)(&mut e, flags) })?;
    Ok(e)
}

/// `hipEventRecord`.
///
/// # Safety
/// `event` and `stream` must be live objects of `lib` (the stream may be null).
pub unsafe fn event_record(lib: &HipLib, event: hipEvent_t, stream: hipStream_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipEventRecord", unsafe { (lib.hipEventRecord)(event, stream) })
}

/// `hipEventQuery`: `Ok(true)` when complete, `Ok(false)` on `hipErrorNotReady`.
///
/// # Safety
/// `event` must be a live event of `lib`.
pub unsafe fn event_query(lib: &HipLib, event: hipEvent_t) -> Result<bool> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    match unsafe { (lib.hipEventQuery)(event) } {
        hip_error::hipSuccess => Ok(true),
        hip_error::hipErrorNotReady => Ok(false),
        status => hip_check(lib, "hipEventQuery", status).map(|()| true),
    }
}

/// `hipEventSynchronize`.
///
/// # Safety
/// `event` must be a live event of `lib`.
pub unsafe fn event_synchronize(lib: &HipLib, event: hipEvent_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipEventSynchronize", unsafe { (lib.hipEventSynchronize)(event) })
}

/// `hipEventDestroy`.
///
/// # Safety
/// `event` must be a live event of `lib`.
pub unsafe fn event_destroy(lib: &HipLib, event: hipEvent_t) -> Result<()> {
    // SAFETY: the caller's promise (this function's `# Safety`).
    hip_check(lib, "hipEventDestroy", unsafe { (lib.hipEventDestroy)(event) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hipfft_codes_keep_name_and_number() {
        let e = hipfft_check("hipfftMakePlanMany64", 8).unwrap_err();
        assert_eq!(e.to_string(), "hipfftMakePlanMany64 failed with hipFFT HIPFFT_INVALID_SIZE (8)");
        assert!(hipfft_check("hipfftCreate", 0).is_ok());
    }
}
