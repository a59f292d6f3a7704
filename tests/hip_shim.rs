//! `HipRuntime` end to end, over hip-shim loaded by path as `libhipfft.so` + `libamdhip64.so`.
//!
//! The shim is built by this test (`cargo build -p hip-shim` with the profile and target
//! directory of this test binary; a no-op when it is fresh), or taken from `HIP_SHIM_PATH`
//! (a prebuilt `libhip_shim.so`, e.g. one built with `--features cuda`). It is exposed under
//! both names through symlinks in `<target>/tmp/hip-shim-lib/`, so one instance backs both.
//!
//! Tests that need a fresh process (the shim reads its environment once: fault injection,
//! backend choice, `HipRuntime::load`'s variables) re-run this binary as a child with
//! `--exact <name> --ignored` and the variables set; those tests do nothing unless
//! `HIP_SHIM_TEST_CHILD` is set.
//!
//! Unsafe calls: every `unsafe` block passes handles and buffers this test made through the
//! same runtime (the shim, over the sim), at the sizes the descriptor's extents give; the
//! tests of misuse pass stale handles on purpose, which the shim and the sim behind it
//! check and refuse (a recorded violation, not undefined behaviour).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hipfft_pool::error::hipfft_result;
use hipfft_pool::runtime::hip::result::hip_error_name;
use hipfft_pool::runtime::hip::{CandidateOrigin, HipLibrary, HipRuntime, library_candidates};
use hipfft_pool::{
    Api, DevicePtr, Direction, Error, Layout, PlanDesc, PlanOptions, RawStream, Runtime, RuntimeKind, TransformType,
};

mod common;
use common::shim::{hip_path, hipfft_path, shim_dir};

fn rt() -> &'static HipRuntime {
    static RT: OnceLock<HipRuntime> = OnceLock::new();
    RT.get_or_init(|| HipRuntime::load_from(&hipfft_path(), &hip_path()).expect("loading hip-shim"))
}

/// Plans the shim holds (its `hipShimLivePlanHandles` export; same instance as `rt()`).
fn live_shim_plans() -> i32 {
    let _ = rt();
    // SAFETY: loading the shim runs no initializer beyond its statics.
    let lib = unsafe { libloading::Library::new(hipfft_path()) }.unwrap();
    // SAFETY: the shim exports this symbol with this signature.
    let f = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"hipShimLivePlanHandles\0") }.unwrap();
    // SAFETY: takes no arguments.
    let n = unsafe { f() };
    std::mem::forget(lib);
    n
}

/// Re-runs this test binary for one `#[ignore]`d child test with `env` set.
fn run_child(test: &str, env: &[(&str, &str)]) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--ignored", "--nocapture", "--test-threads=1"])
        .env("HIP_SHIM_TEST_CHILD", "1")
        .env("HIP_SHIM_TEST_DIR", shim_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "child {test} failed:\n{text}");
}

fn in_child() -> bool {
    std::env::var_os("HIP_SHIM_TEST_CHILD").is_some()
}

// ---------------------------------------------------------------------------------------
// Data helpers and a naive DFT to compare against

#[derive(Clone, Copy, Debug, PartialEq)]
struct C {
    re: f64,
    im: f64,
}

fn lcg(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// Naive multi-dimensional DFT of a dense row-major array, `sign` -1 forward, +1 inverse,
/// unnormalized (hipFFT's convention).
fn dft(x: &[C], dims: &[usize], sign: f64) -> Vec<C> {
    let mut data = x.to_vec();
    for axis in 0..dims.len() {
        let len = dims[axis];
        let inner: usize = dims[axis + 1..].iter().product();
        let outer: usize = dims[..axis].iter().product();
        let mut out = data.clone();
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| o * len * inner + k * inner + i;
                for k in 0..len {
                    let (mut re, mut im) = (0.0, 0.0);
                    for j in 0..len {
                        let a = sign * 2.0 * std::f64::consts::PI * ((j * k) % len) as f64 / len as f64;
                        let v = data[at(j)];
                        re += v.re * a.cos() - v.im * a.sin();
                        im += v.re * a.sin() + v.im * a.cos();
                    }
                    out[at(k)] = C { re, im };
                }
            }
        }
        data = out;
    }
    data
}

