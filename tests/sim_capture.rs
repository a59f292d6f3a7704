//! The simulated runtime's model of graphs (`SimRuntime::begin_capture` ... `graph_launch`;
//! `Runtime::stream_is_capturing`, `launch_host_fn`): what the interposer's graph tracking is
//! tested against. A host's own graph work (copied kernel nodes, child graphs, clones,
//! instantiations updated in place) is modelled as on CUDA and HIP, and what the pool must
//! never allow (a kernel of a destroyed plan run, or held by an instantiation that is made
//! or updated) is recorded and poisons the output. Every `unsafe` call here passes handles
//! and buffers this test made on the same runtime (the trait's contracts).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use hipfft_pool::runtime::sim::{SimKernel, SimNodeKind};
use hipfft_pool::{CreatedPlan, DevicePtr, Direction, HostCall, PlanDesc, PlanOptions, RawStream, Runtime, SimConfig, SimRuntime, TransformType};

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

unsafe extern "C" fn bump(data: *mut c_void) {
    // SAFETY: the tests pass a pointer to a live AtomicUsize.
    unsafe { &*(data as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

/// A four-point C2C transform of ones (its DC term is 4) and the buffers it runs on.
struct Setup {
    rt: SimRuntime,
    s: RawStream,
    input: DevicePtr,
    output: DevicePtr,
}

impl Setup {
    fn new(config: SimConfig) -> Setup {
        let rt = SimRuntime::new(config);
        let s = rt.stream_create().unwrap();
        let input = rt.malloc(32).unwrap();
        let output = rt.malloc(32).unwrap();
        unsafe { rt.memcpy_htod(input, &bytes_of(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0])) }.unwrap();
        Setup { rt, s, input, output }
    }

    fn plan(&self, rank: usize) -> CreatedPlan {
        let dims = [4, 1, 1];
        self.rt.plan_create(&PlanDesc::new(TransformType::C2C, &dims[..rank], 1), PlanOptions { auto_allocation: true }).unwrap()
    }

    /// Captures one execution of `plan` into a new graph.
    fn capture(&self, plan: &CreatedPlan) -> u64 {
        self.rt.begin_capture(self.s).unwrap();
        unsafe { self.rt.plan_exec(plan.plan, TransformType::C2C, self.s, None, self.input, self.output, Direction::Forward) }.unwrap();
        self.rt.end_capture(self.s).unwrap()
    }

    fn clear(&self) {
        unsafe { self.rt.memcpy_htod(self.output, &[0u8; 32]) }.unwrap();
    }

    /// Launches `exec` and returns the output's first value.
    fn run(&self, exec: u64) -> f32 {
        self.clear();
        self.rt.graph_launch(exec, self.s).unwrap();
        unsafe { self.rt.stream_synchronize(self.s) }.unwrap();
        let mut out = vec![0u8; 32];
        unsafe { self.rt.memcpy_dtoh(&mut out, self.output) }.unwrap();
        floats(&out)[0]
    }

    fn violations_with(&self, what: &str) -> usize {
        self.rt.violations().iter().filter(|l| l.contains(what)).count()
    }
}

#[test]
fn a_captured_transform_runs_only_when_its_graph_is_launched_and_at_each_launch() {
    let t = Setup::new(SimConfig::default());
    let plan = t.plan(1);
    t.clear();
    assert!(!unsafe { t.rt.stream_is_capturing(t.s) }.unwrap());
    t.rt.begin_capture(t.s).unwrap();
    assert!(unsafe { t.rt.stream_is_capturing(t.s) }.unwrap());
    let info = t.rt.capture_info(t.s).unwrap().expect("a capture");
    assert!(info.tail.is_empty(), "nothing captured yet");
    unsafe { t.rt.plan_exec(plan.plan, TransformType::C2C, t.s, None, t.input, t.output, Direction::Forward) }.unwrap();
    let after = t.rt.capture_info(t.s).unwrap().unwrap();
    assert_eq!((after.id, after.graph, after.tail.len()), (info.id, info.graph, 1), "the transform's kernel is the tail");
    let runs = AtomicUsize::new(0);
    // SAFETY: `runs` outlives every launch below, and `bump` calls no runtime.
    let call = unsafe { HostCall::new(bump, &runs as *const AtomicUsize as *mut c_void) };
    unsafe { t.rt.launch_host_fn(t.s, call) }.unwrap();
    let graph = t.rt.end_capture(t.s).unwrap();
    assert_eq!(graph, info.graph);
    let nodes = t.rt.graph_nodes(graph).unwrap();
    let kinds: Vec<SimNodeKind> = nodes.iter().map(|n| t.rt.graph_node_kind(*n).unwrap()).collect();
    assert_eq!(kinds, vec![SimNodeKind::Kernel, SimNodeKind::Host]);
    assert_eq!(t.rt.graph_node_deps(nodes[1]).unwrap(), vec![nodes[0]], "captured in stream order");
    assert!(!unsafe { t.rt.stream_is_capturing(t.s) }.unwrap());
    unsafe { t.rt.stream_synchronize(t.s) }.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran during the capture");
    let exec = t.rt.graph_instantiate(graph).unwrap();
    for launch in 1..=2 {
        assert_eq!(t.run(exec), 4.0, "DC of four ones");
        assert_eq!(runs.load(Ordering::SeqCst), launch, "the host node runs at each launch");
    }
    assert!(t.rt.violations().is_empty(), "{:?}", t.rt.violations());
    t.rt.graph_exec_destroy(exec).unwrap();
    t.rt.graph_destroy(graph).unwrap();
    assert_eq!(t.rt.live_graphs(), (0, 0));
}

#[test]
fn a_launch_after_the_plan_was_destroyed_is_recorded_and_gives_wrong_values() {
    let t = Setup::new(SimConfig::default());
    let plan = t.plan(1);
    let graph = t.capture(&plan);
    let exec = t.rt.graph_instantiate(graph).unwrap();
    assert_eq!(t.run(exec), 4.0);
    unsafe { t.rt.plan_destroy(plan.plan) }.unwrap();
    assert!(t.run(exec).is_nan(), "a destroyed plan's kernel poisons its output");
    assert_eq!(t.violations_with("after the plan was destroyed"), 1, "{:?}", t.rt.violations());
    // Instantiating a graph that still holds the kernel is the misuse too.
    let again = t.rt.graph_instantiate(graph).unwrap();
    assert_eq!(t.violations_with("instantiated holding"), 1, "{:?}", t.rt.violations());
    for e in [exec, again] {
        t.rt.graph_exec_destroy(e).unwrap();
    }
    t.rt.graph_destroy(graph).unwrap();
}

/// MLX's command encoder: a capture's kernel copied into the buffer's own graph as a kernel
/// node, the buffer's graph instantiated once and, for the next buffer of the same
/// topology, the instantiation updated in place.
#[test]
fn copied_kernels_and_in_place_updates_carry_a_plan_into_graphs_the_capture_never_saw() {
    let t = Setup::new(SimConfig::default());
    let (a, b) = (t.plan(1), t.plan(1));
    let buffer = |plan: &CreatedPlan| {
        let captured = t.capture(plan);
        let nodes = t.rt.graph_nodes(captured).unwrap();
        let k: SimKernel = t.rt.kernel_node_params(nodes[0]).unwrap();
        let own = t.rt.graph_create();
        t.rt.graph_add_kernel_node(own, &[], k).unwrap();
        t.rt.graph_destroy(captured).unwrap();
        (own, k)
    };
    let (g1, ka) = buffer(&a);
    let (g2, kb) = buffer(&b);
    assert_ne!(ka.function, kb.function, "each plan loads its own kernels");
    let exec = t.rt.graph_instantiate(g1).unwrap();
    assert_eq!(t.run(exec), 4.0);
    assert!(t.rt.graph_exec_update(exec, g2).unwrap(), "same topology");
    assert_eq!(t.run(exec), 4.0, "b's kernel now");
    // `a` is held by nothing any more: destroying it is harmless.
    unsafe { t.rt.plan_destroy(a.plan) }.unwrap();
    assert_eq!(t.run(exec), 4.0);
    assert!(t.rt.violations().is_empty(), "{:?}", t.rt.violations());
    // `b` is held by the instantiation: destroy it and the next update is the misuse.
    unsafe { t.rt.plan_destroy(b.plan) }.unwrap();
    assert!(t.rt.graph_exec_update(exec, g2).unwrap());
    assert_eq!(t.violations_with("updated in place while it held"), 1, "{:?}", t.rt.violations());
    // A different topology is refused, the instantiation left as it was.
    let g3 = t.rt.graph_create();
    t.rt.graph_add_empty_node(g3, &[]).unwrap();
    assert!(!t.rt.graph_exec_update(exec, g3).unwrap());
    t.rt.graph_exec_destroy(exec).unwrap();
    for g in [g1, g2, g3] {
        t.rt.graph_destroy(g).unwrap();
    }
    assert_eq!(t.rt.live_graphs(), (0, 0));
}

#[test]
fn child_graphs_and_clones_are_deep_copies_that_outlive_their_source() {
    let t = Setup::new(SimConfig::default());
    let plan = t.plan(2);
    let captured = t.capture(&plan);
    assert_eq!(t.rt.graph_nodes(captured).unwrap().len(), 2, "a 2-D plan: two kernels");
    let parent = t.rt.graph_create();
    let node = t.rt.graph_add_child_node(parent, &[], captured).unwrap();
    let embedded = t.rt.child_graph_of(node).unwrap();
    assert_ne!(embedded, captured);
    assert!(t.rt.graph_destroy(embedded).is_err(), "an embedded graph dies with its node");
    t.rt.graph_destroy(captured).unwrap();
    let clone = t.rt.graph_clone(parent).unwrap();
    t.rt.graph_destroy(parent).unwrap();
    let exec = t.rt.graph_instantiate(clone).unwrap();
    t.clear();
    t.rt.graph_launch(exec, t.s).unwrap();
    unsafe { t.rt.stream_synchronize(t.s) }.unwrap();
    assert!(t.rt.violations().is_empty(), "{:?}", t.rt.violations());
    // A kernel of another plan set on the instantiation's node (by the clone's node).
    let other = t.plan(1);
    let g = t.capture(&other);
    let k = t.rt.kernel_node_params(t.rt.graph_nodes(g).unwrap()[0]).unwrap();
    let top = t.rt.graph_nodes(clone).unwrap()[0];
    assert!(t.rt.graph_exec_kernel_node_set_params(exec, top, k).is_err(), "a child node is not a kernel node");
    t.rt.graph_exec_destroy(exec).unwrap();
    t.rt.graph_destroy(clone).unwrap();
    t.rt.graph_destroy(g).unwrap();
    assert_eq!(t.rt.live_graphs(), (0, 0));
}

#[test]
fn shared_kernels_name_one_function_for_every_plan_of_a_shape() {
    let t = Setup::new(SimConfig { shared_kernels: true, ..SimConfig::default() });
    let (a, b) = (t.plan(1), t.plan(1));
    let (ga, gb) = (t.capture(&a), t.capture(&b));
    let k = |g| t.rt.kernel_node_params(t.rt.graph_nodes(g).unwrap()[0]).unwrap();
    let (ka, kb) = (k(ga), k(gb));
    assert_eq!(ka.function, kb.function, "one shape, one kernel");
    assert_ne!(ka.args, kb.args, "each transform's arguments point at its own plan");
    // b's transform needs b, whatever its function: destroying b breaks gb, not ga.
    unsafe { t.rt.plan_destroy(b.plan) }.unwrap();
    let (ea, eb) = (t.rt.graph_instantiate(ga).unwrap(), t.rt.graph_instantiate(gb).unwrap());
    assert_eq!(t.run(ea), 4.0);
    assert!(t.run(eb).is_nan());
    assert!(t.violations_with("after the plan was destroyed") >= 1);
    for e in [ea, eb] {
        t.rt.graph_exec_destroy(e).unwrap();
    }
    for g in [ga, gb] {
        t.rt.graph_destroy(g).unwrap();
    }
}

#[test]
fn what_a_capture_forbids_is_recorded() {
    let rt = SimRuntime::new(SimConfig::default());
    let s = rt.stream_create().unwrap();
    let ev = rt.event_create().unwrap();
    rt.begin_capture(s).unwrap();
    assert!(rt.begin_capture(s).is_err(), "one capture at a time");
    unsafe { rt.event_record(ev, s) }.unwrap();
    assert!(unsafe { rt.event_query(ev) }.unwrap(), "an event recorded inside a capture proves nothing: it reads complete");
    let plan = rt.plan_create(&PlanDesc::new(TransformType::R2C, &[16], 1), PlanOptions::default()).unwrap();
    assert!(unsafe { rt.stream_synchronize(s) }.is_err());
    unsafe { rt.plan_destroy(plan.plan) }.unwrap();
    let g = rt.end_capture(s).unwrap();
    assert!(rt.end_capture(s).is_err());
    let v = rt.violations();
    for what in ["recorded on stream", "plan created for", "destroyed while a stream", "synchronize of stream"] {
        assert!(v.iter().any(|l| l.contains(what)), "no \"{what}\" in {v:?}");
    }
    // Off a capture, a host function runs after the stream's work.
    let runs = AtomicUsize::new(0);
    // SAFETY: `runs` outlives the call (the stream is synchronized below).
    unsafe { rt.launch_host_fn(s, HostCall::new(bump, &runs as *const AtomicUsize as *mut c_void)) }.unwrap();
    unsafe { rt.stream_synchronize(s) }.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Unknown handles are refused, never followed.
    assert!(rt.graph_instantiate(0xdead).is_err());
    assert!(rt.graph_launch(0xdead, s).is_err());
    rt.graph_destroy(g).unwrap();
    unsafe { rt.event_destroy(ev) }.unwrap();
    unsafe { rt.stream_destroy(s) }.unwrap();
}
