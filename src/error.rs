//! One error type for the whole crate.
//!
//! Every variant carries what a person needs to act on it: the descriptor field and value that
//! were rejected, the library call and its code by name and number, or the live counts at the
//! moment the ceiling gave up. Errors are `Clone` because a failed single-flight creation hands
//! the same error to every waiter.

use std::fmt;
use std::time::Duration;

use crate::desc::DescError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

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
    pub api: Api,
    pub value: i32,
    pub name: &'static str,
}

impl fmt::Display for RuntimeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.value)
    }
}

/// `hipfftResult` values (hipfft.h). cuFFT's `cufftResult` uses the same numbers.
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

/// Live counts at the moment the ceiling gave up, so the error says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CeilingState {
    /// Handles alive process-wide (all pools sharing the ceiling).
    pub live: usize,
    /// Plans this pool holds in its cache.
    pub cached: usize,
    /// Leases of this pool not yet released (executions that may still be in flight).
    pub in_flight: usize,
    /// Evicted plans of this pool waiting for their last lease.
    pub retired: usize,
    pub ceiling: usize,
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid plan descriptor: {0}")]
    InvalidDesc(#[from] DescError),

    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument { name: &'static str, reason: String },

    #[error("invalid configuration: `{field}` = {value}: {reason}")]
    InvalidConfig { field: &'static str, value: String, reason: &'static str },

    #[error("{call} failed with {api} {code}", api = code.api)]
    Runtime { call: &'static str, code: RuntimeCode },

    #[error("{}", timeout_message(*device, *waited, state, *joined_creation))]
    CeilingTimeout {
        device: i32,
        waited: Duration,
        state: CeilingState,
        /// The miss waited for another thread's creation of the same plan (which had not
        /// finished), not for a free handle.
        joined_creation: bool,
    },

    #[error("runtime unavailable: {0}")]
    Unavailable(String),

    #[error("the pool is shut down")]
    ShutDown,

    #[error("internal error: {0}")]
    Internal(String),
}

fn timeout_message(device: i32, waited: Duration, s: &CeilingState, joined_creation: bool) -> String {
    let counts = format!(
        "{} live of ceiling {} ({} cached, {} leased, {} retired awaiting their last lease)",
        s.live, s.ceiling, s.cached, s.in_flight, s.retired
    );
    if joined_creation {
        format!(
            "acquire timed out: waited {waited:?} on device {device} for another thread's creation of the same plan \
             (its hipfftMakePlanMany64 had not returned; {counts}); the watchdog reports a creation that hangs; \
             if creations are only slow, raise HIPFFT_POOL_ACQUIRE_TIMEOUT_MS"
        )
    } else {
        format!(
            "live-handle ceiling reached: waited {waited:?} for a free handle on device {device}, {counts}; \
             release leases sooner, or raise HIPFFT_POOL_LIVE_CEILING"
        )
    }
}

impl Error {
    pub(crate) fn invalid_argument(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { name, reason: reason.into() }
    }
}
