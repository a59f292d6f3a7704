//!
//! Unsafe calls: every `unsafe` block passes handles this test made on the CUDA runtime and
//! buffers it allocated there at the sizes the descriptor's extents and the plan's work size
//! give; each lives until the stream it was used on is synchronized.
#![cfg(feature = "cuda")]
//! Real cuFFT transforms through `CudaRuntime`, checked against a naive DFT in f64.
//!
//! Where CUDA is unavailable each test prints `skipped: <reason>` and passes (a failure with
//! `HIPFFT_POOL_REQUIRE_GPU=1`, which the device scripts set), so this builds
//! and runs anywhere. On a GPU machine:
//!
//! ```text
//! cargo test --release --features cuda --test cuda_gpu -- --nocapture --test-threads=1
//! ```
//!
//! Every case uploads through a staging buffer and `memcpy_dtod_async` on a created stream,
//! executes with a work area of the size `plan_create` reported, records an event and
//! queries/synchronizes it, downloads, and compares the relative L2 error with the
//! reference (at most 1e-5 in single precision, 1e-12 in double).

use std::f64::consts::PI;

use hipfft_pool::runtime::cuda::CudaRuntime;
use hipfft_pool::{Api, Direction, Error, Layout, PlanDesc, PlanOptions, RawPlan, RawStream, Runtime, TransformType};

const TOL_F32: f64 = 1e-5;
const TOL_F64: f64 = 1e-12;

