//! Finding the real cuFFT / hipFFT (and the CUDA runtime) behind the interposer.
//!
//! `dlsym(RTLD_NEXT, ...)` is not enough: a Python extension loads its libcufft with
//! `RTLD_LOCAL`, so the library is mapped but not in the global scope, and `RTLD_NEXT` finds
//! nothing. So, in order:
//! 1. the override variable (`HIPFFT_POOL_CUFFT_LIB`, `HIPFFT_POOL_HIPFFT_LIB`,
//!    `HIPFFT_POOL_CUDART_LIB`): that file, opened `RTLD_LOCAL`;
//! 2. a library of that name already mapped into the process (found with `dl_iterate_phdr`),
//!    opened by its exact path with `RTLD_NOLOAD`, so the process's own copy is bound, never a
//!    second one;
//! 3. the usual sonames, through the loader's search path.
//!
//! Symbols are then looked up on that handle (`dlsym(handle, ...)` searches the library and
//! its dependencies, never the preloaded interposer), and an address inside the interposer
//! itself is refused, so no call can loop back into our own exports.

use std::ffi::{CStr, CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::os::unix::Library;

use crate::codes::Flavor;

/// One real library, opened.
pub struct RealLib {
    lib: Library,
    /// The file it was opened from, as the loader reports it.
    pub path: String,
    /// How it was found, for `info` and messages.
    pub found_by: &'static str,
}

impl RealLib {
    /// The address of `name` in this library, if it has it and it is not one of ours.
    pub fn symbol(&self, name: &str) -> Option<usize> {
        let c = CString::new(name).ok()?;
        // SAFETY: `get` with a raw pointer type only reads the symbol's address.
        let p: *const c_void = unsafe { self.lib.get::<*const c_void>(c.as_bytes_with_nul()) }.ok().map(|s| *s)?;
        (!p.is_null() && !is_ours(p as usize)).then_some(p as usize)
    }
}

/// The libraries a kind of real library goes by.
pub struct Names {
    /// The override variable.
    pub var: &'static str,
    /// File-name prefix of the mapped object (`libcufft.so`).
    pub stem: &'static str,
    /// Prefixes that look like the stem but are other libraries (`libcufftw.so`).
    pub not: &'static [&'static str],
    /// Sonames to try through the loader, newest first.
    pub sonames: &'static [&'static str],
}

pub const CUFFT: Names = Names {
    var: "HIPFFT_POOL_CUFFT_LIB",
    stem: "libcufft.so",
    not: &["libcufftw.so"],
    sonames: &["libcufft.so.12", "libcufft.so.11", "libcufft.so"],
};

pub const CUDART: Names = Names {
    var: "HIPFFT_POOL_CUDART_LIB",
    stem: "libcudart.so",
    not: &[],
    sonames: &["libcudart.so.13", "libcudart.so.12", "libcudart.so"],
};

pub const HIPFFT: Names = Names {
    var: "HIPFFT_POOL_HIPFFT_LIB",
    stem: "libhipfft.so",
    not: &[],
    sonames: &["libhipfft.so.0", "libhipfft.so"],
};

