//! [`HipRuntime`]: the [`Runtime`] implementation over the resolved entry points.

use std::ffi::c_void;
use std::fmt;
use std::mem::ManuallyDrop;
use std::path::Path;

use super::loader::{Candidate, CandidateOrigin, HipLibrary, LoadedLibrary, already_loaded, library_candidates, loaded_path, missing_symbols, open_first};
use super::result;
use super::sys::{self, HipLib, HipfftLib, hipEvent_t, hipStream_t, hipfftHandle};
use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::runtime::boundary::{
    CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo, RuntimeKind,
};

/// hipFFT and the HIP runtime, loaded at run time.
pub struct HipRuntime {
    fft: HipfftLib,
    hip: HipLib,
    libraries: Vec<(String, String)>,
    versions: Vec<(String, String)>,
    // Kept only so the handles are owned by the runtime; never closed.
    _handles: Vec<ManuallyDrop<libloading::Library>>,
}

// Send + Sync follow from the fields (function pointers, libloading handles, strings): hipFFT
// and HIP are thread-safe for the calls made here, and per-plan calls are serialized by the
// pool, as the trait requires.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<HipRuntime>();
};

impl fmt::Debug for HipRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HipRuntime").field("libraries", &self.libraries).field("versions", &self.versions).finish()
    }
}