fn runtime() -> Option<CudaRuntime> {
    match CudaRuntime::new() {
        Ok(rt) => Some(rt),
        Err(e) => {
            hipfft_pool::check::skip_without_gpu(&e.to_string());
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reference
// ---------------------------------------------------------------------------------------------

type C = (f64, f64);

/// Deterministic inputs in [-1, 1) (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        bits as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Unnormalized multi-dimensional DFT of `batch` row-major arrays of shape `dims`, in place,
/// one axis at a time; `sign` -1 is forward. Twiddles use `(j * k) mod n`, so the reference
/// stays accurate to ~1e-15 even for long rows.
fn dft(data: &mut [C], dims: &[usize], batch: usize, sign: f64) {
    let total: usize = dims.iter().product();
    assert_eq!(data.len(), total * batch);
    for (axis, &n) in dims.iter().enumerate() {
        let inner: usize = dims[axis + 1..].iter().product();
        let tw: Vec<C> = (0..n)
            .map(|k| ((2.0 * PI * k as f64 / n as f64).cos(), sign * (2.0 * PI * k as f64 / n as f64).sin()))
            .collect();
        let mut line = vec![(0.0, 0.0); n];
        for b in 0..batch {
            let arr = &mut data[b * total..(b + 1) * total];
            for outer in 0..total / (n * inner) {
                for i in 0..inner {
                    let at = |j: usize| outer * n * inner + j * inner + i;
                    for (j, v) in line.iter_mut().enumerate() {
                        *v = arr[at(j)];
                    }
                    for k in 0..n {
                        let mut acc = (0.0, 0.0);
                        for (j, x) in line.iter().enumerate() {
                            let w = tw[(j * k) % n];
                            acc.0 += x.0 * w.0 - x.1 * w.1;
                            acc.1 += x.0 * w.1 + x.1 * w.0;
                        }
                        arr[at(k)] = acc;
                    }
                }
            }
        }
    }
}

/// Keeps the first `n_last / 2 + 1` entries of the last axis (the R2C output shape).
fn truncate_last(full: &[C], dims: &[usize]) -> Vec<C> {
    let last = *dims.last().unwrap();
    let half = last / 2 + 1;
    let rows = full.len() / last;
    (0..rows).flat_map(|r| full[r * last..r * last + half].iter().copied()).collect()
}

/// Rebuilds the full spectrum of a real signal from its half spectrum (Hermitian symmetry:
/// `X[k] = conj(X[-k])`), the input a C2R transform is defined on.
fn hermitian_extend(half: &[C], dims: &[usize], batch: usize) -> Vec<C> {
    let r = dims.len();
    let last = dims[r - 1];
    let h = last / 2 + 1;
    let total: usize = dims.iter().product();
    let half_total = total / last * h;
    let mut full = vec![(0.0, 0.0); total * batch];
    for b in 0..batch {
        for flat in 0..total {
            // Unravel the full index, then read it (or its mirror) from the half array.
            let mut idx = [0usize; 3];
            let mut rem = flat;
            for a in (0..r).rev() {
                idx[a] = rem % dims[a];
                rem /= dims[a];
            }
            let mirror = idx[r - 1] >= h;
            if mirror {
                for a in 0..r {
                    idx[a] = (dims[a] - idx[a]) % dims[a];
                }
            }
            let mut hflat = 0;
            for a in 0..r {
                let extent = if a == r - 1 { h } else { dims[a] };
                hflat = hflat * extent + idx[a];
            }
            let v = half[b * half_total + hflat];
            full[b * total + flat] = if mirror { (v.0, -v.1) } else { v };
        }
    }
    full
}

fn rel_l2(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let diff: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
    let norm: f64 = want.iter().map(|w| w * w).sum();
    (diff / norm).sqrt()
}

fn flatten(c: &[C]) -> Vec<f64> {
    c.iter().flat_map(|v| [v.0, v.1]).collect()
}

// ---------------------------------------------------------------------------------------------
// Host <-> device bytes
// ---------------------------------------------------------------------------------------------

fn to_bytes(values: &[f64], double: bool) -> Vec<u8> {
    if double {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    } else {
        values.iter().flat_map(|v| (*v as f32).to_ne_bytes()).collect()
    }
}

fn from_bytes(bytes: &[u8], double: bool) -> Vec<f64> {
    if double {
        bytes.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect()
    } else {
        bytes.chunks_exact(4).map(|b| f32::from_ne_bytes(b.try_into().unwrap()) as f64).collect()
    }
}

/// Rounds to the transform's precision, so the reference sees exactly what the GPU sees.
fn round(v: f64, double: bool) -> f64 {
    if double { v } else { v as f32 as f64 }
}

// ---------------------------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------------------------

struct Case {
    transform: TransformType,
    dims: Vec<usize>,
    batch: usize,
    direction: Direction,
    /// 1-D complex only: input (stride, dist); the output is given as an explicit packed layout.
    strided_input: Option<(usize, usize)>,
    /// Let cuFFT own the work area and run on the null stream (no `work_area`).
    auto_allocation: bool,
}

impl Case {
    fn new(transform: TransformType, dims: &[usize], batch: usize) -> Self {
        let direction = if transform.is_inverse_real() { Direction::Inverse } else { Direction::Forward };
        Case { transform, dims: dims.to_vec(), batch, direction, strided_input: None, auto_allocation: false }
    }

    fn label(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        let mut s = format!("{} n={} batch={}", self.transform, dims.join("x"), self.batch);
        if self.transform.is_complex() {
            s += if self.direction == Direction::Forward { " forward" } else { " inverse" };
        }
        if let Some((stride, dist)) = self.strided_input {
            s += &format!(" istride={stride} idist={dist}");
        }
        if self.auto_allocation {
            s += " auto-allocation null-stream";
        }
        s
    }

    /// Host input (interleaved scalars, before layout) and the expected packed output.
    fn data(&self) -> (Vec<f64>, Vec<f64>) {
        let t = self.transform;
        let double = t.is_double();
        let total: usize = self.dims.iter().product::<usize>() * self.batch;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (total as u64) << 7 ^ t.raw() as u64);
        if t.is_complex() {
            let x: Vec<C> = (0..total).map(|_| (round(rng.next(), double), round(rng.next(), double))).collect();
            let mut want = x.clone();
            dft(&mut want, &self.dims, self.batch, self.direction.raw() as f64);
            (flatten(&x), flatten(&want))
        } else if t.is_forward_real() {
            let x: Vec<f64> = (0..total).map(|_| round(rng.next(), double)).collect();
            let mut full: Vec<C> = x.iter().map(|v| (*v, 0.0)).collect();
            dft(&mut full, &self.dims, self.batch, -1.0);
            (x, flatten(&truncate_last(&full, &self.dims)))
        } else {
            // A valid C2R input is the half spectrum of a real signal.
            let mut y: Vec<C> = (0..total).map(|_| (rng.next(), 0.0)).collect();
            dft(&mut y, &self.dims, self.batch, -1.0);
            let half: Vec<C> =
                truncate_last(&y, &self.dims).iter().map(|v| (round(v.0, double), round(v.1, double))).collect();
            let mut full = hermitian_extend(&half, &self.dims, self.batch);
            dft(&mut full, &self.dims, self.batch, 1.0);
            (flatten(&half), full.iter().map(|v| v.0).collect())
        }
    }

    fn desc(&self) -> PlanDesc {
        let dims: Vec<i64> = self.dims.iter().map(|&d| d as i64).collect();
        let mut desc = PlanDesc::new(self.transform, &dims, self.batch as i64);
        if let Some((stride, dist)) = self.strided_input {
            desc = desc
                .with_input_layout(Layout::new(&dims, stride as i64, dist as i64))
                .with_output_layout(Layout::new(&dims, 1, dims[0]));
        }
        desc
    }

    /// Runs the case on the GPU and returns the relative L2 error.
    fn run(&self, rt: &CudaRuntime) -> Result<(f64, usize), Error> {
        let t = self.transform;
        let double = t.is_double();
        let desc = self.desc();
        let ext = desc.validate()?;
        let (input, want) = self.data();

        // Lay the input out as the descriptor says (packed unless strided).
        let input_bytes = match self.strided_input {
            None => to_bytes(&input, double),
            Some((stride, dist)) => {
                let n = self.dims[0];
                let mut laid = vec![0.0; 2 * ext.input_elements as usize];
                for b in 0..self.batch {
                    for x in 0..n {
                        let at = b * dist + x * stride;
                        laid[2 * at] = input[2 * (b * n + x)];
                        laid[2 * at + 1] = input[2 * (b * n + x) + 1];
                    }
                }
                to_bytes(&laid, double)
            }
        };
        assert_eq!(input_bytes.len(), ext.input_bytes);

        let staging = rt.malloc(ext.input_bytes)?;
        let d_in = rt.malloc(ext.input_bytes)?;
        let d_out = rt.malloc(ext.output_bytes)?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.memcpy_htod(staging, &input_bytes) }?;

        let created = rt.plan_create(&desc, PlanOptions { auto_allocation: self.auto_allocation })?;
        let (stream, work) = if self.auto_allocation {
            (RawStream::NULL, None)
        } else {
            (rt.stream_create()?, Some(rt.malloc(created.work_size)?))
        };
        let event = rt.event_create()?;

        // SAFETY: see the note at the top of this file.
        unsafe { rt.memcpy_dtod_async(d_in, staging, ext.input_bytes, stream) }?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.plan_exec(created.plan, t, stream, work, d_in, d_out, self.direction) }?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.event_record(event, stream) }?;
        // SAFETY: see the note at the top of this file.
        let _maybe_done = unsafe { rt.event_query(event) }?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.event_synchronize(event) }?;
        // SAFETY: see the note at the top of this file.
        assert!(unsafe { rt.event_query(event) }?, "event not complete after cudaEventSynchronize");
        // SAFETY: see the note at the top of this file.
        unsafe { rt.stream_synchronize(stream) }?;

        let mut out_bytes = vec![0u8; ext.output_bytes];
        // SAFETY: see the note at the top of this file.
        unsafe { rt.memcpy_dtoh(&mut out_bytes, d_out) }?;
        let got = from_bytes(&out_bytes, double);

        // SAFETY: see the note at the top of this file.
        unsafe { rt.event_destroy(event) }?;
        // SAFETY: see the note at the top of this file.
        unsafe { rt.plan_destroy(created.plan) }?;
        if let Some(w) = work {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.free(w) }?;
        }
        if stream != RawStream::NULL {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.stream_destroy(stream) }?;
        }
        for p in [staging, d_in, d_out] {
            // SAFETY: see the note at the top of this file.
            unsafe { rt.free(p) }?;
        }
        Ok((rel_l2(&got, &want), created.work_size))
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // C2C and Z2Z run in both directions.
    let both_ways = |c: Case, cases: &mut Vec<Case>| {
        if c.transform.is_complex() {
            cases.push(Case { direction: Direction::Inverse, ..Case::new(c.transform, &c.dims, c.batch) });
        }
        cases.push(c);
    };
    for t in TransformType::ALL {
        for n in [8, 400, 1024, 1009] {
            both_ways(Case::new(t, &[n], 3), &mut cases);
        }
        both_ways(Case::new(t, &[24, 40], 2), &mut cases);
        both_ways(Case::new(t, &[6, 10, 16], 2), &mut cases);
    }
    for t in [TransformType::C2C, TransformType::Z2Z] {
        cases.push(Case { strided_input: Some((2, 2 * 400 + 3)), ..Case::new(t, &[400], 3) });
        cases.push(Case { auto_allocation: true, ..Case::new(t, &[256], 2) });
    }
    for t in [TransformType::R2C, TransformType::Z2D] {
        cases.push(Case { auto_allocation: true, ..Case::new(t, &[256], 2) });
    }
    cases
}

