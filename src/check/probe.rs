//! The probe: cycles a list of shapes through a pool and checks every result against an
//! independent CPU reference. The 26-shape probe that hung hipFFT on gfx1151 is embedded.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::check::buffer::{DeviceBuffer, Stream};
use crate::desc::{Direction, PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::pool::plan_pool::PlanPool;
use crate::check::reference;
use crate::runtime::boundary::Runtime;

/// The shape list as shipped in `shared/probe-shapes.json`.
pub const EMBEDDED_SHAPES_JSON: &str = include_str!("../../data/probe-shapes.json");

/// Relative L2 error every single-precision transform must stay under.
pub const SINGLE_BAR: f64 = 1e-5;
/// The same for double precision.
pub const DOUBLE_BAR: f64 = 1e-12;

/// One transform of the probe's shape list (`data/probe_shapes.json`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct ProbeShape {
    /// The shape's name in reports.
    pub name: String,
    /// `r2c`, `c2r` or `c2c` (single precision); `d2z`, `z2d`, `z2z` for double.
    pub kind: String,
    /// The 1-D length.
    pub n: i64,
    /// Transforms per execution.
    pub batch: i64,
}

#[derive(serde::Deserialize)]
struct ShapeFile {
    shapes: Vec<ProbeShape>,
}

impl ProbeShape {
    /// The transform `kind` names.
    pub fn transform(&self) -> Result<TransformType> {
        TransformType::parse(&self.kind).ok_or_else(|| {
            Error::invalid_argument("kind", format!("{:?} is not one of r2c, c2r, c2c, d2z, z2d, z2z", self.kind))
        })
    }

    /// The validated descriptor on `device`.
    pub fn desc(&self, device: i32) -> Result<PlanDesc> {
        let d = PlanDesc::new(self.transform()?, &[self.n], self.batch).on_device(device);
        d.validate()?;
        Ok(d)
    }

    /// The directions the probe runs: C2C forward and inverse share one plan.
    pub fn directions(&self) -> Result<&'static [Direction]> {
        let t = self.transform()?;
        Ok(if t.is_complex() {
            &[Direction::Forward, Direction::Inverse]
        } else if t.is_forward_real() {
            &[Direction::Forward]
        } else {
            &[Direction::Inverse]
        })
    }
}

/// Shapes from a shape file's JSON (`{"shapes": [...]}`), each validated.
pub fn parse_shapes(json: &str) -> Result<Vec<ProbeShape>> {
    let f: ShapeFile = serde_json::from_str(json)
        .map_err(|e| Error::invalid_argument("shapes", format!("not a probe shape file: {e}")))?;
    if f.shapes.is_empty() {
        return Err(Error::invalid_argument("shapes", "the file lists no shapes"));
    }
    for s in &f.shapes {
        s.desc(0)?;
    }
    Ok(f.shapes)
}

/// The shapes built into the binary (the 26 of the original block).
pub fn embedded_shapes() -> Vec<ProbeShape> {
    parse_shapes(EMBEDDED_SHAPES_JSON).expect("the embedded probe shapes are valid")
}

/// Shapes from a file.
pub fn load_shapes(path: &Path) -> Result<Vec<ProbeShape>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid_argument("shapes", format!("cannot read {}: {e}", path.display())))?;
    parse_shapes(&text)
}

/// One shape the probe is about to run (or has just run), for progress reporting.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// The cycle (0-based).
    pub cycle: usize,
    /// Position in the run order (0-based, within the cycle).
    pub index: usize,
    /// Index of the shape in the shape list (`order[index]`).
    pub shape_index: usize,
    /// Steps before this one over the whole run (0-based, across cycles).
    pub step: usize,
    /// The shape.
    pub shape: &'a ProbeShape,
}

/// How the probe drives each lease; the defaults are what MLX does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Pass no work area to the execution: the plans own theirs (made with
    /// `PlanOptions { auto_allocation: true }`).
    pub auto_alloc: bool,
    /// Synchronize the stream after each execution and release the lease at once
    /// ([`ProbeLease::release_now`]) instead of handing it back through
    /// [`ProbeLease::finish`]: every plan is idle again before the next acquire, so an
    /// eviction always finds idle plans and destroys them on the spot.
    pub sync_before_release: bool,
}

/// Where plans come from: the pool, or a baseline the caller supplies (see `--mode legacy`).
pub trait PlanSource {
    /// The lease type it hands out.
    type Lease: ProbeLease;
    /// A lease on the plan for `desc`.
    fn acquire(&self, desc: &PlanDesc) -> Result<Self::Lease>;
    /// The runtime its plans live on (the probe allocates there).
    fn runtime(&self) -> &Arc<dyn Runtime>;
}

