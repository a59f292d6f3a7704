//! The runtime layer: the one boundary between the pool and an FFT library.
//!
//! Every runtime speaks the [`Runtime`] trait. Plans, streams, events and device pointers
//! cross it as opaque raw values: a `hipfftHandle` is a pointer on AMD and an `int` on
//! NVIDIA, and the pool must not care.
//!
//! - `boundary`: the [`Runtime`] trait, the raw handle types, `with_device`. The unsafe
//!   boundary is drawn here, as cudarc's `result` layer draws it: a call that takes a raw
//!   handle or device pointer is an `unsafe fn` whose `# Safety` says what the caller
//!   guarantees; a call that needs only the loaded library is safe.
//! - `codes`: the one table of hipFFT/cuFFT and HIP result codes and their names, used by
//!   every runtime and by the error type.
//! - `decorator`: [`Decorator`](decorator::Decorator), wrappers that override only the
//!   calls they watch and forward the rest.
//! - `null`: [`NullRuntime`](null::NullRuntime), every call returns at once: what a
//!   provider's own host cost is measured over.
//! - `select`: which runtime `auto`, `sim`, `hip` or `cuda` opens.
//! - `sim`: [`SimRuntime`](sim::SimRuntime), a CPU stand-in that counts every handle and
//!   records every misuse: the ground truth of the tests.
//! - `hip`: hipFFT and HIP, loaded at run time through hand-written bindings (`sys`, `result`,
//!   `loader`, `runtime`).
//! - `cuda` (feature `cuda`): cuFFT and the CUDA runtime through cudarc.
//!
//! This layer calls only [`crate::desc`] and [`crate::error`].
#![deny(missing_docs)]

pub mod boundary;
pub mod codes;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod decorator;
pub mod hip;
pub mod null;
pub mod select;
pub mod sim;

pub use boundary::{
    CreatedPlan, DEVICE_SCHEDULE_BLOCKING_SYNC, HostCall, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo,
    RuntimeKind, with_device,
};
