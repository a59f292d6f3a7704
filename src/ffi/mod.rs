//! The C ABI (`include/hipfft_pool.h`, generated from this folder by cbindgen).
//!
//! Conventions, modelled on rustls-ffi: every entry point runs behind a panic boundary (a
//! panic becomes `HFP_INTERNAL_ERROR`, never an abort); every pointer is checked for null;
//! every failure leaves a message in `hfp_last_error_message()`; ownership and lifetime are
//! written on every pointer. Pools and leases are opaque boxes: `hfp_pool` owns a
//! `PlanPool`, `hfp_lease` a `Lease`.
//!
//! The safety contract of each `unsafe extern "C"` function is its pointer contract, written
//! argument by argument in its C documentation (what may be NULL, who owns what, for how
//! long); clippy's `# Safety` section would repeat it in the header. Where an entry point
//! hands a C pointer to an `unsafe fn` of the library (`Lease::exec`, `Runtime::
//! stream_synchronize`), its `SAFETY:` comment names the sentence of that documentation the
//! C caller promised.
//!
//! - `boundary`: the panic boundary ([`hfp_status`], `guard`), the null and out-pointer
//!   checks every entry point shares.
//! - [`last_error`]: the thread's last failure message (the interposers use it too).
//! - `types`: the `#[repr(C)]` structs and constants of the header (`hfp_config`,
//!   `hfp_plan_desc`, `hfp_metrics`, the transform and direction values) and their
//!   conversions.
//! - `pool`: [`hfp_pool`]: making and freeing pools, the default pool, the calls on a pool.
//! - `lease`: [`hfp_lease`]: acquire, execute, release (now or after a stream), and the
//!   debug checks of lease pointers.
//! - `info`: the last error message, status names, debug-check state, the version.
//!
//! This layer calls [`crate::pool`] and [`crate::runtime`]; nothing calls it.
#![allow(clippy::missing_safety_doc)]
#![deny(missing_docs)]

mod boundary;
pub mod last_error;
mod info;
mod lease;
mod pool;
mod types;

pub use boundary::hfp_status;
pub use info::{hfp_debug_checks_enabled, hfp_last_error_message, hfp_status_name, hfp_version};
pub use lease::{
    hfp_acquire, hfp_lease, hfp_lease_exec, hfp_lease_exec_preserving_input, hfp_lease_input_bytes, hfp_lease_plan,
    hfp_lease_release, hfp_lease_release_after, hfp_lease_release_in_batch, hfp_lease_work_size,
};
pub use pool::{
    hfp_config_default, hfp_default_pool, hfp_pool, hfp_pool_end_batch, hfp_pool_free, hfp_pool_from_env, hfp_pool_metrics,
    hfp_pool_metrics_text, hfp_pool_new, hfp_pool_runtime, hfp_pool_set_capacity, hfp_pool_set_flush_hook,
    hfp_pool_synchronize, hfp_pool_trim, hfp_pool_warnings,
};
pub use types::{
    HFP_C2C, HFP_C2R, HFP_CEILING_PER_DEVICE, HFP_CEILING_PRIVATE, HFP_CEILING_PROCESS_WIDE, HFP_D2Z, HFP_FORWARD,
    HFP_INVERSE, HFP_R2C, HFP_Z2D, HFP_Z2Z, hfp_config, hfp_metrics, hfp_plan_desc,
};
