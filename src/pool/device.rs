//! One device as the pool sees it, and where each device's ceiling comes from.

use std::sync::Arc;

use crate::observe::counters::Counters;
use crate::pool::ceiling::LiveCeiling;

/// One device as the pool sees it: the ceiling its plans count against (the process-wide
/// one unless the pool splits it per device) and its counters.
pub(crate) struct Device {
    pub ceiling: Arc<LiveCeiling>,
    pub counters: Counters,
}

/// Where a device's ceiling comes from.
pub(crate) enum CeilingPlan {
    /// Every device counts against this one.
    Shared(Arc<LiveCeiling>),
    /// Each device has its own process-wide ceiling of this limit.
    PerDevice(usize),
}
