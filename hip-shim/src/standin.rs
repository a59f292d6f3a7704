//! TEMPORARY stand-in for `hipfft_pool::sim::SimRuntime`, compiled only while that type does
//! not exist in this tree (see `build.rs`). Same constructor (`SimRuntime::from_env()`), a
//! minimal in-memory `Runtime`: device memory is host memory, work runs synchronously at
//! enqueue (so events are complete as soon as they are recorded), transforms are computed
//! with rustfft in f64. It honours one fault: `HIPFFT_POOL_SIM_FAIL_CREATE_EVERY=N` fails
//! every Nth plan creation with `HIPFFT_ALLOC_FAILED`, and `HIPFFT_POOL_SIM_DEVICES` (default
//! 1) sets the device count. Delete this file when the simulated runtime lands.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hipfft_pool::error::{Result, hipfft_result};
use hipfft_pool::hip::result::hip_code;
use hipfft_pool::hip::sys::hip_error as he;
use hipfft_pool::{
    CreatedPlan, DevicePtr, Direction, Error, Layout, PlanDesc, PlanOptions, RawEvent, RawPlan, RawStream, Runtime,
    RuntimeCode, RuntimeInfo, RuntimeKind, TransformType,
};
use rustfft::FftPlanner;
use rustfft::num_complex::Complex64;

const ALIGN: usize = 256;

#[derive(Default)]
struct State {
    /// start -> size
    allocations: BTreeMap<usize, usize>,
    plans: HashMap<usize, (PlanDesc, PlanOptions, usize)>,
    streams: HashSet<usize>,
    events: HashSet<usize>,
}

pub struct SimRuntime {
    devices: i32,
    fail_create_every: u64,
    creates: AtomicU64,
    next_id: AtomicUsize,
    state: Mutex<State>,
    planner: Mutex<FftPlanner<f64>>,
}

thread_local! {
    static CURRENT: Cell<i32> = const { Cell::new(0) };
}

fn hip_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: hip_code(value) }
}
fn fft_err(call: &'static str, value: i32) -> Error {
    Error::Runtime { call, code: RuntimeCode::hipfft(value) }
}

impl SimRuntime {
    pub fn from_env() -> Result<Self> {
        let num = |name: &'static str, default: u64| -> Result<u64> {
            match std::env::var(name) {
                Ok(v) if !v.is_empty() => v.parse().map_err(|_| Error::InvalidConfig {
                    field: name,
                    value: v,
                    reason: "not a non-negative integer",
                }),
                _ => Ok(default),
            }
        };
        Ok(SimRuntime {
            devices: num("HIPFFT_POOL_SIM_DEVICES", 1)? as i32,
            fail_create_every: num("HIPFFT_POOL_SIM_FAIL_CREATE_EVERY", 0)?,
            creates: AtomicU64::new(0),
            next_id: AtomicUsize::new(1),
            state: Mutex::new(State::default()),
            planner: Mutex::new(FftPlanner::new()),
        })
    }

    fn id(&self) -> usize {
        self.next_id.fetch_add(1, Ordering::Relaxed) << 4
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `[ptr, ptr + bytes)` must lie in one allocation.
    fn check_range(&self, call: &'static str, ptr: DevicePtr, bytes: usize) -> Result<()> {
        let st = self.state();
        match st.allocations.range(..=ptr.0).next_back() {
            Some((&start, &size)) if ptr.0.checked_add(bytes).is_some_and(|end| end <= start + size) => Ok(()),
            _ => Err(hip_err(call, he::hipErrorInvalidValue)),
        }
    }

    fn check_stream(&self, call: &'static str, s: RawStream) -> Result<()> {
        if s == RawStream::NULL || self.state().streams.contains(&s.0) {
            Ok(())
        } else {
            Err(hip_err(call, he::hipErrorInvalidResourceHandle))
        }
    }

    fn check_event(&self, call: &'static str, e: RawEvent) -> Result<()> {
        if self.state().events.contains(&e.0) { Ok(()) } else { Err(hip_err(call, he::hipErrorInvalidResourceHandle)) }
    }

    fn fft_axis(&self, data: &mut [Complex64], dims: &[usize], axis: usize, dir: Direction) {
        let len = dims[axis];
        if len == 1 {
            return;
        }
        let inner: usize = dims[axis + 1..].iter().product();
        let outer: usize = dims[..axis].iter().product();
        let fft = {
            let mut p = self.planner.lock().unwrap_or_else(|p| p.into_inner());
            match dir {
                Direction::Forward => p.plan_fft_forward(len),
                Direction::Inverse => p.plan_fft_inverse(len),
            }
        };
        let mut line = vec![Complex64::new(0.0, 0.0); len];
        for o in 0..outer {
            for i in 0..inner {
                let base = o * len * inner + i;
                for (k, v) in line.iter_mut().enumerate() {
                    *v = data[base + k * inner];
                }
                fft.process(&mut line);
                for (k, v) in line.iter().enumerate() {
                    data[base + k * inner] = *v;
                }
            }
        }
    }
}

