//! The simulated runtime's model of graph capture (`SimRuntime::begin_capture`,
//! `end_capture`, `graph_launch`; `Runtime::stream_is_capturing`, `launch_host_fn`): what
//! the interposer's capture handling is tested against. Every `unsafe` call here passes
//! handles and buffers this test made on the same runtime (the trait's contracts).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use hipfft_pool::{DevicePtr, Direction, HostCall, PlanDesc, PlanOptions, Runtime, SimConfig, SimRuntime, TransformType};

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

#[test]
fn a_captured_transform_runs_only_when_its_graph_is_launched() {
    let rt = SimRuntime::new(SimConfig::default());
    let s = rt.stream_create().unwrap();
    let desc = PlanDesc::new(TransformType::C2C, &[4], 1);
    let plan = rt.plan_create(&desc, PlanOptions { auto_allocation: true }).unwrap();
    let input = rt.malloc(32).unwrap();
    let output = rt.malloc(32).unwrap();
    unsafe { rt.memcpy_htod(input, &bytes_of(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0])) }.unwrap();
    unsafe { rt.memcpy_htod(output, &[0u8; 32]) }.unwrap();
    assert!(!unsafe { rt.stream_is_capturing(s) }.unwrap());
    rt.begin_capture(s).unwrap();
    assert!(unsafe { rt.stream_is_capturing(s) }.unwrap());
    unsafe { rt.plan_exec(plan.plan, TransformType::C2C, s, None, input, output, Direction::Forward) }.unwrap();
    let runs = AtomicUsize::new(0);
    // SAFETY: `runs` outlives every launch below, and `bump` calls no runtime.
    let call = unsafe { HostCall::new(bump, &runs as *const AtomicUsize as *mut c_void) };
    unsafe { rt.launch_host_fn(s, call) }.unwrap();
    let graph = rt.end_capture(s).unwrap();
    assert_eq!(graph.len(), 2);
    assert!(!unsafe { rt.stream_is_capturing(s) }.unwrap());
    unsafe { rt.stream_synchronize(s) }.unwrap();
    let mut out = vec![0u8; 32];
    unsafe { rt.memcpy_dtoh(&mut out, output) }.unwrap();
    assert_eq!(floats(&out), vec![0.0; 8], "nothing ran during the capture");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    for launch in 1..=2 {
        rt.graph_launch(&graph, s).unwrap();
        unsafe { rt.stream_synchronize(s) }.unwrap();
        unsafe { rt.memcpy_dtoh(&mut out, output) }.unwrap();
        assert_eq!(floats(&out)[0], 4.0, "DC of four ones");
        assert_eq!(runs.load(Ordering::SeqCst), launch, "the host node runs at each launch");
    }
    assert!(rt.violations().is_empty(), "{:?}", rt.violations());
    // A launch after the plan was destroyed is the misuse the interposer must never allow.
    unsafe { rt.plan_destroy(plan.plan) }.unwrap();
    rt.graph_launch(&graph, s).unwrap();
    unsafe { rt.stream_synchronize(s) }.unwrap();
    let v = rt.violations();
    assert!(v.iter().any(|l| l.contains("destroyed after the capture")), "{v:?}");
    unsafe { rt.free(input) }.unwrap();
    unsafe { rt.free(output) }.unwrap();
    unsafe { rt.stream_destroy(s) }.unwrap();
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
    let _ = rt.end_capture(s).unwrap();
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
    let _ = DevicePtr::NULL;
    unsafe { rt.event_destroy(ev) }.unwrap();
    unsafe { rt.stream_destroy(s) }.unwrap();
}
