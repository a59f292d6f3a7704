//! The correctness suite every runtime must pass, run on the sim and hip-over-shim in CI and
//! on a real GPU by the `cuda` / `rocm` test features: the 26 probe shapes, 2-D and 3-D,
//! double precision, strided and embedded layouts, in-place real transforms with the padded
//! layout, batch 1 with odd and prime lengths, and forward-then-inverse round trips.
//! Results are compared with [`crate::check::reference`], computed independently in f64.

use std::sync::Arc;

use crate::check::buffer::{DeviceBuffer, Stream};
use crate::desc::{Direction, Layout, PlanDesc, TransformType};
use crate::error::Result;
use crate::check::probe;
use crate::check::reference::{self, Complex64};
use crate::runtime::boundary::{PlanOptions, Runtime};

/// One check.
#[derive(Clone, Debug)]
pub struct Case {
    /// What the case checks, for the report.
    pub name: String,
    /// The transform.
    pub desc: PlanDesc,
    /// The direction it runs in.
    pub direction: Direction,
    /// Input and output share one buffer.
    pub in_place: bool,
    /// Run the inverse of this descriptor afterwards and compare with the input times N.
    pub inverse: Option<PlanDesc>,
    /// Let the library own the work area.
    pub auto_allocation: bool,
}

/// The bar for a descriptor's precision.
pub fn bar(desc: &PlanDesc) -> f64 {
    if desc.transform.is_double() { probe::DOUBLE_BAR } else { probe::SINGLE_BAR }
}

fn dir_of(t: TransformType) -> Direction {
    if t.is_inverse_real() { Direction::Inverse } else { Direction::Forward }
}

fn case(name: impl Into<String>, desc: PlanDesc, direction: Direction) -> Case {
    Case { name: name.into(), desc, direction, in_place: false, inverse: None, auto_allocation: false }
}

/// Every case of the suite.
pub fn cases() -> Vec<Case> {
    use TransformType::*;
    let mut v = Vec::new();
    for s in probe::embedded_shapes() {
        let d = s.desc(0).expect("valid probe shape");
        for &dir in s.directions().expect("probe shape kind") {
            v.push(case(format!("probe {} {} n={} batch={} {dir:?}", s.name, s.kind, s.n, s.batch), d, dir));
        }
    }
    for t in TransformType::ALL {
        let (d2, d3): (&[i64], &[i64]) = if t.is_double() { (&[16, 20], &[4, 6, 8]) } else { (&[24, 40], &[6, 10, 16]) };
        v.push(case(format!("2-D {t} {d2:?}"), PlanDesc::new(t, d2, 2), dir_of(t)));
        v.push(case(format!("3-D {t} {d3:?}"), PlanDesc::new(t, d3, 2), dir_of(t)));
        v.push(case(format!("1-D {t} n=400 batch 3"), PlanDesc::new(t, &[400], 3), dir_of(t)));
    }
    v.push(case("Z2Z inverse n=1024", PlanDesc::new(Z2Z, &[1024], 2), Direction::Inverse));
    // Strided and embedded layouts.
    for t in [C2C, Z2Z] {
        v.push(case(
            format!("{t} input stride 2, dist 130"),
            PlanDesc::new(t, &[64], 3).with_input_layout(Layout::new(&[64], 2, 130)),
            Direction::Forward,
        ));
        v.push(case(
            format!("{t} 2-D embedded both sides"),
            PlanDesc::new(t, &[8, 12], 2)
                .with_input_layout(Layout::new(&[10, 14], 1, 140))
                .with_output_layout(Layout::new(&[9, 13], 2, 2 * 117 + 1)),
            Direction::Inverse,
        ));
    }
    for t in [R2C, D2Z] {
        v.push(case(
            format!("{t} strided real input, embedded complex output"),
            PlanDesc::new(t, &[30], 3)
                .with_input_layout(Layout::new(&[30], 2, 63))
                .with_output_layout(Layout::new(&[18], 1, 18)),
            Direction::Forward,
        ));
    }
    for t in [C2R, Z2D] {
        v.push(case(
            format!("{t} embedded complex input, strided real output"),
            PlanDesc::new(t, &[30], 3)
                .with_input_layout(Layout::new(&[17], 1, 19))
                .with_output_layout(Layout::new(&[30], 3, 95)),
            Direction::Inverse,
        ));
    }
    // In-place real transforms with the padded layout: the real side's last dimension is
    // padded to 2*(n/2+1) reals, exactly the n/2+1 complex values of the other side.
    for (t, dims) in [(R2C, &[64][..]), (C2R, &[64][..]), (D2Z, &[8, 10][..]), (Z2D, &[8, 10][..]), (R2C, &[4, 6, 10][..])] {
        let r = dims.len();
        let last = dims[r - 1];
        let mut real_embed = dims.to_vec();
        real_embed[r - 1] = 2 * (last / 2 + 1);
        let mut complex_embed = dims.to_vec();
        complex_embed[r - 1] = last / 2 + 1;
        let real_dist: i64 = real_embed.iter().product();
        let real = Layout::new(&real_embed, 1, real_dist);
        let complex = Layout::new(&complex_embed, 1, real_dist / 2);
        let d = if t.is_forward_real() {
            PlanDesc::new(t, dims, 2).with_input_layout(real).with_output_layout(complex)
        } else {
            PlanDesc::new(t, dims, 2).with_input_layout(complex).with_output_layout(real)
        };
        v.push(Case { in_place: true, ..case(format!("in-place padded {t} {dims:?}"), d, dir_of(t)) });
    }
    v.push(Case { in_place: true, ..case("in-place C2C n=96", PlanDesc::new(C2C, &[96], 2), Direction::Forward) });
    // Batch 1, odd and prime lengths.
    for n in [3, 5, 7, 97, 1009] {
        v.push(case(format!("C2C batch 1 n={n}"), PlanDesc::new(C2C, &[n], 1), Direction::Forward));
    }
    for (t, n) in [(R2C, 97), (R2C, 1009), (C2R, 1009), (Z2Z, 1009), (D2Z, 5), (Z2D, 7)] {
        v.push(case(format!("{t} batch 1 n={n}"), PlanDesc::new(t, &[n], 1), dir_of(t)));
    }
    // Round trips: forward then inverse equals the input times N.
    for (f, i, dims) in [
        (C2C, C2C, &[1200][..]),
        (R2C, C2R, &[400][..]),
        (Z2Z, Z2Z, &[16, 20][..]),
        (D2Z, Z2D, &[1009][..]),
        (R2C, C2R, &[6, 10, 16][..]),
    ] {
        v.push(Case {
            inverse: Some(PlanDesc::new(i, dims, 2)),
            ..case(format!("round trip {f}->{i} {dims:?}"), PlanDesc::new(f, dims, 2), Direction::Forward)
        });
    }
    // The library owning the work area.
    for (t, n) in [(C2C, 512), (R2C, 400), (Z2D, 1024)] {
        v.push(Case { auto_allocation: true, ..case(format!("auto-allocated {t} n={n}"), PlanDesc::new(t, &[n], 3), dir_of(t)) });
    }
    v
}

