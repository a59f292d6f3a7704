//! The status codes the sim returns, by the libraries' names and numbers, so the pool's error
//! handling is exercised with what hipFFT and HIP would really say.

use crate::desc::DescError;
use crate::error::{Api, Error, RuntimeCode, hipfft_result as fft};

/// `hipError_t` values the sim reports.
pub mod hip_error {
    pub const INVALID_VALUE: i32 = 1;
    pub const OUT_OF_MEMORY: i32 = 2;
    pub const INVALID_DEVICE: i32 = 101;
    pub const INVALID_RESOURCE_HANDLE: i32 = 400;
    pub const NOT_READY: i32 = 600;

    /// The enumerator's name.
    pub fn name(value: i32) -> &'static str {
        match value {
            INVALID_VALUE => "hipErrorInvalidValue",
            OUT_OF_MEMORY => "hipErrorOutOfMemory",
            INVALID_DEVICE => "hipErrorInvalidDevice",
            INVALID_RESOURCE_HANDLE => "hipErrorInvalidResourceHandle",
            NOT_READY => "hipErrorNotReady",
            _ => "hipErrorUnknown",
        }
    }
}

/// A `hipfftResult` failure of `call`.
pub(crate) fn fft_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: RuntimeCode::hipfft(value) }
}

/// A `hipError_t` failure of `call`.
pub(crate) fn hip_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: RuntimeCode { api: Api::Hip, value, name: hip_error::name(value) } }
}

/// What `hipfftMakePlanMany64` answers for a descriptor it cannot plan: sizes it cannot do
/// are `HIPFFT_INVALID_SIZE`, malformed arguments `HIPFFT_INVALID_VALUE`.
pub(crate) fn desc_code(e: &DescError) -> i32 {
    match e {
        DescError::UnknownTransform { .. } => fft::INVALID_TYPE,
        DescError::RankOutOfRange { .. }
        | DescError::NegativeDevice { .. }
        | DescError::EmbedTooSmall { .. }
        | DescError::OutputOverlap { .. } => fft::INVALID_VALUE,
        DescError::NotPositive { field, .. } if field.name == "n" || field.name == "batch" => fft::INVALID_SIZE,
        DescError::NotPositive { .. } => fft::INVALID_VALUE,
        DescError::Overflow { .. } => fft::INVALID_SIZE,
    }
}