#[test]
fn transforms_match_a_naive_dft() {
    let Some(rt) = runtime() else { return };
    rt.set_device(0).unwrap();
    let mut max = [0.0f64; 2];
    let mut failures = Vec::new();
    for case in cases() {
        let double = case.transform.is_double();
        let tol = if double { TOL_F64 } else { TOL_F32 };
        match case.run(&rt) {
            Ok((err, work)) => {
                let ok = err <= tol;
                println!(
                    "{:<4} {:<60} work={work:>8} B  rel_l2={err:.3e}",
                    if ok { "ok" } else { "FAIL" },
                    case.label()
                );
                max[double as usize] = max[double as usize].max(err);
                if !ok {
                    failures.push(format!("{}: rel_l2 {err:.3e} > {tol:e}", case.label()));
                }
            }
            Err(e) => {
                println!("ERR  {:<60} {e}", case.label());
                failures.push(format!("{}: {e}", case.label()));
            }
        }
    }
    println!(
        "max rel_l2: single {:.3e} (tolerance {TOL_F32:e}), double {:.3e} (tolerance {TOL_F64:e})",
        max[0], max[1]
    );
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn runtime_basics() {
    let Some(rt) = runtime() else { return };
    let info = rt.info();
    println!("libraries: {:?}\nversions: {:?}\ndevices: {:?}", info.libraries, info.versions, info.devices);
    let count = rt.device_count().unwrap();
    assert!(count >= 1);
    assert_eq!(info.devices.len(), count as usize);
    rt.set_device(count - 1).unwrap();
    assert_eq!(rt.current_device().unwrap(), count - 1);
    rt.set_device(0).unwrap();
    assert_eq!(rt.current_device().unwrap(), 0);

    // An invalid device is an error by name and number, not a crash.
    match rt.set_device(count + 7) {
        Err(Error::Runtime { code, .. }) => {
            println!("set_device({}) -> {code}", count + 7);
            assert_eq!(code.api, Api::Cuda);
        }
        other => panic!("set_device beyond the device count gave {other:?}"),
    }

    let zero = rt.malloc(0).unwrap();
    assert!(!zero.is_null(), "malloc(0) must return a non-null pointer");
    // SAFETY: see the note at the top of this file.
    unsafe { rt.free(zero) }.unwrap();

    // Round trip through device memory.
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let (a, b) = (rt.malloc(bytes.len()).unwrap(), rt.malloc(bytes.len()).unwrap());
    let stream = rt.stream_create().unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(a, &bytes) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtod_async(b, a, bytes.len(), stream) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_synchronize(stream) }.unwrap();
    let mut back = vec![0u8; bytes.len()];
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtoh(&mut back, b) }.unwrap();
    assert_eq!(back, bytes);
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_destroy(stream) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.free(a) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.free(b) }.unwrap();

    // A handle cuFFT never gave out is rejected with a cufftResult.
    // SAFETY: see the note at the top of this file.
    match unsafe { rt.plan_destroy(RawPlan(987_654)) } {
        Err(Error::Runtime { code, .. }) => {
            println!("cufftDestroy(987654) -> {code}");
            assert_eq!(code.api, Api::Cufft);
        }
        other => panic!("destroying a never-created plan gave {other:?}"),
    }
}