/// The first `n/2 + 1` entries along the last axis.
fn half(x: &[C], dims: &[usize]) -> Vec<C> {
    let n = *dims.last().unwrap();
    let h = n / 2 + 1;
    x.chunks(n).flat_map(|row| row[..h].to_vec()).collect()
}

/// Host bytes of `values` as the transform's real scalar type.
fn to_bytes(values: &[f64], double: bool) -> Vec<u8> {
    if double {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    } else {
        values.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect()
    }
}

fn from_bytes(bytes: &[u8], double: bool) -> Vec<f64> {
    if double {
        bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
    } else {
        bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64).collect()
    }
}

fn interleave(x: &[C]) -> Vec<f64> {
    x.iter().flat_map(|c| [c.re, c.im]).collect()
}

fn assert_close(got: &[f64], want: &[f64], double: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let tol = if double { 1e-9 } else { 1e-4 } * scale;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: element {i}: got {g}, want {w} (tolerance {tol})");
    }
}

/// Device buffers freed on drop.
struct Buf<'a> {
    rt: &'a dyn Runtime,
    ptr: DevicePtr,
}
impl<'a> Buf<'a> {
    fn new(rt: &'a dyn Runtime, bytes: usize) -> Self {
        Buf { rt, ptr: rt.malloc(bytes).unwrap() }
    }
}
impl Drop for Buf<'_> {
    fn drop(&mut self) {
        // SAFETY: see the note at the top of this file.
        unsafe { self.rt.free(self.ptr) }.unwrap();
    }
}

/// Creates a plan for `desc`, runs it once on a fresh stream with a work area of the reported
/// size (or auto-allocation), waits on an event, and returns the output side's scalars.
fn run(desc: &PlanDesc, input: &[f64], direction: Direction, auto_allocation: bool) -> Vec<f64> {
    let rt: &dyn Runtime = rt();
    let t = desc.transform;
    let ext = desc.validate().unwrap();
    let bytes = to_bytes(input, t.is_double());
    assert!(bytes.len() <= ext.input_bytes, "input larger than the plan's input extent");
    let inp = Buf::new(rt, ext.input_bytes);
    let out = Buf::new(rt, ext.output_bytes);
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(inp.ptr, &bytes) }.unwrap();
    let created = rt.plan_create(desc, PlanOptions { auto_allocation }).unwrap();
    let work = (!auto_allocation).then(|| Buf::new(rt, created.work_size));
    let stream = rt.stream_create().unwrap();
    assert_ne!(stream, RawStream::NULL);
    // SAFETY: see the note at the top of this file.
    unsafe { rt.plan_exec(created.plan, t, stream, work.as_ref().map(|w| w.ptr), inp.ptr, out.ptr, direction) }.unwrap();
    let ev = rt.event_create().unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_record(ev, stream) }.unwrap();
    wait_event(rt, ev);
    let mut host = vec![0u8; ext.output_bytes];
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtoh(&mut host, out.ptr) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_destroy(ev) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_destroy(stream) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.plan_destroy(created.plan) }.unwrap();
    from_bytes(&host, t.is_double())
}

fn wait_event(rt: &dyn Runtime, ev: hipfft_pool::RawEvent) {
    let start = Instant::now();
    // SAFETY: see the note at the top of this file.
    while !unsafe { rt.event_query(ev) }.unwrap() {
        assert!(start.elapsed() < Duration::from_secs(30), "event never completed");
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_synchronize(ev) }.unwrap();
}

fn random_complex(count: usize, seed: u64, double: bool) -> Vec<C> {
    let mut s = seed;
    let round = |v: f64| if double { v } else { v as f32 as f64 };
    (0..count).map(|_| C { re: round(lcg(&mut s)), im: round(lcg(&mut s)) }).collect()
}