/// `HIP_VERSION`-style `major * 10_000_000 + minor * 100_000 + patch`, shown decoded too.
pub(super) fn hip_version_string(v: i32) -> String {
    if v >= 10_000_000 {
        format!("{v} ({}.{}.{})", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
    } else {
        v.to_string()
    }
}

impl HipRuntime {
    /// Searches for and loads hipFFT and the HIP runtime ([`library_candidates`] order).
    /// A missing library or symbol is [`Error::Unavailable`] naming every path tried.
    pub fn load() -> Result<Self> {
        let env = |k: &str| std::env::var_os(k);
        let probe = |lib: HipLibrary| match env(lib.override_var()) {
            Some(v) if !v.is_empty() => None,
            _ => already_loaded(lib),
        };
        let fft = library_candidates(HipLibrary::Hipfft, env);
        let hip = library_candidates(HipLibrary::AmdHip64, env);
        Self::load_libraries(
            probe(HipLibrary::Hipfft).ok_or(()).or_else(|()| open_first(HipLibrary::Hipfft, &fft)),
            probe(HipLibrary::AmdHip64).ok_or(()).or_else(|()| open_first(HipLibrary::AmdHip64, &hip)),
        )
    }

    /// Loads hipFFT and the HIP runtime from exactly these files. A path without a `/` is
    /// resolved by the dynamic loader.
    pub fn load_from(hipfft_path: &Path, hip_path: &Path) -> Result<Self> {
        let fft = [Candidate { path: hipfft_path.to_path_buf(), origin: CandidateOrigin::Explicit }];
        let hip = [Candidate { path: hip_path.to_path_buf(), origin: CandidateOrigin::Explicit }];
        Self::load_candidates(&fft, &hip)
    }

    fn load_candidates(fft_candidates: &[Candidate], hip_candidates: &[Candidate]) -> Result<Self> {
        // Open both before reporting, so one message says everything that is missing.
        let hip_lib = open_first(HipLibrary::AmdHip64, hip_candidates);
        let fft_lib = open_first(HipLibrary::Hipfft, fft_candidates);
        Self::load_libraries(fft_lib, hip_lib)
    }

    fn load_libraries(
        fft_lib: std::result::Result<LoadedLibrary, String>,
        hip_lib: std::result::Result<LoadedLibrary, String>,
    ) -> Result<Self> {
        let (mut hip_lib, mut fft_lib) = match (hip_lib, fft_lib) {
            (Ok(h), Ok(f)) => (h, f),
            (h, f) => {
                let msgs: Vec<String> = [f.err(), h.err()].into_iter().flatten().collect();
                return Err(Error::Unavailable(format!("hipFFT runtime: {}", msgs.join(". "))));
            }
        };
        // SAFETY: the libraries stay loaded for the rest of the process (never closed).
        let hip = unsafe { HipLib::resolve(&hip_lib.lib) };
        // SAFETY: as above.
        let fft = unsafe { HipfftLib::resolve(&fft_lib.lib) };
        let (hip, fft) = match (hip, fft) {
            (Ok(h), Ok(f)) => (h, f),
            (h, f) => {
                let mut msgs = Vec::new();
                if let Err(m) = f {
                    msgs.push(missing_symbols("hipFFT", &fft_lib, &m, HipfftLib::REQUIRED.len()));
                }
                if let Err(m) = h {
                    msgs.push(missing_symbols("HIP runtime", &hip_lib, &m, HipLib::REQUIRED.len()));
                }
                return Err(Error::Unavailable(format!("hipFFT runtime: {}", msgs.join(". "))));
            }
        };
        fft_lib.resolved = loaded_path(fft.hipfftCreate as *const c_void);
        hip_lib.resolved = loaded_path(hip.hipMalloc as *const c_void);

        let libraries = vec![
            (HipLibrary::Hipfft.name().to_string(), fft_lib.describe()),
            (HipLibrary::AmdHip64.name().to_string(), hip_lib.describe()),
        ];
        let mut versions = Vec::new();
        // SAFETY: resolved libraries; version queries take only an out pointer.
        match unsafe { result::get_version(&fft) } {
            Ok(v) => versions.push(("hipfft".to_string(), v.to_string())),
            Err(e) => versions.push(("hipfft".to_string(), format!("unknown: {e}"))),
        }
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        match unsafe { result::runtime_get_version(&hip) } {
            Ok(v) => versions.push(("hip runtime".to_string(), hip_version_string(v))),
            Err(e) => versions.push(("hip runtime".to_string(), format!("unknown: {e}"))),
        }
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        match unsafe { result::driver_get_version(&hip) } {
            Ok(v) => versions.push(("hip driver".to_string(), hip_version_string(v))),
            Err(e) => versions.push(("hip driver".to_string(), format!("unknown: {e}"))),
        }
        tracing::debug!(?libraries, ?versions, "loaded hipFFT runtime");
        Ok(HipRuntime { fft, hip, libraries, versions, _handles: vec![fft_lib.lib, hip_lib.lib] })
    }

    /// A runtime over entry points that were not loaded from a file (tests use stubs).
    #[cfg(test)]
    pub(super) fn from_entry_points(fft: HipfftLib, hip: HipLib) -> Self {
        HipRuntime { fft, hip, libraries: Vec::new(), versions: Vec::new(), _handles: Vec::new() }
    }

    /// The resolved hipFFT entry points (for callers that need one the trait does not cover).
    pub fn hipfft_lib(&self) -> &HipfftLib {
        &self.fft
    }

    /// The resolved HIP runtime entry points.
    pub fn hip_lib(&self) -> &HipLib {
        &self.hip
    }
}

fn handle(plan: RawPlan) -> hipfftHandle {
    plan.0 as hipfftHandle
}
fn stream(s: RawStream) -> hipStream_t {
    s.0 as hipStream_t
}
fn event(e: RawEvent) -> hipEvent_t {
    e.0 as hipEvent_t
}

/// Packed per-batch distance of one side: the product of its logical dims.
fn packed_dist(dims: &[i64]) -> i64 {
    dims.iter().product()
}

// SAFETY: every call is the hipFFT or HIP entry point its doc names, and returns what the
// library returned: hipMalloc's allocation, a plan made by hipfftMakePlanMany64 with the
// work size it reported, handles from the library's own create calls.
unsafe impl Runtime for HipRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Hip
    }

    fn info(&self) -> RuntimeInfo {
        let mut devices = Vec::new();
        // SAFETY: resolved HIP runtime.
        match unsafe { result::get_device_count(&self.hip) } {
            Ok(n) => {
                for d in 0..n {
                    // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
                    match unsafe { result::device_get_name(&self.hip, d) } {
                        Ok(name) => devices.push(format!("{d}: {name}")),
                        Err(e) => devices.push(format!("{d}: name unknown ({e})")),
                    }
                }
            }
            Err(e) => devices.push(format!("no devices: {e}")),
        }
        RuntimeInfo { libraries: self.libraries.clone(), versions: self.versions.clone(), devices }
    }

    /// `hipGetDeviceCount`; `hipErrorNoDevice` counts as zero devices.
    fn device_count(&self) -> Result<i32> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        match unsafe { result::get_device_count(&self.hip) } {
            Err(Error::Runtime { code, .. }) if code.value == sys::hip_error::hipErrorNoDevice => Ok(0),
            other => other,
        }
    }

    fn current_device(&self) -> Result<i32> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        unsafe { result::get_device(&self.hip) }
    }

    fn set_device(&self, device: i32) -> Result<()> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        unsafe { result::set_device(&self.hip, device) }
    }

    fn device_flags(&self) -> Result<Option<u32>> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        unsafe { result::get_device_flags(&self.hip) }
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        // Relaxed: the plan's hipMalloc, on the pool's creation worker, must neither fail nor
        // break a global-mode capture another thread is making.
        // SAFETY: a resolved runtime.
        unsafe { result::relaxed(&self.hip, || self.make_plan(desc, options)) }
    }

    unsafe fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream_: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        // SAFETY: the caller upholds `Runtime::plan_exec`'s contract.
        unsafe { self.plan_exec_bound(plan, transform, stream_, work_area, input, output, direction, Rebind::ALL) }
    }

    unsafe fn plan_exec_bound(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream_: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        rebind: Rebind,
    ) -> Result<()> {
        let h = handle(plan);
        let (i, o) = (input.as_ptr::<c_void>(), output.as_ptr::<c_void>());
        let (s, w) = rebind.pick(stream_, work_area);
        // SAFETY: the caller upholds `Runtime::plan_exec_bound`'s contract: a live plan made
        // for `transform`, a live stream, buffers and work area of the plan's sizes (what is
        // skipped, the plan carries).
        unsafe {
            self.plan_bind(plan, s, w)?;
            match transform {
                TransformType::C2C => result::exec_c2c(&self.fft, h, i, o, direction.raw()),
                TransformType::Z2Z => result::exec_z2z(&self.fft, h, i, o, direction.raw()),
                TransformType::R2C => result::exec_r2c(&self.fft, h, i, o),
                TransformType::C2R => result::exec_c2r(&self.fft, h, i, o),
                TransformType::D2Z => result::exec_d2z(&self.fft, h, i, o),
                TransformType::Z2D => result::exec_z2d(&self.fft, h, i, o),
            }
        }
    }

    unsafe fn plan_bind(&self, plan: RawPlan, stream_: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        let h = handle(plan);
        // SAFETY: the caller upholds `Runtime::plan_bind`'s contract (live plan and stream, an
        // area of the plan's work size).
        unsafe {
            if let Some(s) = stream_ {
                result::set_stream(&self.fft, h, stream(s))?;
            }
            if let Some(area) = work_area {
                result::set_work_area(&self.fft, h, area.as_ptr())?;
            }
        }
        Ok(true)
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        // The pool destroys on its own thread: relaxed, so that the hipFree inside neither
        // fails nor breaks a global-mode capture another thread is making.
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::relaxed(&self.hip, || result::destroy(&self.fft, handle(plan))) }
    }

    unsafe fn stream_is_capturing(&self, s: RawStream) -> Result<bool> {
        // SAFETY: the trait method's contract: a live stream of this runtime.
        unsafe { result::stream_is_capturing(&self.hip, stream(s)) }
    }

    unsafe fn launch_host_fn(&self, s: RawStream, call: crate::runtime::boundary::HostCall) -> Result<()> {
        // SAFETY: the trait method's contract; `HostCall::new`'s keeps the data valid.
        unsafe { result::launch_host_func(&self.hip, stream(s), call.function(), call.data()) }
    }

    fn event_create(&self) -> Result<RawEvent> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        unsafe { result::event_create_with_flags(&self.hip, sys::hipEventDisableTiming) }.map(|e| RawEvent(e as usize))
    }

    unsafe fn event_record(&self, e: RawEvent, s: RawStream) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::event_record(&self.hip, event(e), stream(s)) }
    }

    unsafe fn event_query(&self, e: RawEvent) -> Result<bool> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::event_query(&self.hip, event(e)) }
    }

    unsafe fn event_synchronize(&self, e: RawEvent) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::event_synchronize(&self.hip, event(e)) }
    }

    unsafe fn event_destroy(&self, e: RawEvent) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::event_destroy(&self.hip, event(e)) }
    }

    fn stream_create(&self) -> Result<RawStream> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        unsafe { result::stream_create_with_flags(&self.hip, sys::hipStreamNonBlocking) }.map(|s| RawStream(s as usize))
    }

    unsafe fn stream_synchronize(&self, s: RawStream) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::stream_synchronize(&self.hip, stream(s)) }
    }

    unsafe fn stream_destroy(&self, s: RawStream) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::stream_destroy(&self.hip, stream(s)) }
    }

    /// `hipMalloc`; a zero-byte request allocates one byte, because `hipMalloc(0)` returns
    /// null and the trait promises a valid, non-null pointer.
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        // SAFETY: the libraries are resolved and never unloaded; the call takes no handle.
        let p = unsafe { result::malloc(&self.hip, bytes.max(1))? };
        if p.is_null() {
            return Err(Error::Internal(format!("hipMalloc({bytes}) returned hipSuccess and a null pointer")));
        }
        Ok(DevicePtr::from_ptr(p))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::free(&self.hip, ptr.as_ptr()) }
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe { result::memcpy(&self.hip, dst.as_ptr(), src.as_ptr().cast(), src.len(), sys::hipMemcpyHostToDevice) }
    }

    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe {
            result::memcpy(
                &self.hip,
                dst.as_mut_ptr().cast(),
                src.as_ptr::<c_void>(),
                dst.len(),
                sys::hipMemcpyDeviceToHost,
            )
        }
    }

    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: RawStream) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the trait method's contract (live handles, device ranges of the sizes
        // given) is this call's.
        unsafe {
            result::memcpy_async(
                &self.hip,
                dst.as_ptr(),
                src.as_ptr::<c_void>(),
                bytes,
                sys::hipMemcpyDeviceToDevice,
                stream(s),
            )
        }
    }
}

