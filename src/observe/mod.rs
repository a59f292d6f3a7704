//! Observability: what the pool counts and how a person or a scraper reads it.
//!
//! Nothing here knows the pool: the pool feeds counters and the watchdog, and reads a
//! [`counters::MetricsSnapshot`] back, which the exports format.
//!
//! - `counters`: the per-device counters and the snapshot the pool reports.
//! - `histogram`: a fixed-bucket, lock-free latency histogram.
//! - `watchdog`: registers every create, exec and destroy; reports one that does not return,
//!   quoting the live counts through [`LiveCounts`](watchdog::LiveCounts), which the pool's
//!   ceiling implements (so this layer never names a pool type).
//! - `export`: Prometheus text exposition, the JSON form and the `metrics` facade.
//! - `serve`: [`MetricsServer`](serve::MetricsServer), a loopback HTTP endpoint for any
//!   [`MetricsSource`](serve::MetricsSource): its listener, threads, limits and lifecycle.
//! - `http`: the HTTP/1.1 it speaks, apart from sockets: reading a request head, writing a
//!   response.
//! - `fork`: its listening socket, closed in a forked child.
//! - `tests`: the server over real loopback connections (they read its socket's flags).
//!
//! This layer calls only [`crate::desc`] and the loom shim.
#![deny(missing_docs)]

pub mod counters;
pub mod export;
mod fork;
pub mod histogram;
mod http;
pub mod serve;
#[cfg(test)]
mod tests;
pub mod watchdog;