/// Checks one packed transform of `dims` x `batch` against the naive DFT.
fn check_packed(t: TransformType, dims: &[usize], batch: usize, direction: Direction, auto_allocation: bool) {
    let dims_i: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let desc = PlanDesc::new(t, &dims_i, batch as i64);
    let total: usize = dims.iter().product();
    let what = format!("{t} {dims:?} x{batch} {direction:?}");
    let double = t.is_double();
    let (input, want): (Vec<f64>, Vec<f64>) = if t.is_complex() {
        let x = random_complex(total * batch, 7 + total as u64, double);
        let sign = direction.raw() as f64;
        let want = x.chunks(total).flat_map(|b| interleave(&dft(b, dims, sign))).collect();
        (interleave(&x), want)
    } else if t.is_forward_real() {
        let x: Vec<C> =
            random_complex(total * batch, 11, double).into_iter().map(|c| C { re: c.re, im: 0.0 }).collect();
        let want = x.chunks(total).flat_map(|b| interleave(&half(&dft(b, dims, -1.0), dims))).collect();
        (x.iter().map(|c| c.re).collect(), want)
    } else {
        // A Hermitian half spectrum (of a real signal y); C2R returns total * y.
        let y: Vec<C> =
            random_complex(total * batch, 13, double).into_iter().map(|c| C { re: c.re, im: 0.0 }).collect();
        let spec: Vec<C> = y
            .chunks(total)
            .flat_map(|b| {
                let h = half(&dft(b, dims, -1.0), dims);
                h.into_iter().map(|c| C {
                    re: if double { c.re } else { c.re as f32 as f64 },
                    im: if double { c.im } else { c.im as f32 as f64 },
                })
            })
            .collect();
        let want = y.iter().map(|c| c.re * total as f64).collect();
        (interleave(&spec), want)
    };
    let got = run(&desc, &input, direction, auto_allocation);
    assert_close(&got, &want, double, &what);
}

// ---------------------------------------------------------------------------------------
// Search order (pure)

fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
}

fn paths(c: &[hipfft_pool::runtime::hip::Candidate]) -> Vec<String> {
    c.iter().map(|c| c.path.display().to_string()).collect()
}

#[test]
fn search_order_without_environment() {
    let c = library_candidates(HipLibrary::Hipfft, env_of(&[]));
    assert_eq!(paths(&c), ["/opt/rocm/lib/libhipfft.so", "libhipfft.so", "libhipfft.so.0"]);
    assert_eq!(c[0].origin, CandidateOrigin::OptRocm);
    assert!(c[1..].iter().all(|c| c.origin == CandidateOrigin::Loader));
    let c = library_candidates(HipLibrary::AmdHip64, env_of(&[]));
    assert_eq!(paths(&c)[..2], ["/opt/rocm/lib/libamdhip64.so", "libamdhip64.so"]);
}

#[test]
fn search_order_rocm_then_hip_then_opt_then_loader() {
    let env = [("ROCM_PATH", "/r"), ("HIP_PATH", "/h")];
    let c = library_candidates(HipLibrary::AmdHip64, env_of(&env));
    assert_eq!(
        paths(&c),
        [
            "/r/lib/libamdhip64.so",
            "/h/lib/libamdhip64.so",
            "/opt/rocm/lib/libamdhip64.so",
            "libamdhip64.so",
            "libamdhip64.so.6",
            "libamdhip64.so.7",
            "libamdhip64.so.5"
        ]
    );
    assert_eq!(c[0].origin, CandidateOrigin::RocmPath);
    assert_eq!(c[1].origin, CandidateOrigin::HipPath);
    // Duplicates collapse; empty variables count as unset.
    let env = [("ROCM_PATH", "/opt/rocm"), ("HIP_PATH", ""), ("HIPFFT_POOL_HIPFFT_LIB", "")];
    let c = library_candidates(HipLibrary::Hipfft, env_of(&env));
    assert_eq!(paths(&c), ["/opt/rocm/lib/libhipfft.so", "libhipfft.so", "libhipfft.so.0"]);
    assert_eq!(c[0].origin, CandidateOrigin::RocmPath);
}

#[test]
fn search_order_override_is_exclusive() {
    let env =
        [("HIPFFT_POOL_HIPFFT_LIB", "/x/my-hipfft.so"), ("ROCM_PATH", "/r"), ("HIPFFT_POOL_HIP_LIB", "/y/hip.so")];
    let c = library_candidates(HipLibrary::Hipfft, env_of(&env));
    assert_eq!(paths(&c), ["/x/my-hipfft.so"]);
    assert_eq!(c[0].origin, CandidateOrigin::Override("HIPFFT_POOL_HIPFFT_LIB"));
    let c = library_candidates(HipLibrary::AmdHip64, env_of(&env));
    assert_eq!(paths(&c), ["/y/hip.so"]);
}

