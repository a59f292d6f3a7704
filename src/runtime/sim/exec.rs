//! `plan_exec`: every check hipFFT makes (and the misuses the pool must never commit), then
//! the transform is enqueued on the stream's worker, so it is still in flight on return.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::SimRuntime;
use super::codes::fft_err;
use super::fft::{self, Buffers};
use super::plan::{Lookup, PlanRecord};
use crate::desc::{Direction, TransformType};
use crate::error::{Error, Result, hipfft_result as code};
use crate::runtime::boundary::{DevicePtr, RawPlan, RawStream, Rebind};

/// The `hipfftExec*` entry point for `t`.
pub(crate) fn exec_call(t: TransformType) -> &'static str {
    match t {
        TransformType::R2C => "hipfftExecR2C",
        TransformType::C2R => "hipfftExecC2R",
        TransformType::C2C => "hipfftExecC2C",
        TransformType::D2Z => "hipfftExecD2Z",
        TransformType::Z2D => "hipfftExecZ2D",
        TransformType::Z2Z => "hipfftExecZ2Z",
    }
}

/// Marks a thread inside `plan_exec` or `plan_bind` for one plan.
struct InsideCount(Arc<PlanRecord>);

impl Drop for InsideCount {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Ends one pending execution when dropped: after the transform, or if the job never runs.
struct Finish(Arc<PlanRecord>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.pending.finish();
    }
}

/// The arguments of one `plan_exec` call.
pub(crate) struct ExecArgs {
    pub plan: RawPlan,
    pub transform: TransformType,
    pub stream: RawStream,
    pub work_area: Option<DevicePtr>,
    pub input: DevicePtr,
    pub output: DevicePtr,
    pub direction: Direction,
    /// Which settings the call sets first; the others the plan must carry already.
    pub rebind: Rebind,
}

impl SimRuntime {
    /// Records `sentence` and returns hipFFT's `value` for `call`.
    fn misuse(&self, call: &'static str, value: i32, sentence: String) -> Error {
        self.log.record(sentence);
        fft_err(call, value)
    }

    /// The live plan `raw`, marked as used by this thread (a second thread inside a call on
    /// the same plan is recorded: hipFFT's plans are not thread-safe).
    fn enter_plan(&self, raw: RawPlan, what: &str) -> Result<(Arc<PlanRecord>, InsideCount)> {
        let plan = match self.plans.lookup(raw) {
            Lookup::Live(p) => p,
            Lookup::Destroyed => {
                return Err(self.misuse("hipfftSetStream", code::INVALID_PLAN, format!("{what} on a destroyed plan {:#x}", raw.0)));
            }
            Lookup::Unknown => {
                return Err(self.misuse("hipfftSetStream", code::INVALID_PLAN, format!("{what} on an unknown plan {:#x}", raw.0)));
            }
        };
        if plan.inside.fetch_add(1, Ordering::SeqCst) > 0 {
            self.log.record(format!("set-stream/set-work-area/exec interleaved on plan {:#x}", raw.0));
        }
        Ok((plan.clone(), InsideCount(plan)))
    }

    /// The stream `raw` of the plan's device (what `hipfftSetStream` checks, and where an
    /// execution runs).
    fn plan_stream(&self, plan: &PlanRecord, p: usize, raw: RawStream, what: &str) -> Result<Arc<super::stream::Stream>> {
        let current = self.current();
        if current != plan.device {
            let s = format!("{what} of plan {p:#x} (device {}) with device {current} current", plan.device);
            return Err(self.misuse("hipfftSetStream", code::INVALID_DEVICE, s));
        }
        let stream = match self.streams.resolve(raw, current) {
            Ok(Some(s)) => s,
            Ok(None) => {
                let s = format!("{what} of plan {p:#x} on unknown stream {:#x}", raw.0);
                return Err(self.misuse("hipfftSetStream", code::INVALID_VALUE, s));
            }
            Err(_) => return Err(fft_err("hipfftSetStream", code::INTERNAL_ERROR)),
        };
        if stream.device != plan.device {
            let s = format!("{what} of plan {p:#x} (device {}) on stream {:#x} of device {}", plan.device, raw.0, stream.device);
            return Err(self.misuse("hipfftSetStream", code::INVALID_DEVICE, s));
        }
        Ok(stream)
    }

    /// `hipfftSetWorkArea` on `plan`: a non-null range of the plan's work size.
    fn set_plan_work_area(&self, plan: &PlanRecord, p: usize, area: DevicePtr) -> Result<()> {
        self.plans.settings_calls.fetch_add(1, Ordering::SeqCst);
        if area.is_null() {
            return Err(self.misuse("hipfftSetWorkArea", code::INVALID_VALUE, format!("null work area set on plan {p:#x}")));
        }
        if let Err(s) = self.memory.check(area.0, plan.work_size, &format!("work area of plan {p:#x}")) {
            return Err(self.misuse("hipfftSetWorkArea", code::INVALID_VALUE, s));
        }
        *plan.work_area.lock() = Some(area.0);
        Ok(())
    }

