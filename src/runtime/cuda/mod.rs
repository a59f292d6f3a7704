//! cuFFT and the CUDA runtime, loaded at run time through cudarc's raw `sys` bindings.
//!
//! We call the CUDA *runtime* API (cudart), not the driver API: hipFFT on NVIDIA is cuFFT on
//! top of cudart, so devices, streams, events and memory behave exactly as they do under
//! hipFFT there (per-thread current device, primary contexts managed by cudart). The driver
//! API is used for one thing only, `cuDeviceGetName`, to avoid `cudaDeviceProp`, whose layout
//! differs between CUDA 12 and 13.
//!
//! Nothing is linked at build time (cudarc `dynamic-loading`), so the crate builds without a
//! CUDA toolkit. [`CudaRuntime::new`] checks that libcudart, libcufft and libcuda are present
//! and resolves every symbol used before any call is made, so a missing library or symbol is
//! `Error::Unavailable`, never a cudarc panic. The calls hold no state: this type is a token
//! proving the libraries are loaded.

// Private: its calls are only sound after `result::load` succeeded, which `CudaRuntime::new` ensures.
mod result;

pub use result::cuda_code;

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::runtime::boundary::{
    CreatedPlan, DevicePtr, HostCall, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo, RuntimeKind,
};

/// The cuFFT runtime. Cheap to create more than once: loading happens once per process.
#[derive(Debug)]
pub struct CudaRuntime {
    _loaded: (),
}

impl CudaRuntime {
    /// `Runtime::plan_create` without the capture-mode guard.
    fn make_plan(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let extents = desc.extents()?;
        let r = desc.rank();
        let mut n = [0i64; 3];
        n[..r].copy_from_slice(desc.dims());
        // Packed sides get a null embed; their stride/dist are ignored by cuFFT but set to
        // the packed values anyway.
        let packed = |dims: &[i64; 3]| dims[..r].iter().product::<i64>();
        // cuFFT takes the advanced layout only from two embeds: a packed side is spelled out.
        let layouts = desc.library_layouts();
        let (mut iembed, istride, idist) =
            layouts.map_or(([0; 3], 1, packed(&extents.input_dims)), |(l, _)| (l.embed, l.stride, l.dist));
        let (mut oembed, ostride, odist) =
            layouts.map_or(([0; 3], 1, packed(&extents.output_dims)), |(_, l)| (l.embed, l.stride, l.dist));
        let plan = result::cufft_create()?;
        // SAFETY: `plan` was just created and is made only here; the embeds hold `r` entries.
        let made = unsafe { result::cufft_set_auto_allocation(plan, options.auto_allocation) }.and_then(|()| unsafe {
            result::cufft_make_plan_many64(
                plan,
                &mut n[..r],
                layouts.is_some().then_some(&mut iembed[..r]),
                istride,
                idist,
                layouts.is_some().then_some(&mut oembed[..r]),
                ostride,
                odist,
                desc.transform,
                desc.batch,
            )
        });
        match made {
            Ok(work_size) => Ok(CreatedPlan { plan, work_size }),
            Err(e) => {
                // The first error is the one worth reporting; a failing destroy adds nothing.
                // SAFETY: the handle made above, used by nobody else.
                let _ = unsafe { result::cufft_destroy(plan) };
                Err(e)
            }
        }
    }

    /// Loads the CUDA libraries and checks that a device exists.
    ///
    /// `Error::Unavailable` when a library or symbol is missing (naming it and the file
    /// names tried), or when the runtime reports no usable device.
    pub fn new() -> Result<Self> {
        result::load()?;
        match result::device_count() {
            Ok(n) if n > 0 => Ok(CudaRuntime { _loaded: () }),
            Ok(_) => Err(Error::Unavailable("the CUDA runtime reports no devices".into())),
            Err(e) => Err(Error::Unavailable(format!("no usable CUDA device: {e}"))),
        }
    }
}