// ---------------------------------------------------------------------------------------
// Loading and errors

#[test]
fn loads_and_reports_libraries_versions_devices() {
    let rt = rt();
    assert_eq!(rt.kind(), RuntimeKind::Hip);
    let info = rt.info();
    let libs: Vec<&str> = info.libraries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(libs, ["hipfft", "amdhip64"]);
    for (_, p) in &info.libraries {
        assert!(p.contains(&*shim_dir().to_string_lossy()), "{p}");
        assert!(p.contains("libhip_shim.so"), "the loader's resolved file is named: {p}");
    }
    let vnames: Vec<&str> = info.versions.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(vnames, ["hipfft", "hip runtime", "hip driver"]);
    let n = rt.device_count().unwrap();
    assert!(n >= 1);
    assert_eq!(info.devices.len(), n as usize);
    assert!(info.devices[0].starts_with("0: hip-shim over "), "{:?}", info.devices);
}

#[test]
fn missing_library_is_unavailable_naming_the_path() {
    let missing = shim_dir().join("no-such-libhipfft.so");
    let e = HipRuntime::load_from(&missing, &hip_path()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Unavailable(_)), "{msg}");
    assert!(msg.contains(&*missing.to_string_lossy()), "{msg}");
    assert!(msg.contains("libhipfft.so not found"), "{msg}");
    // Both missing: both named in one message.
    let missing_hip = shim_dir().join("no-such-libamdhip64.so");
    let msg = HipRuntime::load_from(&missing, &missing_hip).unwrap_err().to_string();
    assert!(msg.contains(&*missing.to_string_lossy()) && msg.contains(&*missing_hip.to_string_lossy()), "{msg}");
}

#[test]
fn library_missing_symbols_is_unavailable_naming_them() {
    // libc is a real shared library that exports none of hipFFT's entry points.
    let e = HipRuntime::load_from(Path::new("libc.so.6"), &hip_path()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Unavailable(_)), "{msg}");
    assert!(msg.contains("libc.so.6"), "{msg}");
    assert!(
        msg.contains("hipfftCreate") && msg.contains("hipfftMakePlanMany64") && msg.contains("hipfftExecZ2D"),
        "{msg}"
    );
    assert!(msg.contains("lacks 13 of the 13 hipFFT entry points"), "{msg}");
    assert!(!msg.contains("HIP runtime entry points"), "the HIP side resolved: {msg}");
    // And the HIP side.
    let msg = HipRuntime::load_from(&hipfft_path(), Path::new("libc.so.6")).unwrap_err().to_string();
    assert!(msg.contains("hipMalloc") && msg.contains("hipEventQuery") && msg.contains("HIP runtime"), "{msg}");
    assert!(!msg.contains("hipGetErrorName"), "optional symbols are not required: {msg}");
}

// ---------------------------------------------------------------------------------------
// Transforms through the Runtime trait

#[test]
fn every_transform_type_1d_against_a_naive_dft() {
    for t in TransformType::ALL {
        if t.is_complex() {
            check_packed(t, &[16], 3, Direction::Forward, false);
            check_packed(t, &[12], 2, Direction::Inverse, false);
        } else {
            check_packed(t, &[16], 3, if t.is_forward_real() { Direction::Forward } else { Direction::Inverse }, false);
            check_packed(t, &[15], 2, if t.is_forward_real() { Direction::Forward } else { Direction::Inverse }, false);
        }
    }
}

#[test]
fn multidimensional_transforms_against_a_naive_dft() {
    check_packed(TransformType::C2C, &[6, 10], 2, Direction::Forward, false);
    check_packed(TransformType::Z2Z, &[4, 3, 5], 1, Direction::Inverse, false);
    check_packed(TransformType::R2C, &[5, 7], 2, Direction::Forward, false);
    check_packed(TransformType::D2Z, &[4, 6], 1, Direction::Forward, false);
    check_packed(TransformType::C2R, &[6, 8], 1, Direction::Inverse, false);
    check_packed(TransformType::Z2D, &[3, 4, 5], 2, Direction::Inverse, false);
}

