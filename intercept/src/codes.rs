//! Which API an interposer speaks, its result codes, and how a pool error becomes one.
//!
//! `cufftResult` and `hipfftResult` share their numbers (cufft.h, hipfft.h), so the codes are
//! one table; only the names differ (`CUFFT_` or `HIPFFT_`).

use hipfft_pool::{Api, DescError, Error};

pub use hipfft_pool::error::hipfft_result as code;

/// The API an interposer library exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `libhipfft_pool_cufft.so`: cuFFT's plan API, `cufftHandle` is an `int`.
    Cufft,
    /// `libhipfft_pool_hipfft.so`: hipFFT's plan API, `hipfftHandle` is a pointer.
    Hipfft,
}

impl Flavor {
    /// The library's name, for messages.
    pub fn library(self) -> &'static str {
        match self {
            Flavor::Cufft => "cuFFT",
            Flavor::Hipfft => "hipFFT",
        }
    }

    /// The enumerator name of a result code (`CUFFT_INVALID_PLAN`, `HIPFFT_INVALID_PLAN`).
    pub fn code_name(self, value: i32) -> &'static str {
        code::name(value, self == Flavor::Cufft)
    }
}

/// A failed call: the library's result code and the message logged for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    pub code: i32,
    pub message: String,
}

impl Fail {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Fail { code, message: message.into() }
    }

    /// `INVALID_VALUE` naming the argument and the value that was refused.
    pub fn invalid(argument: &str, why: impl std::fmt::Display) -> Self {
        Fail::new(code::INVALID_VALUE, format!("invalid argument `{argument}`: {why}"))
    }

    /// `NOT_SUPPORTED` naming the call that the interposer cannot serve from the pool.
    pub fn not_supported(call: &str, why: &str) -> Self {
        Fail::new(code::NOT_SUPPORTED, format!("{call} is not supported by the hipfft-pool interposer: {why}"))
    }

    /// The library's code for a pool error, keeping the pool's message.
    pub fn from_pool(e: &Error) -> Self {
        let value = match e {
            Error::InvalidDesc(d) => match d {
                DescError::UnknownTransform { .. } => code::INVALID_TYPE,
                DescError::NotPositive { .. } | DescError::Overflow { .. } | DescError::RankOutOfRange { .. } => {
                    code::INVALID_SIZE
                }
                DescError::NegativeDevice { .. } => code::INVALID_DEVICE,
                DescError::EmbedTooSmall { .. } | DescError::OutputOverlap { .. } => code::INVALID_VALUE,
            },
            Error::InvalidArgument { .. } | Error::InvalidConfig { .. } => code::INVALID_VALUE,
            // The FFT library's own code passes through unchanged; a GPU runtime's failure is
            // the closest FFT code (an allocation, else an execution).
            Error::Runtime { call, code: c } => match c.api {
                Api::Cufft | Api::Hipfft => c.value,
                Api::Cuda | Api::Hip if call.contains("alloc") || call.contains("Malloc") => code::ALLOC_FAILED,
                Api::Cuda | Api::Hip => code::EXEC_FAILED,
            },
            // No handle could be had within the timeout: what cuFFT says when it cannot get
            // the resources for a plan.
            Error::CeilingTimeout { .. } | Error::CeilingHeld { .. } => code::ALLOC_FAILED,
            Error::Unavailable(_) => code::SETUP_FAILED,
            // A call on the device has not returned: no plan can be had there.
            Error::DeviceStuck { .. } => code::ALLOC_FAILED,
            Error::ShutDown | Error::Internal(_) | Error::Forked { .. } => code::INTERNAL_ERROR,
        };
        let mut message = e.to_string();
        if let Error::CeilingHeld { .. } = e {
            // Under the interposer the holders are a framework's graphs.
            message.push_str(
                " (a framework that keeps instantiated graphs holds the plans they captured for as long as it keeps them: \
                 MLX_CUDA_GRAPH_CACHE_SIZE bounds how many MLX keeps, MLX_MAX_OPS_PER_BUFFER how many plans one of its \
                 graphs needs; HIPFFT_POOL_CAPTURE_RESIDENTS plans are kept for good besides)",
            );
        }
        Fail::new(value, message)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::from_pool(&e)
    }
}

