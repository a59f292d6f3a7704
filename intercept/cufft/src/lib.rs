//! `libhipfft_pool_cufft.so`: cuFFT's plan API over hipfft-pool, for `LD_PRELOAD`.
//!
//! Every function here has the C signature of cufft.h / cufftXt.h (written above each) and
//! returns a `cufftResult`. A `cufftHandle` the framework holds is a virtual handle (see
//! `hipfft_pool_intercept::engine`); the real plans live in the pool. Calls this library
//! does not define resolve to the real libcufft as usual under `LD_PRELOAD` (the `Estimate`
//! calls, `cufftXtFree`, ...). The ones that take a handle but cannot be served from the pool
//! (callbacks, multi-GPU descriptors, plan properties) are defined here and return
//! `CUFFT_NOT_SUPPORTED` with a message naming the call, so a virtual handle never reaches
//! the real library.
//!
//! The library exports only these names and `hfp_intercept_*` (build.rs: a version script).
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_longlong, c_void};

use hipfft_pool::{DevicePtr, RawStream, TransformType};
use hipfft_pool_intercept::{ExecKind, Fail, Flavor, PlanRequest, code, engine, export, write_out};

const F: Flavor = Flavor::Cufft;

hipfft_pool_intercept::export_common!(F);
hipfft_pool_intercept::cuda_graph_hooks!();
hipfft_pool_intercept::dlsym_hook!();

/// Runs when the library is loaded, before any program code can call `dlsym`: which
/// libraries' functions this interposer's `dlsym` serves in their place.
extern "C" fn loaded() {
    hipfft_pool_intercept::dlsym::stand_in_for(&["libcuda.so", "libcufft.so"]);
}

#[used]
#[unsafe(link_section = ".init_array")]
static LOADED: extern "C" fn() = loaded;

/// `cufftHandle` (cufft.h: `typedef int cufftHandle;`).
pub type cufftHandle = c_int;
/// `cudaStream_t`.
pub type cudaStream_t = *mut c_void;

/// The pool's id of a cuFFT handle.
fn id(plan: cufftHandle) -> u64 {
    plan as u32 as u64
}

#[inline]
fn exec(plan: cufftHandle, kind: ExecKind, call: &'static str, i: *mut c_void, o: *mut c_void, dir: c_int) -> Result<(), Fail> {
    engine(F)?.exec(id(plan), kind, call, DevicePtr::from_ptr(i), DevicePtr::from_ptr(o), dir)
}

/// `cufftPlan*`: a new handle with a plan, written to `*plan` only on success.
unsafe fn plan_new(plan: *mut cufftHandle, call: &'static str, req: Result<PlanRequest, Fail>) -> Result<(), Fail> {
    if plan.is_null() {
        return Err(Fail::invalid("plan", "null pointer"));
    }
    let h = engine(F)?.plan(&req?, call)?;
    // SAFETY: non-null, and the caller's out-parameter.
    unsafe { write_out(plan, "plan", h as cufftHandle) }
}

/// `cufftMakePlan*`: plans an existing handle; writes the real work size (if asked).
unsafe fn make(plan: cufftHandle, call: &'static str, req: Result<PlanRequest, Fail>, work: *mut usize) -> Result<(), Fail> {
    let size = engine(F)?.make_plan(id(plan), &req?, call)?;
    if !work.is_null() {
        // SAFETY: non-null, the caller's out-parameter.
        unsafe { work.write(size) };
    }
    Ok(())
}

/// `cufftGetSize*`: the work size a plan for `req` needs.
unsafe fn size(plan: cufftHandle, call: &'static str, req: Result<PlanRequest, Fail>, work: *mut usize) -> Result<(), Fail> {
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
            // SAFETY: cufftResult cufftGetVersion(int *version);
            let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_int) -> c_int>(addr) };
            // SAFETY: the caller's out-parameter, passed on.
            unsafe { f(out) }
        }
        Some(a) => {
            // SAFETY: cufftResult cufftGetProperty(libraryPropertyType type, int *value);
            let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int, *mut c_int) -> c_int>(addr) };
            // SAFETY: as above.
            unsafe { f(a, out) }
        }
    };
    if r == code::SUCCESS { Ok(()) } else { Err(Fail::new(r, format!("the real {name} failed"))) }
}

