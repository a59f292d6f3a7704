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
// SAFETY: as for Send: the call may run on any thread, and it is only read.
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

    /// The function.
    pub fn function(&self) -> unsafe extern "C" fn(*mut std::ffi::c_void) {
        self.f
    }

    /// Its argument.
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
    /// The null (default) stream of the current device.
    pub const NULL: RawStream = RawStream(0);
}

/// An event handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawEvent(pub usize);

/// A device pointer. On the simulated runtime device memory is host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePtr(pub usize);

impl DevicePtr {
    /// The null pointer, never a valid buffer.
    pub const NULL: DevicePtr = DevicePtr(0);
    /// Whether this is [`DevicePtr::NULL`].
    pub fn is_null(self) -> bool {
        self.0 == 0
    }
    /// The address of `p` (a device pointer, or host memory on the sim).
    pub fn from_ptr<T>(p: *const T) -> Self {
        DevicePtr(p as usize)
    }
    /// The address as a raw pointer, for the library calls.
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
    /// The handle, made and ready to execute.
    pub plan: RawPlan,
    /// Work-area bytes each execution needs (0: none).
    pub work_size: usize,
}

/// Which of a plan's two settings an execution sets first ([`Runtime::plan_exec_bound`]):
/// the plan carries the others from an earlier call. A plan keeps one stream and one work
/// area until they are set again, so a caller that knows what it carries skips the calls
/// that would set the same values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebind {
    /// Call `hipfftSetStream` first.
    pub stream: bool,
    /// Call `hipfftSetWorkArea` first (when a work area is given).
    pub work_area: bool,
}

impl Rebind {
    /// Set both, as [`Runtime::plan_exec`] does.
    pub const ALL: Rebind = Rebind { stream: true, work_area: true };

    /// Of an execution's stream and work area, what to set first: the arguments of the
    /// [`Runtime::plan_bind`] a runtime makes before the transform.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::{DevicePtr, RawStream, Rebind};
    ///
    /// let (s, w) = (RawStream(7), Some(DevicePtr(0x1000)));
    /// assert_eq!(Rebind::ALL.pick(s, w), (Some(s), w));
    /// assert_eq!(Rebind { stream: false, work_area: true }.pick(s, w), (None, w));
    /// assert_eq!(Rebind { stream: true, work_area: true }.pick(s, None), (Some(s), None));
    /// ```
    pub fn pick(self, stream: RawStream, work_area: Option<DevicePtr>) -> (Option<RawStream>, Option<DevicePtr>) {
        (self.stream.then_some(stream), work_area.filter(|_| self.work_area))
    }
}

/// Which runtime a value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// [`SimRuntime`](crate::runtime::sim::SimRuntime): the CPU stand-in.
    Sim,
    /// hipFFT and HIP (AMD, or NVIDIA through hipFFT's CUDA backend).
    Hip,
    /// cuFFT and the CUDA runtime (feature `cuda`).
    Cuda,
}

impl RuntimeKind {
    /// `sim`, `hip` or `cuda`: the names `--runtime` and `HIPFFT_POOL_RUNTIME` take.
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

/// `hipDeviceScheduleBlockingSync` (`cudaDeviceScheduleBlockingSync` has the same value):
/// the host thread blocks on a synchronization primitive while it waits for the device.
pub const DEVICE_SCHEDULE_BLOCKING_SYNC: u32 = 0x4;

/// What `hipfft-pool info` prints about a runtime.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RuntimeInfo {
    /// Libraries loaded, with the path they came from.
    pub libraries: Vec<(String, String)>,
    /// Library versions, as the libraries report them.
    pub versions: Vec<(String, String)>,
    /// One line per device: its ordinal and name.
    pub devices: Vec<String>,
}

