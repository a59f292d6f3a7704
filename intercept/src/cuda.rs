//! The pool's runtime in CUDA mode: the process's own libcufft (found by [`crate::real`]) and
//! a CUDA runtime, called through function pointers resolved once.
//!
//! Not the library's cudarc-based `CudaRuntime`: cudarc opens libcufft by soname, which can
//! bind a second copy next to the one a Python extension loaded `RTLD_LOCAL`. Here every
//! cuFFT call goes to the exact library the framework uses, and the calls the interposer needs
//! beyond the [`Runtime`] trait (capture status, host functions, the thread's capture mode)
//! sit beside them.
//!
//! Capture mode: MLX captures with `cudaStreamCaptureModeGlobal`, under which a
//! `cudaMalloc`/`cudaFree` (inside `cufftMakePlan*`/`cufftDestroy`) or an event query on *any*
//! thread fails and invalidates the capture. The pool's own threads (destroyer, completion)
//! and plan creation therefore switch their thread to `cudaStreamCaptureModeRelaxed` for the
//! call, as PyTorch's allocator does for its `cudaMalloc`.

use std::ffi::{CStr, c_int, c_longlong, c_uint, c_void};

use hipfft_pool::{
    Api, CreatedPlan, DevicePtr, Direction, HostCall, Error, PlanDesc, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Result, Runtime,
    RuntimeCode, RuntimeInfo, RuntimeKind, TransformType,
};

type HostFn = unsafe extern "C" fn(*mut c_void);
use crate::real::{self, RealLib};

type Stream = *mut c_void;
type Event = *mut c_void;

/// The cuFFT entry points the pool uses (cufft.h signatures beside each).
struct Cufft {
    /// cufftResult cufftCreate(cufftHandle *handle);
    create: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
    set_auto_allocation: unsafe extern "C" fn(c_int, c_int) -> c_int,
    /// cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long *n, long long *inembed,
    ///   long long istride, long long idist, long long *onembed, long long ostride, long long odist,
    ///   cufftType type, long long batch, size_t *workSize);
    #[allow(clippy::type_complexity)]
    make_plan_many64: unsafe extern "C" fn(
        c_int,
        c_int,
        *mut c_longlong,
        *mut c_longlong,
        c_longlong,
        c_longlong,
        *mut c_longlong,
        c_longlong,
        c_longlong,
        c_int,
        c_longlong,
        *mut usize,
    ) -> c_int,
    /// cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
    set_stream: unsafe extern "C" fn(c_int, Stream) -> c_int,
    /// cufftResult cufftSetWorkArea(cufftHandle plan, void *workArea);
    set_work_area: unsafe extern "C" fn(c_int, *mut c_void) -> c_int,
    /// cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata, int direction);
    exec_c2c: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, c_int) -> c_int,
    /// cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleComplex *odata, int direction);
    exec_z2z: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, c_int) -> c_int,
    /// cufftResult cufftExecR2C(cufftHandle plan, cufftReal *idata, cufftComplex *odata);
    exec_r2c: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int,
    /// cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *idata, cufftReal *odata);
    exec_c2r: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int,
    /// cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *idata, cufftDoubleComplex *odata);
    exec_d2z: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int,
    /// cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleReal *odata);
    exec_z2d: unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int,
    /// cufftResult cufftDestroy(cufftHandle plan);
    destroy: unsafe extern "C" fn(c_int) -> c_int,
    /// cufftResult cufftGetVersion(int *version);
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
}