#[test]
fn auto_allocated_plans_run_without_a_work_area() {
    check_packed(TransformType::C2C, &[32], 2, Direction::Forward, true);
    check_packed(TransformType::D2Z, &[20], 1, Direction::Forward, true);
}

#[test]
fn advanced_layout_reaches_the_library() {
    // Input: every other complex element (istride 2) inside rows of 9 (inembed [.., 9]) with
    // batches 70 apart; output packed.
    let (n0, n1, batch) = (3usize, 8usize, 2usize);
    let layout = Layout::new(&[3, 9], 2, 70);
    let desc = PlanDesc::new(TransformType::Z2Z, &[n0 as i64, n1 as i64], batch as i64).with_input_layout(layout);
    let ext = desc.validate().unwrap();
    let mut input = vec![C { re: 0.0, im: 0.0 }; ext.input_elements as usize];
    let logical = random_complex(n0 * n1 * batch, 99, true);
    for b in 0..batch {
        for i in 0..n0 {
            for j in 0..n1 {
                input[b * 70 + (i * 9 + j) * 2] = logical[b * n0 * n1 + i * n1 + j];
            }
        }
    }
    let got = run(&desc, &interleave(&input), Direction::Forward, false);
    let want: Vec<f64> = logical.chunks(n0 * n1).flat_map(|b| interleave(&dft(b, &[n0, n1], -1.0))).collect();
    assert_close(&got, &want, true, "strided Z2Z");
}

#[test]
fn in_place_c2c() {
    let rt: &dyn Runtime = rt();
    let desc = PlanDesc::new(TransformType::C2C, &[10], 1);
    let x = random_complex(10, 5, false);
    let buf = Buf::new(rt, desc.validate().unwrap().input_bytes);
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(buf.ptr, &to_bytes(&interleave(&x), false)) }.unwrap();
    let plan = rt.plan_create(&desc, PlanOptions { auto_allocation: true }).unwrap().plan;
    // SAFETY: see the note at the top of this file.
    unsafe { rt.plan_exec(plan, TransformType::C2C, RawStream::NULL, None, buf.ptr, buf.ptr, Direction::Forward) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_synchronize(RawStream::NULL) }.unwrap();
    let mut host = vec![0u8; 80];
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtoh(&mut host, buf.ptr) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.plan_destroy(plan) }.unwrap();
    assert_close(&from_bytes(&host, false), &interleave(&dft(&x, &[10], -1.0)), false, "in-place C2C");
}

#[test]
fn exec_of_the_wrong_type_is_a_hipfft_code() {
    let rt: &dyn Runtime = rt();
    let desc = PlanDesc::new(TransformType::R2C, &[8], 1);
    let ext = desc.validate().unwrap();
    let (i, o) = (Buf::new(rt, ext.input_bytes), Buf::new(rt, ext.output_bytes));
    let plan = rt.plan_create(&desc, PlanOptions { auto_allocation: true }).unwrap().plan;
    let e =
        // SAFETY: see the note at the top of this file.
        unsafe { rt.plan_exec(plan, TransformType::C2C, RawStream::NULL, None, i.ptr, o.ptr, Direction::Forward) }.unwrap_err();
    match &e {
        Error::Runtime { call, code } => {
            assert_eq!(*call, "hipfftExecC2C");
            assert_eq!((code.api, code.value, code.name), (Api::Hipfft, 4, "HIPFFT_INVALID_VALUE"));
        }
        other => panic!("{other}"),
    }
    assert_eq!(e.to_string(), "hipfftExecC2C failed with hipFFT HIPFFT_INVALID_VALUE (4)");
    // SAFETY: see the note at the top of this file.
    unsafe { rt.plan_destroy(plan) }.unwrap();
    // A destroyed handle is no longer a plan.
    // SAFETY: see the note at the top of this file.
    let e = unsafe { rt.plan_destroy(plan) }.unwrap_err();
    assert!(matches!(e, Error::Runtime { code, .. } if code.value == hipfft_result::INVALID_PLAN), "{e}");
}

// ---------------------------------------------------------------------------------------
// Streams, events, memory, devices

