//! The pool: the cache of plans, the leases that hold them, and the live ceiling.
//!
//! A miss takes a slot of the [`ceiling`] before it creates a plan and the slot comes back
//! only after the plan was destroyed, so cached plans, evicted plans still in flight and
//! plans being made all count. Eviction never destroys a leased plan: it is retired and the
//! destroyer thread destroys it after its last lease, never inside a release.
//!
//! - `plan_pool`: [`PlanPool`], the cache and its acquire path (hit, single-flight miss,
//!   making room at the ceiling, the bounded wait), eviction, shutdown, snapshots; it starts
//!   the destroyer and completion threads.
//! - `entry`: a cached plan (`PlanEntry`), the core it reports back to (`Core`: the
//!   runtime, retired plans, the destroyer and completion queues, event reuse, destroys),
//!   one lease as the pool passes it on (`Held`: the entry, borrowed, and its stripe;
//!   `Held::release`, `release_after`), and `PendingRelease`, a lease waiting for its event.
//! - `device`: one device as the pool sees it (its ceiling and counters), and where each
//!   device's ceiling comes from.
//! - `lease`: [`Lease`], one execution's hold on a plan: exec, release, `release_after`.
//! - `batch`: the open batches of `release_in_batch`, per stream, a leaf generic over what
//!   they hold; a thread keeps the batch it last added to, so an add takes no shared lock.
//! - `lease_state`: the striped atomic words that count a plan's leases and mark it retired.
//! - `completion`: the completion queue and thread, a leaf generic over what it holds (an
//!   in-order queue key and a poll that says done): it polls each queue's oldest item and
//!   completes what is done.
//! - `flight`: single flight, so concurrent misses on one key make one plan.
//! - `front`: each thread's front cache of the plans it leased lately, so a repeated hit
//!   takes no lock word of the shared map.
//! - `creator`: the workers that run plan creations, so a miss waits for one only until
//!   its deadline, and the registry of running calls that marks a device stuck.
//! - `ceiling`: [`LiveCeiling`], the hard process-wide bound, and its wait.
//! - `clock`: the recency clock that keeps hits off shared cache lines.
//! - `eviction`: which idle plan a miss evicts ([`Eviction`]: LRU, or GreedyDual-Size-
//!   Frequency over measured creation times, with ghosts).
//! - `manifest`: the working set a pool records and the [`Manifest`] it is saved as and
//!   warmed up from (the warm-up itself is `PlanPool::warm_up`).
//! - `thrash`: the detector that warns when evicted keys come straight back.
//! - `report`: metrics exports and the summary table of a pool.
//! - `config`: [`PoolConfig`], its builder and `from_env()`.
//! - `tests/` (`--cfg loom` only): the loom model tests of this layer, on the real code
//!   above over a deterministic runtime (`loom_pool.rs`, `loom_lease.rs`,
//!   `loom_ceiling.rs`, `loom_flight.rs`).
//!
//! Files import downwards only: `plan_pool` → `lease` → `entry` → `batch`, `completion`, `device`,
//! `ceiling`, `lease_state`, and `plan_pool` → `front` → `entry`; `batch`, `completion`, `flight`,
//! `ceiling`, `lease_state` and `clock` import only [`crate::sync`], whose loom build is what
//! the model tests run on.
//!
//! This layer calls [`crate::observe`] (counters, the watchdog) and [`crate::runtime`] (the
//! library), never [`crate::ffi`].
//!
//! [`PlanPool`]: plan_pool::PlanPool
//! [`Lease`]: lease::Lease
//! [`LiveCeiling`]: ceiling::LiveCeiling
//! [`PoolConfig`]: config::PoolConfig
//! [`Eviction`]: eviction::Eviction
//! [`Manifest`]: manifest::Manifest

#![deny(missing_docs)]

pub(crate) mod batch;
pub mod ceiling;
pub(crate) mod clock;
pub(crate) mod completion;
pub mod config;
pub(crate) mod creator;
pub(crate) mod device;
pub(crate) mod entry;
pub mod eviction;
pub(crate) mod flight;
pub(crate) mod front;
pub mod lease;
pub(crate) mod lease_state;
pub mod manifest;
pub mod plan_pool;
pub mod report;
pub(crate) mod thrash;

#[cfg(all(test, loom))]
mod tests;