/// Element offsets of every logical index of one batch, row-major over `dims`.
fn offsets(dims: &[i64], layout: &Layout) -> Vec<usize> {
    let r = dims.len();
    let mut pitch = vec![1i64; r];
    for k in (0..r.saturating_sub(1)).rev() {
        pitch[k] = pitch[k + 1] * layout.embed[k + 1];
    }
    let count: i64 = dims.iter().product();
    (0..count)
        .map(|mut lin| {
            let mut off = 0;
            for k in (0..r).rev() {
                off += (lin % dims[k]) * pitch[k];
                lin /= dims[k];
            }
            (off * layout.stride) as usize
        })
        .collect()
}

fn packed(dims: &[i64]) -> Layout {
    Layout::new(dims, 1, dims.iter().product())
}

impl Runtime for SimRuntime {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Sim
    }

    fn info(&self) -> RuntimeInfo {
        RuntimeInfo {
            libraries: vec![("sim".into(), "hip-shim stand-in (in process)".into())],
            versions: vec![("sim".into(), env!("CARGO_PKG_VERSION").into())],
            devices: (0..self.devices).map(|d| format!("stand-in simulated device {d}")).collect(),
        }
    }

    fn device_count(&self) -> Result<i32> {
        Ok(self.devices)
    }

    fn current_device(&self) -> Result<i32> {
        Ok(CURRENT.with(Cell::get))
    }

    fn set_device(&self, device: i32) -> Result<()> {
        if !(0..self.devices).contains(&device) {
            return Err(hip_err("hipSetDevice", he::hipErrorInvalidDevice));
        }
        CURRENT.with(|c| c.set(device));
        Ok(())
    }

    fn plan_create(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        let ext = desc.validate()?;
        let n = self.creates.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_create_every > 0 && n.is_multiple_of(self.fail_create_every) {
            return Err(fft_err("hipfftMakePlanMany64", hipfft_result::ALLOC_FAILED));
        }
        let work_size = ext.input_bytes.max(ext.output_bytes);
        let id = self.id();
        self.state().plans.insert(id, (*desc, options, work_size));
        Ok(CreatedPlan { plan: RawPlan(id), work_size })
    }

    fn plan_exec(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<()> {
        let call = "hipfftExec";
        let Some((desc, options, work_size)) = self.state().plans.get(&plan.0).copied() else {
            return Err(fft_err(call, hipfft_result::INVALID_PLAN));
        };
        if desc.transform != transform {
            return Err(fft_err(call, hipfft_result::INVALID_VALUE));
        }
        self.check_stream(call, stream)?;
        match work_area {
            Some(w) => self.check_range(call, w, work_size)?,
            None if !options.auto_allocation && work_size > 0 => {
                return Err(fft_err(call, hipfft_result::NO_WORKSPACE));
            }
            None => {}
        }
        let ext = desc.validate()?;
        self.check_range(call, input, ext.input_bytes)?;
        self.check_range(call, output, ext.output_bytes)?;

        let r = desc.rank();
        let in_dims = &ext.input_dims[..r];
        let out_dims = &ext.output_dims[..r];
        let in_layout = desc.input.unwrap_or_else(|| packed(in_dims));
        let out_layout = desc.output.unwrap_or_else(|| packed(out_dims));
        let in_offs = offsets(in_dims, &in_layout);
        let out_offs = offsets(out_dims, &out_layout);
        let real = transform.real_bytes() == 4;
        let batch = desc.batch as usize;

        // Gather every batch first: in-place transforms may overlap.
        let read = |off: usize| -> f64 {
            // SAFETY: offsets lie within the checked input extent.
            unsafe {
                if real {
                    (input.0 as *const f32).add(off).read_unaligned() as f64
                } else {
                    (input.0 as *const f64).add(off).read_unaligned()
                }
            }
        };
        let mut batches: Vec<Vec<Complex64>> = (0..batch)
            .map(|b| {
                let base = b * in_layout.dist as usize;
                in_offs
                    .iter()
                    .map(|&o| {
                        if transform.is_forward_real() {
                            Complex64::new(read(base + o), 0.0)
                        } else {
                            Complex64::new(read(2 * (base + o)), read(2 * (base + o) + 1))
                        }
                    })
                    .collect()
            })
            .collect();

        let udims = |d: &[i64]| d.iter().map(|&x| x as usize).collect::<Vec<_>>();
        let (ind, outd) = (udims(in_dims), udims(out_dims));
        for data in &mut batches {
            if transform.is_complex() {
                for axis in 0..r {
                    self.fft_axis(data, &ind, axis, direction);
                }
            } else if transform.is_forward_real() {
                for axis in 0..r {
                    self.fft_axis(data, &ind, axis, Direction::Forward);
                }
                // Keep the first n/2 + 1 along the last axis.
                let (n, h) = (ind[r - 1], outd[r - 1]);
                let rows = data.len() / n;
                *data = (0..rows).flat_map(|row| data[row * n..row * n + h].to_vec()).collect();
            } else {
                for axis in 0..r - 1 {
                    self.fft_axis(data, &ind, axis, Direction::Inverse);
                }
                // Rebuild each last-axis row from its half spectrum, inverse, take re.
                let (h, n) = (ind[r - 1], outd[r - 1]);
                let rows = data.len() / h;
                let mut full = Vec::with_capacity(rows * n);
                for row in 0..rows {
                    let half = &data[row * h..(row + 1) * h];
                    full.extend((0..n).map(|k| if k < h { half[k] } else { half[n - k].conj() }));
                }
                self.fft_axis(&mut full, &[rows, n], 1, Direction::Inverse);
                *data = full.into_iter().map(|c| Complex64::new(c.re, 0.0)).collect();
            }
        }

        let write = |off: usize, v: f64| {
            // SAFETY: offsets lie within the checked output extent.
            unsafe {
                if real {
                    (output.0 as *mut f32).add(off).write_unaligned(v as f32)
                } else {
                    (output.0 as *mut f64).add(off).write_unaligned(v)
                }
            }
        };
        for (b, data) in batches.iter().enumerate() {
            let base = b * out_layout.dist as usize;
            for (&o, v) in out_offs.iter().zip(data) {
                if transform.is_inverse_real() {
                    write(base + o, v.re);
                } else {
                    write(2 * (base + o), v.re);
                    write(2 * (base + o) + 1, v.im);
                }
            }
        }
        Ok(())
    }

    fn plan_destroy(&self, plan: RawPlan) -> Result<()> {
        match self.state().plans.remove(&plan.0) {
            Some(_) => Ok(()),
            None => Err(fft_err("hipfftDestroy", hipfft_result::INVALID_PLAN)),
        }
    }

    fn event_create(&self) -> Result<RawEvent> {
        let id = self.id();
        self.state().events.insert(id);
        Ok(RawEvent(id))
    }

    fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        self.check_event("hipEventRecord", event)?;
        self.check_stream("hipEventRecord", stream)
    }

    fn event_query(&self, event: RawEvent) -> Result<bool> {
        self.check_event("hipEventQuery", event).map(|()| true)
    }

    fn event_synchronize(&self, event: RawEvent) -> Result<()> {
        self.check_event("hipEventSynchronize", event)
    }

    fn event_destroy(&self, event: RawEvent) -> Result<()> {
        if self.state().events.remove(&event.0) {
            Ok(())
        } else {
            Err(hip_err("hipEventDestroy", he::hipErrorInvalidResourceHandle))
        }
    }

    fn stream_create(&self) -> Result<RawStream> {
        let id = self.id();
        self.state().streams.insert(id);
        Ok(RawStream(id))
    }

    fn stream_synchronize(&self, stream: RawStream) -> Result<()> {
        self.check_stream("hipStreamSynchronize", stream)
    }

    fn stream_destroy(&self, stream: RawStream) -> Result<()> {
        if self.state().streams.remove(&stream.0) {
            Ok(())
        } else {
            Err(hip_err("hipStreamDestroy", he::hipErrorInvalidResourceHandle))
        }
    }

    fn malloc(&self, bytes: usize) -> Result<DevicePtr> {
        let size = bytes.max(1);
        let layout = std::alloc::Layout::from_size_align(size, ALIGN)
            .map_err(|_| hip_err("hipMalloc", he::hipErrorOutOfMemory))?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(hip_err("hipMalloc", he::hipErrorOutOfMemory));
        }
        self.state().allocations.insert(p as usize, size);
        Ok(DevicePtr(p as usize))
    }

    fn free(&self, ptr: DevicePtr) -> Result<()> {
        let Some(size) = self.state().allocations.remove(&ptr.0) else {
            return Err(hip_err("hipFree", he::hipErrorInvalidValue));
        };
        // SAFETY: allocated above with this size and alignment.
        unsafe { std::alloc::dealloc(ptr.0 as *mut u8, std::alloc::Layout::from_size_align_unchecked(size, ALIGN)) };
        Ok(())
    }

    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        self.check_range("hipMemcpy", dst, src.len())?;
        // SAFETY: checked destination; the source is a live slice.
        unsafe { std::ptr::copy(src.as_ptr(), dst.as_ptr::<u8>(), src.len()) };
        Ok(())
    }

    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        self.check_range("hipMemcpy", src, dst.len())?;
        // SAFETY: checked source; the destination is a live slice.
        unsafe { std::ptr::copy(src.as_ptr::<u8>(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
        self.check_stream("hipMemcpyAsync", stream)?;
        self.check_range("hipMemcpyAsync", dst, bytes)?;
        self.check_range("hipMemcpyAsync", src, bytes)?;
        // SAFETY: both ranges checked.
        unsafe { std::ptr::copy(src.as_ptr::<u8>(), dst.as_ptr::<u8>(), bytes) };
        Ok(())
    }
}
