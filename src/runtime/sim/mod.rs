//! `SimRuntime`: a CPU stand-in for hipFFT and HIP, always built.
//!
//! It is the default runtime for tests and for the CLI without a GPU, and the ground truth
//! the pool's tests assert against: it behaves like the real libraries wherever the pool
//! depends on them (asynchronous streams, events in stream order, per-thread current
//! device, work areas really used as scratch, C2R clobbering its input, hipFFT's codes),
//! counts every handle, stream, event and byte, records every misuse as a sentence in
//! [`SimRuntime::violations`], and injects latencies, faults and hangs on request.

mod block;
mod codes;
mod config;
mod device;
mod event;
mod exec;
mod faults;
mod fft;
mod graph;
mod hip;
mod memory;
mod plan;
mod stream;
mod violations;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

pub use crate::runtime::codes::hip_error;
pub use graph::{SimCapture, SimKernel, SimNodeKind};
pub use config::{MAX_DEVICES, MAX_LATENCY_US, SimConfig, env_var_names, h200_create_cost, parse_env_value};

use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::Result;
use crate::runtime::boundary::{CreatedPlan, DevicePtr, HostCall, PlanOptions, RawEvent, RawPlan, RawStream, Rebind, Runtime, RuntimeInfo, RuntimeKind};

/// Distinguishes runtimes in the per-thread current-device table.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A CPU stand-in for hipFFT and HIP (see the module docs): the runtime of tests and of
/// machines without a GPU.
pub struct SimRuntime {
    id: u64,
    devices: i32,
    config: RwLock<SimConfig>,
    faults: faults::Faults,
    blocker: block::Blocker,
    plans: plan::Plans,
    streams: stream::Streams,
    events: event::Events,
    memory: memory::Memory,
    log: Arc<violations::Violations>,
    fft: Arc<fft::FftCache>,
    graphs: graph::Graphs,
    /// The last capture id handed out (`hipStreamGetCaptureInfo`'s id).
    captures: AtomicU64,
}

impl SimRuntime {
    /// A sim with `config`; `devices` is clamped to `1..=MAX_DEVICES`.
    pub fn new(mut config: SimConfig) -> Self {
        let devices = config.devices.clamp(1, MAX_DEVICES);
        if devices != config.devices {
            tracing::warn!("simulated device count {} clamped to {devices}", config.devices);
            config.devices = devices;
        }
        let log = Arc::new(violations::Violations::default());
        let fft: Arc<fft::FftCache> = Arc::default();
        SimRuntime {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            devices,
            config: RwLock::new(config),
            faults: faults::Faults::default(),
            blocker: block::Blocker::default(),
            plans: plan::Plans::default(),
            streams: stream::Streams::new(devices, log.clone()),
            events: event::Events::default(),
            memory: memory::Memory::default(),
            graphs: graph::Graphs::new(log.clone(), fft.clone()),
            captures: AtomicU64::new(0),
            log,
            fft,
        }
    }

    /// A sim configured from the `HIPFFT_POOL_SIM_*` variables; bad values are logged.
    pub fn from_env() -> Self {
        let (config, warnings) = SimConfig::from_env();
        for w in &warnings {
            tracing::warn!("{w}");
        }
        Self::new(config)
    }

    /// The current latency, fault and blocking settings.
    pub fn config(&self) -> SimConfig {
        self.config.read().clone()
    }

    /// Replaces the latency, fault and blocking settings (the device count stays) and
    /// restarts the every-K-th counters.
    pub fn set_faults(&self, mut config: SimConfig) {
        config.devices = self.devices;
        *self.config.write() = config;
        self.faults.reset();
    }

