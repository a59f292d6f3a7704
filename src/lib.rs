//! hipfft-pool: a plan pool that owns hipFFT handles.
//!
//! It bounds the handles that are *alive*, not only those it holds: a process-wide
//! [`LiveCeiling`] counts cached plans, evicted plans still in flight and plans being made;
//! evicted plans are destroyed explicitly, off the hot path and never under a lock; every
//! execution holds a [`Lease`] that is counted until the GPU completes it.

pub mod desc;
pub mod error;
pub mod hip;
pub mod runtime;
pub mod sim;

pub use desc::{DescError, Direction, Extents, Field, Layout, PlanDesc, TransformType};
pub use error::{Api, CeilingState, Error, Result, RuntimeCode};
pub use runtime::{CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Runtime, RuntimeInfo, RuntimeKind};