/// 13000 -> "13.0" (cudart and driver versions).
fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// 12000 -> "12.0.0" (`CUFFT_VERSION` = major * 1000 + minor * 100 + patch).
fn cufft_version(v: i32) -> String {
    format!("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100)
}

// SAFETY: every call is the cuFFT or CUDA runtime entry point its doc names, and returns
// what the library returned: cudaMalloc's allocation, a plan made by cufftMakePlanMany64
// with the work size it reported, handles from the library's own create calls.
unsafe impl Runtime for CudaRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Cuda
    }

    fn info(&self) -> RuntimeInfo {
        let show = |r: Result<i32>, f: fn(i32) -> String| match r {
            Ok(v) => format!("{} ({v})", f(v)),
            Err(e) => format!("unknown: {e}"),
        };
        let versions = vec![
            ("cuFFT".to_string(), show(result::cufft_version(), cufft_version)),
            ("CUDA runtime".to_string(), show(result::runtime_version(), cuda_version)),
            ("CUDA driver".to_string(), show(result::driver_version(), cuda_version)),
        ];
        let devices = (0..result::device_count().unwrap_or(0))
            .map(|d| match result::device_name(d) {
                Ok(name) => format!("{d}: {name}"),
                Err(e) => format!("{d}: (name unknown: {e})"),
            })
            .collect();
        RuntimeInfo { libraries: result::library_paths(), versions, devices }
    }

    fn device_count(&self) -> Result<i32> {
        result::device_count()
    }

    fn current_device(&self) -> Result<i32> {
        result::get_device()
    }

    fn set_device(&self, device: i32) -> Result<()> {
        result::set_device(device)
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        // Relaxed: the plan's allocations must neither fail nor break another thread's
        // global-mode capture.
        result::relaxed_capture(|| self.make_plan(desc, options))
    }

    unsafe fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        // SAFETY: the caller upholds `Runtime::plan_exec`'s contract.
        unsafe { self.plan_exec_bound(plan, transform, stream, work_area, input, output, direction, Rebind::ALL) }
    }

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
        let (s, w) = rebind.pick(stream, work_area);
        // SAFETY: the caller upholds `Runtime::plan_exec_bound`'s contract, which
        // covers each cuFFT call's (live plan of `transform`, live stream, buffers and work
        // area of the plan's sizes kept until completion; what is skipped the plan carries).
        unsafe {
            self.plan_bind(plan, s, w)?;
            result::cufft_exec(plan, transform, input, output, direction.raw())
        }
    }

    unsafe fn plan_bind(&self, plan: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        // SAFETY: the caller upholds `Runtime::plan_bind`'s contract (live plan and stream,
        // an area of the plan's work size).
        unsafe {
            if let Some(s) = stream {
                result::cufft_set_stream(plan, s)?;
            }
            if let Some(work) = work_area {
                result::cufft_set_work_area(plan, work)?;
            }
        }
        Ok(true)
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        // SAFETY: `Runtime::plan_destroy`'s contract is `cufft_destroy`'s.
        result::relaxed_capture(|| unsafe { result::cufft_destroy(plan) })
    }

    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        // SAFETY: the trait's contract (a live stream) is the call's.
        unsafe { result::stream_is_capturing(stream) }
    }

    unsafe fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()> {
        let (f, data) = (call.function(), call.data());
        // SAFETY: the trait's contract: a live stream, and `HostCall::new`'s (f may run on
        // any thread and calls no CUDA).
        unsafe { result::launch_host_func(stream, f, data) }
    }

    fn event_create(&self) -> Result<RawEvent> {
        result::event_create()
    }

    unsafe fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        // SAFETY: the trait's contract (live event, live stream) is the call's.
        unsafe { result::event_record(event, stream) }
    }

    unsafe fn event_query(&self, event: RawEvent) -> Result<bool> {
        // SAFETY: the trait's contract (live event) is the call's.
        unsafe { result::event_query(event) }
    }

    unsafe fn event_synchronize(&self, event: RawEvent) -> Result<()> {
        // SAFETY: the trait's contract (live event) is the call's.
        unsafe { result::event_synchronize(event) }
    }

    unsafe fn event_destroy(&self, event: RawEvent) -> Result<()> {
        // SAFETY: the trait's contract (live event, unused afterwards) is the call's.
        unsafe { result::event_destroy(event) }
    }

    fn stream_create(&self) -> Result<RawStream> {
        result::stream_create()
    }

    unsafe fn stream_synchronize(&self, stream: RawStream) -> Result<()> {
        // SAFETY: the trait's contract (live stream) is the call's.
        unsafe { result::stream_synchronize(stream) }
    }

    unsafe fn stream_destroy(&self, stream: RawStream) -> Result<()> {
        // SAFETY: the trait's contract (live created stream, unused afterwards) is the call's.
        unsafe { result::stream_destroy(stream) }
    }

    /// `cudaMalloc(0)` may return null, so a zero-byte request allocates one byte.
    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        result::malloc(bytes.max(1))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the trait's contract (null or ours, not freed, unused) is the call's.
        unsafe { result::free(ptr) }
    }

    /// `cudaMemcpy` on the legacy default stream, as `hipMemcpy` is on NVIDIA: it does not
    /// wait for work on non-blocking streams (synchronize those first).
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        // SAFETY: the trait's contract (`dst` holds `src.len()` bytes) is the call's.
        unsafe { result::memcpy_htod(dst, src) }
    }

    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        // SAFETY: the trait's contract (`src` holds `dst.len()` bytes) is the call's.
        unsafe { result::memcpy_dtoh(dst, src) }
    }

    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
        // SAFETY: the trait's contract (both ranges kept until completion, live stream) is
        // the call's.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(name: &str) -> bool {
        let check = match name {
            "cudart" => cudarc::runtime::sys::is_culib_present,
            "cufft" => cudarc::cufft::sys::is_culib_present,
            _ => cudarc::driver::sys::is_culib_present,
        };
        // SAFETY: the presence check only tries to open the library by its names.
        std::panic::catch_unwind(|| unsafe { check() }).unwrap_or(false)
    }

    /// Without CUDA (the build machine), `new` must name the missing library, not panic.
    #[test]
    fn new_names_the_missing_library() {
        let missing: Vec<_> = ["cudart", "cufft", "cuda"].into_iter().filter(|l| !present(l)).collect();
        let Some(first) = missing.first() else {
            eprintln!("skipped: all CUDA libraries are present here");
            return;
        };
        match CudaRuntime::new() {
            Err(Error::Unavailable(msg)) => {
                let so = format!("lib{first} (looked for lib{first}.so");
                assert!(msg.contains(&so), "message does not name lib{first}: {msg}");
                assert!(msg.contains("LD_LIBRARY_PATH"), "{msg}");
            }
            Err(e) => panic!("expected Error::Unavailable, got {e:?}"),
            Ok(_) => panic!("lib{first} is missing, yet CudaRuntime::new succeeded"),
        }
        // A second call answers the same, from the cached load result.
        assert!(matches!(CudaRuntime::new(), Err(Error::Unavailable(_))));
    }

    #[test]
    fn versions_are_decoded() {
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(cuda_version(12080), "12.8");
        assert_eq!(cufft_version(11206), "11.2.6");
        assert_eq!(cufft_version(12000), "12.0.0");
    }
}

