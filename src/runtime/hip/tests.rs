//! The runtime over stubbed entry points: what it passes to hipFFT and HIP, and how it
//! reads their statuses, without a GPU or a library file.

use super::runtime::{HipRuntime, hip_version_string};
use super::sys::{self, HipLib, HipfftLib, hipEvent_t, hipfftHandle};
use crate::desc::{PlanDesc, TransformType};
use crate::error::Error;
use crate::runtime::boundary::{CreatedPlan, DevicePtr, PlanOptions, RawEvent, RawPlan, Runtime};
use std::ffi::c_void;
use std::path::Path;
use crate::desc::Layout;
use std::ffi::{c_int, c_longlong};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn missing_files_are_unavailable_and_name_every_path() {
    let e =
        HipRuntime::load_from(Path::new("/nonexistent/a/libhipfft.so"), Path::new("/nonexistent/b/libamdhip64.so"))
            .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Unavailable(_)), "{msg}");
    assert!(msg.contains("/nonexistent/a/libhipfft.so") && msg.contains("/nonexistent/b/libamdhip64.so"), "{msg}");
}

#[test]
fn version_strings() {
    assert_eq!(hip_version_string(60241134), "60241134 (6.2.41134)");
    assert_eq!(hip_version_string(100), "100");
}

// Stubbed entry points: each test uses its own statics, since tests run in parallel.

const FAKE_PLAN: usize = 0x5eed_0000;
static DESTROYED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn create_fake(plan: *mut hipfftHandle) -> c_int {
    // SAFETY: the runtime under test passes a valid out pointer.
    unsafe { *plan = FAKE_PLAN as hipfftHandle };
    0
}
unsafe extern "C" fn destroy_record(plan: hipfftHandle) -> c_int {
    DESTROYED.store(plan as usize, Ordering::SeqCst);
    0
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn make_invalid_size(
    _: hipfftHandle,
    _: c_int,
    _: *mut c_longlong,
    _: *mut c_longlong,
    _: c_longlong,
    _: c_longlong,
    _: *mut c_longlong,
    _: c_longlong,
    _: c_longlong,
    _: c_int,
    _: c_longlong,
    _: *mut usize,
) -> c_int {
    crate::error::hipfft_result::INVALID_SIZE
}

#[test]
fn failed_make_destroys_the_handle_and_keeps_the_code() {
    let mut fft = HipfftLib::stubbed();
    fft.hipfftCreate = create_fake;
    fft.hipfftDestroy = destroy_record;
    fft.hipfftMakePlanMany64 = make_invalid_size;
    let rt = HipRuntime::from_entry_points(fft, HipLib::stubbed());
    let e = rt.plan_create(&PlanDesc::new(TransformType::C2C, &[8], 1), PlanOptions::default()).unwrap_err();
    match e {
        Error::Runtime { call, code } => {
            assert_eq!(call, "hipfftMakePlanMany64");
            assert_eq!((code.value, code.name), (8, "HIPFFT_INVALID_SIZE"));
        }
        other => panic!("{other}"),
    }
    assert_eq!(DESTROYED.load(Ordering::SeqCst), FAKE_PLAN);
}

#[derive(Debug, Default, Clone, PartialEq)]
struct MakeArgs {
    rank: i32,
    n: Vec<i64>,
    inembed: Option<Vec<i64>>,
    istride: i64,
    idist: i64,
    onembed: Option<Vec<i64>>,
    ostride: i64,
    odist: i64,
    ty: i32,
    batch: i64,
    auto: i32,
}
static MADE: Mutex<Option<MakeArgs>> = Mutex::new(None);
static AUTO: Mutex<i32> = Mutex::new(-1);

unsafe extern "C" fn set_auto_record(_: hipfftHandle, auto: c_int) -> c_int {
    *AUTO.lock().unwrap() = auto;
    0
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn make_record(
    _: hipfftHandle,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    ty: c_int,
    batch: c_longlong,
    work: *mut usize,
) -> c_int {
    let r = rank as usize;
    // SAFETY: non-null embeds hold `rank` entries (the runtime passes arrays of 3).
    let read = |p: *mut c_longlong| (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, r) }.to_vec());
    *MADE.lock().unwrap() = Some(MakeArgs {
        rank,
        n: read(n).unwrap(),
        inembed: read(inembed),
        istride,
        idist,
        onembed: read(onembed),
        ostride,
        odist,
        ty,
        batch,
        auto: *AUTO.lock().unwrap(),
    });
    // SAFETY: the runtime under test passes a valid out pointer.
    unsafe { *work = 4096 };
    0
}

