//! `libhipfft_pool_hipfft.so`: hipFFT's plan API (AMD's ABI: `hipfftHandle` is a pointer)
//! over hipfft-pool, for `LD_PRELOAD`.
//!
//! Every function here has the C signature of hipfft.h / hipfftXt.h (written above each) and
//! returns a `hipfftResult`. A `hipfftHandle` the framework holds is a virtual handle, a
//! pointer-looking value that is never dereferenced (see `hipfft_pool_intercept::engine`); the
//! real plans live in the pool. Every hipFFT call that takes a handle is defined here (a
//! virtual handle must never reach the real library, which would dereference it): those that
//! cannot be served from the pool (callbacks, multi-GPU descriptors, half precision, scale
//! factors) return `HIPFFT_NOT_SUPPORTED` with a message naming the call. The calls without a
//! handle (`hipfftEstimate*`, `hipfftXtFree`) resolve to the real library as usual.
//!
//! The library exports only these names and `hfp_intercept_*` (build.rs: a version script).
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_longlong, c_void};

use hipfft_pool::{DevicePtr, RawStream, TransformType};
use hipfft_pool_intercept::{ExecKind, Fail, Flavor, PlanRequest, code, engine, export, write_out};

const F: Flavor = Flavor::Hipfft;

hipfft_pool_intercept::export_common!(F);
hipfft_pool_intercept::hip_graph_hooks!();
hipfft_pool_intercept::dlsym_hook!();

/// Runs when the library is loaded, before any program code can call `dlsym`: which
/// libraries' functions this interposer's `dlsym` serves in their place.
extern "C" fn loaded() {
    hipfft_pool_intercept::dlsym::stand_in_for(&["libamdhip64.so", "libhipfft.so"]);
}

#[used]
#[unsafe(link_section = ".init_array")]
static LOADED: extern "C" fn() = loaded;

/// `hipfftHandle` (hipfft.h: `typedef struct hipfftHandle_t* hipfftHandle;`).
pub type hipfftHandle = *mut c_void;
/// `hipStream_t`.
pub type hipStream_t = *mut c_void;

/// The pool's id of a hipFFT handle.
fn id(plan: hipfftHandle) -> u64 {
    plan as usize as u64
}

#[inline]
fn exec(plan: hipfftHandle, kind: ExecKind, call: &'static str, i: *mut c_void, o: *mut c_void, dir: c_int) -> Result<(), Fail> {
    engine(F)?.exec(id(plan), kind, call, DevicePtr::from_ptr(i), DevicePtr::from_ptr(o), dir)
}

/// `hipfftPlan*`: a new handle with a plan, written to `*plan` only on success.
unsafe fn plan_new(plan: *mut hipfftHandle, call: &'static str, req: Result<PlanRequest, Fail>) -> Result<(), Fail> {
    if plan.is_null() {
        return Err(Fail::invalid("plan", "null pointer"));
    }
    let h = engine(F)?.plan(&req?, call)?;
    // SAFETY: non-null, and the caller's out-parameter.
    unsafe { write_out(plan, "plan", h as usize as hipfftHandle) }
}

/// `hipfftMakePlan*`: plans an existing handle; writes the real work size (if asked).
unsafe fn make(plan: hipfftHandle, call: &'static str, req: Result<PlanRequest, Fail>, work: *mut usize) -> Result<(), Fail> {
    let size = engine(F)?.make_plan(id(plan), &req?, call)?;
    if !work.is_null() {
        // SAFETY: non-null, the caller's out-parameter.
        unsafe { work.write(size) };
    }
    Ok(())
}

/// `hipfftGetSize*`: the work size a plan for `req` needs.
unsafe fn size(plan: hipfftHandle, call: &'static str, req: Result<PlanRequest, Fail>, work: *mut usize) -> Result<(), Fail> {
    if work.is_null() {
        return Err(Fail::invalid("workSize", "null pointer"));
    }
    let s = engine(F)?.size_for(id(plan), &req?, call)?;
    // SAFETY: non-null, the caller's out-parameter.
    unsafe { work.write(s) };
    Ok(())
}

fn typed(raw: c_int) -> Result<TransformType, Fail> {
    TransformType::from_raw(raw).map_err(Fail::from)
}

