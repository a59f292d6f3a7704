//! One error type for the whole crate.
//!
//! Every variant carries what a person needs to act on it: the descriptor field and value that
//! were rejected, the library call and its code by name and number, or the live counts at the
//! moment the ceiling gave up. Errors are `Clone` because a failed single-flight creation hands
//! the same error to every waiter.
#![deny(missing_docs)]

use std::time::Duration;

use crate::desc::DescError;
pub use crate::runtime::codes::{Api, RuntimeCode, hipfft_result};

/// The crate's `Result`: every fallible call returns [`Error`].
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
    /// The ceiling: the most handles that may be alive at once.
    pub ceiling: usize,
}

/// Every failure of the crate, one variant per thing a caller can do about it (the C ABI
/// maps each to one `hfp_status`).
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The descriptor was rejected before any runtime call; the inner error names the field.
    #[error("invalid plan descriptor: {0}")]
    InvalidDesc(#[from] DescError),

    /// An argument of a call was wrong (a null pointer, a direction that does not fit the
    /// transform, a missing work area, ...).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name, as the call spells it.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// A configuration value was out of range or not a number.
    #[error("invalid configuration: `{field}` = {value}: {reason}")]
    InvalidConfig {
        /// The field (or environment variable) that was rejected.
        field: &'static str,
        /// Its value, as given.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// The FFT or GPU library returned an error status.
    #[error("{call} failed with {api} {code}", api = code.api)]
    Runtime {
        /// The library entry point that failed (`hipfftMakePlanMany64`, `cudaMalloc`, ...).
        call: &'static str,
        /// Its status, by name and number.
        code: RuntimeCode,
    },

    /// A miss waited the whole acquire timeout at the live ceiling.
    #[error("{}", timeout_message(*device, *waited, state, *joined_creation))]
    CeilingTimeout {
        /// The device the plan was for.
        device: i32,
        /// How long the miss waited.
        waited: Duration,
        /// The live counts when it gave up.
        state: CeilingState,
        /// The miss waited for a creation of this plan (its own, or another thread's) that had not
        /// finished), not for a free handle.
        joined_creation: bool,
    },

    /// Every slot of the live ceiling is held by a standing plan (a [`StandingLease`] is out
    /// on it: a graph that can still run it, a plan kept for the process's life), so a miss
    /// fails at once: no GPU work it could wait for would free a slot.
    ///
    /// [`StandingLease`]: crate::StandingLease
    #[error(
        "live-handle ceiling held: all {ceiling} live plans of device {device}'s ceiling are standing ({standing} held by \
         graphs that can still run them, or kept for the process's life), so no slot can come back by waiting; \
         this needs at least {needed} live plans: raise HIPFFT_POOL_LIVE_CEILING to {needed} or more, or let go of \
         the graphs that hold plans"
    )]
    CeilingHeld {
        /// The device the plan was for.
        device: i32,
        /// Plans standing on the ceiling.
        standing: usize,
        /// The ceiling.
        ceiling: usize,
        /// Live plans this miss needs to succeed: the standing ones and its own.
        needed: usize,
    },

    /// The pool was made before this process forked: a forked child cannot use it (its
    /// threads and its plans stayed with the parent); make a new pool in the child.
    #[error(
        "this pool was made in process {made_in}, before it forked; process {now} is a child of that fork and cannot use \
         it (the pool's threads, locks and plans stayed with the parent): make a new pool in the child (a CUDA or HIP \
         context initialized before the fork is not usable in the child either: the runtime's own rule)"
    )]
    Forked {
        /// The process that made the pool.
        made_in: u32,
        /// This process.
        now: u32,
    },

    /// A create or destroy on the device has not returned for longer than the acquire
    /// timeout: misses on that device fail at once until it returns.
    #[error(
        "device {device} is stuck: {call} for {desc} has been running for {running:.1?}; misses on this device fail at once until it returns \
         (hipfftDestroy can reach hipFree, which waits for all of the device's queued work; on ROCm check that \
         hipSetDeviceFlags ran before the device's first use)"
    )]
    DeviceStuck {
        /// The device.
        device: i32,
        /// The library call that has not returned.
        call: &'static str,
        /// The plan it was for.
        desc: String,
        /// How long it has been running.
        running: Duration,
    },

    /// The runtime asked for could not be loaded, or has no device; the message says
    /// what was tried.
    #[error("runtime unavailable: {0}")]
    Unavailable(String),

    /// The pool was shut down and serves nothing more.
    #[error("the pool is shut down")]
    ShutDown,

    /// A bug in hipfft-pool, or a library that broke its own contract.
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
            "acquire timed out: waited {waited:?} on device {device} for the creation of this plan \
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

/// The text of a caught panic (a `&str` or `String` payload), for the error or log line
/// that reports it.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
