//! The one table of result codes: `hipfftResult` (and cuFFT's `cufftResult`, numbered the
//! same), and `hipError_t` with the names hip_runtime_api.h gives them. Every runtime, the
//! simulated one included, reports codes from here, and [`crate::Error`] names them.

use std::ffi::CStr;
use std::fmt;

/// Which library produced a status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Api {
    /// hipFFT (`hipfftResult`). The simulated runtime reports these codes too.
    Hipfft,
    /// The HIP runtime (`hipError_t`).
    Hip,
    /// cuFFT (`cufftResult`, numbered like `hipfftResult`).
    Cufft,
    /// The CUDA runtime (`cudaError_t`).
    Cuda,
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Api::Hipfft => "hipFFT",
            Api::Hip => "HIP",
            Api::Cufft => "cuFFT",
            Api::Cuda => "CUDA",
        })
    }
}

/// A status code from an FFT or GPU runtime library, by name and number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RuntimeCode {
    /// Which library returned it.
    pub api: Api,
    /// The number the library returned.
    pub value: i32,
    /// Its name in the library's header (`HIPFFT_INVALID_PLAN`, `hipErrorNotReady`).
    pub name: &'static str,
}

impl fmt::Display for RuntimeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.value)
    }
}

/// `hipfftResult` values (hipfft.h). cuFFT's `cufftResult` uses the same numbers.
// The constants are the header's names without the `HIPFFT_` prefix: the header documents them.
#[allow(missing_docs)]
pub mod hipfft_result {
    pub const SUCCESS: i32 = 0;
    pub const INVALID_PLAN: i32 = 1;
    pub const ALLOC_FAILED: i32 = 2;
    pub const INVALID_TYPE: i32 = 3;
    pub const INVALID_VALUE: i32 = 4;
    pub const INTERNAL_ERROR: i32 = 5;
    pub const EXEC_FAILED: i32 = 6;
    pub const SETUP_FAILED: i32 = 7;
    pub const INVALID_SIZE: i32 = 8;
    pub const UNALIGNED_DATA: i32 = 9;
    pub const INCOMPLETE_PARAMETER_LIST: i32 = 10;
    pub const INVALID_DEVICE: i32 = 11;
    pub const PARSE_ERROR: i32 = 12;
    pub const NO_WORKSPACE: i32 = 13;
    pub const NOT_IMPLEMENTED: i32 = 14;
    pub const LICENSE_ERROR: i32 = 15;
    pub const NOT_SUPPORTED: i32 = 16;

    /// The enumerator's name, with the library prefix given (`HIPFFT_` or `CUFFT_`).
    pub fn name(value: i32, cufft: bool) -> &'static str {
        macro_rules! pick {
            ($h:literal, $c:literal) => {
                if cufft { $c } else { $h }
            };
        }
        match value {
            SUCCESS => pick!("HIPFFT_SUCCESS", "CUFFT_SUCCESS"),
            INVALID_PLAN => pick!("HIPFFT_INVALID_PLAN", "CUFFT_INVALID_PLAN"),
            ALLOC_FAILED => pick!("HIPFFT_ALLOC_FAILED", "CUFFT_ALLOC_FAILED"),
            INVALID_TYPE => pick!("HIPFFT_INVALID_TYPE", "CUFFT_INVALID_TYPE"),
            INVALID_VALUE => pick!("HIPFFT_INVALID_VALUE", "CUFFT_INVALID_VALUE"),
            INTERNAL_ERROR => pick!("HIPFFT_INTERNAL_ERROR", "CUFFT_INTERNAL_ERROR"),
            EXEC_FAILED => pick!("HIPFFT_EXEC_FAILED", "CUFFT_EXEC_FAILED"),
            SETUP_FAILED => pick!("HIPFFT_SETUP_FAILED", "CUFFT_SETUP_FAILED"),
            INVALID_SIZE => pick!("HIPFFT_INVALID_SIZE", "CUFFT_INVALID_SIZE"),
            UNALIGNED_DATA => pick!("HIPFFT_UNALIGNED_DATA", "CUFFT_UNALIGNED_DATA"),
            INCOMPLETE_PARAMETER_LIST => {
                pick!("HIPFFT_INCOMPLETE_PARAMETER_LIST", "CUFFT_INCOMPLETE_PARAMETER_LIST")
            }
            INVALID_DEVICE => pick!("HIPFFT_INVALID_DEVICE", "CUFFT_INVALID_DEVICE"),
            PARSE_ERROR => pick!("HIPFFT_PARSE_ERROR", "CUFFT_PARSE_ERROR"),
            NO_WORKSPACE => pick!("HIPFFT_NO_WORKSPACE", "CUFFT_NO_WORKSPACE"),
            NOT_IMPLEMENTED => pick!("HIPFFT_NOT_IMPLEMENTED", "CUFFT_NOT_IMPLEMENTED"),
            LICENSE_ERROR => pick!("HIPFFT_LICENSE_ERROR", "CUFFT_LICENSE_ERROR"),
            NOT_SUPPORTED => pick!("HIPFFT_NOT_SUPPORTED", "CUFFT_NOT_SUPPORTED"),
            _ => pick!("HIPFFT_UNKNOWN_RESULT", "CUFFT_UNKNOWN_RESULT"),
        }
    }
}