    /// Handles alive: created (or being created) and not yet destroyed.
    pub fn live_handles(&self) -> usize {
        self.plans.live()
    }
    /// Made handles alive on `device`.
    pub fn live_handles_on(&self, device: i32) -> usize {
        self.plans.live_on(device)
    }
    /// The most handles alive at once so far.
    pub fn peak_live_handles(&self) -> usize {
        self.plans.peak()
    }
    /// Successful creations.
    pub fn created_total(&self) -> u64 {
        self.plans.created()
    }
    /// `hipfftSetStream` and `hipfftSetWorkArea` calls made on live plans, each counted:
    /// what an execution or bind set rather than found set.
    ///
    /// ```
    /// use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
    /// assert_eq!(SimRuntime::new(SimConfig::default()).settings_calls(), 0);
    /// ```
    pub fn settings_calls(&self) -> u64 {
        self.plans.settings_calls.load(Ordering::SeqCst)
    }
    /// Simulated creation latency spent so far, over every creation started (the fixed
    /// `create_latency` plus the per-shape H200 cost when that is on): what a trace's
    /// creations cost, counted by the sim itself.
    pub fn creation_time(&self) -> std::time::Duration {
        self.plans.creation_time()
    }
        /// Handles freed, including by a failing or unblocked destroy.
    pub fn destroyed_total(&self) -> u64 {
        self.plans.destroyed()
    }
    /// Whether `plan` is alive (a destroy still in progress counts, as in `live_handles`).
    pub fn is_live(&self, plan: RawPlan) -> bool {
        self.plans.is_live(plan)
    }
    /// Executions of `plan` enqueued and not yet finished on their stream.
    pub fn pending_execs(&self, plan: RawPlan) -> usize {
        self.plans.pending(plan)
    }
    /// Every misuse seen so far, one sentence each.
    pub fn violations(&self) -> Vec<String> {
        self.log.all()
    }
    /// Threads blocked right now in an injected hang.
    pub fn blocked_calls(&self) -> usize {
        self.blocker.blocked()
    }
    /// Ends every injected hang; each blocked call returns `HIPFFT_INTERNAL_ERROR`. Later
    /// hangs block again.
    pub fn unblock_all(&self) {
        self.blocker.unblock_all()
    }
    /// Bytes from `malloc` not yet freed.
    pub fn allocated_bytes(&self) -> usize {
        self.memory.bytes()
    }
    /// Streams created and not destroyed (the null streams are not counted).
    pub fn live_streams(&self) -> usize {
        self.streams.live()
    }
    /// Events created and not destroyed.
    pub fn live_events(&self) -> usize {
        self.events.live()
    }

    fn current(&self) -> i32 {
        device::current(self.id)
    }

    /// `hipStreamBeginCapture`: from now on, transforms, copies and host functions enqueued
    /// on `stream` are recorded into a new graph instead of run.
    pub fn begin_capture(&self, stream: RawStream) -> Result<()> {
        const CALL: &str = "hipStreamBeginCapture";
        let s = self.capture_stream(CALL, stream)?;
        let graph = self.graphs.create();
        let id = self.captures.fetch_add(1, Ordering::Relaxed) + 1;
        if !s.begin_capture(id, graph) {
            let _ = self.graphs.destroy(graph);
            return Err(codes::hip_err(CALL, hip_error::hipErrorIllegalState));
        }
        Ok(())
    }

    /// `hipStreamGetCaptureInfo_v2`: the capture in progress on `stream` (its id, its graph
    /// and the nodes the next captured work will depend on), or `None`.
    pub fn capture_info(&self, stream: RawStream) -> Result<Option<SimCapture>> {
        let s = self.capture_stream("hipStreamGetCaptureInfo_v2", stream)?;
        Ok(s.capturing().map(|c| SimCapture { id: c.id, graph: c.graph, tail: c.tail }))
    }

    /// `hipStreamEndCapture`: the graph of what was captured since `begin_capture`.
    pub fn end_capture(&self, stream: RawStream) -> Result<u64> {
        const CALL: &str = "hipStreamEndCapture";
        let s = self.capture_stream(CALL, stream)?;
        let c = s.end_capture().ok_or_else(|| codes::hip_err(CALL, hip_error::hipErrorIllegalState))?;
        Ok(c.graph)
    }

    /// `hipGraphCreate`: an empty graph.
    pub fn graph_create(&self) -> u64 {
        self.graphs.create()
    }

    /// `hipGraphDestroy` (not of a graph a child node owns).
    pub fn graph_destroy(&self, graph: u64) -> Result<()> {
        self.graph_call("hipGraphDestroy", self.graphs.destroy(graph))
    }

    /// `hipGraphGetNodes`: the graph's nodes, in the order they were added.
    pub fn graph_nodes(&self, graph: u64) -> Result<Vec<u64>> {
        self.graph_call("hipGraphGetNodes", self.graphs.nodes(graph))
    }

    /// `hipGraphNodeGetType`.
    pub fn graph_node_kind(&self, node: u64) -> Result<SimNodeKind> {
        self.graph_call("hipGraphNodeGetType", self.graphs.kind(node))
    }

    /// `hipGraphNodeGetDependencies`.
    pub fn graph_node_deps(&self, node: u64) -> Result<Vec<u64>> {
        self.graph_call("hipGraphNodeGetDependencies", self.graphs.deps(node))
    }