/// Runs one transform on `rt` and returns its output bytes.
fn run_transform(
    rt: &Arc<dyn Runtime>,
    stream: &Stream,
    desc: &PlanDesc,
    direction: Direction,
    input: &[u8],
    in_place: bool,
    auto_allocation: bool,
) -> Result<Vec<u8>> {
    let ext = desc.validate()?;
    let made = rt.plan_create(desc, PlanOptions { auto_allocation })?;
    let result = (|| {
        let d_in = DeviceBuffer::new(rt, input.len().max(ext.output_bytes))?;
        d_in.write(input)?;
        let d_out = if in_place { None } else { Some(DeviceBuffer::new(rt, ext.output_bytes)?) };
        let out_ptr = d_out.as_ref().map_or(d_in.ptr(), |b| b.ptr());
        let work = if made.work_size > 0 && !auto_allocation { Some(DeviceBuffer::new(rt, made.work_size)?) } else { None };
        // SAFETY: `made.plan` is live and made for `desc.transform`; the buffers are this
        // runtime's, sized from the validated extents (input and output) and the plan's work
        // size, and outlive the event synchronize below; `stream` is live.
        unsafe {
            rt.plan_exec(made.plan, desc.transform, stream.raw(), work.as_ref().map(|w| w.ptr()), d_in.ptr(), out_ptr, direction)
        }?;
        let event = rt.event_create()?;
        // SAFETY: `event` was just made and is destroyed last; `stream` is live.
        unsafe {
            rt.event_record(event, stream.raw())?;
            rt.event_synchronize(event)?;
            rt.event_destroy(event)?;
        }
        stream.synchronize()?;
        let mut out = d_out.as_ref().unwrap_or(&d_in).to_host()?;
        out.truncate(ext.output_bytes.max(if in_place { input.len() } else { 0 }));
        Ok(out)
    })();
    // SAFETY: the plan made above; its one execution was synchronized (or never enqueued).
    unsafe { rt.plan_destroy(made.plan) }?;
    result
}

/// Runs one case and returns its relative L2 error against the reference.
pub fn run_case(rt: &Arc<dyn Runtime>, c: &Case, seed: u64) -> Result<f64> {
    let stream = Stream::new(rt)?;
    let input = reference::random_input(&c.desc, seed);
    let out = run_transform(rt, &stream, &c.desc, c.direction, &input, c.in_place, c.auto_allocation)?;
    let Some(inv) = &c.inverse else {
        let want = reference::expected_output(&c.desc, c.direction, &input);
        return Ok(reference::rel_l2_error(&reference::gather_output(&c.desc, &out), &want));
    };
    let back = run_transform(rt, &stream, inv, Direction::Inverse, &out, false, c.auto_allocation)?;
    let n: i64 = c.desc.dims().iter().product();
    let want: Vec<Complex64> = reference::gather_input(&c.desc, &input).iter().map(|x| x * n as f64).collect();
    Ok(reference::rel_l2_error(&reference::gather_output(inv, &back), &want))
}

/// One line of a suite run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The case's name.
    pub name: String,
    /// Double precision (its bar is [`probe::DOUBLE_BAR`]).
    pub double: bool,
    /// Relative L2 error against the reference; `None` when it did not run.
    pub error: Option<f64>,
    /// The error it must stay under.
    pub bar: f64,
    /// The error that stopped it, if any.
    pub failure: Option<String>,
}

impl Outcome {
    /// Ran, and within its bar.
    pub fn passed(&self) -> bool {
        self.failure.is_none() && self.error.is_some_and(|e| e <= self.bar)
    }
}

/// Runs every case; returns one outcome per case.
pub fn run_all(rt: &Arc<dyn Runtime>) -> Vec<Outcome> {
    cases()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r = run_case(rt, c, 1000 + i as u64);
            Outcome {
                name: c.name.clone(),
                double: c.desc.transform.is_double(),
                bar: bar(&c.desc),
                error: r.as_ref().ok().copied(),
                failure: r.err().map(|e| e.to_string()),
            }
        })
        .collect()
}

/// The largest error per precision (single, double), for reports.
pub fn max_errors(outcomes: &[Outcome]) -> (f64, f64) {
    let max = |double: bool| {
        outcomes.iter().filter(|o| o.double == double).filter_map(|o| o.error).fold(0.0f64, f64::max)
    };
    (max(false), max(true))
}
