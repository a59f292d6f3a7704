//! C2R overwrites its input (cuFFT and hipFFT; the simulated runtime does too): the
//! preserving execution copies it to scratch first. Both ways, on the sim and hip-over-shim.

mod common;

use std::sync::Arc;
use std::time::Duration;

use hipfft_pool::check::buffer::{DeviceBuffer, Stream};
use hipfft_pool::runtime::hip::HipRuntime;
use hipfft_pool::runtime::sim::SimRuntime;
use hipfft_pool::{Direction, PlanDesc, Runtime, TransformType, check::reference};

fn both_ways(rt: Arc<dyn Runtime>, t: TransformType) {
    let pool = common::pool(&rt, 2, 2, Duration::from_secs(5));
    let desc = PlanDesc::new(t, &[400], 3);
    let ext = desc.validate().unwrap();
    let input = reference::random_input(&desc, 9);
    let want = reference::expected_output(&desc, Direction::Inverse, &input);
    let stream = Stream::new(&rt).unwrap();
    let lease = pool.acquire(&desc).unwrap();
    let work = DeviceBuffer::new(&rt, lease.work_size().max(1)).unwrap();
    let run = |preserve: bool| {
        let d_in = DeviceBuffer::from_host(&rt, &input).unwrap();
        let d_out = DeviceBuffer::new(&rt, ext.output_bytes).unwrap();
        let scratch = DeviceBuffer::new(&rt, lease.input_bytes()).unwrap();
        let area = (lease.work_size() > 0).then(|| work.ptr());
        if preserve {
            // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
            unsafe { lease.exec_preserving_input(stream.raw(), d_in.ptr(), d_out.ptr(), Direction::Inverse, area, scratch.ptr()) }.unwrap();
        } else {
            // SAFETY: buffers of the pool's runtime sized from the descriptor and the work size; they and the stream outlive the transform.
            unsafe { lease.exec(stream.raw(), d_in.ptr(), d_out.ptr(), Direction::Inverse, area) }.unwrap();
        }
        stream.synchronize().unwrap();
        let err = reference::rel_l2_error(&reference::gather_output(&desc, &d_out.to_host().unwrap()), &want);
        (err, d_in.to_host().unwrap() == input)
    };
    let (err, kept) = run(false);
    assert!(err <= 1e-5);
    assert!(!kept, "{t} overwrote its input, as the libraries do");
    let (err, kept) = run(true);
    assert!(err <= 1e-5);
    assert!(kept, "{t} with a preserved input left it untouched");
}

#[test]
fn c2r_and_z2d_preserve_their_input_only_when_asked_on_the_sim() {
    for t in [TransformType::C2R, TransformType::Z2D] {
        both_ways(Arc::new(SimRuntime::new(Default::default())), t);
    }
}

#[test]
fn c2r_preserves_its_input_only_when_asked_through_hip_over_shim() {
    let hip = HipRuntime::load_from(&common::shim::hipfft_path(), &common::shim::hip_path()).unwrap();
    both_ways(Arc::new(hip), TransformType::C2R);
}

/// A preserving execution that is refused enqueues nothing, not even its copy: the caller
/// may free the scratch as soon as the error comes back.
#[test]
fn a_refused_preserving_execution_leaves_the_scratch_untouched() {
    let rt: Arc<dyn Runtime> = Arc::new(SimRuntime::new(Default::default()));
    let pool = common::pool(&rt, 2, 2, Duration::from_secs(5));
    let desc = PlanDesc::new(TransformType::C2R, &[400], 3);
    let ext = desc.validate().unwrap();
    let input = reference::random_input(&desc, 5);
    let stream = Stream::new(&rt).unwrap();
    let lease = pool.acquire(&desc).unwrap();
    let d_in = DeviceBuffer::from_host(&rt, &input).unwrap();
    let d_out = DeviceBuffer::new(&rt, ext.output_bytes).unwrap();
    let pattern = vec![0x5au8; lease.input_bytes()];
    let scratch = DeviceBuffer::from_host(&rt, &pattern).unwrap();
    let work = DeviceBuffer::new(&rt, lease.work_size().max(1)).unwrap();
    let area = (lease.work_size() > 0).then(|| work.ptr());
    // C2R runs inverse only.
    // SAFETY: refused by the argument checks before anything is enqueued.
    let e = unsafe { lease
        .exec_preserving_input(stream.raw(), d_in.ptr(), d_out.ptr(), Direction::Forward, area, scratch.ptr()) }
        .unwrap_err();
    assert!(e.to_string().contains("`direction`"), "{e}");
    // SAFETY: refused by the argument checks before anything is enqueued.
    let e = unsafe { lease
        .exec_preserving_input(stream.raw(), d_in.ptr(), d_out.ptr(), Direction::Inverse, area, d_out.ptr()) }
        .unwrap_err();
    assert!(e.to_string().contains("`scratch`"), "{e}");
    stream.synchronize().unwrap();
    assert!(scratch.to_host().unwrap() == pattern, "a refused call copied into the scratch");
}