/// The Xt calls' transform from their three data types.
fn xt(input: c_int, output: c_int, execution: c_int) -> Result<TransformType, Fail> {
    hipfft_pool_intercept::codes::xt_transform(input, output, execution)
}

/// A real entry point this library also serves on the simulated runtime (versions).
fn real_int_query(name: &str, arg: Option<c_int>, out: *mut c_int, sim_value: c_int) -> Result<(), Fail> {
    if hipfft_pool_intercept::engine::is_sim() {
        // SAFETY: the caller's out-parameter.
        return unsafe { write_out(out, "value", sim_value) };
    }
    let lib = hipfft_pool_intercept::real::fft_library(F).map_err(|e| Fail::new(code::SETUP_FAILED, e))?;
    let addr = lib.symbol(name).ok_or_else(|| Fail::new(code::NOT_IMPLEMENTED, format!("{} has no {name}", lib.path)))?;
    let r = match arg {
        None => {
            // SAFETY: hipfftResult hipfftGetVersion(int *version);
            let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_int) -> c_int>(addr) };
            // SAFETY: the caller's out-parameter, passed on.
            unsafe { f(out) }
        }
        Some(a) => {
            // SAFETY: hipfftResult hipfftGetProperty(hipfftLibraryPropertyType type, int *value);
            let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int, *mut c_int) -> c_int>(addr) };
            // SAFETY: as above.
            unsafe { f(a, out) }
        }
    };
    if r == code::SUCCESS { Ok(()) } else { Err(Fail::new(r, format!("the real {name} failed"))) }
}

fn unsupported(call: &str, why: &str) -> Result<(), Fail> {
    Err(Fail::not_supported(call, why))
}