#[test]
fn streams_events_and_copies() {
    let rt: &dyn Runtime = rt();
    let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let a = Buf::new(rt, data.len());
    let b = Buf::new(rt, data.len());
    let c = Buf::new(rt, data.len());
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(a.ptr, &data) }.unwrap();
    let s = rt.stream_create().unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtod_async(b.ptr, a.ptr, data.len(), s) }.unwrap();
    let ev = rt.event_create().unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_record(ev, s) }.unwrap();
    wait_event(rt, ev);
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_synchronize(s) }.unwrap();
    // On the null stream too.
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtod_async(c.ptr, b.ptr, data.len(), RawStream::NULL) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_record(ev, RawStream::NULL) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_synchronize(ev) }.unwrap();
    let mut back = vec![0u8; data.len()];
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtoh(&mut back, c.ptr) }.unwrap();
    assert_eq!(back, data);
    // Zero-byte copies and allocations.
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(a.ptr, &[]) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtod_async(a.ptr, b.ptr, 0, s) }.unwrap();
    let z = rt.malloc(0).unwrap();
    assert!(!z.is_null());
    // SAFETY: see the note at the top of this file.
    unsafe { rt.free(z) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.event_destroy(ev) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_destroy(s) }.unwrap();
}

#[test]
fn hip_errors_carry_name_and_number() {
    let rt: &dyn Runtime = rt();
    let check = |e: Error, call: &str| match e {
        Error::Runtime { call: c, code } => {
            assert_eq!(c, call);
            assert_eq!(code.api, Api::Hip);
            assert_ne!(code.value, 0);
            assert_eq!(code.name, hip_error_name(code.value), "named by number");
        }
        other => panic!("{call}: {other}"),
    };
    // A pointer that was never allocated.
    let bogus = Buf::new(rt, 64);
    let p = DevicePtr(bogus.ptr.0 + 8); // inside an allocation, not its start
    // SAFETY: see the note at the top of this file.
    check(unsafe { rt.free(p) }.unwrap_err(), "hipFree");
    // A device that does not exist.
    let n = rt.device_count().unwrap();
    check(rt.set_device(n).unwrap_err(), "hipSetDevice");
    assert_eq!(rt.current_device().unwrap(), 0);
    for d in 0..n {
        hipfft_pool::runtime::with_device(rt, d, || {
            assert_eq!(rt.current_device().unwrap(), d);
            Ok(())
        })
        .unwrap();
    }
    assert_eq!(rt.current_device().unwrap(), 0, "with_device restores the device");
}

