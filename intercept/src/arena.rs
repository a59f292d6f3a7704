//! Work areas for handles with auto-allocation on (cuFFT's and hipFFT's default).
//!
//! The pool's plans never own a work area, so a handle that leaves allocation to the library
//! gets one from this per-device arena for each execution: a block at least the plan's work
//! size, returned to the free list once an event recorded after the execution has fired (so
//! it is never reused or freed under pending work). The arena's bytes are bounded by
//! `HIPFFT_POOL_AUTO_AREA_BUDGET` (default 1 GiB): at the bound, idle blocks are freed, then
//! the oldest pending block is waited for.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hipfft_pool::runtime::with_device;
use hipfft_pool::{DevicePtr, RawEvent, RawStream, Result, Runtime};
use parking_lot::Mutex;

use crate::codes::{Fail, code};

/// One device allocation.
#[derive(Clone, Copy, Debug)]
pub struct Block {
    pub device: i32,
    pub ptr: DevicePtr,
    pub bytes: usize,
}

#[derive(Default)]
struct State {
    free: Vec<Block>,
    /// Blocks in use by enqueued executions, with the event that marks them done.
    pending: VecDeque<(Block, RawEvent)>,
    spare_events: Vec<(i32, RawEvent)>,
}

/// The auto-allocation arena.
pub struct Arena {
    state: Mutex<State>,
    budget: usize,
    bytes: AtomicUsize,
    peak: AtomicUsize,
    pub allocations: AtomicU64,
    pub reuses: AtomicU64,
}

/// Default bound on the arena's bytes.
pub const DEFAULT_BUDGET: usize = 1 << 30;

impl Arena {
    pub fn new(budget: usize) -> Arena {
        Arena {
            state: Mutex::default(),
            budget,
            bytes: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            allocations: AtomicU64::new(0),
            reuses: AtomicU64::new(0),
        }
    }

    /// `HIPFFT_POOL_AUTO_AREA_BUDGET` bytes, else the default; a bad value is a warning.
    pub fn budget_from_env() -> (usize, Option<String>) {
        match std::env::var("HIPFFT_POOL_AUTO_AREA_BUDGET") {
            Err(_) => (DEFAULT_BUDGET, None),
            Ok(raw) => match hipfft_pool::pool::config::parse_whole(&raw, isize::MAX as u64) {
                Ok(v) => (v as usize, None),
                Err(why) => (DEFAULT_BUDGET, Some(format!("HIPFFT_POOL_AUTO_AREA_BUDGET={raw:?} ignored ({why}); keeping {DEFAULT_BUDGET}"))),
            },
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Moves blocks whose executions completed to the free list.
    fn reclaim(&self, rt: &dyn Runtime, st: &mut State) {
        let mut i = 0;
        while i < st.pending.len() {
            let (block, ev) = st.pending[i];
            // SAFETY: an event this arena made and recorded.
            let done = with_device(rt, block.device, || unsafe { rt.event_query(ev) }).unwrap_or(false);
            if done {
                st.pending.remove(i);
                st.free.push(block);
                st.spare_events.push((block.device, ev));
            } else {
                i += 1;
            }
        }
    }

    /// A block of at least `bytes` on `device`, for one execution.
    pub fn take(&self, rt: &dyn Runtime, device: i32, bytes: usize) -> Result<Block, Fail> {
        if bytes > self.budget {
            return Err(Fail::new(
                code::ALLOC_FAILED,
                format!("the plan needs a work area of {bytes} bytes, above HIPFFT_POOL_AUTO_AREA_BUDGET ({} bytes); raise it or set a work area", self.budget),
            ));
        }
        loop {
            let mut wait_for = None;
            let mut to_free = Vec::new();
            {
                let mut st = self.state.lock();
                self.reclaim(rt, &mut st);
                let best = st
                    .free
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.device == device && b.bytes >= bytes)
                    .min_by_key(|(_, b)| b.bytes)
                    .map(|(i, _)| i);
                if let Some(i) = best {
                    self.reuses.fetch_add(1, Ordering::Relaxed);
                    return Ok(st.free.swap_remove(i));
                }
                if self.bytes() + bytes > self.budget {
                    if !st.free.is_empty() {
                        // Free idle blocks (largest first) until the new one fits.
                        st.free.sort_by_key(|b| b.bytes);
                        while self.bytes() + bytes > self.budget {
                            let Some(b) = st.free.pop() else { break };
                            self.bytes.fetch_sub(b.bytes, Ordering::Relaxed);
                            to_free.push(b);
                        }
                    } else if let Some((_, ev)) = st.pending.front().copied() {
                        wait_for = Some((st.pending[0].0.device, ev));
                    }
                }
            }
            for b in to_free {
                // SAFETY: an idle block of this arena: its event fired, nothing pending uses it.
                let _ = with_device(rt, b.device, || unsafe { rt.free(b.ptr) });
            }
            if let Some((dev, ev)) = wait_for {
                // SAFETY: an event this arena made and recorded.
                with_device(rt, dev, || unsafe { rt.event_synchronize(ev) }).map_err(|e| Fail::from_pool(&e))?;
                continue;
            }
            if self.bytes() + bytes > self.budget {
                continue;
            }
            let ptr = with_device(rt, device, || rt.malloc(bytes)).map_err(|e| Fail::from_pool(&e))?;
            let now = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
            self.peak.fetch_max(now, Ordering::Relaxed);
            self.allocations.fetch_add(1, Ordering::Relaxed);
            return Ok(Block { device, ptr, bytes });
        }
    }

    /// Returns `block` once the work enqueued so far on `stream` has completed.
    pub fn give_after(&self, rt: &dyn Runtime, block: Block, stream: RawStream) {
        let spare = {
            let mut st = self.state.lock();
            let i = st.spare_events.iter().position(|(d, _)| *d == block.device);
            i.map(|i| st.spare_events.swap_remove(i).1)
        };
        let recorded = with_device(rt, block.device, || {
            let ev = match spare {
                Some(ev) => ev,
                None => rt.event_create()?,
            };
            // SAFETY: our event, on the stream of the execution that used the block.
            unsafe { rt.event_record(ev, stream) }.map(|()| ev)
        });
        match recorded {
            Ok(ev) => self.state.lock().pending.push_back((block, ev)),
            Err(_) => {
                // No event: wait for the stream instead, so the block is never reused early.
                // SAFETY: the stream of the execution that used the block.
                let _ = with_device(rt, block.device, || unsafe { rt.stream_synchronize(stream) });
                self.state.lock().free.push(block);
            }
        }
    }
}
