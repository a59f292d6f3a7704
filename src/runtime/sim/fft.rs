//! The transform as a stream worker runs it: gather the input through its layout into a
//! staging buffer (the plan's work area when it has one, so executions sharing a work area
//! corrupt each other as on a GPU), 1-D rustfft transforms along each axis, scatter through
//! the output layout. Unnormalized both ways; forward is exp(-2πi·jk/n).
//!
//! C2R/Z2D overwrite their input, as hipFFT and cuFFT do: the logical input elements are
//! left holding intermediate values (real and imaginary parts swapped).

use std::sync::Arc;

use parking_lot::Mutex;
use rustfft::num_complex::Complex;
use rustfft::num_traits::Zero;
use rustfft::{Fft, FftDirection, FftNum, FftPlanner};

use crate::desc::{Direction, Layout, PlanDesc};

/// rustfft planners, shared by every worker (plans are cached inside the planners).
pub(crate) struct FftCache {
    single: Mutex<FftPlanner<f32>>,
    double: Mutex<FftPlanner<f64>>,
}

impl Default for FftCache {
    fn default() -> Self {
        FftCache { single: Mutex::new(FftPlanner::new()), double: Mutex::new(FftPlanner::new()) }
    }
}

/// The planner of one precision.
pub(crate) trait Precision: FftNum {
    fn planner(cache: &FftCache) -> &Mutex<FftPlanner<Self>>;
}

impl Precision for f32 {
    fn planner(cache: &FftCache) -> &Mutex<FftPlanner<f32>> {
        &cache.single
    }
}

impl Precision for f64 {
    fn planner(cache: &FftCache) -> &Mutex<FftPlanner<f64>> {
        &cache.double
    }
}

/// One execution's buffers, as addresses (device memory is host memory).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffers {
    pub input: usize,
    pub output: usize,
    /// Staging space of at least `batch * prod(n)` complex elements, or `None` for a
    /// plan with a zero work size.
    pub stage: Option<usize>,
}

/// Runs `desc`'s transform on `bufs`. `desc` is valid (checked at plan creation).
pub(crate) fn execute(desc: &PlanDesc, direction: Direction, bufs: Buffers, cache: &FftCache) {
    if desc.transform.is_double() { run::<f64>(desc, direction, bufs, cache) } else { run::<f32>(desc, direction, bufs, cache) }
}

/// One side's geometry, right-aligned to three dimensions so every rank shares one loop.
#[derive(Clone, Copy)]
struct Side {
    dims: [usize; 3],
    embed: [usize; 3],
    stride: usize,
    dist: usize,
}

impl Side {
    fn new(dims: &[usize], layout: Option<&Layout>) -> Side {
        let r = dims.len();
        let mut d = [1usize; 3];
        d[3 - r..].copy_from_slice(dims);
        match layout {
            None => Side { dims: d, embed: d, stride: 1, dist: d.iter().product() },
            Some(l) => {
                let mut e = [1usize; 3];
                for (slot, v) in e[3 - r..].iter_mut().zip(&l.embed[..r]) {
                    *slot = *v as usize;
                }
                Side { dims: d, embed: e, stride: l.stride as usize, dist: l.dist as usize }
            }
        }
    }

    /// Calls `f(packed index in a grid of `grid` dims, element offset)` for every element,
    /// batch-major then row-major.
    fn for_each(&self, batch: usize, grid: [usize; 3], mut f: impl FnMut(usize, usize)) {
        let [d0, d1, d2] = self.dims;
        for b in 0..batch {
            for i0 in 0..d0 {
                for i1 in 0..d1 {
                    let row = b * self.dist + (i0 * self.embed[1] + i1) * self.embed[2] * self.stride;
                    let packed = ((b * grid[0] + i0) * grid[1] + i1) * grid[2];
                    for i2 in 0..d2 {
                        f(packed + i2, row + i2 * self.stride);
                    }
                }
            }
        }
    }
}