/// What the probe needs of a lease.
pub trait ProbeLease {
    /// Work-area bytes the plan needs.
    fn work_size(&self) -> usize;
    /// Enqueues one transform on typed buffers; a buffer smaller than the plan needs is an
    /// error, not undefined behaviour.
    fn exec(&self, stream: &Stream, input: &DeviceBuffer, output: &DeviceBuffer, direction: Direction, work: Option<&DeviceBuffer>) -> Result<()>;
    /// Hands the lease back once the stream's work completes.
    fn finish(self, stream: &Stream) -> Result<()>;
    /// Hands the lease back now; the probe has synchronized the stream.
    fn release_now(self) -> Result<()>
    where
        Self: Sized,
    {
        drop(self);
        Ok(())
    }
}

impl PlanSource for PlanPool {
    type Lease = crate::Lease;
    fn acquire(&self, desc: &PlanDesc) -> Result<crate::Lease> {
        PlanPool::acquire(self, desc)
    }
    fn runtime(&self) -> &Arc<dyn Runtime> {
        PlanPool::runtime(self)
    }
}

impl ProbeLease for crate::Lease {
    fn work_size(&self) -> usize {
        crate::Lease::work_size(self)
    }
    fn exec(&self, stream: &Stream, input: &DeviceBuffer, output: &DeviceBuffer, direction: Direction, work: Option<&DeviceBuffer>) -> Result<()> {
        // The typed buffers carry their sizes: check them against the plan, so the safe
        // signature cannot reach past an allocation.
        let need_out = self.desc().extents()?.output_bytes;
        let short = |what: &'static str, have: usize, need: usize| {
            Error::invalid_argument(what, format!("{have} bytes, the plan needs {need}"))
        };
        if input.len() < self.input_bytes() {
            return Err(short("input", input.len(), self.input_bytes()));
        }
        if output.len() < need_out {
            return Err(short("output", output.len(), need_out));
        }
        if let Some(w) = work.filter(|w| w.len() < self.work_size()) {
            return Err(short("work_area", w.len(), self.work_size()));
        }
        // SAFETY: the sizes are checked above; the buffers and the stream belong to the
        // probe's runtime (the one its source runs on) and outlive the execution, because
        // a buffer's drop frees through the runtime, which waits for pending work, and the
        // lease is released after the stream's work (`finish`) or a synchronize.
        unsafe { crate::Lease::exec(self, stream.raw(), input.ptr(), output.ptr(), direction, work.map(|w| w.ptr())) }
    }
    fn finish(self, stream: &Stream) -> Result<()> {
        // SAFETY: `stream` is the wrapper's live stream of the probe's runtime.
        unsafe { self.release_after(stream.raw()) }.map_err(|e| {
            // Could not hand it over: wait for the stream, then release here.
            let err = e.error.clone();
            let _ = stream.synchronize();
            drop(e.lease);
            err
        })
    }
}

/// What one probe run measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ProbeOutcome {
    /// Transforms run.
    pub transforms: u64,
    /// The largest relative L2 error seen.
    pub max_rel_error: f64,
    /// Every result within its bar.
    pub correct: bool,
    /// The first failure (a pool or runtime error, or a wrong result), if any.
    pub failure: Option<String>,
    /// Wall time of the run, in seconds.
    pub elapsed_s: f64,
}