    /// `hipGraphKernelNodeGetParams`: the node's function and argument record.
    pub fn kernel_node_params(&self, node: u64) -> Result<SimKernel> {
        self.graph_call("hipGraphKernelNodeGetParams", self.graphs.kernel(node))
    }

    /// `hipGraphKernelNodeSetParams`.
    pub fn kernel_node_set_params(&self, node: u64, kernel: SimKernel) -> Result<()> {
        self.graph_call("hipGraphKernelNodeSetParams", self.graphs.set_kernel(node, kernel))
    }

    /// `hipGraphChildGraphNodeGetGraph`: the graph a child node embeds (owned by the node).
    pub fn child_graph_of(&self, node: u64) -> Result<u64> {
        self.graph_call("hipGraphChildGraphNodeGetGraph", self.graphs.child(node))
    }

    /// `hipGraphAddKernelNode`: a kernel node (a copy of another's parameters, say).
    pub fn graph_add_kernel_node(&self, graph: u64, deps: &[u64], kernel: SimKernel) -> Result<u64> {
        self.graph_call("hipGraphAddKernelNode", self.graphs.add_kernel(graph, deps, kernel))
    }

    /// `hipGraphAddChildGraphNode`: embeds a deep copy of `child`.
    pub fn graph_add_child_node(&self, graph: u64, deps: &[u64], child: u64) -> Result<u64> {
        self.graph_call("hipGraphAddChildGraphNode", self.graphs.add_child(graph, deps, child))
    }

    /// `hipGraphAddEmptyNode`.
    pub fn graph_add_empty_node(&self, graph: u64, deps: &[u64]) -> Result<u64> {
        self.graph_call("hipGraphAddEmptyNode", self.graphs.add_empty(graph, deps))
    }

    /// `hipGraphClone`.
    pub fn graph_clone(&self, graph: u64) -> Result<u64> {
        self.graph_call("hipGraphClone", self.graphs.clone_graph(graph))
    }

    /// `hipGraphInstantiate`. Instantiating a graph that holds a destroyed plan's kernel is
    /// recorded as a misuse.
    pub fn graph_instantiate(&self, graph: u64) -> Result<u64> {
        self.graph_call("hipGraphInstantiate", self.graphs.instantiate(graph))
    }

    /// `hipGraphExecUpdate`: `false` when the topologies differ (the instantiation is left
    /// as it was). Updating one that holds a destroyed plan's kernel is recorded as a misuse.
    pub fn graph_exec_update(&self, exec: u64, graph: u64) -> Result<bool> {
        self.graph_call("hipGraphExecUpdate", self.graphs.update(exec, graph))
    }

    /// `hipGraphExecKernelNodeSetParams`: `node` is the node of the graph `exec` was
    /// instantiated from.
    pub fn graph_exec_kernel_node_set_params(&self, exec: u64, node: u64, kernel: SimKernel) -> Result<()> {
        self.graph_call("hipGraphExecKernelNodeSetParams", self.graphs.exec_set_kernel(exec, node, kernel))
    }

    /// `hipGraphLaunch`: enqueues one run of the instantiation on `stream` (any number of
    /// times). A kernel of a destroyed plan poisons its output and is recorded as a misuse.
    pub fn graph_launch(&self, exec: u64, stream: RawStream) -> Result<()> {
        const CALL: &str = "hipGraphLaunch";
        let s = self.capture_stream(CALL, stream)?;
        if s.is_capturing() {
            return Err(codes::hip_err(CALL, hip_error::hipErrorStreamCaptureUnsupported));
        }
        let job = self.graph_call(CALL, self.graphs.launch_job(exec))?;
        s.enqueue(job).map(drop).ok_or_else(|| codes::hip_err(CALL, hip_error::hipErrorInvalidResourceHandle))
    }

    /// `hipGraphExecDestroy`.
    pub fn graph_exec_destroy(&self, exec: u64) -> Result<()> {
        self.graph_call("hipGraphExecDestroy", self.graphs.destroy_exec(exec))
    }

