//! The pool: the cache of plans, the leases that hold them, and the live ceiling.
//!
//! A miss takes a slot of the [`ceiling`] before it creates a plan and the slot comes back
//! only after the plan was destroyed, so cached plans, evicted plans still in flight and
//! plans being made all count. Eviction never destroys a leased plan: it is retired and the
//! destroyer thread destroys it after its last lease, never inside a release.
//!
//! - `plan_pool`: [`PlanPool`], the cache and its acquire path (hit, single-flight miss,
//!   making room at the ceiling, the bounded wait), eviction, shutdown, snapshots.
//! - `entry`: a cached plan (`PlanEntry`) and the core it reports back to (`Core`: the
//!   runtime, retired plans, the destroyer and completion channels, the per-device state).
//! - `lease`: [`Lease`], one execution's hold on a plan: exec, release, `release_after`.
//! - `lease_state`: the one atomic word that counts a plan's leases and marks it retired.
//! - `completion`: the completion thread, generic over what it holds: it polls each
//!   stream's oldest pending event and hands back what completed.
//! - `flight`: single flight, so concurrent misses on one key make one plan.
//! - `ceiling`: [`LiveCeiling`], the hard process-wide bound, and its wait.
//! - `clock`: the recency clock that keeps hits off shared cache lines.
//! - `thrash`: the detector that warns when evicted keys come straight back.
//! - `report`: metrics exports and the summary table of a pool.
//! - `config`: [`PoolConfig`], its builder and `from_env()`.
//!
//! This layer calls [`crate::observe`] (counters, the watchdog) and [`crate::runtime`] (the
//! library), never [`crate::ffi`].
//!
//! [`PlanPool`]: plan_pool::PlanPool
//! [`Lease`]: lease::Lease
//! [`LiveCeiling`]: ceiling::LiveCeiling
//! [`PoolConfig`]: config::PoolConfig

pub mod ceiling;
pub(crate) mod clock;
pub(crate) mod completion;
pub mod config;
pub(crate) mod entry;
pub(crate) mod flight;
pub mod lease;
pub(crate) mod lease_state;
pub mod plan_pool;
pub mod report;
pub(crate) mod thrash;