impl RuntimeCode {
    /// A `hipfftResult` (also what the simulated runtime reports).
    pub fn hipfft(value: i32) -> Self {
        RuntimeCode { api: Api::Hipfft, value, name: hipfft_result::name(value, false) }
    }
    /// A `cufftResult`.
    pub fn cufft(value: i32) -> Self {
        RuntimeCode { api: Api::Cufft, value, name: hipfft_result::name(value, true) }
    }
}

/// `hipError_t` values (hip_runtime_api.h), the ones this crate names.
// The constants carry the header's names: the header documents them.
#[allow(non_upper_case_globals, missing_docs)]
pub mod hip_error {
    pub const hipSuccess: i32 = 0;
    pub const hipErrorInvalidValue: i32 = 1;
    pub const hipErrorOutOfMemory: i32 = 2;
    pub const hipErrorNotInitialized: i32 = 3;
    pub const hipErrorDeinitialized: i32 = 4;
    pub const hipErrorInvalidConfiguration: i32 = 9;
    pub const hipErrorInvalidSymbol: i32 = 13;
    pub const hipErrorInvalidDevicePointer: i32 = 17;
    pub const hipErrorInvalidMemcpyDirection: i32 = 21;
    pub const hipErrorInsufficientDriver: i32 = 35;
    pub const hipErrorNoDevice: i32 = 100;
    pub const hipErrorInvalidDevice: i32 = 101;
    pub const hipErrorInvalidImage: i32 = 200;
    pub const hipErrorInvalidContext: i32 = 201;
    pub const hipErrorFileNotFound: i32 = 301;
    pub const hipErrorSharedObjectSymbolNotFound: i32 = 302;
    pub const hipErrorSharedObjectInitFailed: i32 = 303;
    pub const hipErrorOperatingSystem: i32 = 304;
    /// Also `hipErrorInvalidHandle`.
    pub const hipErrorInvalidResourceHandle: i32 = 400;
    pub const hipErrorNotFound: i32 = 500;
    pub const hipErrorNotReady: i32 = 600;
    pub const hipErrorIllegalAddress: i32 = 700;
    pub const hipErrorLaunchOutOfResources: i32 = 701;
    pub const hipErrorLaunchTimeOut: i32 = 702;
    pub const hipErrorContextIsDestroyed: i32 = 709;
    pub const hipErrorAssert: i32 = 710;
    pub const hipErrorLaunchFailure: i32 = 719;
    pub const hipErrorNotSupported: i32 = 801;
    pub const hipErrorStreamCaptureUnsupported: i32 = 900;
    pub const hipErrorStreamCaptureInvalidated: i32 = 901;
    pub const hipErrorIllegalState: i32 = 401;
    pub const hipErrorUnknown: i32 = 999;
    pub const hipErrorRuntimeMemory: i32 = 1052;
    pub const hipErrorRuntimeOther: i32 = 1053;
}

