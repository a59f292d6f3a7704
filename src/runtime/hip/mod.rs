//! hipFFT and the HIP runtime (AMD), loaded at run time: no ROCm is needed to build.
//!
//! Layered like cudarc's `cufft` module: [`sys`] holds the hand-written bindings (one struct
//! of function pointers per library, resolved once at load), [`result`] turns status codes
//! into [`Error`]s, and this module implements [`Runtime`] on top.
//!
//! Libraries are found by [`library_candidates`] (a pure function of the environment, so the
//! search order is testable): the `HIPFFT_POOL_HIPFFT_LIB` / `HIPFFT_POOL_HIP_LIB` override
//! (an exact file; when set, nothing else is tried), then `$ROCM_PATH/lib`, `$HIP_PATH/lib`,
//! `/opt/rocm/lib`, then the dynamic loader's own search by plain name (`libhipfft.so`,
//! then the runtime soname). Before that list (and unless an override is set),
//! [`HipRuntime::load`] asks the loader whether the process already has the library mapped
//! under one of its sonames (`RTLD_NOLOAD`, Linux): a process that already loaded hipFFT
//! (MLX does) must get that same copy, never a second one from another ROCm. Loaded libraries are never unloaded: HIP registers process-exit
//! handlers and threads, and unloading it while they exist is not safe.

pub mod result;
pub mod sys;

use std::ffi::{OsStr, OsString, c_void};
use std::fmt;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::runtime::boundary::{
    CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Runtime, RuntimeInfo, RuntimeKind,
};

use sys::{HipLib, HipfftLib, hipEvent_t, hipStream_t, hipfftHandle};

/// Which of the two libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HipLibrary {
    /// hipFFT (`libhipfft.so`).
    Hipfft,
    /// The HIP runtime (`libamdhip64.so`).
    AmdHip64,
}

impl HipLibrary {
    /// The development file name, looked up in each directory and by the loader.
    pub fn file_name(self) -> &'static str {
        match self {
            HipLibrary::Hipfft => "libhipfft.so",
            HipLibrary::AmdHip64 => "libamdhip64.so",
        }
    }

    /// Runtime sonames tried by the loader after the plain name (a runtime-only install has
    /// no unversioned symlink).
    pub fn sonames(self) -> &'static [&'static str] {
        match self {
            HipLibrary::Hipfft => &["libhipfft.so.0"],
            HipLibrary::AmdHip64 => &["libamdhip64.so.6", "libamdhip64.so.7", "libamdhip64.so.5"],
        }
    }

    /// The environment variable naming an exact file to load instead of searching.
    pub fn override_var(self) -> &'static str {
        match self {
            HipLibrary::Hipfft => "HIPFFT_POOL_HIPFFT_LIB",
            HipLibrary::AmdHip64 => "HIPFFT_POOL_HIP_LIB",
        }
    }

    /// A short name for messages and [`RuntimeInfo::libraries`].
    pub fn name(self) -> &'static str {
        match self {
            HipLibrary::Hipfft => "hipfft",
            HipLibrary::AmdHip64 => "amdhip64",
        }
    }
}

/// Where a candidate path came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CandidateOrigin {
    /// `HIPFFT_POOL_HIPFFT_LIB` / `HIPFFT_POOL_HIP_LIB`.
    Override(&'static str),
    /// `$ROCM_PATH/lib`.
    RocmPath,
    /// `$HIP_PATH/lib`.
    HipPath,
    /// `/opt/rocm/lib`.
    OptRocm,
    /// A plain name resolved by the dynamic loader (`LD_LIBRARY_PATH`, rpath, ld.so.cache,
    /// or a library the process already loaded).
    Loader,
    /// A path given to [`HipRuntime::load_from`].
    Explicit,
    /// Already mapped in the process under this soname (found with `RTLD_NOLOAD`).
    AlreadyLoaded,
}

impl fmt::Display for CandidateOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CandidateOrigin::Override(var) => write!(f, "${var}"),
            CandidateOrigin::RocmPath => f.write_str("$ROCM_PATH/lib"),
            CandidateOrigin::HipPath => f.write_str("$HIP_PATH/lib"),
            CandidateOrigin::OptRocm => f.write_str("/opt/rocm/lib"),
            CandidateOrigin::Loader => f.write_str("loader search path"),
            CandidateOrigin::Explicit => f.write_str("given path"),
            CandidateOrigin::AlreadyLoaded => f.write_str("already loaded in this process"),
        }
    }
}