#[test]
fn shim_checks_pointers_at_the_abi() {
    use hipfft_pool::runtime::hip::sys::hip_error as he;
    let fft = rt().hipfft_lib();
    let hip = rt().hip_lib();
    // SAFETY: see the note at the top of this file.
    unsafe {
        assert_eq!((fft.hipfftCreate)(std::ptr::null_mut()), hipfft_result::INVALID_VALUE);
        assert_eq!((fft.hipfftDestroy)(0x8 as _), hipfft_result::INVALID_PLAN);
        assert_eq!((fft.hipfftSetStream)(0x8 as _, std::ptr::null_mut()), hipfft_result::INVALID_PLAN);
        assert_eq!((fft.hipfftExecC2C)(0x8 as _, 8 as _, 8 as _, -1), hipfft_result::INVALID_PLAN);
        assert_eq!((fft.hipfftGetVersion)(std::ptr::null_mut()), hipfft_result::INVALID_VALUE);
        // A made plan rejects null buffers and a bad direction.
        let mut h = std::ptr::null_mut();
        assert_eq!((fft.hipfftCreate)(&mut h), 0);
        let mut n = [8i64];
        assert_eq!(
            (fft.hipfftMakePlanMany64)(
                h,
                1,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                1,
                8,
                std::ptr::null_mut(),
                1,
                8,
                0x29,
                1,
                std::ptr::null_mut()
            ),
            hipfft_result::INVALID_VALUE,
            "null n"
        );
        assert_eq!(
            (fft.hipfftMakePlanMany64)(
                h,
                1,
                n.as_mut_ptr(),
                std::ptr::null_mut(),
                1,
                8,
                std::ptr::null_mut(),
                1,
                8,
                0x33,
                1,
                std::ptr::null_mut()
            ),
            hipfft_result::INVALID_TYPE
        );
        let mut ws = usize::MAX;
        assert_eq!(
            (fft.hipfftMakePlanMany64)(
                h,
                1,
                n.as_mut_ptr(),
                std::ptr::null_mut(),
                1,
                8,
                std::ptr::null_mut(),
                1,
                8,
                0x29,
                1,
                &mut ws
            ),
            0
        );
        assert_ne!(ws, usize::MAX, "work size written");
        assert_eq!((fft.hipfftExecC2C)(h, std::ptr::null_mut(), 8 as _, -1), hipfft_result::INVALID_VALUE);
        assert_eq!((fft.hipfftExecC2C)(h, 8 as _, 8 as _, 0), hipfft_result::INVALID_VALUE, "direction 0");
        assert_eq!((fft.hipfftDestroy)(h), 0);

        assert_eq!((hip.hipMalloc)(std::ptr::null_mut(), 8), he::hipErrorInvalidValue);
        assert_eq!((hip.hipEventQuery)(std::ptr::null_mut()), he::hipErrorInvalidResourceHandle);
        assert_eq!((hip.hipStreamCreateWithFlags)(std::ptr::null_mut(), 1), he::hipErrorInvalidValue);
        assert_eq!((hip.hipGetDeviceCount)(std::ptr::null_mut()), he::hipErrorInvalidValue);
        assert_eq!((hip.hipMemcpy)(8 as _, 8 as _, 8, 4), he::hipErrorInvalidMemcpyDirection);
        assert_eq!((hip.hipFree)(std::ptr::null_mut()), 0, "hipFree(NULL) is a no-op");
        let mut name = [0 as std::ffi::c_char; 8];
        assert_eq!((hip.hipDeviceGetName)(name.as_mut_ptr(), 8, 0), 0);
        assert_eq!(std::ffi::CStr::from_ptr(name.as_ptr()).to_bytes().len(), 7, "truncated to fit with its NUL");
        let get_name = hip.hipGetErrorName.expect("the shim exports hipGetErrorName");
        assert_eq!(std::ffi::CStr::from_ptr(get_name(600)).to_str().unwrap(), "hipErrorNotReady");
    }
}

// ---------------------------------------------------------------------------------------
// Child processes: environment read once per process

/// Through hip-shim's `hipGetDeviceFlags` and the pool's HIP runtime.
#[test]
fn the_device_flags_are_read_through_hip_and_blocking_sync_warned_about() {
    run_child("child_device_flags", &[("HIPFFT_POOL_SIM_DEVICE_FLAGS", "4")]);
    assert_eq!(rt().device_flags().unwrap(), Some(0), "the shim's default flags");
}

#[test]
#[ignore = "run in a child process by the_device_flags_are_read_through_hip_and_blocking_sync_warned_about"]
fn child_device_flags() {
    if !in_child() {
        return;
    }
    let rt: std::sync::Arc<dyn Runtime> =
        std::sync::Arc::new(HipRuntime::load_from(&hipfft_path(), &hip_path()).expect("loading hip-shim"));
    assert_eq!(rt.device_flags().unwrap(), Some(4));
    let config = hipfft_pool::PoolConfig::builder().capacity(2).private_ceiling(2).build().unwrap();
    let pool = hipfft_pool::PlanPool::new(config, rt).unwrap();
    assert!(pool.warnings().iter().any(|w| w.contains("hipDeviceScheduleBlockingSync")), "{:?}", pool.warnings());
}

#[test]
fn injected_create_fault_propagates_by_name_and_number() {
    run_child("child_create_fault", &[("HIPFFT_POOL_SIM_FAIL_CREATE_EVERY", "1")]);
}

#[test]
#[ignore = "run in a child process by injected_create_fault_propagates_by_name_and_number"]
fn child_create_fault() {
    if !in_child() {
        return;
    }
    let rt = rt();
    let before = live_shim_plans();
    let e = rt.plan_create(&PlanDesc::new(TransformType::C2C, &[64], 1), PlanOptions::default()).unwrap_err();
    let msg = e.to_string();
    match e {
        Error::Runtime { call, code } => {
            assert_eq!(call, "hipfftMakePlanMany64", "{msg}");
            assert_eq!(code.api, Api::Hipfft, "{msg}");
            assert_ne!(code.value, hipfft_result::SUCCESS, "{msg}");
            assert_eq!(code.name, hipfft_result::name(code.value, false), "{msg}");
            assert!(msg.contains(&format!("{} ({})", code.name, code.value)), "{msg}");
        }
        other => panic!("not a hipFFT code: {other}"),
    }
    assert_eq!(live_shim_plans(), before, "the handle of the failed plan was destroyed");
}