/// The CUDA runtime entry points (cuda_runtime_api.h signatures beside each).
struct Cudart {
    /// cudaError_t cudaGetDeviceCount(int *count);
    get_device_count: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// cudaError_t cudaGetDevice(int *device);
    get_device: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// cudaError_t cudaSetDevice(int device);
    set_device: unsafe extern "C" fn(c_int) -> c_int,
    /// cudaError_t cudaMalloc(void **devPtr, size_t size);
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int,
    /// cudaError_t cudaFree(void *devPtr);
    free: unsafe extern "C" fn(*mut c_void) -> c_int,
    /// cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind);
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    /// cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
    memcpy_async: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, Stream) -> c_int,
    /// cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
    stream_create_with_flags: unsafe extern "C" fn(*mut Stream, c_uint) -> c_int,
    /// cudaError_t cudaStreamSynchronize(cudaStream_t stream);
    stream_synchronize: unsafe extern "C" fn(Stream) -> c_int,
    /// cudaError_t cudaStreamDestroy(cudaStream_t stream);
    stream_destroy: unsafe extern "C" fn(Stream) -> c_int,
    /// cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
    event_create_with_flags: unsafe extern "C" fn(*mut Event, c_uint) -> c_int,
    /// cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
    event_record: unsafe extern "C" fn(Event, Stream) -> c_int,
    /// cudaError_t cudaEventQuery(cudaEvent_t event);
    event_query: unsafe extern "C" fn(Event) -> c_int,
    /// cudaError_t cudaEventSynchronize(cudaEvent_t event);
    event_synchronize: unsafe extern "C" fn(Event) -> c_int,
    /// cudaError_t cudaEventDestroy(cudaEvent_t event);
    event_destroy: unsafe extern "C" fn(Event) -> c_int,
    /// cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *pCaptureStatus);
    stream_is_capturing: unsafe extern "C" fn(Stream, *mut c_int) -> c_int,
    /// cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
    launch_host_func: unsafe extern "C" fn(Stream, HostFn, *mut c_void) -> c_int,
    /// cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode);
    exchange_capture_mode: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// const char* cudaGetErrorName(cudaError_t error);
    get_error_name: unsafe extern "C" fn(c_int) -> *const std::ffi::c_char,
    /// cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
    runtime_get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
}

const CUDA_SUCCESS: c_int = 0;
const CUDA_ERROR_NOT_READY: c_int = 600;
const MEMCPY_HOST_TO_DEVICE: c_int = 1;
const MEMCPY_DEVICE_TO_HOST: c_int = 2;
const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
const STREAM_NON_BLOCKING: c_uint = 1;
const EVENT_DISABLE_TIMING: c_uint = 2;
const CAPTURE_STATUS_NONE: c_int = 0;
const CAPTURE_MODE_RELAXED: c_int = 2;

/// Resolves `name` in `lib` as the function-pointer type `T`.
fn resolve<T: Copy>(lib: &RealLib, name: &str, missing: &mut Vec<String>) -> Option<T> {
    match lib.symbol(name) {
        // SAFETY: `T` is the function-pointer type of `name`'s C signature, written beside
        // each field above; a usize address and a fn pointer have the same size.
        Some(addr) => Some(unsafe { std::mem::transmute_copy::<usize, T>(&addr) }),
        None => {
            missing.push(name.to_string());
            None
        }
    }
}

/// cuFFT and the CUDA runtime, resolved.
pub struct CudaBackend {
    fft: Cufft,
    rt: Cudart,
    fft_path: String,
    rt_path: String,
}

// SAFETY: the struct holds only function pointers into libraries that stay loaded for the
// life of the process (the `RealLib`s are never dropped) and two strings.
unsafe impl Send for CudaBackend {}
unsafe impl Sync for CudaBackend {}