/// One place to try, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub origin: CandidateOrigin,
}

/// The search order for `lib`, given an environment lookup (`std::env::var_os` in
/// [`HipRuntime::load`]). Empty variables count as unset; duplicate paths are dropped.
pub fn library_candidates(lib: HipLibrary, env: impl Fn(&str) -> Option<OsString>) -> Vec<Candidate> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(path) = var(lib.override_var()) {
        return vec![Candidate { path: PathBuf::from(path), origin: CandidateOrigin::Override(lib.override_var()) }];
    }
    let mut out: Vec<Candidate> = Vec::new();
    let mut push = |path: PathBuf, origin: CandidateOrigin| {
        if !out.iter().any(|c| c.path == path) {
            out.push(Candidate { path, origin });
        }
    };
    if let Some(root) = var("ROCM_PATH") {
        push(Path::new(&root).join("lib").join(lib.file_name()), CandidateOrigin::RocmPath);
    }
    if let Some(root) = var("HIP_PATH") {
        push(Path::new(&root).join("lib").join(lib.file_name()), CandidateOrigin::HipPath);
    }
    push(Path::new("/opt/rocm/lib").join(lib.file_name()), CandidateOrigin::OptRocm);
    push(PathBuf::from(lib.file_name()), CandidateOrigin::Loader);
    for soname in lib.sonames() {
        push(PathBuf::from(soname), CandidateOrigin::Loader);
    }
    out
}

/// A library that was opened, with where it came from. Never closed (see the module docs).
struct LoadedLibrary {
    lib: ManuallyDrop<libloading::Library>,
    candidate: Candidate,
    /// The file the loader actually mapped, when it can tell (`dladdr`).
    resolved: Option<PathBuf>,
}

impl LoadedLibrary {
    fn describe(&self) -> String {
        let given = self.candidate.path.display();
        match &self.resolved {
            Some(r) if r != &self.candidate.path => format!("{given} ({}) -> {}", self.candidate.origin, r.display()),
            _ => format!("{given} ({})", self.candidate.origin),
        }
    }
}

/// The library if the process already has it mapped under one of its names (`RTLD_NOLOAD`
/// loads nothing; it returns a new reference to a mapped object or fails).
#[cfg(target_os = "linux")]
fn already_loaded(lib: HipLibrary) -> Option<LoadedLibrary> {
    const RTLD_NOLOAD: std::ffi::c_int = 0x4; // glibc and musl
    lib.sonames().iter().chain([&lib.file_name()]).find_map(|name| {
        let flags = RTLD_NOLOAD | libloading::os::unix::RTLD_LAZY | libloading::os::unix::RTLD_LOCAL;
        // SAFETY: RTLD_NOLOAD never maps a new object, so no initializer runs.
        let l = unsafe { libloading::os::unix::Library::open(Some(*name), flags) }.ok()?;
        Some(LoadedLibrary {
            lib: ManuallyDrop::new(l.into()),
            candidate: Candidate { path: PathBuf::from(name), origin: CandidateOrigin::AlreadyLoaded },
            resolved: None,
        })
    })
}

#[cfg(not(target_os = "linux"))]
fn already_loaded(_lib: HipLibrary) -> Option<LoadedLibrary> {
    None
}

/// Opens the first candidate that opens; on failure says what every candidate answered.
fn open_first(lib: HipLibrary, candidates: &[Candidate]) -> std::result::Result<LoadedLibrary, String> {
    let mut tried = Vec::with_capacity(candidates.len());
    for c in candidates {
        // SAFETY: loading hipFFT / the HIP runtime runs their initializers, which is what
        // using them requires; nothing else is assumed about the file until its symbols
        // are resolved with the signatures of `sys`.
        match unsafe { libloading::Library::new(&c.path) } {
            Ok(l) => return Ok(LoadedLibrary { lib: ManuallyDrop::new(l), candidate: c.clone(), resolved: None }),
            Err(e) => {
                let path = c.path.display().to_string();
                // dlerror()'s text (libloading's source) usually repeats the path: drop it.
                let why = match std::error::Error::source(&e) {
                    Some(inner) => inner.to_string(),
                    None => e.to_string(),
                };
                let why = why.strip_prefix(&format!("{path}: ")).unwrap_or(&why).to_string();
                tried.push(format!("{path} ({}): {why}", c.origin));
            }
        }
    }
    Err(format!("{} not found; tried {}", lib.file_name(), tried.join("; ")))
}

