//! Hand-written bindings to exactly the hipFFT and HIP runtime entry points the pool uses,
//! with the AMD ABI, resolved once at load time through `libloading`.
//!
//! AMD ABI notes: `hipfftHandle` is `struct hipfftHandle_t*` (on NVIDIA it is an `int`; this
//! module is AMD only), `hipStream_t` is `struct ihipStream_t*`, `hipEvent_t` is
//! `struct ihipEvent_t*`, `hipDevice_t` is `int`, and `hipfftResult` / `hipError_t` /
//! `hipfftType` / `hipMemcpyKind` are C enums, passed as `int`. They are kept as `i32` here so
//! that a value the headers do not list is never undefined behaviour.
//!
//! Each library is one struct of plain function pointers. Resolving is all-or-nothing: a
//! missing symbol is reported together with every other missing one, and nothing is called
//! until all were found. The pointers stay valid because the libraries are never unloaded
//! (see `super::LoadedLibrary`).

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_longlong, c_uint, c_void};

/// `struct hipfftHandle_t` (opaque).
#[repr(C)]
pub struct hipfftHandle_t {
    _opaque: [u8; 0],
}
/// `typedef struct hipfftHandle_t* hipfftHandle;` (AMD).
pub type hipfftHandle = *mut hipfftHandle_t;

/// `struct ihipStream_t` (opaque).
#[repr(C)]
pub struct ihipStream_t {
    _opaque: [u8; 0],
}
/// `typedef struct ihipStream_t* hipStream_t;`
pub type hipStream_t = *mut ihipStream_t;

/// `struct ihipEvent_t` (opaque).
#[repr(C)]
pub struct ihipEvent_t {
    _opaque: [u8; 0],
}
/// `typedef struct ihipEvent_t* hipEvent_t;`
pub type hipEvent_t = *mut ihipEvent_t;

/// `hipfftResult` (C enum). Values: [`crate::error::hipfft_result`].
pub type hipfftResult = c_int;
/// `hipfftType` (C enum). Values: [`crate::desc::TransformType`].
pub type hipfftType = c_int;
/// `hipError_t` (C enum). Values: [`hip_error`].
pub type hipError_t = c_int;
/// `hipMemcpyKind` (C enum).
pub type hipMemcpyKind = c_int;
/// `typedef int hipDevice_t;` (AMD).
pub type hipDevice_t = c_int;

/// `float2` / `hipfftComplex`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct hipfftComplex {
    /// Real part.
    pub x: f32,
    /// Imaginary part.
    pub y: f32,
}
/// `double2` / `hipfftDoubleComplex`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct hipfftDoubleComplex {
    /// Real part.
    pub x: f64,
    /// Imaginary part.
    pub y: f64,
}
/// `hipfftReal`.
pub type hipfftReal = f32;
/// `hipfftDoubleReal`.
pub type hipfftDoubleReal = f64;

/// `#define HIPFFT_FORWARD -1`
pub const HIPFFT_FORWARD: c_int = -1;
/// `#define HIPFFT_BACKWARD 1`
pub const HIPFFT_BACKWARD: c_int = 1;

/// `hipMemcpyHostToHost`
pub const hipMemcpyHostToHost: hipMemcpyKind = 0;
/// `hipMemcpyHostToDevice`
pub const hipMemcpyHostToDevice: hipMemcpyKind = 1;
/// `hipMemcpyDeviceToHost`
pub const hipMemcpyDeviceToHost: hipMemcpyKind = 2;
/// `hipMemcpyDeviceToDevice`
pub const hipMemcpyDeviceToDevice: hipMemcpyKind = 3;
/// `hipMemcpyDefault`
pub const hipMemcpyDefault: hipMemcpyKind = 4;

/// `#define hipStreamNonBlocking 0x01`
pub const hipStreamNonBlocking: c_uint = 0x1;
/// `#define hipEventDisableTiming 0x2`
pub const hipEventDisableTiming: c_uint = 0x2;

pub use crate::runtime::codes::hip_error;