impl CudaBackend {
    /// Binds the process's cuFFT and a CUDA runtime, resolving every entry point up front:
    /// a missing one is `Error::Unavailable` naming it.
    pub fn load() -> Result<CudaBackend> {
        let fft_lib = real::fft_library(crate::codes::Flavor::Cufft).map_err(Error::Unavailable)?;
        static CUDART: std::sync::OnceLock<std::result::Result<RealLib, String>> = std::sync::OnceLock::new();
        let rt_lib = CUDART.get_or_init(|| real::open(&real::CUDART)).as_ref().map_err(|e| Error::Unavailable(e.clone()))?;
        let mut missing = Vec::new();
        let m = &mut missing;
        let fft = (|| {
            Some(Cufft {
                create: resolve(fft_lib, "cufftCreate", m)?,
                set_auto_allocation: resolve(fft_lib, "cufftSetAutoAllocation", m)?,
                make_plan_many64: resolve(fft_lib, "cufftMakePlanMany64", m)?,
                set_stream: resolve(fft_lib, "cufftSetStream", m)?,
                set_work_area: resolve(fft_lib, "cufftSetWorkArea", m)?,
                exec_c2c: resolve(fft_lib, "cufftExecC2C", m)?,
                exec_z2z: resolve(fft_lib, "cufftExecZ2Z", m)?,
                exec_r2c: resolve(fft_lib, "cufftExecR2C", m)?,
                exec_c2r: resolve(fft_lib, "cufftExecC2R", m)?,
                exec_d2z: resolve(fft_lib, "cufftExecD2Z", m)?,
                exec_z2d: resolve(fft_lib, "cufftExecZ2D", m)?,
                destroy: resolve(fft_lib, "cufftDestroy", m)?,
                get_version: resolve(fft_lib, "cufftGetVersion", m)?,
            })
        })();
        let rt = (|| {
            Some(Cudart {
                get_device_count: resolve(rt_lib, "cudaGetDeviceCount", m)?,
                get_device: resolve(rt_lib, "cudaGetDevice", m)?,
                set_device: resolve(rt_lib, "cudaSetDevice", m)?,
                malloc: resolve(rt_lib, "cudaMalloc", m)?,
                free: resolve(rt_lib, "cudaFree", m)?,
                memcpy: resolve(rt_lib, "cudaMemcpy", m)?,
                memcpy_async: resolve(rt_lib, "cudaMemcpyAsync", m)?,
                stream_create_with_flags: resolve(rt_lib, "cudaStreamCreateWithFlags", m)?,
                stream_synchronize: resolve(rt_lib, "cudaStreamSynchronize", m)?,
                stream_destroy: resolve(rt_lib, "cudaStreamDestroy", m)?,
                event_create_with_flags: resolve(rt_lib, "cudaEventCreateWithFlags", m)?,
                event_record: resolve(rt_lib, "cudaEventRecord", m)?,
                event_query: resolve(rt_lib, "cudaEventQuery", m)?,
                event_synchronize: resolve(rt_lib, "cudaEventSynchronize", m)?,
                event_destroy: resolve(rt_lib, "cudaEventDestroy", m)?,
                stream_is_capturing: resolve(rt_lib, "cudaStreamIsCapturing", m)?,
                launch_host_func: resolve(rt_lib, "cudaLaunchHostFunc", m)?,
                exchange_capture_mode: resolve(rt_lib, "cudaThreadExchangeStreamCaptureMode", m)?,
                get_error_name: resolve(rt_lib, "cudaGetErrorName", m)?,
                runtime_get_version: resolve(rt_lib, "cudaRuntimeGetVersion", m)?,
            })
        })();
        match (fft, rt) {
            (Some(fft), Some(rt)) => {
                let b = CudaBackend { fft, rt, fft_path: fft_lib.path.clone(), rt_path: rt_lib.path.clone() };
                match b.device_count() {
                    Ok(n) if n > 0 => Ok(b),
                    Ok(_) => Err(Error::Unavailable("the CUDA runtime reports no devices".into())),
                    Err(e) => Err(Error::Unavailable(format!("no usable CUDA device: {e}"))),
                }
            }
            _ => Err(Error::Unavailable(format!(
                "{} or {} lacks {}",
                fft_lib.path,
                rt_lib.path,
                missing.join(", ")
            ))),
        }
    }

    /// The cuFFT file bound (the process's own copy when it had one loaded).
    pub fn cufft_path(&self) -> &str {
        &self.fft_path
    }

    fn cuda(&self, call: &'static str, e: c_int) -> Result<()> {
        if e == CUDA_SUCCESS {
            return Ok(());
        }
        // SAFETY: cudaGetErrorName returns a static string of a library never unloaded.
        let p = unsafe { (self.rt.get_error_name)(e) };
        let name: &'static str = if p.is_null() {
            "cudaError"
        } else {
            // SAFETY: NUL-terminated, static (see above).
            unsafe { CStr::from_ptr::<'static>(p) }.to_str().unwrap_or("cudaError")
        };
        Err(Error::Runtime { call, code: RuntimeCode { api: Api::Cuda, value: e, name } })
    }

    #[inline]
    fn cufft(call: &'static str, r: c_int) -> Result<()> {
        if r == 0 { Ok(()) } else { Err(Error::Runtime { call, code: RuntimeCode::cufft(r) }) }
    }