impl From<DescError> for Fail {
    fn from(e: DescError) -> Self {
        Fail::from_pool(&Error::from(e))
    }
}

/// `cudaDataType` / `hipDataType` values the Xt calls take (library_types.h, hip's
/// library_types.h: the same numbers).
pub mod data_type {
    pub const R_32F: i32 = 0;
    pub const R_64F: i32 = 1;
    pub const R_16F: i32 = 2;
    pub const C_32F: i32 = 4;
    pub const C_64F: i32 = 5;
    pub const C_16F: i32 = 6;
    pub const R_16BF: i32 = 14;
    pub const C_16BF: i32 = 15;
}

/// The transform an Xt plan's (input, output, execution) types name, if the pool serves it.
pub fn xt_transform(input: i32, output: i32, execution: i32) -> Result<hipfft_pool::TransformType, Fail> {
    use data_type::*;
    use hipfft_pool::TransformType as T;
    let t = match (input, output, execution) {
        (R_32F, C_32F, R_32F | C_32F) => T::R2C,
        (C_32F, R_32F, C_32F | R_32F) => T::C2R,
        (C_32F, C_32F, C_32F) => T::C2C,
        (R_64F, C_64F, R_64F | C_64F) => T::D2Z,
        (C_64F, R_64F, C_64F | R_64F) => T::Z2D,
        (C_64F, C_64F, C_64F) => T::Z2Z,
        (R_16F | C_16F | R_16BF | C_16BF, _, _) | (_, R_16F | C_16F | R_16BF | C_16BF, _) => {
            return Err(Fail::not_supported(
                "an Xt plan in half or bfloat16 precision",
                &format!("inputtype {input}, outputtype {output}, executiontype {execution}: the pool's plans are single or double precision"),
            ));
        }
        _ => {
            return Err(Fail::new(
                code::INVALID_TYPE,
                format!("invalid argument `inputtype`/`outputtype`/`executiontype`: {input}/{output}/{execution} is no transform"),
            ));
        }
    };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hipfft_pool::TransformType as T;

    #[test]
    fn xt_types_map_onto_the_six_transforms() {
        use data_type::*;
        assert_eq!(xt_transform(R_32F, C_32F, R_32F), Ok(T::R2C));
        assert_eq!(xt_transform(C_32F, R_32F, C_32F), Ok(T::C2R));
        assert_eq!(xt_transform(C_32F, C_32F, C_32F), Ok(T::C2C));
        assert_eq!(xt_transform(R_64F, C_64F, R_64F), Ok(T::D2Z));
        assert_eq!(xt_transform(C_64F, R_64F, C_64F), Ok(T::Z2D));
        assert_eq!(xt_transform(C_64F, C_64F, C_64F), Ok(T::Z2Z));
        assert_eq!(xt_transform(R_16F, C_16F, R_16F).unwrap_err().code, code::NOT_SUPPORTED);
        assert_eq!(xt_transform(R_32F, R_32F, R_32F).unwrap_err().code, code::INVALID_TYPE);
    }

    #[test]
    fn pool_errors_become_library_codes() {
        let zero = DescError::NotPositive { field: hipfft_pool::Field::at("n", 0), value: 0 };
        let f = Fail::from(zero);
        assert_eq!(f.code, code::INVALID_SIZE);
        assert!(f.message.contains("n[0]") && f.message.contains('0'), "{}", f.message);
        assert_eq!(Fail::from(Error::Unavailable("x".into())).code, code::SETUP_FAILED);
        assert_eq!(Flavor::Cufft.code_name(13), "CUFFT_NO_WORKSPACE");
        assert_eq!(Flavor::Hipfft.code_name(1), "HIPFFT_INVALID_PLAN");
    }
}