// The four accessors: unaligned, because host pointers from C need not be aligned.
//
// # Safety (all four)
// `base + off` elements of `T` (or `Complex<T>`) lie inside a buffer of the plan's extents.
unsafe fn read_real<T: Copy>(base: usize, off: usize) -> T {
    // SAFETY: the caller's promise.
    unsafe { (base as *const T).add(off).read_unaligned() }
}
unsafe fn write_real<T: Copy>(base: usize, off: usize, v: T) {
    // SAFETY: the caller's promise.
    unsafe { (base as *mut T).add(off).write_unaligned(v) }
}
unsafe fn read_complex<T: Copy>(base: usize, off: usize) -> Complex<T> {
    // SAFETY: the caller's promise.
    unsafe { (base as *const Complex<T>).add(off).read_unaligned() }
}
unsafe fn write_complex<T: Copy>(base: usize, off: usize, v: Complex<T>) {
    // SAFETY: the caller's promise.
    unsafe { (base as *mut Complex<T>).add(off).write_unaligned(v) }
}

fn run<T: Precision>(desc: &PlanDesc, direction: Direction, bufs: Buffers, cache: &FftCache) {
    let dims: Vec<usize> = desc.dims().iter().map(|&n| n as usize).collect();
    let r = dims.len();
    let batch = desc.batch as usize;
    let mut full = [1usize; 3];
    full[3 - r..].copy_from_slice(&dims);
    let total = batch * full.iter().product::<usize>();

    let mut local = Vec::new();
    let stage: &mut [Complex<T>] = match bufs.stage {
        Some(p) if p % std::mem::align_of::<Complex<T>>() == 0 => {
            // SAFETY: the work area holds `work_size` = `total` complex elements. Two
            // executions sharing it race, on purpose: that is the corruption a GPU shows.
            unsafe { std::slice::from_raw_parts_mut(p as *mut Complex<T>, total) }
        }
        _ => {
            local.resize(total, Complex::zero());
            &mut local
        }
    };
    let planner = T::planner(cache);
    let t = desc.transform;
    if t.is_forward_real() {
        let mut half = dims.clone();
        half[r - 1] = dims[r - 1] / 2 + 1;
        let inp = Side::new(&dims, desc.input.as_ref());
        // SAFETY: offsets come from the validated input extents.
        inp.for_each(batch, full, |k, off| stage[k] = Complex::new(unsafe { read_real(bufs.input, off) }, T::zero()));
        transform_axes(stage, batch, full, 3, FftDirection::Forward, planner);
        let out = Side::new(&half, desc.output.as_ref());
        // SAFETY: offsets come from the validated output extents.
        out.for_each(batch, full, |k, off| unsafe { write_complex(bufs.output, off, stage[k]) });
    } else if t.is_complex() {
        let dir = if direction == Direction::Forward { FftDirection::Forward } else { FftDirection::Inverse };
        let inp = Side::new(&dims, desc.input.as_ref());
        // SAFETY: offsets come from the validated input extents.
        inp.for_each(batch, full, |k, off| stage[k] = unsafe { read_complex(bufs.input, off) });
        transform_axes(stage, batch, full, 3, dir, planner);
        let out = Side::new(&dims, desc.output.as_ref());
        // SAFETY: offsets come from the validated output extents.
        out.for_each(batch, full, |k, off| unsafe { write_complex(bufs.output, off, stage[k]) });
    } else {
        inverse_real(desc, &dims, batch, bufs, stage, planner);
    }
}