/// `hipError_t` names, confirmed against hip_runtime_api.h (deprecated aliases omitted:
/// 2 is also `hipErrorMemoryAllocation`, 3 `hipErrorInitializationError`, 205
/// `hipErrorMapBufferObjectFailed`, 400 `hipErrorInvalidHandle`).
const HIP_ERROR_NAMES: &[(i32, &CStr)] = &[
    (0, c"hipSuccess"),
    (1, c"hipErrorInvalidValue"),
    (2, c"hipErrorOutOfMemory"),
    (3, c"hipErrorNotInitialized"),
    (4, c"hipErrorDeinitialized"),
    (5, c"hipErrorProfilerDisabled"),
    (6, c"hipErrorProfilerNotInitialized"),
    (7, c"hipErrorProfilerAlreadyStarted"),
    (8, c"hipErrorProfilerAlreadyStopped"),
    (9, c"hipErrorInvalidConfiguration"),
    (12, c"hipErrorInvalidPitchValue"),
    (13, c"hipErrorInvalidSymbol"),
    (17, c"hipErrorInvalidDevicePointer"),
    (21, c"hipErrorInvalidMemcpyDirection"),
    (35, c"hipErrorInsufficientDriver"),
    (52, c"hipErrorMissingConfiguration"),
    (53, c"hipErrorPriorLaunchFailure"),
    (98, c"hipErrorInvalidDeviceFunction"),
    (100, c"hipErrorNoDevice"),
    (101, c"hipErrorInvalidDevice"),
    (200, c"hipErrorInvalidImage"),
    (201, c"hipErrorInvalidContext"),
    (202, c"hipErrorContextAlreadyCurrent"),
    (205, c"hipErrorMapFailed"),
    (206, c"hipErrorUnmapFailed"),
    (207, c"hipErrorArrayIsMapped"),
    (208, c"hipErrorAlreadyMapped"),
    (209, c"hipErrorNoBinaryForGpu"),
    (210, c"hipErrorAlreadyAcquired"),
    (211, c"hipErrorNotMapped"),
    (212, c"hipErrorNotMappedAsArray"),
    (213, c"hipErrorNotMappedAsPointer"),
    (214, c"hipErrorECCNotCorrectable"),
    (215, c"hipErrorUnsupportedLimit"),
    (216, c"hipErrorContextAlreadyInUse"),
    (217, c"hipErrorPeerAccessUnsupported"),
    (218, c"hipErrorInvalidKernelFile"),
    (219, c"hipErrorInvalidGraphicsContext"),
    (300, c"hipErrorInvalidSource"),
    (301, c"hipErrorFileNotFound"),
    (302, c"hipErrorSharedObjectSymbolNotFound"),
    (303, c"hipErrorSharedObjectInitFailed"),
    (304, c"hipErrorOperatingSystem"),
    (400, c"hipErrorInvalidResourceHandle"),
    (401, c"hipErrorIllegalState"),
    (500, c"hipErrorNotFound"),
    (600, c"hipErrorNotReady"),
    (700, c"hipErrorIllegalAddress"),
    (701, c"hipErrorLaunchOutOfResources"),
    (702, c"hipErrorLaunchTimeOut"),
    (704, c"hipErrorPeerAccessAlreadyEnabled"),
    (705, c"hipErrorPeerAccessNotEnabled"),
    (708, c"hipErrorSetOnActiveProcess"),
    (709, c"hipErrorContextIsDestroyed"),
    (710, c"hipErrorAssert"),
    (712, c"hipErrorHostMemoryAlreadyRegistered"),
    (713, c"hipErrorHostMemoryNotRegistered"),
    (719, c"hipErrorLaunchFailure"),
    (720, c"hipErrorCooperativeLaunchTooLarge"),
    (801, c"hipErrorNotSupported"),
    (900, c"hipErrorStreamCaptureUnsupported"),
    (901, c"hipErrorStreamCaptureInvalidated"),
    (902, c"hipErrorStreamCaptureMerge"),
    (903, c"hipErrorStreamCaptureUnmatched"),
    (904, c"hipErrorStreamCaptureUnjoined"),
    (905, c"hipErrorStreamCaptureIsolation"),
    (906, c"hipErrorStreamCaptureImplicit"),
    (907, c"hipErrorCapturedEvent"),
    (908, c"hipErrorStreamCaptureWrongThread"),
    (999, c"hipErrorUnknown"),
    (1052, c"hipErrorRuntimeMemory"),
    (1053, c"hipErrorRuntimeOther"),
];

/// The name used for a `hipError_t` this crate does not list.
pub const UNKNOWN_HIP_ERROR: &str = "hipErrorUnrecognized";

/// The enumerator name of a `hipError_t`, as a C string (what `hipGetErrorName` returns), or
/// `None` when the value is not one hip_runtime_api.h lists.
pub fn hip_error_cname(value: i32) -> Option<&'static CStr> {
    HIP_ERROR_NAMES.iter().find(|(v, _)| *v == value).map(|(_, n)| *n)
}

/// The enumerator name of a `hipError_t` ([`UNKNOWN_HIP_ERROR`] when unlisted).
pub fn hip_error_name(value: i32) -> &'static str {
    hip_error_cname(value).and_then(|n| n.to_str().ok()).unwrap_or(UNKNOWN_HIP_ERROR)
}

/// A `hipError_t` as a [`RuntimeCode`].
pub fn hip_code(value: i32) -> RuntimeCode {
    RuntimeCode { api: Api::Hip, value, name: hip_error_name(value) }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_error_names_by_number() {
        for (v, n) in [
            (0, "hipSuccess"),
            (1, "hipErrorInvalidValue"),
            (2, "hipErrorOutOfMemory"),
            (3, "hipErrorNotInitialized"),
            (4, "hipErrorDeinitialized"),
            (100, "hipErrorNoDevice"),
            (101, "hipErrorInvalidDevice"),
            (201, "hipErrorInvalidContext"),
            (400, "hipErrorInvalidResourceHandle"),
            (500, "hipErrorNotFound"),
            (600, "hipErrorNotReady"),
            (700, "hipErrorIllegalAddress"),
            (719, "hipErrorLaunchFailure"),
            (801, "hipErrorNotSupported"),
            (999, "hipErrorUnknown"),
        ] {
            assert_eq!(hip_error_name(v), n);
            assert_eq!(hip_code(v).value, v);
            assert_eq!(hip_code(v).api, Api::Hip);
        }
        assert_eq!(hip_error_name(12345), UNKNOWN_HIP_ERROR);
        assert!(HIP_ERROR_NAMES.windows(2).all(|w| w[0].0 < w[1].0), "table sorted, no duplicates");
    }

    #[test]
    fn the_sim_and_the_libraries_share_the_names() {
        assert_eq!(hip_error_name(hip_error::hipErrorNotReady), "hipErrorNotReady");
        assert_eq!(hipfft_result::name(hipfft_result::INVALID_SIZE, true), "CUFFT_INVALID_SIZE");
        assert_eq!(hipfft_result::name(hipfft_result::INVALID_SIZE, false), "HIPFFT_INVALID_SIZE");
    }
}