/// Every object mapped into the process, by path (the main program has an empty name).
pub fn mapped_objects() -> Vec<PathBuf> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Vec` passed below, alive for the whole iteration, and
        // `info` is valid for this callback as dl_iterate_phdr documents.
        let (out, info) = unsafe { (&mut *(data as *mut Vec<PathBuf>), &*info) };
        if !info.dlpi_name.is_null() {
            // SAFETY: the loader's names are NUL-terminated strings it owns.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) };
            if !name.is_empty() {
                out.push(PathBuf::from(name.to_string_lossy().into_owned()));
            }
        }
        0
    }
    let mut out: Vec<PathBuf> = Vec::new();
    // SAFETY: the callback only reads the loader's records and pushes to `out`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<PathBuf> as *mut c_void) };
    out
}

/// The first mapped object whose file name starts with `names.stem` (and is not ours).
pub fn find_mapped(names: &Names) -> Option<PathBuf> {
    let own = own_path();
    mapped_objects().into_iter().find(|p| {
        let file = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
        file.starts_with(names.stem) && !names.not.iter().any(|n| file.starts_with(n)) && own.as_deref() != Some(p.as_path())
    })
}

/// Opens the real library `names` describes (see the module docs for the order).
pub fn open(names: &Names) -> Result<RealLib, String> {
    let own = own_path();
    let check = |lib: Library, path: String, found_by: &'static str| -> Result<RealLib, String> {
        let real = RealLib { lib, path, found_by };
        if own.as_deref().is_some_and(|o| Path::new(&real.path) == o) {
            return Err(format!("{} is the interposer itself, not the real library", real.path));
        }
        Ok(real)
    };
    if let Some(path) = std::env::var_os(names.var).filter(|v| !v.is_empty()) {
        // SAFETY: loading a library runs its initializers; the variable names the FFT
        // library the person wants, which is what would be loaded without the interposer.
        let lib = unsafe { Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_LOCAL) }
            .map_err(|e| format!("{}={}: {e}", names.var, path.to_string_lossy()))?;
        return check(lib, path.to_string_lossy().into_owned(), "override variable");
    }
    if let Some(path) = find_mapped(names) {
        // SAFETY: RTLD_NOLOAD only takes a reference on an object that is already mapped
        // (its initializers have run); nothing new is loaded.
        if let Ok(lib) = unsafe { Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_NOLOAD) } {
            return check(lib, path.to_string_lossy().into_owned(), "already loaded by the process");
        }
    }
    let mut tried = Vec::new();
    for soname in names.sonames {
        // SAFETY: as for the override: the library the process would load anyway.
        match unsafe { Library::open(Some(*soname), libc::RTLD_NOW | libc::RTLD_LOCAL) } {
            Ok(lib) => {
                let path = find_mapped(names).map_or_else(|| soname.to_string(), |p| p.to_string_lossy().into_owned());
                return check(lib, path, "the loader's search path");
            }
            Err(e) => tried.push(format!("{soname}: {e}")),
        }
    }
    Err(format!("no {} found ({}; set {} to its path)", names.stem, tried.join("; "), names.var))
}

/// The real FFT library of `flavor`, opened once per process.
pub fn fft_library(flavor: Flavor) -> Result<&'static RealLib, String> {
    static CUFFT_LIB: OnceLock<Result<RealLib, String>> = OnceLock::new();
    static HIPFFT_LIB: OnceLock<Result<RealLib, String>> = OnceLock::new();
    let (cell, names) = match flavor {
        Flavor::Cufft => (&CUFFT_LIB, &CUFFT),
        Flavor::Hipfft => (&HIPFFT_LIB, &HIPFFT),
    };
    cell.get_or_init(|| open(names)).as_ref().map_err(Clone::clone)
}

/// The real function `name` of `flavor`'s library, when that library can be had. On the
/// simulated runtime no real library is opened (none is needed, and none may be there).
pub fn symbol(flavor: Flavor, name: &str) -> Option<usize> {
    if crate::process::is_sim() {
        return None;
    }
    fft_library(flavor).ok()?.symbol(name)
}

/// The file the interposer itself was loaded from.
pub fn own_path() -> Option<PathBuf> {
    static OWN: OnceLock<Option<PathBuf>> = OnceLock::new();
    OWN.get_or_init(|| object_of(own_path as *const () as usize)).clone()
}

/// The mapped file holding `addr`.
fn object_of(addr: usize) -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only fills `info`; the name it returns belongs to the loader.
    let found = unsafe { libc::dladdr(addr as *const c_void, info.as_mut_ptr()) } != 0;
    // SAFETY: zeroed, then filled by dladdr on success.
    let info = unsafe { info.assume_init() };
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    std::fs::canonicalize(&name).ok().or(Some(PathBuf::from(name)))
}

/// Whether `addr` lies in the interposer's own object (a symbol that would loop back).
fn is_ours(addr: usize) -> bool {
    match (object_of(addr), own_path()) {
        (Some(a), Some(o)) => a == o,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_maps_libc_and_the_interposer_code_is_ours() {
        let objects = mapped_objects();
        assert!(objects.iter().any(|p| p.to_string_lossy().contains("libc.so")), "{objects:?}");
        let own = own_path().expect("dladdr finds this test binary");
        assert!(is_ours(is_ours as *const () as usize));
        assert!(!own.as_os_str().is_empty());
    }

    #[test]
    fn a_missing_library_names_the_variable() {
        let names = Names { var: "HFP_TEST_NO_SUCH_VAR", stem: "libnosuchfft.so", not: &[], sonames: &["libnosuchfft.so.9"] };
        let e = open(&names).err().expect("no such library");
        assert!(e.contains("HFP_TEST_NO_SUCH_VAR") && e.contains("libnosuchfft.so.9"), "{e}");
    }
}