/// C2R/Z2D: inverse along the outer axes on the half spectrum, then each row extended by
/// Hermitian symmetry and inverse-transformed; the real parts are the output.
fn inverse_real<T: Precision>(
    desc: &PlanDesc,
    dims: &[usize],
    batch: usize,
    bufs: Buffers,
    stage: &mut [Complex<T>],
    planner: &Mutex<FftPlanner<T>>,
) {
    let r = dims.len();
    let n = dims[r - 1];
    let h = n / 2 + 1;
    let mut half = dims.to_vec();
    half[r - 1] = h;
    let mut hgrid = [1usize; 3];
    hgrid[3 - r..].copy_from_slice(&half);
    let inp = Side::new(&half, desc.input.as_ref());
    // SAFETY: offsets come from the validated input extents (the half spectrum).
    inp.for_each(batch, hgrid, |k, off| stage[k] = unsafe { read_complex(bufs.input, off) });
    transform_axes(stage, batch, hgrid, 2, FftDirection::Inverse, planner);
    // Clobber the input, as the real libraries do.
    inp.for_each(batch, hgrid, |k, off| {
        let v = stage[k];
        // SAFETY: the same offsets as the read above.
        unsafe { write_complex(bufs.input, off, Complex::new(v.im, v.re)) }
    });
    let fft = planner.lock().plan_fft(n, FftDirection::Inverse);
    let mut scratch = vec![Complex::zero(); fft.get_inplace_scratch_len()];
    let mut line = vec![Complex::<T>::zero(); n];
    let out = Side::new(dims, desc.output.as_ref());
    let rows = batch * hgrid[0] * hgrid[1];
    for row in 0..rows {
        let src = &stage[row * h..row * h + h];
        line[..h].copy_from_slice(src);
        for k in h..n {
            line[k] = src[n - k].conj();
        }
        fft.process_with_scratch(&mut line, &mut scratch);
        let (b, rest) = (row / (hgrid[0] * hgrid[1]), row % (hgrid[0] * hgrid[1]));
        let (i0, i1) = (rest / hgrid[1], rest % hgrid[1]);
        let base = b * out.dist + (i0 * out.embed[1] + i1) * out.embed[2] * out.stride;
        for (j, v) in line.iter().enumerate() {
            // SAFETY: row `row`, element `j < n` of the validated output layout.
            unsafe { write_real(bufs.output, base + j * out.stride, v.re) };
        }
    }
}

/// In-place 1-D transforms along the first `axes` of the three (right-aligned) axes of a
/// packed `[batch][g0][g1][g2]` array.
fn transform_axes<T: Precision>(
    data: &mut [Complex<T>],
    batch: usize,
    grid: [usize; 3],
    axes: usize,
    dir: FftDirection,
    planner: &Mutex<FftPlanner<T>>,
) {
    for axis in 0..axes {
        let len = grid[axis];
        if len <= 1 {
            continue;
        }
        let fft: Arc<dyn Fft<T>> = planner.lock().plan_fft(len, dir);
        let mut scratch = vec![Complex::zero(); fft.get_inplace_scratch_len()];
        let inner: usize = grid[axis + 1..].iter().product();
        let count = batch * grid[..axis].iter().product::<usize>() * len * inner;
        let data = &mut data[..count];
        if inner == 1 {
            fft.process_with_scratch(data, &mut scratch);
            continue;
        }
        let mut line = vec![Complex::zero(); len];
        for block in data.chunks_exact_mut(len * inner) {
            for j in 0..inner {
                for (t, v) in line.iter_mut().enumerate() {
                    *v = block[t * inner + j];
                }
                fft.process_with_scratch(&mut line, &mut scratch);
                for (t, v) in line.iter().enumerate() {
                    block[t * inner + j] = *v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_offsets_follow_the_advanced_layout() {
        // Rank 2, embed [4, 5], stride 3, dist 70: (b, x0, x1) at b*70 + (x0*5 + x1)*3.
        let side = Side::new(&[2, 3], Some(&Layout::new(&[4, 5], 3, 70)));
        let mut seen = Vec::new();
        side.for_each(2, [1, 2, 3], |k, off| seen.push((k, off)));
        let want: Vec<(usize, usize)> = (0..2)
            .flat_map(|b| (0..2).flat_map(move |x0| (0..3).map(move |x1| (b, x0, x1))))
            .enumerate()
            .map(|(k, (b, x0, x1))| (k, b * 70 + (x0 * 5 + x1) * 3))
            .collect();
        assert_eq!(seen, want);
        // Packed: offsets are the packed indices.
        let packed = Side::new(&[4], None);
        let mut offs = Vec::new();
        packed.for_each(3, [1, 1, 4], |k, off| offs.push((k, off)));
        assert!(offs.iter().all(|(k, off)| k == off) && offs.len() == 12);
    }
}