/// The FFT library boundary. Implementations are `Send + Sync`; calls on one plan are
/// serialized by the pool (a plan carries one stream and one work area at a time).
///
/// # Where the unsafe boundary is
///
/// As in cudarc's `cufft::result`: a call that needs only the loaded library (a device
/// number, a size, a descriptor) is safe; a call that takes a raw handle or a device pointer
/// is an `unsafe fn`, because the library dereferences what it is given and a wrong integer
/// is undefined behaviour on a GPU (and host memory corruption on the sim, whose device
/// memory is host memory). Each `# Safety` section says what the caller guarantees; owning
/// wrappers (the pool's plans and leases, `check::buffer`'s `DeviceBuffer` and `Stream`)
/// discharge them once, so their users stay in safe code.
///
/// The handle rules every `# Safety` section below refers to:
/// - a *live plan* came from this runtime's [`Runtime::plan_create`] and has not been
///   passed to [`Runtime::plan_destroy`];
/// - a *live event* came from [`Runtime::event_create`] and was not destroyed;
/// - a *live stream* is [`RawStream::NULL`] or came from [`Runtime::stream_create`] and was
///   not destroyed;
/// - a *device range* of `n` bytes at `p` lies inside one allocation of this runtime's
///   [`Runtime::malloc`] that has not been freed (or, for a host that drives the library
///   itself, inside memory the library accepts as device memory).
///
/// # Safety
///
/// For implementors. Safe code trusts what a runtime returns (the owning wrappers copy into
/// what `malloc` gave, the pool hands out plans `plan_create` made), so an implementation
/// promises:
/// - `malloc(bytes)` returns a pointer that this runtime's memory calls and executions
///   accept as a device range of `bytes` bytes until it is freed;
/// - `plan_create` returns a live plan whose executions read and write no more than the
///   descriptor's extents and a work area of the `work_size` it reports;
/// - `event_create` and `stream_create` return live handles;
/// - no call touches memory beyond what its own `# Safety` section names, from any thread.
pub unsafe trait Runtime: Send + Sync + 'static {
    /// Which library this is.
    fn kind(&self) -> RuntimeKind;

    /// Libraries, versions and devices, for `hipfft-pool info` and logs.
    fn info(&self) -> RuntimeInfo;

    /// `hipGetDeviceCount`.
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
    /// `hipfftExec*` that `transform` names (direction is used by C2C/Z2Z only). The
    /// transform is enqueued: it may still run after this returns.
    ///
    /// # Safety
    /// - `plan` is a live plan of this runtime, made for `transform`, on the current device;
    ///   no other thread is inside `plan_exec` for it.
    /// - `stream` is a live stream of the current device.
    /// - `input` and `output` are device ranges of the sizes the plan's descriptor implies
    ///   (`work_area`, when given, of the plan's work size; never null), and stay allocated
    ///   until the transform completes on `stream`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()>;

    /// [`Runtime::plan_exec`] that sets the stream only when `rebind.stream` and the work
    /// area only when `rebind.work_area`: the plan already carries the others, as an earlier
    /// `plan_exec`, `plan_exec_bound` or [`Runtime::plan_bind`] set them. The default sets both
    /// ([`Runtime::plan_exec`]); a runtime that overrides this overrides `plan_bind` too.
    ///
    /// # Safety
    /// [`Runtime::plan_exec`]'s contract; and where `rebind` skips a setting, the plan
    /// carries `stream` (and `work_area`, when given) already.
    #[allow(clippy::too_many_arguments)]
    unsafe fn plan_exec_bound(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        rebind: Rebind,
    ) -> Result<()> {
        let _ = rebind;
        // SAFETY: the caller upholds `plan_exec`'s contract.
        unsafe { self.plan_exec(plan, transform, stream, work_area, input, output, direction) }
    }

    /// `hipfftSetStream` when `stream` is given, then `hipfftSetWorkArea` when `work_area`
    /// is, with no execution: what the plan's next executions run on, set ahead of them (a
    /// framework sets both outside a graph capture and executes inside it). Returns whether
    /// the plan now carries them; the default sets nothing and returns `false` (its
    /// `plan_exec_bound` sets both at every execution).
    ///
    /// # Safety
    /// `plan` is a live plan of this runtime on the current device, and no other thread is
    /// inside `plan_exec`, `plan_exec_bound` or `plan_bind` for it; `stream` is a live stream
    /// of the current device; `work_area` is a device range of the plan's work size (never
    /// null) that stays allocated while an execution that uses it is pending.
    unsafe fn plan_bind(&self, plan: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        let _ = (plan, stream, work_area);
        Ok(false)
    }

    /// `hipfftDestroy`. May block: it can reach `hipFree`, which synchronizes the device.
    ///
    /// # Safety
    /// `plan` is a live plan of this runtime with no execution still pending, and no other
    /// thread uses it; afterwards it is dead.
    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()>;

    /// `hipEventCreateWithFlags(hipEventDisableTiming)`.
    fn event_create(&self) -> Result<RawEvent>;
    /// `hipEventRecord`.
    ///
    /// # Safety
    /// `event` is a live event and `stream` a live stream of this runtime.
    unsafe fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()>;
    /// `hipEventQuery`: `Ok(true)` when complete, `Ok(false)` on `hipErrorNotReady`.
    ///
    /// # Safety
    /// `event` is a live event of this runtime.
    unsafe fn event_query(&self, event: RawEvent) -> Result<bool>;
    /// `hipEventSynchronize`.
    ///
    /// # Safety
    /// `event` is a live event of this runtime.
    unsafe fn event_synchronize(&self, event: RawEvent) -> Result<()>;
    /// `hipEventDestroy`.
    ///
    /// # Safety
    /// `event` is a live event of this runtime that no other thread uses; afterwards it is dead.
    unsafe fn event_destroy(&self, event: RawEvent) -> Result<()>;

    /// `hipStreamCreateWithFlags(hipStreamNonBlocking)`.
    fn stream_create(&self) -> Result<RawStream>;
    /// `hipStreamSynchronize`.
    ///
    /// # Safety
    /// `stream` is a live stream of this runtime.
    unsafe fn stream_synchronize(&self, stream: RawStream) -> Result<()>;
    /// `hipStreamDestroy`.
    ///
    /// # Safety
    /// `stream` came from [`Runtime::stream_create`] (not the null stream), was not destroyed,
    /// and no other thread uses it; afterwards it is dead.
    unsafe fn stream_destroy(&self, stream: RawStream) -> Result<()>;

    /// `hipMalloc`. A zero-byte request returns a valid, non-null pointer.
    fn malloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// `hipFree`.
    ///
    /// # Safety
    /// `ptr` is null or came from this runtime's [`Runtime::malloc`] and was not freed; no
    /// work still pending on any stream uses it (the library synchronizes, the caller must
    /// not enqueue more), and nothing reads it afterwards.
    unsafe fn free(&self, ptr: DevicePtr) -> Result<()>;
    /// `hipMemcpy` host to device: synchronous for the host, but like `hipMemcpy` not
    /// ordered after work on non-blocking streams; synchronize those first.
    ///
    /// # Safety
    /// `dst` is a device range of `src.len()` bytes that no pending work writes or reads.
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()>;
    /// `hipMemcpy` device to host (same ordering as `memcpy_htod`).
    ///
    /// # Safety
    /// `src` is a device range of `dst.len()` bytes that no pending work writes.
    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()>;
    /// `hipMemcpyAsync` device to device on `stream`.
    ///
    /// # Safety
    /// `dst` and `src` are device ranges of `bytes` bytes that stay allocated until the copy
    /// completes on `stream`, a live stream of this runtime.
    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()>;

    /// `hipGetDeviceFlags`: the current device's flags (scheduling: spin, yield, blocking
    /// sync; [`DEVICE_SCHEDULE_BLOCKING_SYNC`]), or `None` where the runtime cannot read
    /// them. The pool reads them when it is made and warns about blocking sync: set after the
    /// null stream's queue existed, it made the wait inside `hipFree` (reached by
    /// `hipfftDestroy`) never wake on a gfx1151. The default: `None`.
    fn device_flags(&self) -> Result<Option<u32>> {
        Ok(None)
    }

    /// `hipStreamIsCapturing` / `cudaStreamIsCapturing`: whether work enqueued on `stream`
    /// now is captured into a graph (and runs only when the graph is launched). An event
    /// recorded during a capture proves nothing when queried, and no plan may be created or
    /// destroyed while one is active. The default: a runtime without graphs, never.
    ///
    /// # Safety
    /// `stream` is a live stream of this runtime (or the null stream).
    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        let _ = stream;
        Ok(false)
    }

    /// `hipLaunchHostFunc` / `cudaLaunchHostFunc`: runs `call` once the work enqueued so far
    /// on `stream` has completed; on a capturing stream it becomes a host node that runs each
    /// time the graph runs. The default: unavailable.
    ///
    /// # Safety
    /// `stream` is a live stream of this runtime (or the null stream); `call` keeps
    /// [`HostCall::new`]'s contract.
    unsafe fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()> {
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
