//! The interposers' `dlsym`: a program that finds a library's functions by name on a handle
//! of its own (`dlopen` + `dlsym`) is served the interposer's function of that name, as a
//! program linked to the library is under `LD_PRELOAD`.
//!
//! Two kinds of caller need it. The CUDA runtime, linked statically into a framework (libmlx)
//! or not, opens libcuda with `dlopen` and takes `cuGetProcAddress` from it with `dlsym`: every
//! driver call it makes (graph calls included) then goes through function pointers that no
//! preload would see. And XLA (JAX, TensorFlow) opens libcufft itself and takes every cuFFT
//! call with `dlsym`. So when a `dlsym` on an explicit handle finds a function in one of the
//! libraries this interposer stands in for (`STAND_INS`: libcuda and libcufft, or libamdhip64
//! and libhipfft), and the interposer exports a function of that very name, the caller gets
//! the interposer's.
//!
//! `dlsym` with `RTLD_DEFAULT` or `RTLD_NEXT` must search relative to its caller, which glibc
//! finds from the return address: those calls jump straight to the real `dlsym` with the
//! caller's return address still on the stack (the entry point is a few instructions of
//! assembly, [`crate::dlsym_hook!`]), so their meaning is unchanged. Calls from inside the
//! interposer itself always get the real function.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The real `dlsym`, once found (the assembly entry reads it; 0 until then).
#[unsafe(no_mangle)]
pub static HFP_REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// Finds the real `dlsym` (glibc's, by version: never ours) and returns it.
#[unsafe(no_mangle)]
pub extern "C" fn hfp_dlsym_init() -> usize {
    let now = HFP_REAL_DLSYM.load(Ordering::Acquire);
    if now != 0 {
        return now;
    }
    let mut found = 0usize;
    for version in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17", c"GLIBC_2.0"] {
        // SAFETY: dlvsym with RTLD_NEXT and NUL-terminated strings; it is not interposed.
        let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
        if !p.is_null() {
            found = p as usize;
            break;
        }
    }
    HFP_REAL_DLSYM.store(found, Ordering::Release);
    found
}

/// The real `dlsym`.
pub fn real() -> Option<DlsymFn> {
    let p = match HFP_REAL_DLSYM.load(Ordering::Acquire) {
        0 => hfp_dlsym_init(),
        p => p,
    };
    // SAFETY: glibc's dlsym, of this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, DlsymFn>(p) })
}

/// `dlsym(handle, name)` through the real function: what the interposer's own lookups use.
///
/// # Safety
/// `handle` is a handle from `dlopen` (or a special handle) and `name` a C string.
pub unsafe fn lookup(handle: *mut c_void, name: &CStr) -> *mut c_void {
    match real() {
        // SAFETY: the caller's contract.
        Some(f) => unsafe { f(handle, name.as_ptr()) },
        None => std::ptr::null_mut(),
    }
}

/// The load address of the object holding `addr`, and its file name.
fn object_of(addr: *const c_void) -> Option<(usize, &'static CStr)> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only fills `info`.
    if unsafe { libc::dladdr(addr, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: zeroed, then filled by dladdr.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string the loader owns while the object is mapped (the
    // libraries compared here are never unloaded while in use).
    Some((info.dli_fbase as usize, unsafe { CStr::from_ptr(info.dli_fname) }))
}

/// This interposer's load address.
fn own_base() -> usize {
    static BASE: OnceLock<usize> = OnceLock::new();
    *BASE.get_or_init(|| object_of(own_base as *const c_void).map_or(0, |(b, _)| b))
}

/// Whether `addr` lies in this interposer.
pub fn is_own(addr: *const c_void) -> bool {
    object_of(addr).is_some_and(|(b, _)| b == own_base())
}

/// A handle on this interposer, to find its exports by name.
fn own_handle() -> *mut c_void {
    static OWN: OnceLock<usize> = OnceLock::new();
    *OWN.get_or_init(|| {
        let Some((_, path)) = object_of(own_handle as *const c_void) else { return 0 };
        // SAFETY: RTLD_NOLOAD on the object this code runs from: a reference, nothing loaded.
        unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) as usize }
    }) as *mut c_void
}

/// This interposer's exported function `name`, if it has one.
pub fn own_export(name: &CStr) -> Option<*mut c_void> {
    let h = own_handle();
    if h.is_null() {
        return None;
    }
    // SAFETY: our own handle and a C string.
    let p = unsafe { lookup(h, name) };
    (!p.is_null() && object_of(p).is_some_and(|(b, _)| b == own_base())).then_some(p)
}

/// File-name prefixes of the libraries whose functions this interposer serves instead, set
/// by the library's flavor (`Flavor::stand_ins`).
static STAND_INS: OnceLock<&'static [&'static str]> = OnceLock::new();