/// The reference itself, checked without a GPU: it agrees with rustfft, and the C2R path
/// (half spectrum -> Hermitian extension -> inverse) gives back `N` times the real signal.
#[test]
fn reference_is_sound() {
    use rustfft::{FftPlanner, num_complex::Complex64};
    for dims in [vec![8], vec![1009], vec![24, 40], vec![6, 10, 15]] {
        let batch = 2;
        let total: usize = dims.iter().product();
        let mut rng = Rng(0x1234_5678 + total as u64);
        let x: Vec<C> = (0..total * batch).map(|_| (rng.next(), rng.next())).collect();
        let mut ours = x.clone();
        dft(&mut ours, &dims, batch, -1.0);
        if dims.len() == 1 {
            let mut theirs: Vec<Complex64> = x.iter().map(|v| Complex64::new(v.0, v.1)).collect();
            FftPlanner::new().plan_fft_forward(total).process(&mut theirs);
            let theirs: Vec<C> = theirs.iter().map(|c| (c.re, c.im)).collect();
            let err = rel_l2(&flatten(&ours), &flatten(&theirs));
            assert!(err < 1e-13, "naive DFT vs rustfft, n={dims:?}: {err:e}");
        }
        let mut back = ours.clone();
        dft(&mut back, &dims, batch, 1.0);
        let scaled: Vec<C> = x.iter().map(|v| (v.0 * total as f64, v.1 * total as f64)).collect();
        assert!(rel_l2(&flatten(&back), &flatten(&scaled)) < 1e-13, "forward then inverse, dims {dims:?}");

        let y: Vec<C> = x.iter().map(|v| (v.0, 0.0)).collect();
        let mut spec = y.clone();
        dft(&mut spec, &dims, batch, -1.0);
        let mut full = hermitian_extend(&truncate_last(&spec, &dims), &dims, batch);
        assert!(rel_l2(&flatten(&full), &flatten(&spec)) < 1e-13, "Hermitian extension, dims {dims:?}");
        dft(&mut full, &dims, batch, 1.0);
        let got: Vec<f64> = full.iter().map(|v| v.0).collect();
        let want: Vec<f64> = y.iter().map(|v| v.0 * total as f64).collect();
        assert!(rel_l2(&got, &want) < 1e-13, "C2R reference, dims {dims:?}");
    }
}