/// Declares a struct of function pointers and its all-or-nothing resolver.
macro_rules! library {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                pub $sym:ident : unsafe extern "C" fn($($arg:ty),* $(,)?) -> $ret:ty,
            )*
        }
        optional {
            $(
                $(#[doc = $odoc:literal])*
                pub $osym:ident : unsafe extern "C" fn($($oarg:ty),* $(,)?) -> $oret:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                pub $sym: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
            $(
                $(#[doc = $odoc])*
                pub $osym: Option<unsafe extern "C" fn($($oarg),*) -> $oret>,
            )*
        }

        impl $name {
            /// Every required symbol, in declaration order.
            pub const REQUIRED: &'static [&'static str] = &[$(stringify!($sym)),*];

            /// Resolves every symbol. On failure, returns the names of all missing required
            /// symbols.
            ///
            /// # Safety
            /// `lib` must be the library these signatures describe, and must outlive every
            /// use of the returned pointers.
            pub unsafe fn resolve(lib: &libloading::Library) -> Result<Self, Vec<&'static str>> {
                let mut missing: Vec<&'static str> = Vec::new();
                $(
                    // SAFETY: the caller promised `lib` is the library of these signatures.
                    let $sym = match unsafe {
                        lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($sym), "\0").as_bytes())
                    } {
                        Ok(s) => Some(*s),
                        Err(_) => {
                            missing.push(stringify!($sym));
                            None
                        }
                    };
                )*
                $(
                    // SAFETY: as above.
                    let $osym = unsafe {
                        lib.get::<unsafe extern "C" fn($($oarg),*) -> $oret>(concat!(stringify!($osym), "\0").as_bytes())
                    }
                    .ok()
                    .map(|s| *s);
                )*
                if !missing.is_empty() {
                    return Err(missing);
                }
                Ok($name {
                    $($sym: $sym.unwrap(),)*
                    $($osym,)*
                })
            }

            /// Every entry point a stub that returns 0 (success) and touches nothing;
            /// optional ones absent. Tests replace the fields they exercise.
            #[cfg(test)]
            pub(crate) fn stubbed() -> Self {
                $(
                    #[allow(unused_variables)]
                    unsafe extern "C" fn $sym($(_: $arg),*) -> $ret {
                        Default::default()
                    }
                )*
                $name {
                    $($sym,)*
                    $($osym: None,)*
                }
            }
        }
    };
}

library! {
    /// libhipfft.so: the hipFFT entry points the pool calls.
    pub struct HipfftLib {
        /// `hipfftResult hipfftCreate(hipfftHandle* plan);`
        pub hipfftCreate: unsafe extern "C" fn(*mut hipfftHandle) -> hipfftResult,
        /// `hipfftResult hipfftDestroy(hipfftHandle plan);`
        pub hipfftDestroy: unsafe extern "C" fn(hipfftHandle) -> hipfftResult,
        /// `hipfftResult hipfftSetAutoAllocation(hipfftHandle plan, int autoAllocate);`
        pub hipfftSetAutoAllocation: unsafe extern "C" fn(hipfftHandle, c_int) -> hipfftResult,
        /// `hipfftResult hipfftMakePlanMany64(hipfftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, long long int* onembed, long long int ostride, long long int odist, hipfftType type, long long int batch, size_t* workSize);`
        pub hipfftMakePlanMany64: unsafe extern "C" fn(
            hipfftHandle,
            c_int,
            *mut c_longlong,
            *mut c_longlong,
            c_longlong,
            c_longlong,
            *mut c_longlong,
            c_longlong,
            c_longlong,
            hipfftType,
            c_longlong,
            *mut usize,
        ) -> hipfftResult,
        /// `hipfftResult hipfftSetStream(hipfftHandle plan, hipStream_t stream);`
        pub hipfftSetStream: unsafe extern "C" fn(hipfftHandle, hipStream_t) -> hipfftResult,
        /// `hipfftResult hipfftSetWorkArea(hipfftHandle plan, void* workArea);`
        pub hipfftSetWorkArea: unsafe extern "C" fn(hipfftHandle, *mut c_void) -> hipfftResult,
        /// `hipfftResult hipfftExecC2C(hipfftHandle plan, hipfftComplex* idata, hipfftComplex* odata, int direction);`
        pub hipfftExecC2C: unsafe extern "C" fn(hipfftHandle, *mut hipfftComplex, *mut hipfftComplex, c_int) -> hipfftResult,
        /// `hipfftResult hipfftExecR2C(hipfftHandle plan, hipfftReal* idata, hipfftComplex* odata);`
        pub hipfftExecR2C: unsafe extern "C" fn(hipfftHandle, *mut hipfftReal, *mut hipfftComplex) -> hipfftResult,
        /// `hipfftResult hipfftExecC2R(hipfftHandle plan, hipfftComplex* idata, hipfftReal* odata);`
        pub hipfftExecC2R: unsafe extern "C" fn(hipfftHandle, *mut hipfftComplex, *mut hipfftReal) -> hipfftResult,
        /// `hipfftResult hipfftExecZ2Z(hipfftHandle plan, hipfftDoubleComplex* idata, hipfftDoubleComplex* odata, int direction);`
        pub hipfftExecZ2Z: unsafe extern "C" fn(hipfftHandle, *mut hipfftDoubleComplex, *mut hipfftDoubleComplex, c_int) -> hipfftResult,
        /// `hipfftResult hipfftExecD2Z(hipfftHandle plan, hipfftDoubleReal* idata, hipfftDoubleComplex* odata);`
        pub hipfftExecD2Z: unsafe extern "C" fn(hipfftHandle, *mut hipfftDoubleReal, *mut hipfftDoubleComplex) -> hipfftResult,
        /// `hipfftResult hipfftExecZ2D(hipfftHandle plan, hipfftDoubleComplex* idata, hipfftDoubleReal* odata);`
        pub hipfftExecZ2D: unsafe extern "C" fn(hipfftHandle, *mut hipfftDoubleComplex, *mut hipfftDoubleReal) -> hipfftResult,
        /// `hipfftResult hipfftGetVersion(int* version);`
        pub hipfftGetVersion: unsafe extern "C" fn(*mut c_int) -> hipfftResult,
    }
    optional {}
}

