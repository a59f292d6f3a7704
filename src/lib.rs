//! hipfft-pool: a plan pool that owns hipFFT handles.
//!
//! It bounds the handles that are *alive*, not only those it holds: a process-wide
//! [`LiveCeiling`] counts cached plans, evicted plans still in flight and plans being made;
//! evicted plans are destroyed explicitly, off the hot path and never under a lock; every
//! execution holds a [`Lease`] that is counted until the GPU completes it.
//!
//! The crate is layered; each folder's `mod.rs` opens with an index of its files, and a
//! layer calls only the layers below it:
//!
//! | layer | what it owns |
//! |---|---|
//! | [`ffi`] | the C ABI (`include/hipfft_pool.h`): a panic boundary on every entry point |
//! | [`pool`] | the cache, leases, the live ceiling, completion, single flight, configuration |
//! | [`observe`] | counters, histograms, the watchdog, exports, the metrics server |
//! | [`runtime`] | the `Runtime` trait and its implementations (sim, HIP, CUDA), selection |
//! | [`desc`], [`error`] | the transform descriptor, the one error type |
//!
//! `check` (feature `check`) holds the tools that tests and the command-line tool use: a
//! reference FFT, correctness cases, device buffers, the probe, an audited runtime.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod error;
pub mod ffi;
pub mod observe;
pub mod pool;
pub mod runtime;
mod sync;

#[cfg(feature = "check")]
pub mod check;

pub use desc::{DescError, Direction, Extents, Field, Layout, PlanDesc, TransformType};
pub use error::{Api, CeilingState, Error, Result, RuntimeCode};
pub use observe::counters::MetricsSnapshot;
pub use observe::histogram::{BUCKETS_S, HistogramSnapshot};
pub use observe::serve::MetricsServer;
pub use observe::watchdog::{CallKind, StalledCall};
pub use pool::ceiling::LiveCeiling;
pub use pool::config::{CeilingScope, PoolConfig, PoolConfigBuilder};
pub use pool::batch::BATCH_LIMIT;
pub use pool::lease::{ExecLines, Lease, ReleaseAfterError, StandingLease};
pub use pool::eviction::Eviction;
pub use pool::manifest;
pub use pool::plan_pool::{CachedPlan, FlushHook, PlanPool, ShutdownReport, WarmUpReport};
pub use runtime::decorator::Decorator;
pub use runtime::select::RuntimeChoice;
pub use runtime::sim::{SimConfig, SimRuntime};
pub use sync::fork::{generation as fork_generation, install as track_forks, lock_around_fork};
pub use sync::thread_end::ThreadEnd;
pub use runtime::{
    CreatedPlan, DevicePtr, HostCall, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo, RuntimeKind,
};

/// The README's Rust example, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