/// Cycles `shapes` `cycles` times through `source`, checking each result.
/// `on_step` is called before each transform (for progress and hang positions).
pub fn run<S: PlanSource>(
    source: &S,
    shapes: &[ProbeShape],
    order: &[usize],
    cycles: usize,
    device: i32,
    seed: u64,
    on_step: impl FnMut(Step<'_>),
) -> ProbeOutcome {
    run_with(source, shapes, order, cycles, device, seed, RunOptions::default(), on_step, |_, _| {})
}

/// [`run`] with options, and a second hook called after each shape with whether it ran
/// (for timelines: sample the live handles there).
#[allow(clippy::too_many_arguments)]
pub fn run_with<S: PlanSource>(
    source: &S,
    shapes: &[ProbeShape],
    order: &[usize],
    cycles: usize,
    device: i32,
    seed: u64,
    options: RunOptions,
    mut on_step: impl FnMut(Step<'_>),
    mut after_step: impl FnMut(Step<'_>, bool),
) -> ProbeOutcome {
    let started = Instant::now();
    let mut out = ProbeOutcome { correct: true, ..Default::default() };
    let rt = source.runtime().clone();
    let stream = match Stream::new(&rt) {
        Ok(s) => s,
        Err(e) => {
            out.correct = false;
            out.failure = Some(format!("cannot create a stream: {e}"));
            return out;
        }
    };
    let mut step = 0;
    'outer: for cycle in 0..cycles {
        for (pos, &index) in order.iter().enumerate() {
            let Some(shape) = shapes.get(index) else {
                out.correct = false;
                out.failure = Some(format!("order names shape {index}, but there are {} shapes", shapes.len()));
                break 'outer;
            };
            let at = Step { cycle, index: pos, shape_index: index, step, shape };
            step += 1;
            on_step(at);
            let ran = run_one(source, &rt, &stream, shape, device, seed ^ ((cycle as u64) << 32) ^ index as u64, options);
            after_step(at, ran.is_ok());
            match ran {
                Ok(errors) => {
                    for (err, bar) in errors {
                        out.transforms += 1;
                        if err.is_nan() || err > out.max_rel_error {
                            out.max_rel_error = if err.is_nan() { f64::INFINITY } else { err };
                        }
                        if (err.is_nan() || err > bar) && out.failure.is_none() {
                            out.correct = false;
                            out.failure = Some(format!(
                                "{} {} n={} batch={}: relative error {err:.3e} above {bar:.0e}",
                                shape.name, shape.kind, shape.n, shape.batch
                            ));
                        }
                    }
                }
                Err(e) => {
                    out.correct = false;
                    out.failure = Some(format!("{} {} n={} batch={}: {e}", shape.name, shape.kind, shape.n, shape.batch));
                    break 'outer;
                }
            }
        }
    }
    let _ = stream.synchronize();
    out.elapsed_s = started.elapsed().as_secs_f64();
    out
}

/// One shape: every direction it runs, each checked. Returns (error, bar) per transform.
fn run_one<S: PlanSource>(
    source: &S,
    rt: &Arc<dyn Runtime>,
    stream: &Stream,
    shape: &ProbeShape,
    device: i32,
    seed: u64,
    options: RunOptions,
) -> Result<Vec<(f64, f64)>> {
    let desc = shape.desc(device)?;
    let ext = desc.validate()?;
    let bar = if desc.transform.is_double() { DOUBLE_BAR } else { SINGLE_BAR };
    let mut results = Vec::new();
    for (k, &direction) in shape.directions()?.iter().enumerate() {
        let input = reference::random_input(&desc, seed.wrapping_mul(31).wrapping_add(k as u64));
        let want = reference::expected_output(&desc, direction, &input);
        let d_in = DeviceBuffer::from_host(rt, &input)?;
        let d_out = DeviceBuffer::new(rt, ext.output_bytes)?;
        let lease = source.acquire(&desc)?;
        // As MLX does: a work area per execution, from the caller's allocator (unless the
        // plan owns its own).
        let work = match lease.work_size() {
            _ if options.auto_alloc => None,
            0 => None,
            n => Some(DeviceBuffer::new(rt, n)?),
        };
        let exec = lease.exec(stream, &d_in, &d_out, direction, work.as_ref());
        let finished = if options.sync_before_release {
            let synced = stream.synchronize();
            let released = lease.release_now();
            synced.and(released)
        } else {
            lease.finish(stream)
        };
        exec?;
        finished?;
        // hipMemcpy does not wait for non-blocking streams; and the buffers are freed only
        // after the stream's work is done.
        stream.synchronize()?;
        let got = d_out.to_host()?;
        drop(work);
        results.push((reference::rel_l2_error(&reference::gather_output(&desc, &got), &want), bar));
    }
    Ok(results)
}

/// The single-shape control: shape `index` of `len`, `times` times over (one plan, reused).
pub fn repeat_order(len: usize, index: usize, times: usize) -> Result<Vec<usize>> {
    if index >= len {
        return Err(Error::invalid_argument("repeat-shape", format!("{index} is past the last shape ({} shapes, numbered from 0)", len)));
    }
    if times == 0 {
        return Err(Error::invalid_argument("repeat", "must be at least 1"));
    }
    Ok(vec![index; times])
}

/// The order the shapes run in: `forward`, `reverse` or `shuffle:SEED`.
pub fn order(len: usize, spec: &str) -> Result<Vec<usize>> {
    let mut v: Vec<usize> = (0..len).collect();
    match spec {
        "forward" => {}
        "reverse" => v.reverse(),
        s if s.starts_with("shuffle:") => {
            let seed: u64 = s["shuffle:".len()..]
                .parse()
                .map_err(|_| Error::invalid_argument("order", format!("{s:?}: the seed after shuffle: must be a whole number")))?;
            let mut x = seed;
            for i in (1..len).rev() {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                v.swap(i, (z % (i as u64 + 1)) as usize);
            }
        }
        other => {
            return Err(Error::invalid_argument("order", format!("{other:?} is not forward, reverse or shuffle:SEED")));
        }
    }
    Ok(v)
}