/// The real library's function `name`, as the function-pointer type `T` of its C signature.
///
/// # Safety
/// `T` must be the exact C signature of `name`.
unsafe fn real<T: Copy>(name: &str) -> Result<T, Fail> {
    let lib = hipfft_pool_intercept::real::fft_library(F).map_err(|e| Fail::new(code::SETUP_FAILED, e))?;
    let addr = lib.symbol(name).ok_or_else(|| Fail::new(code::NOT_IMPLEMENTED, format!("{} has no {name}", lib.path)))?;
    // SAFETY: the caller's contract; a symbol address and a fn pointer have the same size.
    Ok(unsafe { std::mem::transmute_copy::<usize, T>(&addr) })
}

fn real_code(name: &str, r: c_int) -> Result<(), Fail> {
    if r == code::SUCCESS { Ok(()) } else { Err(Fail::new(r, format!("the real {name} failed on the handle's own plan"))) }
}

/// A handle's own real plan (half precision), if it has one.
#[inline(always)]
fn own_real(plan: cufftHandle) -> Result<Option<c_int>, Fail> {
    Ok(engine(F)?.real_plan(id(plan)).map(|r| r as c_int))
}

type SetStreamFn = unsafe extern "C" fn(c_int, cudaStream_t) -> c_int;
type SetWorkAreaFn = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;

fn unsupported(call: &str, why: &str) -> Result<(), Fail> {
    Err(Fail::not_supported(call, why))
}

