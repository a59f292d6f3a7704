//! [`NullRuntime`]: a runtime that does nothing and answers at once.
//!
//! Plans are numbers, work sizes are 0, every call succeeds and no pointer is ever
//! dereferenced. What runs over it measures a provider's own host cost with nothing under
//! it: the pool's exec path (`benches/exec_path.rs`) and the interposer's
//! (`intercept/benches/exec_host.rs`), whose target is a bound over this runtime.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::boundary::{
    CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo,
    RuntimeKind,
};

/// A runtime whose every call returns at once: one device, plans numbered from `0x1010`,
/// no work area, events always complete, memory never touched.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use hipfft_pool::runtime::null::NullRuntime;
/// use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, TransformType};
///
/// let runtime: Arc<dyn Runtime> = Arc::new(NullRuntime::default());
/// let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
/// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[256], 1))?;
/// assert_eq!(lease.work_size(), 0);
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct NullRuntime {
    plans: AtomicUsize,
    /// The stream reported capturing, plus one (0: none).
    capturing: AtomicUsize,
}

impl NullRuntime {
    /// Plans made so far (none is ever freed: there is nothing to free).
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::runtime::null::NullRuntime;
    /// use hipfft_pool::{PlanDesc, PlanOptions, Runtime, TransformType};
    ///
    /// let rt = NullRuntime::default();
    /// rt.plan_create(&PlanDesc::new(TransformType::R2C, &[64], 2), PlanOptions::default())?;
    /// assert_eq!(rt.plans_made(), 1);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn plans_made(&self) -> usize {
        self.plans.load(Ordering::Relaxed)
    }

    /// Makes `stream_is_capturing` say yes for `stream` (and no for every other), or for
    /// none: what a framework's graph capture looks like to a provider, with no graph.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::runtime::null::NullRuntime;
    /// use hipfft_pool::{RawStream, Runtime};
    ///
    /// let rt = NullRuntime::default();
    /// rt.set_capturing(Some(RawStream(7)));
    /// // SAFETY: the null runtime dereferences no stream.
    /// assert!(unsafe { rt.stream_is_capturing(RawStream(7)) }?);
    /// assert!(!unsafe { rt.stream_is_capturing(RawStream::NULL) }?);
    /// rt.set_capturing(None);
    /// assert!(!unsafe { rt.stream_is_capturing(RawStream(7)) }?);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn set_capturing(&self, stream: Option<RawStream>) {
        self.capturing.store(stream.map_or(0, |s| s.0.wrapping_add(1)), Ordering::Relaxed);
    }
}

// SAFETY: no call of this runtime dereferences anything, so the made-up handles and
// pointers it returns are valid for every call it makes (none touches memory).
unsafe impl Runtime for NullRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Sim
    }
    fn info(&self) -> RuntimeInfo {
        RuntimeInfo::default()
    }
    fn device_count(&self) -> Result<i32> {
        Ok(1)
    }
    fn current_device(&self) -> Result<i32> {
        Ok(0)
    }
    fn set_device(&self, _device: i32) -> Result<()> {
        Ok(())
    }
    fn plan_create(&self, _desc: &PlanDesc, _options: PlanOptions) -> Result<CreatedPlan> {
        let n = self.plans.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(CreatedPlan {
            plan: RawPlan(0x1000 + n * 16),
            work_size: 0,
        })
    }
    unsafe fn plan_exec(
        &self,
        _plan: RawPlan,
        _transform: TransformType,
        _stream: RawStream,
        _work_area: Option<DevicePtr>,
        _input: DevicePtr,
        _output: DevicePtr,
        _direction: Direction,
    ) -> Result<()> {
        Ok(())
    }
    unsafe fn plan_exec_bound(
        &self,
        _plan: RawPlan,
        _transform: TransformType,
        _stream: RawStream,
        _work_area: Option<DevicePtr>,
        _input: DevicePtr,
        _output: DevicePtr,
        _direction: Direction,
        _rebind: Rebind,
    ) -> Result<()> {
        Ok(())
    }
    unsafe fn plan_bind(&self, _plan: RawPlan, _stream: Option<RawStream>, _work_area: Option<DevicePtr>) -> Result<bool> {
        Ok(true)
    }
    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        Ok(self.capturing.load(Ordering::Relaxed) == stream.0.wrapping_add(1))
    }
    unsafe fn plan_destroy(&self, _plan: RawPlan) -> Result<()> {
        Ok(())
    }
    fn event_create(&self) -> Result<RawEvent> {
        Ok(RawEvent(1))
    }
    unsafe fn event_record(&self, _event: RawEvent, _stream: RawStream) -> Result<()> {
        Ok(())
    }
    unsafe fn event_query(&self, _event: RawEvent) -> Result<bool> {
        Ok(true)
    }
    unsafe fn event_synchronize(&self, _event: RawEvent) -> Result<()> {
        Ok(())
    }
    unsafe fn event_destroy(&self, _event: RawEvent) -> Result<()> {
        Ok(())
    }
    fn stream_create(&self) -> Result<RawStream> {
        Ok(RawStream(1))
    }
    unsafe fn stream_synchronize(&self, _stream: RawStream) -> Result<()> {
        Ok(())
    }
    unsafe fn stream_destroy(&self, _stream: RawStream) -> Result<()> {
        Ok(())
    }
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        Ok(DevicePtr(0x10_0000 + bytes))
    }
    unsafe fn free(&self, _ptr: DevicePtr) -> Result<()> {
        Ok(())
    }
    unsafe fn memcpy_htod(&self, _dst: DevicePtr, _src: &[u8]) -> Result<()> {
        Ok(())
    }
    unsafe fn memcpy_dtoh(&self, _dst: &mut [u8], _src: DevicePtr) -> Result<()> {
        Ok(())
    }
    unsafe fn memcpy_dtod_async(
        &self,
        _dst: DevicePtr,
        _src: DevicePtr,
        _bytes: usize,
        _stream: RawStream,
    ) -> Result<()> {
        Ok(())
    }
}