impl HipRuntime {
    /// `hipfftCreate` + `hipfftSetAutoAllocation` + `hipfftMakePlanMany64` (see `plan_create`).
    fn make_plan(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let ext = desc.extents()?;
        let r = desc.rank();
        let mut n = [0i64; 3];
        n[..r].copy_from_slice(desc.dims());
        // Both embeds null, or both given (a packed side spelled out): hipFFT, like cuFFT,
        // takes the advanced layout only from two embeds.
        let layouts = desc.library_layouts();
        let mut in_embed = layouts.map(|(i, _)| i.embed);
        let mut out_embed = layouts.map(|(_, o)| o.embed);
        // A null embed selects the packed layout; its stride and distance are then ignored,
        // but they are passed as the packed values so either reading agrees.
        let input = result::Side {
            stride: layouts.map_or(1, |(i, _)| i.stride),
            dist: layouts.map_or(packed_dist(&ext.input_dims[..r]), |(i, _)| i.dist),
            embed: in_embed.as_mut(),
        };
        let output = result::Side {
            stride: layouts.map_or(1, |(_, o)| o.stride),
            dist: layouts.map_or(packed_dist(&ext.output_dims[..r]), |(_, o)| o.dist),
            embed: out_embed.as_mut(),
        };
        // SAFETY: resolved hipFFT; the handle is destroyed below if making it fails.
        let plan = unsafe { result::create(&self.fft)? };
        // SAFETY: `plan` was just created and is made only here; `n` and the embeds hold `r` entries.
        let made = unsafe {
            result::set_auto_allocation(&self.fft, plan, options.auto_allocation).and_then(|()| {
                result::make_plan_many64(
                    &self.fft,
                    plan,
                    r as i32,
                    &mut n,
                    input,
                    output,
                    desc.transform.raw(),
                    desc.batch,
                )
            })
        };
        match made {
            Ok(work_size) => Ok(CreatedPlan { plan: RawPlan(plan as usize), work_size }),
            Err(e) => {
                // SAFETY: the handle created above, used by nobody else.
                if let Err(d) = unsafe { result::destroy(&self.fft, plan) } {
                    tracing::warn!(error = %d, "hipfftDestroy after a failed plan creation failed");
                }
                Err(e)
            }
        }
    }
}
