//! One device as the pool sees it, and where each device's ceiling comes from.

use std::sync::Arc;

use crate::observe::counters::Counters;
use crate::pool::ceiling::LiveCeiling;
use crate::pool::creator::RuntimeCalls;

/// One device as the pool sees it: the ceiling its plans count against (the process-wide
/// one unless the pool splits it per device) and its counters.
pub(crate) struct Device {
    /// Its ordinal.
    pub ordinal: i32,
    pub ceiling: Arc<LiveCeiling>,
    pub counters: Counters,
    /// Creates and destroys running on this device: one running past the acquire timeout
    /// marks the device stuck.
    pub calls: RuntimeCalls,
    /// Whether the pool's cache is listed on `ceiling` (see `LiveCeiling::enlist`).
    pub enlisted: std::sync::atomic::AtomicBool,
    /// Events of this device free for reuse by `release_after` (see `Core::recycle_event`).
    pub free_events: crate::sync::Mutex<Vec<crate::runtime::boundary::RawEvent>>,
}

/// Where a device's ceiling comes from.
pub(crate) enum CeilingPlan {
    /// Every device counts against this one.
    Shared(Arc<LiveCeiling>),
    /// Each device has its own process-wide ceiling of this limit.
    PerDevice(usize),
}