/// Sets which libraries' functions [`explicit`] replaces (once, by the exporting library).
pub fn stand_in_for(prefixes: &'static [&'static str]) {
    let _ = STAND_INS.set(prefixes);
}

/// What `dlsym(handle, name)` on an explicit handle returns (the assembly entry's target).
///
/// # Safety
/// As for `dlsym`: `handle` from `dlopen`, `name` a C string; `caller` is the return
/// address of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hfp_dlsym_explicit(handle: *mut c_void, name: *const c_char, caller: *const c_void) -> *mut c_void {
    let Some(real) = real() else { return std::ptr::null_mut() };
    // SAFETY: the caller's arguments, passed on.
    let found = unsafe { real(handle, name) };
    if found.is_null() || name.is_null() {
        return found;
    }
    // Never unwind into the caller; any trouble leaves the real function.
    std::panic::catch_unwind(|| {
        // SAFETY: `name` is the caller's C string.
        unsafe { substitute(CStr::from_ptr(name), found, caller) }
    })
    .unwrap_or(found)
}

/// `found` (the real `name`), or this interposer's function of that name when `found` lies
/// in a library it stands in for and the caller is not the interposer itself.
///
/// # Safety
/// `found` is an address `dlsym` returned.
unsafe fn substitute(name: &CStr, found: *mut c_void, caller: *const c_void) -> *mut c_void {
    let bytes = name.to_bytes();
    // Most lookups (Python's extension modules, every library's own) end here.
    if !(bytes.starts_with(b"cu") || bytes.starts_with(b"hip")) {
        return found;
    }
    let Some(prefixes) = STAND_INS.get() else { return found };
    let own = own_base();
    if object_of(caller).is_some_and(|(b, _)| b == own) {
        return found;
    }
    let Some((base, file)) = object_of(found) else { return found };
    if base == own {
        return found;
    }
    let file = file.to_bytes();
    let file = file.rsplit(|c| *c == b'/').next().unwrap_or(file);
    if !prefixes.iter().any(|p| file.starts_with(p.as_bytes())) {
        return found;
    }
    let Some(ours) = own_export(name) else { return found };
    crate::graphs::hooks::note_real(name, found);
    ours
}

/// Defines the interposer's `dlsym` in the calling (cdylib) crate: a few instructions that
/// send `RTLD_DEFAULT` and `RTLD_NEXT` lookups straight to the real `dlsym` with the caller's
/// return address still in place, and explicit handles to [`hfp_dlsym_explicit`].
#[macro_export]
macro_rules! dlsym_hook {
    () => {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        ::std::arch::global_asm!(
            ".globl dlsym",
            ".type dlsym,@function",
            "dlsym:",
            // RTLD_NEXT is (void *)-1, RTLD_DEFAULT 0: their meaning depends on the caller.
            "    cmp rdi, -1",
            "    je 2f",
            "    test rdi, rdi",
            "    je 2f",
            // Explicit handle: the return address is the caller, passed as the third argument.
            "    mov rdx, [rsp]",
            "    jmp {explicit}",
            "2:",
            "    mov rax, [rip + {real}]",
            "    test rax, rax",
            "    jz 3f",
            "    jmp rax",
            "3:",
            // The real dlsym is not known yet: find it, keeping the arguments.
            "    push rdi",
            "    push rsi",
            "    sub rsp, 8",
            "    call {init}",
            "    add rsp, 8",
            "    pop rsi",
            "    pop rdi",
            "    test rax, rax",
            "    jz 4f",
            "    jmp rax",
            "4:",
            "    xor eax, eax",
            "    ret",
            ".size dlsym, .-dlsym",
            explicit = sym $crate::dlsym::hfp_dlsym_explicit,
            real = sym $crate::dlsym::HFP_REAL_DLSYM,
            init = sym $crate::dlsym::hfp_dlsym_init,
        );
    };
}
