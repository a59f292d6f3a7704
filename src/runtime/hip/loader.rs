//! Finding and opening hipFFT and the HIP runtime: the search order, the `RTLD_NOLOAD` probe
//! for a copy the process already mapped, and `dladdr` for the file a symbol came from.

use std::ffi::{OsStr, OsString, c_void};
use std::fmt;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

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

    /// A short name for messages and [`RuntimeInfo::libraries`](crate::runtime::RuntimeInfo::libraries).
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
    /// A path given to [`HipRuntime::load_from`](super::HipRuntime::load_from).
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
    /// The file (or, without a `/`, the name the dynamic loader resolves).
    pub path: PathBuf,
    /// Which rule of the search order produced it.
    pub origin: CandidateOrigin,
}

/// The search order for `lib`, given an environment lookup (`std::env::var_os` in
/// [`HipRuntime::load`](super::HipRuntime::load)). Empty variables count as unset; duplicate paths are dropped.
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
pub(super) struct LoadedLibrary {
    pub(super) lib: ManuallyDrop<libloading::Library>,
    pub(super) candidate: Candidate,
    /// The file the loader actually mapped, when it can tell (`dladdr`).
    pub(super) resolved: Option<PathBuf>,
}

impl LoadedLibrary {
    pub(super) fn describe(&self) -> String {
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
pub(super) fn already_loaded(lib: HipLibrary) -> Option<LoadedLibrary> {
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
pub(super) fn already_loaded(_lib: HipLibrary) -> Option<LoadedLibrary> {
    None
}

/// Opens the first candidate that opens; on failure says what every candidate answered.
pub(super) fn open_first(lib: HipLibrary, candidates: &[Candidate]) -> std::result::Result<LoadedLibrary, String> {
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

pub(super) fn missing_symbols(what: &str, lib: &LoadedLibrary, missing: &[&str], total: usize) -> String {
    format!(
        "{} lacks {} of the {total} {what} entry points it must export: {}",
        lib.describe(),
        missing.len(),
        missing.join(", ")
    )
}

#[cfg(unix)]
pub(super) fn loaded_path(addr: *const c_void) -> Option<PathBuf> {
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
pub(super) fn loaded_path(_addr: *const c_void) -> Option<PathBuf> {
    None
}

