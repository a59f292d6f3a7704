//! The status codes the sim returns, by the libraries' names and numbers, so the pool's error
//! handling is exercised with what hipFFT and HIP would really say.

use crate::desc::DescError;
use crate::error::Error;
use crate::runtime::codes::{hip_code, hipfft_result as fft, RuntimeCode};

/// A `hipfftResult` failure of `call`.
pub(crate) fn fft_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: RuntimeCode::hipfft(value) }
}

/// A `hipError_t` failure of `call`.
pub(crate) fn hip_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: hip_code(value) }
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