/// On the GPU: `release_after` on a stream that is capturing a graph
/// (global mode, as MLX captures) puts the release in a host node after the captured work:
/// the plan stays leased until the graph ran (at a ceiling of 1 a miss for another shape
/// times out), and the transform the graph ran is right.
#[test]
fn release_after_on_a_capturing_stream_waits_for_the_graph() {
    use std::sync::Arc;
    use std::time::Duration;
    let Some(cuda) = runtime() else { return };
    let rt: Arc<dyn Runtime> = Arc::new(cuda);
    let cfg = hipfft_pool::PoolConfig::builder()
        .capacity(1)
        .private_ceiling(1)
        // Long enough for a first cuFFT create and destroy in a cold process (up to ~0.4 s
        // seen on the H200), which the last acquire below waits for.
        .acquire_timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let pool = hipfft_pool::PlanPool::new(cfg, rt.clone()).unwrap();
    let desc = PlanDesc::new(TransformType::C2C, &[256], 4);
    let n = 256 * 4;
    let mut rng = Rng(99);
    let signal: Vec<C> = (0..n).map(|_| (rng.next(), rng.next())).collect();
    let mut want = signal.clone();
    dft(&mut want, &[256], 4, -1.0);
    let input = rt.malloc(n * 8).unwrap();
    let output = rt.malloc(n * 8).unwrap();
    let stream = rt.stream_create().unwrap();
    let lease = pool.acquire(&desc).unwrap();
    let work = rt.malloc(lease.work_size().max(1)).unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_htod(input, &to_bytes(&flatten(&signal), false)) }.unwrap();
    // SAFETY: a live stream of this runtime.
    unsafe { hipfft_pool::runtime::cuda::graph::begin(stream) }.unwrap();
    // SAFETY: see the note at the top of this file; the buffers live past the launch below.
    unsafe { lease.exec(stream, input, output, Direction::Forward, Some(work)) }.unwrap();
    // SAFETY: the capturing stream, live until the end of the test.
    unsafe { lease.release_after(stream) }.unwrap();
    // SAFETY: the stream `begin` started capturing.
    let graph = unsafe { hipfft_pool::runtime::cuda::graph::end(stream) }.unwrap();
    let other = PlanDesc::new(TransformType::C2C, &[128], 1);
    let e = pool.acquire(&other).unwrap_err();
    assert!(matches!(e, Error::CeilingTimeout { .. }), "released before the graph ran: {e}");
    // SAFETY: the stream and every buffer the graph uses are live.
    unsafe { graph.launch(stream) }.unwrap();
    // SAFETY: see the note at the top of this file.
    unsafe { rt.stream_synchronize(stream) }.unwrap();
    let mut out = vec![0u8; n * 8];
    // SAFETY: see the note at the top of this file.
    unsafe { rt.memcpy_dtoh(&mut out, output) }.unwrap();
    let err = rel_l2(&from_bytes(&out, false), &flatten(&want));
    println!("captured C2C n=256 batch=4: relative L2 error {err:.2e}");
    assert!(err <= TOL_F32, "{err}");
    // The host node ran after the transform: the lease went, and the miss evicts the plan.
    assert!(pool.acquire(&other).is_ok(), "released once the graph ran");
    drop(graph);
    // SAFETY: see the note at the top of this file.
    unsafe {
        rt.stream_destroy(stream).unwrap();
        rt.free(input).unwrap();
        rt.free(output).unwrap();
        rt.free(work).unwrap();
    }
}