fn missing_symbols(what: &str, lib: &LoadedLibrary, missing: &[&str], total: usize) -> String {
    format!(
        "{} lacks {} of the {total} {what} entry points it must export: {}",
        lib.describe(),
        missing.len(),
        missing.join(", ")
    )
}

#[cfg(unix)]
fn loaded_path(addr: *const c_void) -> Option<PathBuf> {
    use std::ffi::{CStr, c_char, c_int};
    use std::os::unix::ffi::OsStrExt;
    #[repr(C)]
    struct DlInfo {
        dli_fname: *const c_char,
        dli_fbase: *mut c_void,
        dli_sname: *const c_char,
        dli_saddr: *mut c_void,
    }
    unsafe extern "C" {
        fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
    }
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out pointer.
    if unsafe { dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(name.to_bytes()));
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

#[cfg(not(unix))]
fn loaded_path(_addr: *const c_void) -> Option<PathBuf> {
    None
}

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
fn hip_version_string(v: i32) -> String {
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
        match unsafe { result::runtime_get_version(&hip) } {
            Ok(v) => versions.push(("hip runtime".to_string(), hip_version_string(v))),
            Err(e) => versions.push(("hip runtime".to_string(), format!("unknown: {e}"))),
        }
        match unsafe { result::driver_get_version(&hip) } {
            Ok(v) => versions.push(("hip driver".to_string(), hip_version_string(v))),
            Err(e) => versions.push(("hip driver".to_string(), format!("unknown: {e}"))),
        }
        tracing::debug!(?libraries, ?versions, "loaded hipFFT runtime");
        Ok(HipRuntime { fft, hip, libraries, versions, _handles: vec![fft_lib.lib, hip_lib.lib] })
    }

    /// A runtime over entry points that were not loaded from a file (tests use stubs).
    #[cfg(test)]
    fn from_entry_points(fft: HipfftLib, hip: HipLib) -> Self {
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

impl Runtime for HipRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Hip
    }

    fn info(&self) -> RuntimeInfo {
        let mut devices = Vec::new();
        // SAFETY: resolved HIP runtime.
        match unsafe { result::get_device_count(&self.hip) } {
            Ok(n) => {
                for d in 0..n {
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
        match unsafe { result::get_device_count(&self.hip) } {
            Err(Error::Runtime { code, .. }) if code.value == sys::hip_error::hipErrorNoDevice => Ok(0),
            other => other,
        }
    }

    fn current_device(&self) -> Result<i32> {
        unsafe { result::get_device(&self.hip) }
    }

    fn set_device(&self, device: i32) -> Result<()> {
        unsafe { result::set_device(&self.hip, device) }
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
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
                if let Err(d) = unsafe { result::destroy(&self.fft, plan) } {
                    tracing::warn!(error = %d, "hipfftDestroy after a failed plan creation failed");
                }
                Err(e)
            }
        }
    }

    fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream_: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        let h = handle(plan);
        let (i, o) = (input.as_ptr::<c_void>(), output.as_ptr::<c_void>());
        // SAFETY: the pool passes a live, made plan of `transform` and buffers of its extents.
        unsafe {
            result::set_stream(&self.fft, h, stream(stream_))?;
            if let Some(area) = work_area {
                result::set_work_area(&self.fft, h, area.as_ptr())?;
            }
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

    fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        unsafe { result::destroy(&self.fft, handle(plan)) }
    }

    fn event_create(&self) -> Result<RawEvent> {
        unsafe { result::event_create_with_flags(&self.hip, sys::hipEventDisableTiming) }.map(|e| RawEvent(e as usize))
    }

    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<()> {
        unsafe { result::event_record(&self.hip, event(e), stream(s)) }
    }

    fn event_query(&self, e: RawEvent) -> Result<bool> {
        unsafe { result::event_query(&self.hip, event(e)) }
    }

    fn event_synchronize(&self, e: RawEvent) -> Result<()> {
        unsafe { result::event_synchronize(&self.hip, event(e)) }
    }

    fn event_destroy(&self, e: RawEvent) -> Result<()> {
        unsafe { result::event_destroy(&self.hip, event(e)) }
    }

    fn stream_create(&self) -> Result<RawStream> {
        unsafe { result::stream_create_with_flags(&self.hip, sys::hipStreamNonBlocking) }.map(|s| RawStream(s as usize))
    }

    fn stream_synchronize(&self, s: RawStream) -> Result<()> {
        unsafe { result::stream_synchronize(&self.hip, stream(s)) }
    }

    fn stream_destroy(&self, s: RawStream) -> Result<()> {
        unsafe { result::stream_destroy(&self.hip, stream(s)) }
    }

    /// `hipMalloc`; a zero-byte request allocates one byte, because `hipMalloc(0)` returns
    /// null and the trait promises a valid, non-null pointer.
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        let p = unsafe { result::malloc(&self.hip, bytes.max(1))? };
        if p.is_null() {
            return Err(Error::Internal(format!("hipMalloc({bytes}) returned hipSuccess and a null pointer")));
        }
        Ok(DevicePtr::from_ptr(p))
    }

    fn free(&self, ptr: DevicePtr) -> Result<()> {
        unsafe { result::free(&self.hip, ptr.as_ptr()) }
    }

    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        unsafe { result::memcpy(&self.hip, dst.as_ptr(), src.as_ptr().cast(), src.len(), sys::hipMemcpyHostToDevice) }
    }

    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
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

    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: RawStream) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::Layout;
    use std::ffi::{c_int, c_longlong};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn missing_files_are_unavailable_and_name_every_path() {
        let e =
            HipRuntime::load_from(Path::new("/nonexistent/a/libhipfft.so"), Path::new("/nonexistent/b/libamdhip64.so"))
                .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::Unavailable(_)), "{msg}");
        assert!(msg.contains("/nonexistent/a/libhipfft.so") && msg.contains("/nonexistent/b/libamdhip64.so"), "{msg}");
    }

    #[test]
    fn version_strings() {
        assert_eq!(hip_version_string(60241134), "60241134 (6.2.41134)");
        assert_eq!(hip_version_string(100), "100");
    }

    // Stubbed entry points: each test uses its own statics, since tests run in parallel.

    const FAKE_PLAN: usize = 0x5eed_0000;
    static DESTROYED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn create_fake(plan: *mut hipfftHandle) -> c_int {
        unsafe { *plan = FAKE_PLAN as hipfftHandle };
        0
    }
    unsafe extern "C" fn destroy_record(plan: hipfftHandle) -> c_int {
        DESTROYED.store(plan as usize, Ordering::SeqCst);
        0
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn make_invalid_size(
        _: hipfftHandle,
        _: c_int,
        _: *mut c_longlong,
        _: *mut c_longlong,
        _: c_longlong,
        _: c_longlong,
        _: *mut c_longlong,
        _: c_longlong,
        _: c_longlong,
        _: c_int,
        _: c_longlong,
        _: *mut usize,
    ) -> c_int {
        crate::error::hipfft_result::INVALID_SIZE
    }

    #[test]
    fn failed_make_destroys_the_handle_and_keeps_the_code() {
        let mut fft = HipfftLib::stubbed();
        fft.hipfftCreate = create_fake;
        fft.hipfftDestroy = destroy_record;
        fft.hipfftMakePlanMany64 = make_invalid_size;
        let rt = HipRuntime::from_entry_points(fft, HipLib::stubbed());
        let e = rt.plan_create(&PlanDesc::new(TransformType::C2C, &[8], 1), PlanOptions::default()).unwrap_err();
        match e {
            Error::Runtime { call, code } => {
                assert_eq!(call, "hipfftMakePlanMany64");
                assert_eq!((code.value, code.name), (8, "HIPFFT_INVALID_SIZE"));
            }
            other => panic!("{other}"),
        }
        assert_eq!(DESTROYED.load(Ordering::SeqCst), FAKE_PLAN);
    }

    #[derive(Debug, Default, Clone, PartialEq)]
    struct MakeArgs {
        rank: i32,
        n: Vec<i64>,
        inembed: Option<Vec<i64>>,
        istride: i64,
        idist: i64,
        onembed: Option<Vec<i64>>,
        ostride: i64,
        odist: i64,
        ty: i32,
        batch: i64,
        auto: i32,
    }
    static MADE: Mutex<Option<MakeArgs>> = Mutex::new(None);
    static AUTO: Mutex<i32> = Mutex::new(-1);

    unsafe extern "C" fn set_auto_record(_: hipfftHandle, auto: c_int) -> c_int {
        *AUTO.lock().unwrap() = auto;
        0
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn make_record(
        _: hipfftHandle,
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
        work: *mut usize,
    ) -> c_int {
        let r = rank as usize;
        let read = |p: *mut c_longlong| (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, r) }.to_vec());
        *MADE.lock().unwrap() = Some(MakeArgs {
            rank,
            n: read(n).unwrap(),
            inembed: read(inembed),
            istride,
            idist,
            onembed: read(onembed),
            ostride,
            odist,
            ty,
            batch,
            auto: *AUTO.lock().unwrap(),
        });
        unsafe { *work = 4096 };
        0
    }

    #[test]
    fn make_plan_arguments_follow_the_descriptor() {
        let mut fft = HipfftLib::stubbed();
        fft.hipfftCreate = create_fake;
        fft.hipfftSetAutoAllocation = set_auto_record;
        fft.hipfftMakePlanMany64 = make_record;
        let rt = HipRuntime::from_entry_points(fft, HipLib::stubbed());
        // Packed R2C: null embeds, packed strides and distances of each side.
        let made = rt.plan_create(&PlanDesc::new(TransformType::R2C, &[4, 10], 3), PlanOptions::default()).unwrap();
        assert_eq!(made, CreatedPlan { plan: RawPlan(FAKE_PLAN), work_size: 4096 });
        let args = MADE.lock().unwrap().take().unwrap();
        assert_eq!(
            args,
            MakeArgs {
                rank: 2,
                n: vec![4, 10],
                inembed: None,
                istride: 1,
                idist: 40,
                onembed: None,
                ostride: 1,
                odist: 24,
                ty: 0x2a,
                batch: 3,
                auto: 0,
            }
        );
        // Advanced layout on the input only, auto-allocation on: the packed output is spelled
        // out, since hipFFT (like cuFFT) takes the advanced layout only from two embeds.
        let desc = PlanDesc::new(TransformType::Z2Z, &[6], 2).with_input_layout(Layout::new(&[8], 2, 17));
        rt.plan_create(&desc, PlanOptions { auto_allocation: true }).unwrap();
        let args = MADE.lock().unwrap().take().unwrap();
        assert_eq!((args.inembed, args.istride, args.idist), (Some(vec![8]), 2, 17));
        assert_eq!((args.onembed, args.ostride, args.odist), (Some(vec![6]), 1, 6));
        assert_eq!((args.ty, args.auto), (0x69, 1));
    }

    static QUERY_STATUS: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn query_status(_: hipEvent_t) -> c_int {
        QUERY_STATUS.load(Ordering::SeqCst) as c_int
    }
    unsafe extern "C" fn no_device(n: *mut c_int) -> c_int {
        unsafe { *n = 0 };
        sys::hip_error::hipErrorNoDevice
    }
    static MALLOC_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
    unsafe extern "C" fn malloc_record(p: *mut *mut c_void, bytes: usize) -> c_int {
        MALLOC_BYTES.store(bytes, Ordering::SeqCst);
        unsafe { *p = 0x1000 as *mut c_void };
        0
    }
    unsafe extern "C" fn error_name(_: c_int) -> *const std::ffi::c_char {
        c"hipErrorFromTheLibrary".as_ptr()
    }

    #[test]
    fn hip_statuses_map_by_name_and_number() {
        let mut hip = HipLib::stubbed();
        hip.hipEventQuery = query_status;
        hip.hipGetDeviceCount = no_device;
        hip.hipMalloc = malloc_record;
        hip.hipGetErrorName = Some(error_name);
        let rt = HipRuntime::from_entry_points(HipfftLib::stubbed(), hip);
        QUERY_STATUS.store(0, Ordering::SeqCst);
        assert!(rt.event_query(RawEvent(1)).unwrap());
        QUERY_STATUS.store(600, Ordering::SeqCst);
        assert!(!rt.event_query(RawEvent(1)).unwrap(), "hipErrorNotReady is Ok(false)");
        QUERY_STATUS.store(400, Ordering::SeqCst);
        let e = rt.event_query(RawEvent(1)).unwrap_err();
        assert_eq!(e.to_string(), "hipEventQuery failed with HIP hipErrorInvalidResourceHandle (400)");
        // A code the table lacks takes the library's own name.
        QUERY_STATUS.store(4242, Ordering::SeqCst);
        let e = rt.event_query(RawEvent(1)).unwrap_err();
        assert_eq!(e.to_string(), "hipEventQuery failed with HIP hipErrorFromTheLibrary (4242)");
        assert_eq!(rt.device_count().unwrap(), 0, "hipErrorNoDevice counts as no devices");
        assert_eq!(rt.malloc(0).unwrap(), DevicePtr(0x1000));
        assert_eq!(MALLOC_BYTES.load(Ordering::SeqCst), 1, "a zero-byte request still gets a pointer");
    }
}
