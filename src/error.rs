//! One error type for the whole crate.
//!
//! Every variant carries what a person needs to act on it: the descriptor field and value that
//! were rejected, the library call and its code by name and number, or the live counts at the
//! moment the ceiling gave up. Errors are `Clone` because a failed single-flight creation hands
//! the same error to every waiter.

use std::time::Duration;

use crate::desc::DescError;
pub use crate::runtime::codes::{Api, RuntimeCode, hipfft_result};

pub type Result<T, E = Error> = std::result::Result<T, E>;

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