library! {
    /// libamdhip64.so: the HIP runtime entry points the pool calls.
    pub struct HipLib {
        /// `hipError_t hipGetDeviceCount(int* count);`
        pub hipGetDeviceCount: unsafe extern "C" fn(*mut c_int) -> hipError_t,
        /// `hipError_t hipGetDevice(int* deviceId);`
        pub hipGetDevice: unsafe extern "C" fn(*mut c_int) -> hipError_t,
        /// `hipError_t hipSetDevice(int deviceId);`
        pub hipSetDevice: unsafe extern "C" fn(c_int) -> hipError_t,
        /// `hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device);`
        pub hipDeviceGetName: unsafe extern "C" fn(*mut c_char, c_int, hipDevice_t) -> hipError_t,
        /// `hipError_t hipRuntimeGetVersion(int* runtimeVersion);`
        pub hipRuntimeGetVersion: unsafe extern "C" fn(*mut c_int) -> hipError_t,
        /// `hipError_t hipDriverGetVersion(int* driverVersion);`
        pub hipDriverGetVersion: unsafe extern "C" fn(*mut c_int) -> hipError_t,
        /// `hipError_t hipMalloc(void** ptr, size_t size);`
        pub hipMalloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> hipError_t,
        /// `hipError_t hipFree(void* ptr);`
        pub hipFree: unsafe extern "C" fn(*mut c_void) -> hipError_t,
        /// `hipError_t hipMemcpy(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind);`
        pub hipMemcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, hipMemcpyKind) -> hipError_t,
        /// `hipError_t hipMemcpyAsync(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind, hipStream_t stream);`
        pub hipMemcpyAsync: unsafe extern "C" fn(*mut c_void, *const c_void, usize, hipMemcpyKind, hipStream_t) -> hipError_t,
        /// `hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);`
        pub hipStreamCreateWithFlags: unsafe extern "C" fn(*mut hipStream_t, c_uint) -> hipError_t,
        /// `hipError_t hipStreamSynchronize(hipStream_t stream);`
        pub hipStreamSynchronize: unsafe extern "C" fn(hipStream_t) -> hipError_t,
        /// `hipError_t hipStreamDestroy(hipStream_t stream);`
        pub hipStreamDestroy: unsafe extern "C" fn(hipStream_t) -> hipError_t,
        /// `hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags);`
        pub hipEventCreateWithFlags: unsafe extern "C" fn(*mut hipEvent_t, c_uint) -> hipError_t,
        /// `hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);`
        pub hipEventRecord: unsafe extern "C" fn(hipEvent_t, hipStream_t) -> hipError_t,
        /// `hipError_t hipEventQuery(hipEvent_t event);`
        pub hipEventQuery: unsafe extern "C" fn(hipEvent_t) -> hipError_t,
        /// `hipError_t hipEventSynchronize(hipEvent_t event);`
        pub hipEventSynchronize: unsafe extern "C" fn(hipEvent_t) -> hipError_t,
        /// `hipError_t hipEventDestroy(hipEvent_t event);`
        pub hipEventDestroy: unsafe extern "C" fn(hipEvent_t) -> hipError_t,
    }
    optional {
        /// `const char* hipGetErrorName(hipError_t hip_error);` (only for codes this crate does not name)
        pub hipGetErrorName: unsafe extern "C" fn(hipError_t) -> *const c_char,
        /// `hipError_t hipGetDeviceFlags(unsigned int* flags);`
        pub hipGetDeviceFlags: unsafe extern "C" fn(*mut c_uint) -> hipError_t,
        /// `hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus* pCaptureStatus);`
        pub hipStreamIsCapturing: unsafe extern "C" fn(hipStream_t, *mut c_int) -> hipError_t,
        /// `hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* userData);`
        pub hipLaunchHostFunc: unsafe extern "C" fn(hipStream_t, unsafe extern "C" fn(*mut c_void), *mut c_void) -> hipError_t,
        /// `hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode* mode);`
        pub hipThreadExchangeStreamCaptureMode: unsafe extern "C" fn(*mut c_int) -> hipError_t,
    }
}
