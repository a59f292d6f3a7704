//! Events: a recorded event is a marker in its stream's queue, complete once the worker has
//! passed it. An event never recorded counts as complete, as in HIP.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::stream::Mark;
use crate::runtime::boundary::RawEvent;

/// Base of event handle values, distinct from streams and plans.
const EVENT_BASE: usize = 0x6_0000_0000;

#[derive(Default)]
pub(crate) struct Events {
    /// Each live event with its last recorded marker.
    map: Mutex<HashMap<RawEvent, Option<Mark>>>,
    next: AtomicUsize,
}

impl Events {
    pub(crate) fn create(&self) -> RawEvent {
        let raw = RawEvent(EVENT_BASE + (self.next.fetch_add(1, Ordering::Relaxed) + 1) * 16);
        self.map.lock().insert(raw, None);
        raw
    }

    /// Sets the event's marker. `false`: no such event.
    pub(crate) fn record(&self, raw: RawEvent, mark: Mark) -> bool {
        match self.map.lock().get_mut(&raw) {
            Some(slot) => {
                *slot = Some(mark);
                true
            }
            None => false,
        }
    }

    pub(crate) fn exists(&self, raw: RawEvent) -> bool {
        self.map.lock().contains_key(&raw)
    }

    /// The event's marker: `None` for no such event, `Some(None)` if never recorded.
    pub(crate) fn mark(&self, raw: RawEvent) -> Option<Option<Mark>> {
        self.map.lock().get(&raw).cloned()
    }

    pub(crate) fn destroy(&self, raw: RawEvent) -> bool {
        self.map.lock().remove(&raw).is_some()
    }

    pub(crate) fn live(&self) -> usize {
        self.map.lock().len()
    }
}