#[test]
fn make_plan_arguments_follow_the_descriptor() {
    let mut fft = HipfftLib::stubbed();
    fft.hipfftCreate = create_fake;
    fft.hipfftSetAutoAllocation = set_auto_record;
    fft.hipfftMakePlanMany64 = make_record;
    let rt = HipRuntime::from_entry_points(fft, HipLib::stubbed());
    // Packed R2C: null embeds, packed strides and distances of each side.
    let made = rt.plan_create(&PlanDesc::new(TransformType::R2C, &[4, 10], 3), PlanOptions::default()).unwrap();
    assert_eq!(made, CreatedPlan { plan: RawPlan(FAKE_PLAN), work_size: 4096 });
    let args = MADE.lock().unwrap().take().unwrap();
    assert_eq!(
        args,
        MakeArgs {
            rank: 2,
            n: vec![4, 10],
            inembed: None,
            istride: 1,
            idist: 40,
            onembed: None,
            ostride: 1,
            odist: 24,
            ty: 0x2a,
            batch: 3,
            auto: 0,
        }
    );
    // Advanced layout on the input only, auto-allocation on: the packed output is spelled
    // out, since hipFFT (like cuFFT) takes the advanced layout only from two embeds.
    let desc = PlanDesc::new(TransformType::Z2Z, &[6], 2).with_input_layout(Layout::new(&[8], 2, 17));
    rt.plan_create(&desc, PlanOptions { auto_allocation: true }).unwrap();
    let args = MADE.lock().unwrap().take().unwrap();
    assert_eq!((args.inembed, args.istride, args.idist), (Some(vec![8]), 2, 17));
    assert_eq!((args.onembed, args.ostride, args.odist), (Some(vec![6]), 1, 6));
    assert_eq!((args.ty, args.auto), (0x69, 1));
}

static QUERY_STATUS: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn query_status(_: hipEvent_t) -> c_int {
    QUERY_STATUS.load(Ordering::SeqCst) as c_int
}
unsafe extern "C" fn no_device(n: *mut c_int) -> c_int {
    // SAFETY: the runtime under test passes a valid out pointer.
    unsafe { *n = 0 };
    sys::hip_error::hipErrorNoDevice
}
static MALLOC_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
unsafe extern "C" fn malloc_record(p: *mut *mut c_void, bytes: usize) -> c_int {
    MALLOC_BYTES.store(bytes, Ordering::SeqCst);
    // SAFETY: the runtime under test passes a valid out pointer.
    unsafe { *p = 0x1000 as *mut c_void };
    0
}
unsafe extern "C" fn error_name(_: c_int) -> *const std::ffi::c_char {
    c"hipErrorFromTheLibrary".as_ptr()
}

#[test]
fn hip_statuses_map_by_name_and_number() {
    let mut hip = HipLib::stubbed();
    hip.hipEventQuery = query_status;
    hip.hipGetDeviceCount = no_device;
    hip.hipMalloc = malloc_record;
    hip.hipGetErrorName = Some(error_name);
    let rt = HipRuntime::from_entry_points(HipfftLib::stubbed(), hip);
    QUERY_STATUS.store(0, Ordering::SeqCst);
    // SAFETY: the stubbed hipEventQuery reads no handle.
    assert!(unsafe { rt.event_query(RawEvent(1)) }.unwrap());
    QUERY_STATUS.store(600, Ordering::SeqCst);
    // SAFETY: the stubbed hipEventQuery reads no handle.
    assert!(!unsafe { rt.event_query(RawEvent(1)) }.unwrap(), "hipErrorNotReady is Ok(false)");
    QUERY_STATUS.store(400, Ordering::SeqCst);
    // SAFETY: the stubbed hipEventQuery reads no handle.
    let e = unsafe { rt.event_query(RawEvent(1)) }.unwrap_err();
    assert_eq!(e.to_string(), "hipEventQuery failed with HIP hipErrorInvalidResourceHandle (400)");
    // A code the table lacks takes the library's own name.
    QUERY_STATUS.store(4242, Ordering::SeqCst);
    // SAFETY: the stubbed hipEventQuery reads no handle.
    let e = unsafe { rt.event_query(RawEvent(1)) }.unwrap_err();
    assert_eq!(e.to_string(), "hipEventQuery failed with HIP hipErrorFromTheLibrary (4242)");
    assert_eq!(rt.device_count().unwrap(), 0, "hipErrorNoDevice counts as no devices");
    assert_eq!(rt.malloc(0).unwrap(), DevicePtr(0x1000));
    assert_eq!(MALLOC_BYTES.load(Ordering::SeqCst), 1, "a zero-byte request still gets a pointer");
}