    /// Graphs (not counting those child nodes embed) and instantiated graphs alive: a host
    /// that destroys what it made ends at (0, 0).
    ///
    /// ```
    /// use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
    /// let sim = SimRuntime::new(SimConfig::default());
    /// let g = sim.graph_create();
    /// assert_eq!(sim.live_graphs(), (1, 0));
    /// sim.graph_destroy(g)?;
    /// assert_eq!(sim.live_graphs(), (0, 0));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn live_graphs(&self) -> (usize, usize) {
        self.graphs.live()
    }

    /// A graph call's result: an unknown handle is `hipErrorInvalidValue`, logged.
    fn graph_call<T>(&self, call: &'static str, r: std::result::Result<T, String>) -> Result<T> {
        r.map_err(|why| {
            tracing::debug!("{call}: {why}");
            codes::hip_err(call, hip_error::hipErrorInvalidValue)
        })
    }

    fn capture_stream(&self, call: &'static str, stream: RawStream) -> Result<std::sync::Arc<stream::Stream>> {
        match self.streams.resolve(stream, self.current()) {
            Ok(Some(s)) => Ok(s),
            _ => Err(codes::hip_err(call, hip_error::hipErrorInvalidResourceHandle)),
        }
    }
}

impl Drop for SimRuntime {
    fn drop(&mut self) {
        self.blocker.unblock_all();
        self.streams.shutdown_all();
    }
}

// SAFETY: `malloc` returns host memory of the size asked for, which the sim's own copies and
// executions check against its allocation table; plans are made for their descriptor and
// its work size; handles are table keys, so a stale one is refused, never dereferenced.
unsafe impl Runtime for SimRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Sim
    }

    fn info(&self) -> RuntimeInfo {
        RuntimeInfo {
            libraries: vec![("sim".into(), "built-in".into())],
            versions: vec![("sim".into(), env!("CARGO_PKG_VERSION").into())],
            devices: (0..self.devices).map(|d| format!("Simulated device {d}")).collect(),
        }
    }

    fn device_count(&self) -> Result<i32> {
        Ok(self.devices)
    }

    fn current_device(&self) -> Result<i32> {
        Ok(self.current())
    }

    fn set_device(&self, device: i32) -> Result<()> {
        if !(0..self.devices).contains(&device) {
            return Err(codes::hip_err("hipSetDevice", hip_error::hipErrorInvalidDevice));
        }
        device::set(self.id, device);
        Ok(())
    }

    fn device_flags(&self) -> Result<Option<u32>> {
        Ok(Some(self.config.read().device_flags))
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        self.create_plan(desc, options)
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
        self.exec_plan(exec::ExecArgs { plan, transform, stream, work_area, input, output, direction, rebind: Rebind::ALL })
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
        self.exec_plan(exec::ExecArgs { plan, transform, stream, work_area, input, output, direction, rebind })
    }

    unsafe fn plan_bind(&self, plan: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        self.bind_plan(plan, stream, work_area)
    }

    unsafe fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        self.destroy_plan(plan)
    }

    fn event_create(&self) -> Result<RawEvent> {
        self.hip_event_create()
    }
    unsafe fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        self.hip_event_record(event, stream)
    }
    unsafe fn event_query(&self, event: RawEvent) -> Result<bool> {
        self.hip_event_query(event)
    }
    unsafe fn event_synchronize(&self, event: RawEvent) -> Result<()> {
        self.hip_event_synchronize(event)
    }
    unsafe fn event_destroy(&self, event: RawEvent) -> Result<()> {
        self.hip_event_destroy(event)
    }

    fn stream_create(&self) -> Result<RawStream> {
        self.hip_stream_create()
    }
    unsafe fn stream_synchronize(&self, stream: RawStream) -> Result<()> {
        self.hip_stream_synchronize(stream)
    }
    unsafe fn stream_destroy(&self, stream: RawStream) -> Result<()> {
        self.hip_stream_destroy(stream)
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        self.hip_malloc(bytes)
    }
    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        self.hip_free(ptr)
    }
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        self.hip_memcpy_htod(dst, src)
    }
    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        self.hip_memcpy_dtoh(dst, src)
    }
    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
        self.hip_memcpy_dtod_async(dst, src, bytes, stream)
    }

    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        Ok(self.capture_stream("hipStreamIsCapturing", stream)?.is_capturing())
    }

    unsafe fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()> {
        const CALL: &str = "hipLaunchHostFunc";
        let s = self.capture_stream(CALL, stream)?;
        let node: stream::Node = std::sync::Arc::new(move || call.run());
        match s.capture_with(|g, tail| self.graphs.add_closure(g, tail, node.clone(), false)) {
            Some(r) => r.map_err(|_| codes::hip_err(CALL, hip_error::hipErrorInvalidResourceHandle)),
            None => {
                s.enqueue(Box::new(move || node())).ok_or_else(|| codes::hip_err(CALL, hip_error::hipErrorInvalidResourceHandle))?;
                Ok(())
            }
        }
    }
}
