//! `AuditedRuntime`: a decorator that checks the pool's promises at the runtime boundary,
//! against any runtime, a real GPU included.
//!
//! It counts handles created and not yet destroyed (ground truth independent of the pool's
//! own bookkeeping), and after each execution it records an event on the execution's stream;
//! a destroy of a plan whose last execution's event has not completed is a violation. It
//! costs one event record per execution, so it is for tests, soaks and investigations.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::{CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Runtime, RuntimeInfo, RuntimeKind};

pub struct AuditedRuntime {
    inner: Arc<dyn Runtime>,
    live: AtomicUsize,
    peak: AtomicUsize,
    created: AtomicU64,
    destroyed: AtomicU64,
    /// The event after each plan's latest execution, with its device.
    last_exec: parking_lot::Mutex<HashMap<RawPlan, (RawEvent, i32)>>,
    violations: parking_lot::Mutex<Vec<String>>,
}

impl AuditedRuntime {
    pub fn new(inner: Arc<dyn Runtime>) -> Self {
        AuditedRuntime {
            inner,
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            created: AtomicU64::new(0),
            destroyed: AtomicU64::new(0),
            last_exec: Default::default(),
            violations: Default::default(),
        }
    }

    /// Handles created through this runtime and not yet destroyed.
    pub fn live_handles(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
    pub fn peak_live_handles(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
    pub fn created_total(&self) -> u64 {
        self.created.load(Ordering::SeqCst)
    }
    pub fn destroyed_total(&self) -> u64 {
        self.destroyed.load(Ordering::SeqCst)
    }
    /// Destroys under a pending execution, and failures of the audit's own calls.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().clone()
    }
}

impl Runtime for AuditedRuntime {
    fn kind(&self) -> RuntimeKind {
        self.inner.kind()
    }
    fn info(&self) -> RuntimeInfo {
        self.inner.info()
    }
    fn device_count(&self) -> Result<i32> {
        self.inner.device_count()
    }
    fn current_device(&self) -> Result<i32> {
        self.inner.current_device()
    }
    fn set_device(&self, device: i32) -> Result<()> {
        self.inner.set_device(device)
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        // Count before the call, so a sampler never sees fewer than are alive.
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let r = self.inner.plan_create(desc, options);
        match &r {
            Ok(_) => {
                self.created.fetch_add(1, Ordering::SeqCst);
            }
            Err(_) => {
                self.live.fetch_sub(1, Ordering::SeqCst);
            }
        }
        r
    }

    fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        self.inner.plan_exec(plan, transform, stream, work_area, input, output, direction)?;
        let device = self.inner.current_device()?;
        let ev = self.inner.event_create()?;
        self.inner.event_record(ev, stream)?;
        if let Some((old, d)) = self.last_exec.lock().insert(plan, (ev, device)) {
            debug_assert_eq!(d, device);
            let _ = self.inner.event_destroy(old);
        }
        Ok(())
    }

    fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        if let Some((ev, _)) = self.last_exec.lock().remove(&plan) {
            match self.inner.event_query(ev) {
                Ok(true) => {}
                Ok(false) => self.violations.lock().push(format!("plan {plan:?} destroyed while an execution was pending")),
                Err(e) => self.violations.lock().push(format!("event query before destroying {plan:?} failed: {e}")),
            }
            let _ = self.inner.event_destroy(ev);
        }
        let r = self.inner.plan_destroy(plan);
        self.destroyed.fetch_add(1, Ordering::SeqCst);
        self.live.fetch_sub(1, Ordering::SeqCst);
        r
    }

    fn event_create(&self) -> Result<RawEvent> {
        self.inner.event_create()
    }
    fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        self.inner.event_record(event, stream)
    }
    fn event_query(&self, event: RawEvent) -> Result<bool> {
        self.inner.event_query(event)
    }
    fn event_synchronize(&self, event: RawEvent) -> Result<()> {
        self.inner.event_synchronize(event)
    }
    fn event_destroy(&self, event: RawEvent) -> Result<()> {
        self.inner.event_destroy(event)
    }
    fn stream_create(&self) -> Result<RawStream> {
        self.inner.stream_create()
    }
    fn stream_synchronize(&self, stream: RawStream) -> Result<()> {
        self.inner.stream_synchronize(stream)
    }
    fn stream_destroy(&self, stream: RawStream) -> Result<()> {
        self.inner.stream_destroy(stream)
    }
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        self.inner.malloc(bytes)
    }
    fn free(&self, ptr: DevicePtr) -> Result<()> {
        self.inner.free(ptr)
    }
    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        self.inner.memcpy_htod(dst, src)
    }
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        self.inner.memcpy_dtoh(dst, src)
    }
    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
        self.inner.memcpy_dtod_async(dst, src, bytes, stream)
    }
}
