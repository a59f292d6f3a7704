//! The `Runtime` trait: the calls the pool makes into an FFT library, and the raw values
//! that cross it. The calls are thin: each maps onto one library entry point (or the fixed
//! sequence the doc names), returns `Result`, and holds no pool state.

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;

/// A host function and its argument, as `cudaLaunchHostFunc` / `hipLaunchHostFunc` take
/// them: run on a runtime thread once the work enqueued before it has completed.
#[derive(Clone, Copy, Debug)]
pub struct HostCall {
    f: unsafe extern "C" fn(*mut std::ffi::c_void),
    data: *mut std::ffi::c_void,
}

// SAFETY: a HostCall is only made by `HostCall::new`, whose caller vouches that `f(data)` may
// run on any thread.
unsafe impl Send for HostCall {}
unsafe impl Sync for HostCall {}

impl HostCall {
    /// # Safety
    /// `data` stays valid for every run of `f` (a captured call runs each time its graph
    /// runs), `f(data)` may run on any thread, and `f` calls no GPU runtime function.
    pub unsafe fn new(f: unsafe extern "C" fn(*mut std::ffi::c_void), data: *mut std::ffi::c_void) -> HostCall {
        HostCall { f, data }
    }

    /// Runs the call once.
    pub fn run(&self) {
        // SAFETY: the contract of `new`.
        unsafe { (self.f)(self.data) }
    }

    pub fn function(&self) -> unsafe extern "C" fn(*mut std::ffi::c_void) {
        self.f
    }

    pub fn data(&self) -> *mut std::ffi::c_void {
        self.data
    }
}

/// A plan handle as the library gave it (pointer bits on AMD, the `int` on NVIDIA).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawPlan(pub usize);

/// A stream. `RawStream::NULL` is the device's null (default) stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawStream(pub usize);

impl RawStream {
    pub const NULL: RawStream = RawStream(0);
}

/// An event handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawEvent(pub usize);

/// A device pointer. On the simulated runtime device memory is host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePtr(pub usize);

impl DevicePtr {
    pub const NULL: DevicePtr = DevicePtr(0);
    pub fn is_null(self) -> bool {
        self.0 == 0
    }
    pub fn from_ptr<T>(p: *const T) -> Self {
        DevicePtr(p as usize)
    }
    pub fn as_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }
}

/// How a plan is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlanOptions {
    /// Leave `hipfftSetAutoAllocation` on, so the library owns the work area. The pool's
    /// default is off: the caller passes a work area to each execution.
    pub auto_allocation: bool,
}

/// A plan that was made, with the work size `hipfftMakePlanMany64` returned.
/// (`hipfftGetSizeMany64` ignores its handle and builds a throwaway plan, so it is never used.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreatedPlan {
    pub plan: RawPlan,
    pub work_size: usize,
}

/// Which runtime a value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    Sim,
    Hip,
    Cuda,
}

impl RuntimeKind {
    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::Sim => "sim",
            RuntimeKind::Hip => "hip",
            RuntimeKind::Cuda => "cuda",
        }
    }
}

impl std::fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What `hipfft-pool info` prints about a runtime.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RuntimeInfo {
    /// Libraries loaded, with the path they came from.
    pub libraries: Vec<(String, String)>,
    /// Library versions, as the libraries report them.
    pub versions: Vec<(String, String)>,
    pub devices: Vec<String>,
}

/// The FFT library boundary. Implementations are `Send + Sync`; calls on one plan are
/// serialized by the pool (a plan carries one stream and one work area at a time).
pub trait Runtime: Send + Sync + 'static {
    fn kind(&self) -> RuntimeKind;

    fn info(&self) -> RuntimeInfo;

    fn device_count(&self) -> Result<i32>;
    /// The calling thread's current device (`hipGetDevice`).
    fn current_device(&self) -> Result<i32>;
    /// Make `device` current on the calling thread (`hipSetDevice`).
    fn set_device(&self, device: i32) -> Result<()>;

    /// `hipfftCreate`, `hipfftSetAutoAllocation(options.auto_allocation)`, then
    /// `hipfftMakePlanMany64` on the current device. `desc` has been validated. If a step
    /// after `hipfftCreate` fails, the handle is destroyed before returning the error.
    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan>;

    /// `hipfftSetStream`, then `hipfftSetWorkArea` when `work_area` is given, then the
    /// `hipfftExec*` that `transform` names (direction is used by C2C/Z2Z only). The caller
    /// guarantees no other thread is inside this call for the same plan, and never passes a
    /// null work area. The transform is enqueued: it may still run after this returns.
    #[allow(clippy::too_many_arguments)]
    fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()>;

    /// `hipfftDestroy`. May block: it can reach `hipFree`, which synchronizes the device.
    fn plan_destroy(&self, plan: RawPlan) -> Result<()>;

    /// `hipEventCreateWithFlags(hipEventDisableTiming)`.
    fn event_create(&self) -> Result<RawEvent>;
    /// `hipEventRecord`.
    fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()>;
    /// `hipEventQuery`: `Ok(true)` when complete, `Ok(false)` on `hipErrorNotReady`.
    fn event_query(&self, event: RawEvent) -> Result<bool>;
    /// `hipEventSynchronize`.
    fn event_synchronize(&self, event: RawEvent) -> Result<()>;
    /// `hipEventDestroy`.
    fn event_destroy(&self, event: RawEvent) -> Result<()>;

    /// `hipStreamCreateWithFlags(hipStreamNonBlocking)`.
    fn stream_create(&self) -> Result<RawStream>;
    /// `hipStreamSynchronize`.
    fn stream_synchronize(&self, stream: RawStream) -> Result<()>;
    /// `hipStreamDestroy`.
    fn stream_destroy(&self, stream: RawStream) -> Result<()>;

    /// `hipMalloc`. A zero-byte request returns a valid, non-null pointer.
    fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// `hipFree`.
    fn free(&self, ptr: DevicePtr) -> Result<()>;
    /// `hipMemcpy` host to device: synchronous for the host, but like `hipMemcpy` not
    /// ordered after work on non-blocking streams; synchronize those first.
    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()>;
    /// `hipMemcpy` device to host (same ordering as `memcpy_htod`).
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()>;
    /// `hipMemcpyAsync` device to device on `stream`.
    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()>;

    /// `hipStreamIsCapturing` / `cudaStreamIsCapturing`: whether work enqueued on `stream`
    /// now is captured into a graph (and runs only when the graph is launched). An event
    /// recorded during a capture proves nothing when queried, and no plan may be created or
    /// destroyed while one is active. The default: a runtime without graphs, never.
    fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        let _ = stream;
        Ok(false)
    }

    /// `hipLaunchHostFunc` / `cudaLaunchHostFunc`: runs `call` once the work enqueued so far
    /// on `stream` has completed; on a capturing stream it becomes a host node that runs each
    /// time the graph runs. The default: unavailable.
    fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()> {
        let _ = (stream, call);
        Err(crate::error::Error::Unavailable("this runtime has no host functions".into()))
    }
}

/// Runs `f` with `device` current, restoring the caller's device afterwards, so that a pool
/// working on a plan of another device never leaves the caller's thread rebound.
pub fn with_device<T>(rt: &dyn Runtime, device: i32, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let previous = rt.current_device()?;
    if previous == device {
        return f();
    }
    rt.set_device(device)?;
    let out = f();
    let restored = rt.set_device(previous);
    match (out, restored) {
        (Ok(v), Ok(())) => Ok(v),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e),
    }
}
