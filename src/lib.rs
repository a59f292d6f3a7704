//! hipfft-pool: a plan pool that owns hipFFT handles.
//!
//! It bounds the handles that are *alive*, not only those it holds: a process-wide
//! [`LiveCeiling`] counts cached plans, evicted plans still in flight and plans being made;
//! evicted plans are destroyed explicitly, off the hot path and never under a lock; every
//! execution holds a [`Lease`] that is counted until the GPU completes it.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod desc;
pub mod error;
pub mod hip;
pub mod reference;
pub mod runtime;
pub mod decorator;
pub mod sim;

pub use desc::{DescError, Direction, Extents, Field, Layout, PlanDesc, TransformType};
pub use error::{Api, CeilingState, Error, Result, RuntimeCode};
pub use decorator::Decorator;
pub use runtime::{CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Runtime, RuntimeInfo, RuntimeKind};

pub mod ceiling;
mod clock;
mod completion;
pub mod config;
mod entry;
mod flight;
mod lease;
mod lease_state;
pub mod metrics;
mod pool;
mod sync;
mod histogram;
pub mod watchdog;
pub use histogram::{BUCKETS_S, HistogramSnapshot};
pub use watchdog::{CallKind, StalledCall};

pub use ceiling::LiveCeiling;
pub use config::{CeilingScope, PoolConfig, PoolConfigBuilder, RuntimeChoice};
pub use lease::{Lease, ReleaseAfterError};
pub use metrics::MetricsSnapshot;
pub use pool::{CachedPlan, FlushHook, PlanPool, ShutdownReport};
pub mod buffer;
pub mod probe;
pub mod select;
pub mod export;
pub mod ffi;
pub mod correctness;
pub mod audit;
pub mod serve;

/// Model checking of the concurrency core under loom (`RUSTFLAGS="--cfg loom"`).
#[cfg(all(test, loom))]
mod loom_tests;

/// The exhaustive interleaving explorer of the lease hand-off (plain `cargo test`).
#[cfg(all(test, not(loom)))]
mod explore_tests;