    /// Runs `f` with this thread's capture mode relaxed, so that an allocation or query on a
    /// pool thread neither fails nor invalidates another thread's global-mode capture.
    fn relaxed<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut mode = CAPTURE_MODE_RELAXED;
        // SAFETY: exchanges this thread's mode through a valid pointer.
        let swapped = unsafe { (self.rt.exchange_capture_mode)(&mut mode) } == CUDA_SUCCESS;
        let out = f();
        if swapped {
            // SAFETY: as above; restores the mode that was there.
            unsafe { (self.rt.exchange_capture_mode)(&mut mode) };
        }
        out
    }

    fn version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        Self::cufft("cufftGetVersion", unsafe { (self.fft.get_version)(&mut v) })?;
        Ok(v)
    }
}

fn stream(s: RawStream) -> Stream {
    s.0 as Stream
}

fn event(e: RawEvent) -> Event {
    e.0 as Event
}

/// `RawPlan` carries the `cufftHandle` int's bits.
fn handle(p: RawPlan) -> c_int {
    p.0 as u32 as c_int
}

// SAFETY: every call goes to the process's own cuFFT and CUDA runtime with the arguments the
// trait's contracts describe; handles and pointers are only passed through.
unsafe impl Runtime for CudaBackend {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Cuda
    }

    fn info(&self) -> RuntimeInfo {
        let mut rtv = 0;
        // SAFETY: writes one int.
        unsafe { (self.rt.runtime_get_version)(&mut rtv) };
        RuntimeInfo {
            libraries: vec![("libcufft".into(), self.fft_path.clone()), ("libcudart".into(), self.rt_path.clone())],
            versions: vec![
                ("cuFFT".into(), self.version().map_or_else(|e| e.to_string(), |v| v.to_string())),
                ("CUDA runtime".into(), rtv.to_string()),
            ],
            devices: (0..self.device_count().unwrap_or(0)).map(|d| format!("CUDA device {d}")).collect(),
        }
    }

    fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: writes one int.
        self.cuda("cudaGetDeviceCount", unsafe { (self.rt.get_device_count)(&mut n) })?;
        Ok(n)
    }

    fn current_device(&self) -> Result<i32> {
        let mut d = 0;
        // SAFETY: writes one int.
        self.cuda("cudaGetDevice", unsafe { (self.rt.get_device)(&mut d) })?;
        Ok(d)
    }

    fn set_device(&self, device: i32) -> Result<()> {
        // SAFETY: plain value argument.
        self.cuda("cudaSetDevice", unsafe { (self.rt.set_device)(device) })
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let extents = desc.extents()?;
        let r = desc.rank();
        let mut n = [0i64; 3];
        n[..r].copy_from_slice(desc.dims());
        let layouts = desc.library_layouts();
        let packed = |dims: &[i64; 3]| dims[..r].iter().product::<i64>();
        let (mut iembed, istride, idist) =
            layouts.map_or(([0; 3], 1, packed(&extents.input_dims)), |(l, _)| (l.embed, l.stride, l.dist));
        let (mut oembed, ostride, odist) =
            layouts.map_or(([0; 3], 1, packed(&extents.output_dims)), |(_, l)| (l.embed, l.stride, l.dist));
        let embed = |e: &mut [i64; 3]| if layouts.is_some() { e.as_mut_ptr() } else { std::ptr::null_mut() };
        // The pool may call from its own threads (creation on a worker, the destroyer): mark
        // them inside, so the library's calls of its own exports come back to it.
        let _inside = crate::entry::Inside::enter();
        self.relaxed(|| {
            let mut h: c_int = 0;
            // SAFETY: writes one handle.
            Self::cufft("cufftCreate", unsafe { (self.fft.create)(&mut h) })?;
            let made = (|| {
                // SAFETY: a handle just created.
                Self::cufft("cufftSetAutoAllocation", unsafe {
                    (self.fft.set_auto_allocation)(h, options.auto_allocation as c_int)
                })?;
                let mut work = 0usize;
                // SAFETY: n, the embeds (or null) hold `rank` values; work is one size_t.
                let r64 = unsafe {
                    (self.fft.make_plan_many64)(
                        h,
                        r as c_int,
                        n.as_mut_ptr(),
                        embed(&mut iembed),
                        istride,
                        idist,
                        embed(&mut oembed),
                        ostride,
                        odist,
                        desc.transform.raw(),
                        desc.batch,
                        &mut work,
                    )
                };
                Self::cufft("cufftMakePlanMany64", r64)?;
                Ok(work)
            })();
            match made {
                Ok(work_size) => Ok(CreatedPlan { plan: RawPlan(h as u32 as usize), work_size }),
                Err(e) => {
                    // SAFETY: the handle made above; the first error is the one reported.
                    unsafe { (self.fft.destroy)(h) };
                    Err(e)
                }
            }
        })
    }

    unsafe fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        s: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        // SAFETY: the caller upholds `Runtime::plan_exec`'s contract.
        unsafe { self.plan_exec_bound(plan, transform, s, work_area, input, output, direction, Rebind::ALL) }
    }

    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    unsafe fn plan_exec_bound(
        &self,
        plan: RawPlan,
        transform: TransformType,
        s: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        rebind: Rebind,
    ) -> Result<()> {
        let h = handle(plan);
        let _inside = crate::entry::Inside::enter();
        let (set_s, set_w) = rebind.pick(s, work_area);
        // SAFETY: the caller's contract: a live handle of this library (the pool leases it
        // to exactly one caller), a live stream, an area of the plan's work size.
        unsafe { self.plan_bind(plan, set_s, set_w) }?;
        let (i, o, d) = (input.as_ptr(), output.as_ptr(), direction.raw());
        // SAFETY: device buffers the caller passed for this transform, as cuFFT requires.
        let (call, r) = unsafe {
            match transform {
                TransformType::C2C => ("cufftExecC2C", (self.fft.exec_c2c)(h, i, o, d)),
                TransformType::Z2Z => ("cufftExecZ2Z", (self.fft.exec_z2z)(h, i, o, d)),
                TransformType::R2C => ("cufftExecR2C", (self.fft.exec_r2c)(h, i, o)),
                TransformType::C2R => ("cufftExecC2R", (self.fft.exec_c2r)(h, i, o)),
                TransformType::D2Z => ("cufftExecD2Z", (self.fft.exec_d2z)(h, i, o)),
                TransformType::Z2D => ("cufftExecZ2D", (self.fft.exec_z2d)(h, i, o)),
            }
        };
        Self::cufft(call, r)
    }

    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    unsafe fn plan_bind(&self, plan: RawPlan, s: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        let h = handle(plan);
        let _inside = crate::entry::Inside::enter();
        if let Some(s) = s {
            // SAFETY: a live handle of this library (the pool's, bound under its exec lock).
            Self::cufft("cufftSetStream", unsafe { (self.fft.set_stream)(h, stream(s)) })?;
        }
        if let Some(w) = work_area {
            // SAFETY: as above; the area holds the plan's work size (the caller's contract).
            Self::cufft("cufftSetWorkArea", unsafe { (self.fft.set_work_area)(h, w.as_ptr()) })?;
        }
        Ok(true)
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        let _inside = crate::entry::Inside::enter();
        // SAFETY: a handle of this library with no lease out (the pool guarantees it).
        self.relaxed(|| Self::cufft("cufftDestroy", unsafe { (self.fft.destroy)(handle(plan)) }))
    }

    fn event_create(&self) -> Result<RawEvent> {
        let mut e: Event = std::ptr::null_mut();
        // SAFETY: writes one event handle.
        self.relaxed(|| self.cuda("cudaEventCreateWithFlags", unsafe {
            (self.rt.event_create_with_flags)(&mut e, EVENT_DISABLE_TIMING)
        }))?;
        Ok(RawEvent(e as usize))
    }

    unsafe fn event_record(&self, e: RawEvent, s: RawStream) -> Result<()> {
        // SAFETY: an event of this runtime and a stream the framework handed us.
        self.cuda("cudaEventRecord", unsafe { (self.rt.event_record)(event(e), stream(s)) })
    }

    unsafe fn event_query(&self, e: RawEvent) -> Result<bool> {
        // SAFETY: an event of this runtime.
        match self.relaxed(|| unsafe { (self.rt.event_query)(event(e)) }) {
            CUDA_ERROR_NOT_READY => Ok(false),
            r => self.cuda("cudaEventQuery", r).map(|()| true),
        }
    }

    unsafe fn event_synchronize(&self, e: RawEvent) -> Result<()> {
        // SAFETY: an event of this runtime.
        self.relaxed(|| self.cuda("cudaEventSynchronize", unsafe { (self.rt.event_synchronize)(event(e)) }))
    }

    unsafe fn event_destroy(&self, e: RawEvent) -> Result<()> {
        // SAFETY: an event of this runtime, no longer used.
        self.relaxed(|| self.cuda("cudaEventDestroy", unsafe { (self.rt.event_destroy)(event(e)) }))
    }

    fn stream_create(&self) -> Result<RawStream> {
        let mut s: Stream = std::ptr::null_mut();
        // SAFETY: writes one stream handle.
        self.cuda("cudaStreamCreateWithFlags", unsafe { (self.rt.stream_create_with_flags)(&mut s, STREAM_NON_BLOCKING) })?;
        Ok(RawStream(s as usize))
    }

    unsafe fn stream_synchronize(&self, s: RawStream) -> Result<()> {
        // SAFETY: a stream handle the framework or this runtime made.
        self.relaxed(|| self.cuda("cudaStreamSynchronize", unsafe { (self.rt.stream_synchronize)(stream(s)) }))
    }

    unsafe fn stream_destroy(&self, s: RawStream) -> Result<()> {
        // SAFETY: a stream this runtime made.
        self.cuda("cudaStreamDestroy", unsafe { (self.rt.stream_destroy)(stream(s)) })
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer; one byte at least, as cudaMalloc(0) may return null.
        self.relaxed(|| self.cuda("cudaMalloc", unsafe { (self.rt.malloc)(&mut p, bytes.max(1)) }))?;
        Ok(DevicePtr::from_ptr(p))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: a pointer from `malloc` above, no longer used by pending work.
        self.relaxed(|| self.cuda("cudaFree", unsafe { (self.rt.free)(ptr.as_ptr()) }))
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        // SAFETY: `dst` holds `src.len()` bytes (the caller's contract).
        self.cuda("cudaMemcpy", unsafe {
            (self.rt.memcpy)(dst.as_ptr(), src.as_ptr().cast(), src.len(), MEMCPY_HOST_TO_DEVICE)
        })
    }

    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        // SAFETY: `src` holds `dst.len()` bytes (the caller's contract).
        self.cuda("cudaMemcpy", unsafe {
            (self.rt.memcpy)(dst.as_mut_ptr().cast(), src.as_ptr(), dst.len(), MEMCPY_DEVICE_TO_HOST)
        })
    }

    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: RawStream) -> Result<()> {
        // SAFETY: both hold `bytes` bytes (the caller's contract).
        self.cuda("cudaMemcpyAsync", unsafe {
            (self.rt.memcpy_async)(dst.as_ptr(), src.as_ptr(), bytes, MEMCPY_DEVICE_TO_DEVICE, stream(s))
        })
    }

    unsafe fn stream_is_capturing(&self, s: RawStream) -> Result<bool> {
        self.is_capturing(s)
    }

    unsafe fn launch_host_fn(&self, s: RawStream, call: HostCall) -> Result<()> {
        self.host_fn(s, call)
    }
}

impl CudaBackend {
    fn is_capturing(&self, s: RawStream) -> Result<bool> {
        let mut status = CAPTURE_STATUS_NONE;
        // SAFETY: writes one enum; allowed on a capturing stream.
        self.cuda("cudaStreamIsCapturing", unsafe { (self.rt.stream_is_capturing)(stream(s), &mut status) })?;
        Ok(status != CAPTURE_STATUS_NONE)
    }

    fn host_fn(&self, s: RawStream, call: HostCall) -> Result<()> {
        // SAFETY: HostCall::new's contract keeps the data valid for every run.
        self.cuda("cudaLaunchHostFunc", unsafe { (self.rt.launch_host_func)(stream(s), call.function(), call.data()) })
    }
}