export! { F;
    /// hipfftResult hipfftCreate(hipfftHandle *handle);
    fn hipfftCreate(handle: *mut hipfftHandle) {
        if handle.is_null() {
            return Err(Fail::invalid("handle", "null pointer"));
        }
        let h = engine(F)?.create()?;
        // SAFETY: non-null, the caller's out-parameter.
        unsafe { write_out(handle, "handle", h as usize as hipfftHandle) }
    }

    /// hipfftResult hipfftDestroy(hipfftHandle plan);
    fn hipfftDestroy(plan: hipfftHandle) {
        // No handle of this library has a real plan of its own (half precision is refused).
        engine(F)?.destroy(id(plan), "hipfftDestroy").map(|_| ())
    }

    /// hipfftResult hipfftPlan1d(hipfftHandle *plan, int nx, hipfftType type, int batch);
    fn hipfftPlan1d(plan: *mut hipfftHandle, nx: c_int, r#type: c_int, batch: c_int) {
        // SAFETY: the caller's out-parameter.
        unsafe { plan_new(plan, "hipfftPlan1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64)) }
    }

    /// hipfftResult hipfftPlan2d(hipfftHandle *plan, int nx, int ny, hipfftType type);
    fn hipfftPlan2d(plan: *mut hipfftHandle, nx: c_int, ny: c_int, r#type: c_int) {
        // SAFETY: as above.
        unsafe { plan_new(plan, "hipfftPlan2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1)) }
    }

    /// hipfftResult hipfftPlan3d(hipfftHandle *plan, int nx, int ny, int nz, hipfftType type);
    fn hipfftPlan3d(plan: *mut hipfftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int) {
        // SAFETY: as above.
        unsafe { plan_new(plan, "hipfftPlan3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1)) }
    }

    /// hipfftResult hipfftPlanMany(hipfftHandle *plan, int rank, int *n, int *inembed, int istride,
    ///   int idist, int *onembed, int ostride, int odist, hipfftType type, int batch);
    fn hipfftPlanMany(plan: *mut hipfftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                     onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int) {
        // SAFETY: n and the embeds hold `rank` values or are null (cuFFT's contract).
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: the caller's out-parameter.
        unsafe { plan_new(plan, "hipfftPlanMany", req) }
    }

    /// hipfftResult hipfftMakePlan1d(hipfftHandle plan, int nx, hipfftType type, int batch, size_t *workSize);
    fn hipfftMakePlan1d(plan: hipfftHandle, nx: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: workSize is null or the caller's out-parameter.
        unsafe { make(plan, "hipfftMakePlan1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64), workSize) }
    }

    /// hipfftResult hipfftMakePlan2d(hipfftHandle plan, int nx, int ny, hipfftType type, size_t *workSize);
    fn hipfftMakePlan2d(plan: hipfftHandle, nx: c_int, ny: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { make(plan, "hipfftMakePlan2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1), workSize) }
    }

    /// hipfftResult hipfftMakePlan3d(hipfftHandle plan, int nx, int ny, int nz, hipfftType type, size_t *workSize);
    fn hipfftMakePlan3d(plan: hipfftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { make(plan, "hipfftMakePlan3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1), workSize) }
    }

    /// hipfftResult hipfftMakePlanMany(hipfftHandle plan, int rank, int *n, int *inembed, int istride, int idist,
    ///   int *onembed, int ostride, int odist, hipfftType type, int batch, size_t *workSize);
    fn hipfftMakePlanMany(plan: hipfftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                         onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: cuFFT's array contract, as in hipfftPlanMany.
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: as above.
        unsafe { make(plan, "hipfftMakePlanMany", req, workSize) }
    }

    /// hipfftResult hipfftMakePlanMany64(hipfftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, long long int *onembed, long long int ostride,
    ///   long long int odist, hipfftType type, long long int batch, size_t *workSize);
    fn hipfftMakePlanMany64(plan: hipfftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                           idist: c_longlong, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong, r#type: c_int,
                           batch: c_longlong, workSize: *mut usize) {
        // SAFETY: as above.
        let req = typed(r#type).and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { make(plan, "hipfftMakePlanMany64", req, workSize) }
    }

    /// hipfftResult hipfftXtMakePlanMany(hipfftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, hipDataType inputtype, long long int *onembed,
    ///   long long int ostride, long long int odist, hipDataType outputtype, long long int batch,
    ///   size_t *workSize, hipDataType executiontype);
    fn hipfftXtMakePlanMany(plan: hipfftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                           idist: c_longlong, inputtype: c_int, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong,
                           outputtype: c_int, batch: c_longlong, workSize: *mut usize, executiontype: c_int) {
        match xt(inputtype, outputtype, executiontype) {
            // SAFETY: as above.
            Ok(t) => unsafe {
                let req = PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch);
                make(plan, "hipfftXtMakePlanMany", req, workSize)
            },
            Err(f) => Err(f),
        }
    }

    /// hipfftResult hipfftGetSize1d(hipfftHandle handle, int nx, hipfftType type, int batch, size_t *workSize);
    fn hipfftGetSize1d(handle: hipfftHandle, nx: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: the caller's out-parameter.
        unsafe { size(handle, "hipfftGetSize1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64), workSize) }
    }

    /// hipfftResult hipfftGetSize2d(hipfftHandle handle, int nx, int ny, hipfftType type, size_t *workSize);
    fn hipfftGetSize2d(handle: hipfftHandle, nx: c_int, ny: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { size(handle, "hipfftGetSize2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1), workSize) }
    }

    /// hipfftResult hipfftGetSize3d(hipfftHandle handle, int nx, int ny, int nz, hipfftType type, size_t *workSize);
    fn hipfftGetSize3d(handle: hipfftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { size(handle, "hipfftGetSize3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1), workSize) }
    }

    /// hipfftResult hipfftGetSizeMany(hipfftHandle handle, int rank, int *n, int *inembed, int istride, int idist,
    ///   int *onembed, int ostride, int odist, hipfftType type, int batch, size_t *workArea);
    fn hipfftGetSizeMany(handle: hipfftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                        onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int, workArea: *mut usize) {
        // SAFETY: cuFFT's array contract.
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: as above.
        unsafe { size(handle, "hipfftGetSizeMany", req, workArea) }
    }

    /// hipfftResult hipfftGetSizeMany64(hipfftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, long long int *onembed, long long int ostride,
    ///   long long int odist, hipfftType type, long long int batch, size_t *workSize);
    fn hipfftGetSizeMany64(plan: hipfftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                          idist: c_longlong, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong, r#type: c_int,
                          batch: c_longlong, workSize: *mut usize) {
        // SAFETY: as above.
        let req = typed(r#type).and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { size(plan, "hipfftGetSizeMany64", req, workSize) }
    }

    /// hipfftResult hipfftXtGetSizeMany(hipfftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, hipDataType inputtype, long long int *onembed,
    ///   long long int ostride, long long int odist, hipDataType outputtype, long long int batch,
    ///   size_t *workSize, hipDataType executiontype);
    fn hipfftXtGetSizeMany(plan: hipfftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                          idist: c_longlong, inputtype: c_int, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong,
                          outputtype: c_int, batch: c_longlong, workSize: *mut usize, executiontype: c_int) {
        // SAFETY: as above.
        let req = xt(inputtype, outputtype, executiontype)
            .and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { size(plan, "hipfftXtGetSizeMany", req, workSize) }
    }

    /// hipfftResult hipfftGetSize(hipfftHandle handle, size_t *workSize);
    fn hipfftGetSize(handle: hipfftHandle, workSize: *mut usize) {
        let s = engine(F)?.work_size(id(handle), "hipfftGetSize")?;
        // SAFETY: the caller's out-parameter.
        unsafe { write_out(workSize, "workSize", s) }
    }

    /// hipfftResult hipfftSetAutoAllocation(hipfftHandle plan, int autoAllocate);
    fn hipfftSetAutoAllocation(plan: hipfftHandle, autoAllocate: c_int) {
        engine(F)?.set_auto_allocation(id(plan), autoAllocate != 0, "hipfftSetAutoAllocation")
    }

    /// hipfftResult hipfftSetWorkArea(hipfftHandle plan, void *workArea);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftSetWorkArea(plan: hipfftHandle, workArea: *mut c_void) {
        engine(F)?.set_work_area(id(plan), DevicePtr::from_ptr(workArea), "hipfftSetWorkArea")
    }

    /// hipfftResult hipfftSetStream(hipfftHandle plan, hipStream_t stream);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftSetStream(plan: hipfftHandle, stream: hipStream_t) {
        engine(F)?.set_stream(id(plan), RawStream(stream as usize), "hipfftSetStream")
    }

    /// hipfftResult hipfftExecC2C(hipfftHandle plan, hipfftComplex *idata, hipfftComplex *odata, int direction);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecC2C(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void, direction: c_int) {
        exec(plan, ExecKind::Typed(TransformType::C2C), "hipfftExecC2C", idata, odata, direction)
    }

    /// hipfftResult hipfftExecR2C(hipfftHandle plan, hipfftReal *idata, hipfftComplex *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecR2C(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::R2C), "hipfftExecR2C", idata, odata, -1)
    }

    /// hipfftResult hipfftExecC2R(hipfftHandle plan, hipfftComplex *idata, hipfftReal *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecC2R(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::C2R), "hipfftExecC2R", idata, odata, 1)
    }

    /// hipfftResult hipfftExecZ2Z(hipfftHandle plan, hipfftDoubleComplex *idata, hipfftDoubleComplex *odata, int direction);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecZ2Z(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void, direction: c_int) {
        exec(plan, ExecKind::Typed(TransformType::Z2Z), "hipfftExecZ2Z", idata, odata, direction)
    }

    /// hipfftResult hipfftExecD2Z(hipfftHandle plan, hipfftDoubleReal *idata, hipfftDoubleComplex *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecD2Z(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::D2Z), "hipfftExecD2Z", idata, odata, -1)
    }

    /// hipfftResult hipfftExecZ2D(hipfftHandle plan, hipfftDoubleComplex *idata, hipfftDoubleReal *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn hipfftExecZ2D(plan: hipfftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::Z2D), "hipfftExecZ2D", idata, odata, 1)
    }

    /// hipfftResult hipfftXtExec(hipfftHandle plan, void *input, void *output, int direction);
    fn hipfftXtExec(plan: hipfftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        exec(plan, ExecKind::Xt, "hipfftXtExec", input, output, direction)
    }

    /// hipfftResult hipfftGetVersion(int *version);
    fn hipfftGetVersion(version: *mut c_int) {
        // On the simulated runtime: 10000 (HIPFFT_VERSION of hipFFT 1.0.0).
        real_int_query("hipfftGetVersion", None, version, 10000)
    }

    /// hipfftResult hipfftGetProperty(hipfftLibraryPropertyType type, int *value);
    fn hipfftGetProperty(r#type: c_int, value: *mut c_int) {
        let sim = match r#type {
            0 => 1,
            1 | 2 => 0,
            t => return Err(Fail::invalid("type", format!("{t} is not a hipfftLibraryPropertyType (HIPFFT_MAJOR_VERSION 0, HIPFFT_MINOR_VERSION 1, HIPFFT_PATCH_LEVEL 2)"))),
        };
        real_int_query("hipfftGetProperty", Some(r#type), value, sim)
    }

    // ---- calls that take a handle but cannot be served from the pool ----

    /// hipfftResult hipfftXtSetGPUs(hipfftHandle handle, int nGPUs, int *whichGPUs);
    fn hipfftXtSetGPUs(handle: hipfftHandle, nGPUs: c_int, whichGPUs: *mut c_int) {
        let _ = (handle, nGPUs, whichGPUs);
        unsupported("hipfftXtSetGPUs", "multi-GPU plans are not virtualized; the pool's plans run on one device")
    }

    /// hipfftResult hipfftXtMalloc(hipfftHandle plan, hipLibXtDesc **descriptor, hipfftXtSubFormat format);
    fn hipfftXtMalloc(plan: hipfftHandle, descriptor: *mut *mut c_void, format: c_int) {
        let _ = (plan, descriptor, format);
        unsupported("hipfftXtMalloc", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtMemcpy(hipfftHandle plan, void *dstPointer, void *srcPointer, hipfftXtCopyType type);
    fn hipfftXtMemcpy(plan: hipfftHandle, dstPointer: *mut c_void, srcPointer: *mut c_void, r#type: c_int) {
        let _ = (plan, dstPointer, srcPointer, r#type);
        unsupported("hipfftXtMemcpy", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptor(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output, int direction);
    fn hipfftXtExecDescriptor(plan: hipfftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("hipfftXtExecDescriptor", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorC2C(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output, int direction);
    fn hipfftXtExecDescriptorC2C(plan: hipfftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("hipfftXtExecDescriptorC2C", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorZ2Z(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output, int direction);
    fn hipfftXtExecDescriptorZ2Z(plan: hipfftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("hipfftXtExecDescriptorZ2Z", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorR2C(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output);
    fn hipfftXtExecDescriptorR2C(plan: hipfftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("hipfftXtExecDescriptorR2C", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorC2R(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output);
    fn hipfftXtExecDescriptorC2R(plan: hipfftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("hipfftXtExecDescriptorC2R", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorD2Z(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output);
    fn hipfftXtExecDescriptorD2Z(plan: hipfftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("hipfftXtExecDescriptorD2Z", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtExecDescriptorZ2D(hipfftHandle plan, hipLibXtDesc *input, hipLibXtDesc *output);
    fn hipfftXtExecDescriptorZ2D(plan: hipfftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("hipfftXtExecDescriptorZ2D", "multi-GPU descriptors are not virtualized")
    }

    /// hipfftResult hipfftXtSetCallback(hipfftHandle plan, void **callback_routine, hipfftXtCallbackType cbType, void **caller_info);
    fn hipfftXtSetCallback(plan: hipfftHandle, callback_routine: *mut *mut c_void, cbType: c_int, caller_info: *mut *mut c_void) {
        let _ = (plan, callback_routine, cbType, caller_info);
        unsupported("hipfftXtSetCallback", "a callback belongs to one real plan, which the pool shares between handles")
    }

    /// hipfftResult hipfftXtClearCallback(hipfftHandle plan, hipfftXtCallbackType cbType);
    fn hipfftXtClearCallback(plan: hipfftHandle, cbType: c_int) {
        let _ = (plan, cbType);
        unsupported("hipfftXtClearCallback", "callbacks are not virtualized")
    }

    /// hipfftResult hipfftXtSetCallbackSharedSize(hipfftHandle plan, hipfftXtCallbackType cbType, size_t sharedSize);
    fn hipfftXtSetCallbackSharedSize(plan: hipfftHandle, cbType: c_int, sharedSize: usize) {
        let _ = (plan, cbType, sharedSize);
        unsupported("hipfftXtSetCallbackSharedSize", "callbacks are not virtualized")
    }


    /// hipfftResult hipfftExtPlanScaleFactor(hipfftHandle plan, double scalefactor);
    fn hipfftExtPlanScaleFactor(plan: hipfftHandle, scalefactor: f64) {
        let _ = (plan, scalefactor);
        unsupported("hipfftExtPlanScaleFactor", "a scale factor belongs to one real plan, which the pool shares between handles")
    }
}