/// Stream capture into a CUDA graph, for the GPU tests (feature `check`): what a framework
/// such as MLX does around its cuFFT calls.
#[cfg(feature = "check")]
pub mod graph {
    use cudarc::runtime::sys as rt;

    use crate::error::{Error, Result};
    use crate::runtime::boundary::RawStream;

    fn check(call: &'static str, e: rt::cudaError_t) -> Result<()> {
        if e == rt::cudaError::cudaSuccess {
            Ok(())
        } else {
            Err(Error::Unavailable(format!("{call} failed: {e:?}")))
        }
    }

    /// A graph captured from a stream and instantiated; destroyed on drop.
    pub struct Captured {
        graph: rt::cudaGraph_t,
        exec: rt::cudaGraphExec_t,
    }

    /// `cudaStreamBeginCapture` in global mode.
    ///
    /// # Safety
    /// `s` is a live, non-null stream of the CUDA runtime.
    ///
    /// # Examples
    ///
    /// See `tests/cuda_gpu.rs` (a GPU is needed).
    pub unsafe fn begin(s: RawStream) -> Result<()> {
        super::result::load()?;
        // SAFETY: the caller's promise; the runtime is loaded.
        check("cudaStreamBeginCapture", unsafe {
            rt::cudaStreamBeginCapture(s.0 as rt::cudaStream_t, rt::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal)
        })
    }

    /// `cudaStreamEndCapture` and `cudaGraphInstantiate`.
    ///
    /// # Safety
    /// `s` is the stream a [`begin`] started capturing.
    ///
    /// # Examples
    ///
    /// See `tests/cuda_gpu.rs` (a GPU is needed).
    pub unsafe fn end(s: RawStream) -> Result<Captured> {
        let mut graph: rt::cudaGraph_t = std::ptr::null_mut();
        // SAFETY: the caller's promise; the out pointer is a live local.
        check("cudaStreamEndCapture", unsafe { rt::cudaStreamEndCapture(s.0 as rt::cudaStream_t, &mut graph) })?;
        let mut exec: rt::cudaGraphExec_t = std::ptr::null_mut();
        // SAFETY: a graph just captured; the out pointer is a live local.
        if let Err(e) = check("cudaGraphInstantiate", unsafe { rt::cudaGraphInstantiate(&mut exec, graph, 0) }) {
            // SAFETY: ours, used by nothing.
            unsafe { rt::cudaGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Captured { graph, exec })
    }

    impl Captured {
        /// `cudaGraphLaunch` on `s`.
        ///
        /// # Safety
        /// `s` is a live stream of the CUDA runtime, and everything the captured work uses is
        /// still live.
        ///
        /// # Examples
        ///
        /// See `tests/cuda_gpu.rs` (a GPU is needed).
        pub unsafe fn launch(&self, s: RawStream) -> Result<()> {
            // SAFETY: the caller's promise; `exec` is ours and live.
            check("cudaGraphLaunch", unsafe { rt::cudaGraphLaunch(self.exec, s.0 as rt::cudaStream_t) })
        }
    }

    impl Drop for Captured {
        fn drop(&mut self) {
            // SAFETY: ours; a launch still running keeps what it needs (CUDA defers the free).
            unsafe {
                rt::cudaGraphExecDestroy(self.exec);
                rt::cudaGraphDestroy(self.graph);
            }
        }
    }
}