#[test]
fn unknown_backend_reports_hip_not_initialized() {
    run_child("child_bad_backend", &[("HIP_SHIM_BACKEND", "bogus")]);
}

#[test]
#[ignore = "run in a child process by unknown_backend_reports_hip_not_initialized"]
fn child_bad_backend() {
    if !in_child() {
        return;
    }
    // Loading needs no backend; the first call that does fails with a HIP code.
    let rt = rt();
    let e = rt.device_count().unwrap_err();
    assert_eq!(e.to_string(), "hipGetDeviceCount failed with HIP hipErrorNotInitialized (3)");
    let e = rt.plan_create(&PlanDesc::new(TransformType::C2C, &[8], 1), PlanOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "hipfftCreate failed with hipFFT HIPFFT_SETUP_FAILED (7)");
}

#[test]
fn load_follows_the_override_variables() {
    let (f, h) = (hipfft_path(), hip_path());
    run_child(
        "child_load_env",
        &[("HIPFFT_POOL_HIPFFT_LIB", f.to_str().unwrap()), ("HIPFFT_POOL_HIP_LIB", h.to_str().unwrap())],
    );
    let missing = shim_dir().join("absent-libhipfft.so");
    run_child(
        "child_load_env_missing",
        &[("HIPFFT_POOL_HIPFFT_LIB", missing.to_str().unwrap()), ("HIPFFT_POOL_HIP_LIB", h.to_str().unwrap())],
    );
}

#[test]
#[ignore = "run in a child process by load_follows_the_override_variables"]
fn child_load_env() {
    if !in_child() {
        return;
    }
    let rt = HipRuntime::load().unwrap();
    let info = rt.info();
    assert!(info.libraries[0].1.contains("$HIPFFT_POOL_HIPFFT_LIB"), "{:?}", info.libraries);
    assert!(info.libraries[1].1.contains("$HIPFFT_POOL_HIP_LIB"), "{:?}", info.libraries);
    assert!(rt.device_count().unwrap() >= 1);
}

#[test]
#[ignore = "run in a child process by load_follows_the_override_variables"]
fn child_load_env_missing() {
    if !in_child() {
        return;
    }
    let e = HipRuntime::load().unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Unavailable(_)), "{msg}");
    let want = std::env::var("HIPFFT_POOL_HIPFFT_LIB").unwrap();
    assert!(msg.contains(&want) && msg.contains("$HIPFFT_POOL_HIPFFT_LIB"), "{msg}");
    // The override is exclusive: nothing else was tried.
    assert!(!msg.contains("/opt/rocm"), "{msg}");
}

#[test]
fn load_prefers_a_hipfft_the_process_already_mapped() {
    run_child(
        "child_load_already_loaded",
        &[("HIPFFT_POOL_HIP_LIB", hip_path().to_str().unwrap()), ("ROCM_PATH", "/nonexistent-rocm")],
    );
}

#[test]
#[ignore = "run in a child process by load_prefers_a_hipfft_the_process_already_mapped"]
fn child_load_already_loaded() {
    if !in_child() {
        return;
    }
    // Map the shim by full path, as a program linked against hipFFT would have it mapped
    // (the shim carries hipFFT's soname, libhipfft.so.0).
    // SAFETY: see the note at the top of this file.
    std::mem::forget(unsafe { libloading::Library::new(hipfft_path()) }.unwrap());
    let rt = HipRuntime::load().unwrap();
    let info = rt.info();
    assert!(info.libraries[0].1.starts_with("libhipfft.so.0 (already loaded in this process)"), "{:?}", info.libraries);
    assert!(info.libraries[0].1.contains("libhip_shim.so"), "{:?}", info.libraries);
    assert!(info.libraries[1].1.contains("$HIPFFT_POOL_HIP_LIB"), "{:?}", info.libraries);
    assert!(rt.device_count().unwrap() >= 1);
}
