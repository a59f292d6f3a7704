//! A runtime wrapper that counts plan handles at the library boundary, whatever the plan
//! source (pool or legacy) and whatever the runtime (sim, HIP, CUDA): a handle is alive from
//! just before `plan_create` (hipfftCreate) until `plan_destroy` returns, as the simulated
//! runtime counts them. It also tracks the most handles alive since the last look (so a
//! sample after each step sees the creation that briefly made capacity + 1 handles), and
//! which plan calls are running right now (so a hang report can say "stuck in a destroy").

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hipfft_pool::{CreatedPlan, DevicePtr, Direction, PlanDesc, PlanOptions, RawEvent, RawPlan, RawStream, Result, Runtime, RuntimeInfo, RuntimeKind, TransformType};

#[derive(Debug, Default)]
pub struct PlanCounts {
    pub live: AtomicUsize,
    /// The most alive since [`PlanCounts::take_window_max`] last ran.
    window_max: AtomicUsize,
    pub peak: AtomicUsize,
    /// Calls inside `plan_create` / `plan_destroy` / `plan_exec` right now.
    pub in_create: AtomicUsize,
    pub in_destroy: AtomicUsize,
    pub in_exec: AtomicUsize,
}

impl PlanCounts {
    fn up(&self) {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.window_max.fetch_max(now, Ordering::SeqCst);
        self.peak.fetch_max(now, Ordering::SeqCst);
    }
    fn down(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
    /// The most handles alive since the last call (at least the number alive now), and
    /// starts a new window.
    pub fn take_window_max(&self) -> usize {
        let now = self.live.load(Ordering::SeqCst);
        self.window_max.swap(now, Ordering::SeqCst).max(now)
    }
    /// The window's maximum so far, without starting a new one.
    pub fn window_max(&self) -> usize {
        self.window_max.load(Ordering::SeqCst).max(self.live.load(Ordering::SeqCst))
    }
    /// `create`, `destroy`, `exec`, or `-`: the plan calls running right now.
    pub fn calls(&self) -> String {
        let mut v = Vec::new();
        for (name, c) in [("create", &self.in_create), ("destroy", &self.in_destroy), ("exec", &self.in_exec)] {
            match c.load(Ordering::SeqCst) {
                0 => {}
                1 => v.push(name.to_string()),
                n => v.push(format!("{name}x{n}")),
            }
        }
        if v.is_empty() { "-".into() } else { v.join("+") }
    }
}

struct Inside<'a>(&'a AtomicUsize);

impl<'a> Inside<'a> {
    fn enter(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::SeqCst);
        Inside(c)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct CountingRuntime {
    inner: Arc<dyn Runtime>,
    counts: Arc<PlanCounts>,
}

impl CountingRuntime {
    pub fn wrap(inner: Arc<dyn Runtime>) -> (Arc<dyn Runtime>, Arc<PlanCounts>) {
        let counts = Arc::new(PlanCounts::default());
        (Arc::new(CountingRuntime { inner, counts: counts.clone() }), counts)
    }
}

impl Runtime for CountingRuntime {
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
        let _in = Inside::enter(&self.counts.in_create);
        self.counts.up();
        let r = self.inner.plan_create(desc, options);
        if r.is_err() {
            // The runtime destroys a half-made handle before it reports the error.
            self.counts.down();
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
        let _in = Inside::enter(&self.counts.in_exec);
        self.inner.plan_exec(plan, transform, stream, work_area, input, output, direction)
    }
    fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        let _in = Inside::enter(&self.counts.in_destroy);
        let r = self.inner.plan_destroy(plan);
        // Freed even when the call reports an error (hipFFT frees the plan first).
        self.counts.down();
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