export! { F;
    /// cufftResult cufftCreate(cufftHandle *handle);
    fn cufftCreate(handle: *mut cufftHandle) {
        if handle.is_null() {
            return Err(Fail::invalid("handle", "null pointer"));
        }
        let h = engine(F)?.create()?;
        // SAFETY: non-null, the caller's out-parameter.
        unsafe { write_out(handle, "handle", h as cufftHandle) }
    }

    /// cufftResult cufftDestroy(cufftHandle plan);
    fn cufftDestroy(plan: cufftHandle) {
        let e = engine(F)?;
        if let Some(own) = e.destroy(id(plan), "cufftDestroy")? {
            // SAFETY: cufftResult cufftDestroy(cufftHandle plan);
            let destroy = unsafe { real::<unsafe extern "C" fn(c_int) -> c_int>("cufftDestroy") }?;
            // SAFETY: the handle's own real plan, destroyed once.
            let r = unsafe { destroy(own as c_int) };
            e.real_plan_destroyed();
            real_code("cufftDestroy", r)?;
        }
        Ok(())
    }

    /// cufftResult cufftPlan1d(cufftHandle *plan, int nx, cufftType type, int batch);
    fn cufftPlan1d(plan: *mut cufftHandle, nx: c_int, r#type: c_int, batch: c_int) {
        // SAFETY: the caller's out-parameter.
        unsafe { plan_new(plan, "cufftPlan1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64)) }
    }

    /// cufftResult cufftPlan2d(cufftHandle *plan, int nx, int ny, cufftType type);
    fn cufftPlan2d(plan: *mut cufftHandle, nx: c_int, ny: c_int, r#type: c_int) {
        // SAFETY: as above.
        unsafe { plan_new(plan, "cufftPlan2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1)) }
    }

    /// cufftResult cufftPlan3d(cufftHandle *plan, int nx, int ny, int nz, cufftType type);
    fn cufftPlan3d(plan: *mut cufftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int) {
        // SAFETY: as above.
        unsafe { plan_new(plan, "cufftPlan3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1)) }
    }

    /// cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed, int istride,
    ///   int idist, int *onembed, int ostride, int odist, cufftType type, int batch);
    fn cufftPlanMany(plan: *mut cufftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                     onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int) {
        // SAFETY: n and the embeds hold `rank` values or are null (cuFFT's contract).
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: the caller's out-parameter.
        unsafe { plan_new(plan, "cufftPlanMany", req) }
    }

    /// cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch, size_t *workSize);
    fn cufftMakePlan1d(plan: cufftHandle, nx: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: workSize is null or the caller's out-parameter.
        unsafe { make(plan, "cufftMakePlan1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64), workSize) }
    }

    /// cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type, size_t *workSize);
    fn cufftMakePlan2d(plan: cufftHandle, nx: c_int, ny: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { make(plan, "cufftMakePlan2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1), workSize) }
    }

    /// cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type, size_t *workSize);
    fn cufftMakePlan3d(plan: cufftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { make(plan, "cufftMakePlan3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1), workSize) }
    }

    /// cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int *n, int *inembed, int istride, int idist,
    ///   int *onembed, int ostride, int odist, cufftType type, int batch, size_t *workSize);
    fn cufftMakePlanMany(plan: cufftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                         onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: cuFFT's array contract, as in cufftPlanMany.
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: as above.
        unsafe { make(plan, "cufftMakePlanMany", req, workSize) }
    }

    /// cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, long long int *onembed, long long int ostride,
    ///   long long int odist, cufftType type, long long int batch, size_t *workSize);
    fn cufftMakePlanMany64(plan: cufftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                           idist: c_longlong, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong, r#type: c_int,
                           batch: c_longlong, workSize: *mut usize) {
        // SAFETY: as above.
        let req = typed(r#type).and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { make(plan, "cufftMakePlanMany64", req, workSize) }
    }

    /// cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, cudaDataType inputtype, long long int *onembed,
    ///   long long int ostride, long long int odist, cudaDataType outputtype, long long int batch,
    ///   size_t *workSize, cudaDataType executiontype);
    fn cufftXtMakePlanMany(plan: cufftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                           idist: c_longlong, inputtype: c_int, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong,
                           outputtype: c_int, batch: c_longlong, workSize: *mut usize, executiontype: c_int) {
        match xt(inputtype, outputtype, executiontype) {
            // SAFETY: as above.
            Ok(t) => unsafe {
                let req = PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch);
                make(plan, "cufftXtMakePlanMany", req, workSize)
            },
            // Half precision: the pool's descriptor cannot say it, so the handle gets a real
            // plan of its own, under one slot of the ceiling (not on the simulated runtime).
            Err(f) if f.code == code::NOT_SUPPORTED && !hipfft_pool_intercept::engine::is_sim() => {
                type Create = unsafe extern "C" fn(*mut c_int) -> c_int;
                type SetAuto = unsafe extern "C" fn(c_int, c_int) -> c_int;
                type XtMake = unsafe extern "C" fn(c_int, c_int, *mut c_longlong, *mut c_longlong, c_longlong, c_longlong, c_int,
                    *mut c_longlong, c_longlong, c_longlong, c_int, c_longlong, *mut usize, c_int) -> c_int;
                type Destroy = unsafe extern "C" fn(c_int) -> c_int;
                // SAFETY: each type is the C signature of its name (cufft.h, cufftXt.h).
                let (create, set_auto, xt_make, destroy, set_stream, set_area) = unsafe {
                    (real::<Create>("cufftCreate")?, real::<SetAuto>("cufftSetAutoAllocation")?, real::<XtMake>("cufftXtMakePlanMany")?,
                     real::<Destroy>("cufftDestroy")?, real::<SetStreamFn>("cufftSetStream")?, real::<SetWorkAreaFn>("cufftSetWorkArea")?)
                };
                let e = engine(F)?;
                let (stream, area) = e.pin_real(id(plan), "cufftXtMakePlanMany", |auto| {
                    let mut h: c_int = 0;
                    // SAFETY: the real library's calls with the caller's own arguments.
                    unsafe {
                        real_code("cufftCreate", create(&mut h))?;
                        let made = real_code("cufftSetAutoAllocation", set_auto(h, auto as c_int)).and_then(|()| {
                            real_code("cufftXtMakePlanMany", xt_make(h, rank, n, inembed, istride, idist, inputtype, onembed, ostride,
                                odist, outputtype, batch, workSize, executiontype))
                        });
                        if let Err(f) = made {
                            destroy(h);
                            return Err(f);
                        }
                    }
                    Ok(h as i64)
                })?;
                let own = own_real(plan)?.unwrap_or(0);
                // SAFETY: the plan just made; the settings the handle had before.
                unsafe {
                    real_code("cufftSetStream", set_stream(own, stream.0 as cudaStream_t))?;
                    if let Some(a) = area {
                        real_code("cufftSetWorkArea", set_area(own, a.as_ptr()))?;
                    }
                }
                Ok(())
            }
            Err(f) => Err(f),
        }
    }

    /// cufftResult cufftGetSize1d(cufftHandle handle, int nx, cufftType type, int batch, size_t *workSize);
    fn cufftGetSize1d(handle: cufftHandle, nx: c_int, r#type: c_int, batch: c_int, workSize: *mut usize) {
        // SAFETY: the caller's out-parameter.
        unsafe { size(handle, "cufftGetSize1d", PlanRequest::basic(r#type, &[nx as i64], batch as i64), workSize) }
    }

    /// cufftResult cufftGetSize2d(cufftHandle handle, int nx, int ny, cufftType type, size_t *workSize);
    fn cufftGetSize2d(handle: cufftHandle, nx: c_int, ny: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { size(handle, "cufftGetSize2d", PlanRequest::basic(r#type, &[nx as i64, ny as i64], 1), workSize) }
    }

    /// cufftResult cufftGetSize3d(cufftHandle handle, int nx, int ny, int nz, cufftType type, size_t *workSize);
    fn cufftGetSize3d(handle: cufftHandle, nx: c_int, ny: c_int, nz: c_int, r#type: c_int, workSize: *mut usize) {
        // SAFETY: as above.
        unsafe { size(handle, "cufftGetSize3d", PlanRequest::basic(r#type, &[nx as i64, ny as i64, nz as i64], 1), workSize) }
    }

    /// cufftResult cufftGetSizeMany(cufftHandle handle, int rank, int *n, int *inembed, int istride, int idist,
    ///   int *onembed, int ostride, int odist, cufftType type, int batch, size_t *workArea);
    fn cufftGetSizeMany(handle: cufftHandle, rank: c_int, n: *mut c_int, inembed: *mut c_int, istride: c_int, idist: c_int,
                        onembed: *mut c_int, ostride: c_int, odist: c_int, r#type: c_int, batch: c_int, workArea: *mut usize) {
        // SAFETY: cuFFT's array contract.
        let req = typed(r#type).and_then(|t| unsafe {
            PlanRequest::many(t, rank, n, inembed, istride as i64, idist as i64, onembed, ostride as i64, odist as i64, batch as i64)
        });
        // SAFETY: as above.
        unsafe { size(handle, "cufftGetSizeMany", req, workArea) }
    }

    /// cufftResult cufftGetSizeMany64(cufftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, long long int *onembed, long long int ostride,
    ///   long long int odist, cufftType type, long long int batch, size_t *workSize);
    fn cufftGetSizeMany64(plan: cufftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                          idist: c_longlong, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong, r#type: c_int,
                          batch: c_longlong, workSize: *mut usize) {
        // SAFETY: as above.
        let req = typed(r#type).and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { size(plan, "cufftGetSizeMany64", req, workSize) }
    }

    /// cufftResult cufftXtGetSizeMany(cufftHandle plan, int rank, long long int *n, long long int *inembed,
    ///   long long int istride, long long int idist, cudaDataType inputtype, long long int *onembed,
    ///   long long int ostride, long long int odist, cudaDataType outputtype, long long int batch,
    ///   size_t *workSize, cudaDataType executiontype);
    fn cufftXtGetSizeMany(plan: cufftHandle, rank: c_int, n: *mut c_longlong, inembed: *mut c_longlong, istride: c_longlong,
                          idist: c_longlong, inputtype: c_int, onembed: *mut c_longlong, ostride: c_longlong, odist: c_longlong,
                          outputtype: c_int, batch: c_longlong, workSize: *mut usize, executiontype: c_int) {
        // SAFETY: as above.
        let req = xt(inputtype, outputtype, executiontype)
            .and_then(|t| unsafe { PlanRequest::many(t, rank, n, inembed, istride, idist, onembed, ostride, odist, batch) });
        // SAFETY: as above.
        unsafe { size(plan, "cufftXtGetSizeMany", req, workSize) }
    }

    /// cufftResult cufftGetSize(cufftHandle handle, size_t *workSize);
    fn cufftGetSize(handle: cufftHandle, workSize: *mut usize) {
        if let Some(own) = own_real(handle)? {
            // SAFETY: cufftResult cufftGetSize(cufftHandle handle, size_t *workSize);
            let f = unsafe { real::<unsafe extern "C" fn(c_int, *mut usize) -> c_int>("cufftGetSize") }?;
            // SAFETY: the handle's own plan; the caller's out-parameter.
            return real_code("cufftGetSize", unsafe { f(own, workSize) });
        }
        let s = engine(F)?.work_size(id(handle), "cufftGetSize")?;
        // SAFETY: the caller's out-parameter.
        unsafe { write_out(workSize, "workSize", s) }
    }

    /// cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
    fn cufftSetAutoAllocation(plan: cufftHandle, autoAllocate: c_int) {
        if let Some(own) = own_real(plan)? {
            // SAFETY: cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
            let f = unsafe { real::<unsafe extern "C" fn(c_int, c_int) -> c_int>("cufftSetAutoAllocation") }?;
            // SAFETY: the handle's own plan.
            return real_code("cufftSetAutoAllocation", unsafe { f(own, autoAllocate) });
        }
        engine(F)?.set_auto_allocation(id(plan), autoAllocate != 0, "cufftSetAutoAllocation")
    }

    /// cufftResult cufftSetWorkArea(cufftHandle plan, void *workArea);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftSetWorkArea(plan: cufftHandle, workArea: *mut c_void) {
        if let Some(own) = own_real(plan)? {
            // SAFETY: the C signature of cufftSetWorkArea.
            let f = unsafe { real::<SetWorkAreaFn>("cufftSetWorkArea") }?;
            // SAFETY: the handle's own plan and the caller's area.
            return real_code("cufftSetWorkArea", unsafe { f(own, workArea) });
        }
        engine(F)?.set_work_area(id(plan), DevicePtr::from_ptr(workArea), "cufftSetWorkArea")
    }

    /// cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftSetStream(plan: cufftHandle, stream: cudaStream_t) {
        if let Some(own) = own_real(plan)? {
            // SAFETY: the C signature of cufftSetStream.
            let f = unsafe { real::<SetStreamFn>("cufftSetStream") }?;
            // SAFETY: the handle's own plan and the caller's stream.
            return real_code("cufftSetStream", unsafe { f(own, stream) });
        }
        engine(F)?.set_stream(id(plan), RawStream(stream as usize), "cufftSetStream")
    }

    /// cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata, int direction);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecC2C(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void, direction: c_int) {
        exec(plan, ExecKind::Typed(TransformType::C2C), "cufftExecC2C", idata, odata, direction)
    }

    /// cufftResult cufftExecR2C(cufftHandle plan, cufftReal *idata, cufftComplex *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecR2C(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::R2C), "cufftExecR2C", idata, odata, -1)
    }

    /// cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *idata, cufftReal *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecC2R(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::C2R), "cufftExecC2R", idata, odata, 1)
    }

    /// cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleComplex *odata, int direction);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecZ2Z(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void, direction: c_int) {
        exec(plan, ExecKind::Typed(TransformType::Z2Z), "cufftExecZ2Z", idata, odata, direction)
    }

    /// cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *idata, cufftDoubleComplex *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecD2Z(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::D2Z), "cufftExecD2Z", idata, odata, -1)
    }

    /// cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleReal *odata);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftExecZ2D(plan: cufftHandle, idata: *mut c_void, odata: *mut c_void) {
        exec(plan, ExecKind::Typed(TransformType::Z2D), "cufftExecZ2D", idata, odata, 1)
    }

    /// cufftResult cufftXtExec(cufftHandle plan, void *input, void *output, int direction);
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    fn cufftXtExec(plan: cufftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        if let Some(own) = own_real(plan)? {
            // SAFETY: cufftResult cufftXtExec(cufftHandle plan, void *input, void *output, int direction);
            let f = unsafe { real::<unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, c_int) -> c_int>("cufftXtExec") }?;
            // SAFETY: the handle's own plan and the caller's buffers.
            return real_code("cufftXtExec", unsafe { f(own, input, output, direction) });
        }
        exec(plan, ExecKind::Xt, "cufftXtExec", input, output, direction)
    }

    /// cufftResult cufftGetVersion(int *version);
    fn cufftGetVersion(version: *mut c_int) {
        // On the simulated runtime: 12000, the numbering of cuFFT 12.0.0.
        real_int_query("cufftGetVersion", None, version, 12000)
    }

    /// cufftResult cufftGetProperty(libraryPropertyType type, int *value);
    fn cufftGetProperty(r#type: c_int, value: *mut c_int) {
        let sim = match r#type {
            0 => 12,
            1 | 2 => 0,
            t => return Err(Fail::invalid("type", format!("{t} is not a libraryPropertyType (MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2)"))),
        };
        real_int_query("cufftGetProperty", Some(r#type), value, sim)
    }

    // ---- calls that take a handle but cannot be served from the pool ----

    /// cufftResult cufftXtSetGPUs(cufftHandle handle, int nGPUs, int *whichGPUs);
    fn cufftXtSetGPUs(handle: cufftHandle, nGPUs: c_int, whichGPUs: *mut c_int) {
        let _ = (handle, nGPUs, whichGPUs);
        unsupported("cufftXtSetGPUs", "multi-GPU plans are not virtualized; the pool's plans run on one device")
    }

    /// cufftResult cufftXtMalloc(cufftHandle plan, cudaLibXtDesc **descriptor, cufftXtSubFormat format);
    fn cufftXtMalloc(plan: cufftHandle, descriptor: *mut *mut c_void, format: c_int) {
        let _ = (plan, descriptor, format);
        unsupported("cufftXtMalloc", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtMemcpy(cufftHandle plan, void *dstPointer, void *srcPointer, cufftXtCopyType type);
    fn cufftXtMemcpy(plan: cufftHandle, dstPointer: *mut c_void, srcPointer: *mut c_void, r#type: c_int) {
        let _ = (plan, dstPointer, srcPointer, r#type);
        unsupported("cufftXtMemcpy", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptor(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output, int direction);
    fn cufftXtExecDescriptor(plan: cufftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("cufftXtExecDescriptor", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorC2C(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output, int direction);
    fn cufftXtExecDescriptorC2C(plan: cufftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("cufftXtExecDescriptorC2C", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorZ2Z(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output, int direction);
    fn cufftXtExecDescriptorZ2Z(plan: cufftHandle, input: *mut c_void, output: *mut c_void, direction: c_int) {
        let _ = (plan, input, output, direction);
        unsupported("cufftXtExecDescriptorZ2Z", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorR2C(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output);
    fn cufftXtExecDescriptorR2C(plan: cufftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("cufftXtExecDescriptorR2C", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorC2R(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output);
    fn cufftXtExecDescriptorC2R(plan: cufftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("cufftXtExecDescriptorC2R", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorD2Z(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output);
    fn cufftXtExecDescriptorD2Z(plan: cufftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("cufftXtExecDescriptorD2Z", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtExecDescriptorZ2D(cufftHandle plan, cudaLibXtDesc *input, cudaLibXtDesc *output);
    fn cufftXtExecDescriptorZ2D(plan: cufftHandle, input: *mut c_void, output: *mut c_void) {
        let _ = (plan, input, output);
        unsupported("cufftXtExecDescriptorZ2D", "multi-GPU descriptors are not virtualized")
    }

    /// cufftResult cufftXtSetCallback(cufftHandle plan, void **callback_routine, cufftXtCallbackType cbType, void **caller_info);
    fn cufftXtSetCallback(plan: cufftHandle, callback_routine: *mut *mut c_void, cbType: c_int, caller_info: *mut *mut c_void) {
        let _ = (plan, callback_routine, cbType, caller_info);
        unsupported("cufftXtSetCallback", "a callback belongs to one real plan, which the pool shares between handles")
    }

    /// cufftResult cufftXtClearCallback(cufftHandle plan, cufftXtCallbackType cbType);
    fn cufftXtClearCallback(plan: cufftHandle, cbType: c_int) {
        let _ = (plan, cbType);
        unsupported("cufftXtClearCallback", "callbacks are not virtualized")
    }

    /// cufftResult cufftXtSetCallbackSharedSize(cufftHandle plan, cufftXtCallbackType cbType, size_t sharedSize);
    fn cufftXtSetCallbackSharedSize(plan: cufftHandle, cbType: c_int, sharedSize: usize) {
        let _ = (plan, cbType, sharedSize);
        unsupported("cufftXtSetCallbackSharedSize", "callbacks are not virtualized")
    }

    /// cufftResult cufftXtSetJITCallback(cufftHandle plan, const char *lto_callback_symbol_name,
    ///   const void *lto_callback_fatbin, size_t lto_callback_fatbin_size, cufftXtCallbackType type, void **caller_info);
    fn cufftXtSetJITCallback(plan: cufftHandle, name: *const c_void, fatbin: *const c_void, fatbin_size: usize, r#type: c_int,
                             caller_info: *mut *mut c_void) {
        let _ = (plan, name, fatbin, fatbin_size, r#type, caller_info);
        unsupported("cufftXtSetJITCallback", "callbacks are not virtualized")
    }

    /// cufftResult cufftXtSetWorkArea(cufftHandle plan, void **workArea);
    fn cufftXtSetWorkArea(plan: cufftHandle, workArea: *mut *mut c_void) {
        let _ = (plan, workArea);
        unsupported("cufftXtSetWorkArea", "per-GPU work areas belong to multi-GPU plans; use cufftSetWorkArea")
    }

    /// cufftResult cufftXtSetWorkAreaPolicy(cufftHandle plan, cufftXtWorkAreaPolicy policy, size_t *workSize);
    fn cufftXtSetWorkAreaPolicy(plan: cufftHandle, policy: c_int, workSize: *mut usize) {
        let _ = (plan, policy, workSize);
        unsupported("cufftXtSetWorkAreaPolicy", "the pool makes its plans with the default policy")
    }

    /// cufftResult cufftSetPlanPropertyInt64(cufftHandle plan, cufftProperty property, const long long int inputValueInt);
    fn cufftSetPlanPropertyInt64(plan: cufftHandle, property: c_int, inputValueInt: c_longlong) {
        let _ = (plan, property, inputValueInt);
        unsupported("cufftSetPlanPropertyInt64", "plan properties are not part of the pool's plan descriptor")
    }

    /// cufftResult cufftGetPlanPropertyInt64(cufftHandle plan, cufftProperty property, long long int *returnPtrValue);
    fn cufftGetPlanPropertyInt64(plan: cufftHandle, property: c_int, returnPtrValue: *mut c_longlong) {
        let _ = (plan, property, returnPtrValue);
        unsupported("cufftGetPlanPropertyInt64", "plan properties are not part of the pool's plan descriptor")
    }

    /// cufftResult cufftResetPlanProperty(cufftHandle plan, cufftProperty property);
    fn cufftResetPlanProperty(plan: cufftHandle, property: c_int) {
        let _ = (plan, property);
        unsupported("cufftResetPlanProperty", "plan properties are not part of the pool's plan descriptor")
    }
}