    /// `plan_bind`: sets what is given, as `hipfftSetStream` and `hipfftSetWorkArea` would.
    pub(super) fn bind_plan(&self, raw: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        let (plan, _inside) = self.enter_plan(raw, "bind")?;
        if let Some(s) = stream {
            self.plans.settings_calls.fetch_add(1, Ordering::SeqCst);
            self.plan_stream(&plan, raw.0, s, "bind")?;
            *plan.stream.lock() = s;
        }
        if let Some(area) = work_area {
            self.set_plan_work_area(&plan, raw.0, area)?;
        }
        Ok(true)
    }

    pub(super) fn exec_plan(&self, a: ExecArgs) -> Result<()> {
        let (plan, _inside) = self.enter_plan(a.plan, "exec")?;
        let p = a.plan.0;
        // What the plan carries is where the transform runs: a caller that skipped a setting
        // it needed is recorded (and its transform runs where hipFFT would run it).
        let carried = *plan.stream.lock();
        let target = if a.rebind.stream { a.stream } else { carried };
        if target != a.stream {
            self.log.record(format!(
                "exec of plan {p:#x} for stream {:#x} without setting it: the plan carries stream {:#x}",
                a.stream.0, carried.0
            ));
        }
        if a.rebind.stream {
            self.plans.settings_calls.fetch_add(1, Ordering::SeqCst);
        }
        let stream = self.plan_stream(&plan, p, target, "exec")?;
        *plan.stream.lock() = target;
        if let Some(area) = a.work_area {
            if a.rebind.work_area {
                self.set_plan_work_area(&plan, p, area)?;
            } else if *plan.work_area.lock() != Some(area.0) {
                self.log.record(format!("exec of plan {p:#x} for work area {:#x} without setting it: the plan carries another", area.0));
            }
        }
        let call = exec_call(a.transform);
        self.check_buffers(&plan, &a, call)?;
        if self.faults.exec.hit(self.config.read().fail_exec_every) {
            return Err(fft_err(call, code::EXEC_FAILED));
        }
        self.enqueue_transform(plan.clone(), &stream, &a, call)
    }

    /// The checks of `hipfftExec*` itself: type, pointers, work area, buffer extents.
    fn check_buffers(&self, plan: &PlanRecord, a: &ExecArgs, call: &'static str) -> Result<()> {
        let p = a.plan.0;
        if a.transform != plan.desc.transform {
            let s = format!("{call} on plan {p:#x}, which is a {} plan", plan.desc.transform);
            return Err(self.misuse(call, code::INVALID_VALUE, s));
        }
        if a.input.is_null() || a.output.is_null() {
            return Err(self.misuse(call, code::INVALID_VALUE, format!("{call} on plan {p:#x} with a null input or output")));
        }
        if plan.work_size > 0 && plan.scratch.is_none() && plan.work_area.lock().is_none() {
            let s =
                format!("exec of plan {p:#x} with work size {} bytes, auto-allocation off and no work area set", plan.work_size);
            return Err(self.misuse(call, code::INVALID_VALUE, s));
        }
        let ext = &plan.extents;
        for (ptr, bytes, what) in [(a.input, ext.input_bytes, "input"), (a.output, ext.output_bytes, "output")] {
            if let Err(s) = self.memory.check(ptr.0, bytes, &format!("{what} of {call} on plan {p:#x}")) {
                return Err(self.misuse(call, code::INVALID_VALUE, s));
            }
        }
        Ok(())
    }

    fn enqueue_transform(
        &self,
        plan: Arc<PlanRecord>,
        stream: &super::stream::Stream,
        a: &ExecArgs,
        call: &'static str,
    ) -> Result<()> {
        let stage = if plan.work_size == 0 { None } else { (*plan.work_area.lock()).or(plan.scratch.as_ref().map(|s| s.addr())) };
        let bufs = Buffers { input: a.input.0, output: a.output.0, stage };
        let latency = self.config.read().exec_latency;
        let direction = a.direction;
        let cache = self.fft.clone();
        let functions = plan.functions.get().cloned().unwrap_or_default();
        let args = || super::graph::KernelArgs {
            plan: Arc::downgrade(&plan),
            desc: plan.desc,
            direction,
            bufs,
            output_bytes: plan.extents.output_bytes,
            computes: true,
        };
        // Captured: the plan's kernel nodes, which run at each launch of a graph holding them.
        if let Some(r) = stream.capture_with(|g, tail| self.graphs.add_transform(g, tail, &functions, args())) {
            return r.map_err(|_| fft_err(call, code::EXEC_FAILED));
        }
        plan.pending.begin();
        let done = Finish(plan);
        let queued = stream.enqueue(Box::new(move || {
            let done = done;
            std::thread::sleep(latency);
            fft::execute(&done.0.desc, direction, bufs, &cache);
        }));
        match queued {
            Some(_) => Ok(()),
            None => Err(fft_err(call, code::EXEC_FAILED)),
        }
    }
}
