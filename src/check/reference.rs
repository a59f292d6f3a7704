//! An FFT reference computed independently of rustfft (which the simulated runtime uses), in
//! f64: an iterative radix-2 FFT for powers of two, Bluestein over it for other lengths, and a
//! naive O(n²) DFT that checks both. Layout addressing is also written afresh here, so a bug
//! in the sim's gather or scatter cannot hide behind shared code.
//!
//! Conventions are hipFFT's: unnormalized both ways, forward is exp(-2πi·jk/n), row-major
//! dimensions (slowest first), elements addressed through [`Layout`]s as in `PlanDesc`.

use std::f64::consts::PI;

pub use rustfft::num_complex::{Complex32, Complex64};

use crate::desc::{Direction, Layout, PlanDesc};

/// Byte of the gaps and padding of a buffer from [`random_input`]: read as a float it is a
/// huge value, so a transform that reads outside the logical elements fails loudly.
pub const PAD_BYTE: u8 = 0x5A;

/// splitmix64: a tiny, well-mixed generator, so inputs are reproducible from a seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

fn sign(direction: Direction) -> f64 {
    if direction == Direction::Forward { -1.0 } else { 1.0 }
}

/// exp(i·angle).
fn cis(angle: f64) -> Complex64 {
    Complex64::new(angle.cos(), angle.sin())
}

/// A 1-D transform of one length and direction, with its tables precomputed.
pub struct Dft {
    n: usize,
    kind: Kind,
}

enum Kind {
    /// Lengths 0 and 1: the identity.
    Identity,
    /// exp(s·2πi·j/n) for j < n/2.
    Radix2 { twiddles: Vec<Complex64> },
    /// Chirp-z over a radix-2 convolution of length `m`.
    Bluestein { chirp: Vec<Complex64>, kernel: Vec<Complex64>, forward: Box<Dft>, inverse: Box<Dft> },
}

impl Dft {
    /// A transform of length `n`: radix-2 for powers of two, Bluestein otherwise.
    pub fn new(n: usize, direction: Direction) -> Dft {
        let s = sign(direction);
        let kind = if n <= 1 {
            Kind::Identity
        } else if n.is_power_of_two() {
            Kind::Radix2 { twiddles: (0..n / 2).map(|j| cis(s * 2.0 * PI * j as f64 / n as f64)).collect() }
        } else {
            // jk = (j² + k² - (k-j)²)/2, so X_k = c_k Σ_j (x_j c_j) conj(c_{k-j}) with
            // c_t = exp(s·πi·t²/n); t² is reduced mod 2n to keep the angle exact.
            let m = (2 * n - 1).next_power_of_two();
            let chirp: Vec<Complex64> =
                (0..n).map(|k| cis(s * PI * ((k as u128 * k as u128) % (2 * n as u128)) as f64 / n as f64)).collect();
            let mut kernel = vec![Complex64::new(0.0, 0.0); m];
            kernel[0] = chirp[0].conj();
            for k in 1..n {
                kernel[k] = chirp[k].conj();
                kernel[m - k] = chirp[k].conj();
            }
            let forward = Box::new(Dft::new(m, Direction::Forward));
            forward.process(&mut kernel);
            Kind::Bluestein { chirp, kernel, forward, inverse: Box::new(Dft::new(m, Direction::Inverse)) }
        };
        Dft { n, kind }
    }

    /// Transforms each whole chunk of `n` elements of `data` in place.
    pub fn process(&self, data: &mut [Complex64]) {
        if self.n == 0 {
            return;
        }
        for line in data.chunks_exact_mut(self.n) {
            match &self.kind {
                Kind::Identity => {}
                Kind::Radix2 { twiddles } => radix2(line, twiddles),
                Kind::Bluestein { chirp, kernel, forward, inverse } => {
                    let m = kernel.len();
                    let mut a = vec![Complex64::new(0.0, 0.0); m];
                    for ((slot, x), c) in a.iter_mut().zip(line.iter()).zip(chirp) {
                        *slot = x * c;
                    }
                    forward.process(&mut a);
                    for (v, k) in a.iter_mut().zip(kernel) {
                        *v *= k;
                    }
                    inverse.process(&mut a);
                    for ((x, v), c) in line.iter_mut().zip(&a).zip(chirp) {
                        *x = c * v / m as f64;
                    }
                }
            }
        }
    }
}

/// Iterative decimation-in-time radix-2 FFT; `twiddles` has `len/2` entries.
fn radix2(data: &mut [Complex64], twiddles: &[Complex64]) {
    let n = data.len();
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if j > i {
            data.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let half = len / 2;
        let step = n / len;
        for block in data.chunks_exact_mut(len) {
            let (lo, hi) = block.split_at_mut(half);
            for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = *v * twiddles[j * step];
                *v = *u - t;
                *u += t;
            }
        }
        len *= 2;
    }
}

/// The naive DFT, O(n²), with `jk` reduced mod n so every angle is exact.
pub fn naive_dft(input: &[Complex64], direction: Direction) -> Vec<Complex64> {
    let n = input.len();
    let s = sign(direction);
    (0..n).map(|k| input.iter().enumerate().map(|(j, x)| x * cis(s * 2.0 * PI * ((j * k) % n) as f64 / n as f64)).sum()).collect()
}

/// The fast 1-D transform of any length.
pub fn dft(data: &mut [Complex64], direction: Direction) {
    Dft::new(data.len(), direction).process(data)
}

/// Multi-dimensional transform of a packed `[batch][dims...]` array: 1-D transforms along
/// each axis.
pub fn transform(data: &mut [Complex64], dims: &[usize], direction: Direction) {
    let per: usize = dims.iter().product();
    if per == 0 {
        return;
    }
    for (axis, &len) in dims.iter().enumerate() {
        if len <= 1 {
            continue;
        }
        let plan = Dft::new(len, direction);
        let inner: usize = dims[axis + 1..].iter().product();
        let mut line = vec![Complex64::new(0.0, 0.0); len];
        for block in data.chunks_exact_mut(len * inner) {
            for j in 0..inner {
                for (t, v) in line.iter_mut().enumerate() {
                    *v = block[t * inner + j];
                }
                plan.process(&mut line);
                for (t, v) in line.iter().enumerate() {
                    block[t * inner + j] = *v;
                }
            }
        }
    }
}

/// Row-major multi-index of `flat` in `dims`.
fn unflatten(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut x = vec![0; dims.len()];
    for k in (0..dims.len()).rev() {
        x[k] = flat % dims[k];
        flat /= dims[k];
    }
    x
}

fn flatten(x: &[usize], dims: &[usize]) -> usize {
    x.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Where the logical elements of one side live.
struct View {
    dims: Vec<usize>,
    embed: Vec<usize>,
    stride: usize,
    dist: usize,
    /// Bytes of one real scalar.
    scalar: usize,
    complex: bool,
}

impl View {
    fn new(dims: &[i64], layout: Option<&Layout>, scalar: usize, complex: bool) -> View {
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let (embed, stride, dist) = match layout {
            None => (dims.clone(), 1, dims.iter().product()),
            Some(l) => (l.embed[..dims.len()].iter().map(|&e| e as usize).collect(), l.stride as usize, l.dist as usize),
        };
        View { dims, embed, stride, dist, scalar, complex }
    }

    fn per_batch(&self) -> usize {
        self.dims.iter().product()
    }

    /// Element offset of logical element `flat` (row-major) of batch `b`.
    fn offset(&self, b: usize, flat: usize) -> usize {
        let x = unflatten(flat, &self.dims);
        let mut off = x[0];
        for (xk, ek) in x.iter().zip(&self.embed).skip(1) {
            off = off * ek + xk;
        }
        off * self.stride + b * self.dist
    }

    fn read(&self, buf: &[u8], b: usize, flat: usize) -> Complex64 {
        let at = self.offset(b, flat) * self.scalar * if self.complex { 2 } else { 1 };
        let re = read_scalar(buf, at, self.scalar);
        let im = if self.complex { read_scalar(buf, at + self.scalar, self.scalar) } else { 0.0 };
        Complex64::new(re, im)
    }

    fn write(&self, buf: &mut [u8], b: usize, flat: usize, v: Complex64) {
        let at = self.offset(b, flat) * self.scalar * if self.complex { 2 } else { 1 };
        write_scalar(buf, at, self.scalar, v.re);
        if self.complex {
            write_scalar(buf, at + self.scalar, self.scalar, v.im);
        }
    }
}

/// A native-endian f32 or f64 at `at`; NaN past the end, so short buffers fail comparisons.
fn read_scalar(buf: &[u8], at: usize, size: usize) -> f64 {
    let Some(bytes) = at.checked_add(size).and_then(|end| buf.get(at..end)) else { return f64::NAN };
    if size == 4 {
        <[u8; 4]>::try_from(bytes).map_or(f64::NAN, |b| f32::from_ne_bytes(b) as f64)
    } else {
        <[u8; 8]>::try_from(bytes).map_or(f64::NAN, f64::from_ne_bytes)
    }
}

fn write_scalar(buf: &mut [u8], at: usize, size: usize, v: f64) {
    let Some(bytes) = at.checked_add(size).and_then(|end| buf.get_mut(at..end)) else { return };
    if size == 4 {
        bytes.copy_from_slice(&(v as f32).to_ne_bytes());
    } else {
        bytes.copy_from_slice(&v.to_ne_bytes());
    }
}

/// The input and output views of a valid descriptor.
fn views(desc: &PlanDesc) -> Option<(View, View)> {
    let e = desc.extents().ok()?;
    let r = desc.rank();
    let t = desc.transform;
    let s = t.real_bytes();
    let input = View::new(&e.input_dims[..r], desc.input.as_ref(), s, !t.is_forward_real());
    let output = View::new(&e.output_dims[..r], desc.output.as_ref(), s, !t.is_inverse_real());
    Some((input, output))
}

fn logical_dims(desc: &PlanDesc) -> Vec<usize> {
    desc.dims().iter().map(|&n| n as usize).collect()
}

/// Makes a half spectrum (last dim n/2+1) exactly Hermitian: every element whose mirror
/// `(-k) mod n` is also stored becomes the conjugate of it (self-mirrors become real).
fn make_hermitian(half: &mut [Complex64], dims: &[usize]) {
    let r = dims.len();
    let mut hdims = dims.to_vec();
    hdims[r - 1] = dims[r - 1] / 2 + 1;
    for flat in 0..half.len() {
        let k = unflatten(flat, &hdims);
        let p: Vec<usize> = k.iter().zip(dims).map(|(&k, &n)| (n - k) % n).collect();
        if p[r - 1] >= hdims[r - 1] {
            continue;
        }
        let mirror = flatten(&p, &hdims);
        if mirror == flat {
            half[flat].im = 0.0;
        } else if flat < mirror {
            half[mirror] = half[flat].conj();
        }
    }
}

/// A buffer of `input_bytes` with every logical input element random in [-1, 1) (seeded),
/// gaps and padding filled with [`PAD_BYTE`]. For C2R/Z2D the input is an exactly Hermitian
/// half spectrum: the forward transform of a random real signal. Empty for an invalid desc.
pub fn random_input(desc: &PlanDesc, seed: u64) -> Vec<u8> {
    let (Some((input, _)), Ok(e)) = (views(desc), desc.extents()) else { return Vec::new() };
    let mut buf = vec![PAD_BYTE; e.input_bytes];
    let mut rng = SplitMix64::new(seed);
    let t = desc.transform;
    let dims = logical_dims(desc);
    for b in 0..desc.batch as usize {
        if t.is_inverse_real() {
            let mut signal: Vec<Complex64> = (0..dims.iter().product()).map(|_| Complex64::new(rng.uniform(), 0.0)).collect();
            transform(&mut signal, &dims, Direction::Forward);
            let mut half = take_half(&signal, &dims);
            make_hermitian(&mut half, &dims);
            for (flat, v) in half.into_iter().enumerate() {
                input.write(&mut buf, b, flat, v);
            }
        } else {
            for flat in 0..input.per_batch() {
                let v = if t.is_forward_real() {
                    Complex64::new(rng.uniform(), 0.0)
                } else {
                    Complex64::new(rng.uniform(), rng.uniform())
                };
                input.write(&mut buf, b, flat, v);
            }
        }
    }
    buf
}

/// The first n/2+1 entries of the last dimension of one packed full grid.
fn take_half(full: &[Complex64], dims: &[usize]) -> Vec<Complex64> {
    let n = dims[dims.len() - 1];
    full.chunks_exact(n).flat_map(|row| row[..n / 2 + 1].iter().copied()).collect()
}

/// The full spectrum of one batch from its half by Hermitian symmetry.
fn extend_half(half: &[Complex64], dims: &[usize]) -> Vec<Complex64> {
    let r = dims.len();
    let mut hdims = dims.to_vec();
    hdims[r - 1] = dims[r - 1] / 2 + 1;
    (0..dims.iter().product())
        .map(|flat| {
            let k = unflatten(flat, dims);
            if k[r - 1] < hdims[r - 1] {
                half[flatten(&k, &hdims)]
            } else {
                let p: Vec<usize> = k.iter().zip(dims).map(|(&k, &n)| (n - k) % n).collect();
                half[flatten(&p, &hdims)].conj()
            }
        })
        .collect()
}

/// The logical output elements `desc`'s transform gives for `input` (read through the input
/// layout), in packed order; real outputs as complex with zero imaginary part. `direction`
/// matters for C2C/Z2Z only. Empty for an invalid desc.
pub fn expected_output(desc: &PlanDesc, direction: Direction, input: &[u8]) -> Vec<Complex64> {
    let Some((view, _)) = views(desc) else { return Vec::new() };
    let t = desc.transform;
    let dims = logical_dims(desc);
    let mut out = Vec::new();
    for b in 0..desc.batch as usize {
        let side: Vec<Complex64> = (0..view.per_batch()).map(|flat| view.read(input, b, flat)).collect();
        if t.is_forward_real() {
            let mut full = side;
            transform(&mut full, &dims, Direction::Forward);
            out.extend(take_half(&full, &dims));
        } else if t.is_inverse_real() {
            let mut full = extend_half(&side, &dims);
            transform(&mut full, &dims, Direction::Inverse);
            out.extend(full.into_iter().map(|v| Complex64::new(v.re, 0.0)));
        } else {
            let mut full = side;
            transform(&mut full, &dims, direction);
            out.extend(full);
        }
    }
    out
}

/// The logical output elements of `output`, read through `desc`'s output layout, in the
/// order of [`expected_output`].
pub fn gather_output(desc: &PlanDesc, output: &[u8]) -> Vec<Complex64> {
    let Some((_, view)) = views(desc) else { return Vec::new() };
    (0..desc.batch as usize)
        .flat_map(|b| (0..view.per_batch()).map(move |flat| (b, flat)))
        .map(|(b, f)| view.read(output, b, f))
        .collect()
}

/// The logical input elements of `input`, read through `desc`'s input layout, in packed
/// order (for round trips and clobber checks).
pub fn gather_input(desc: &PlanDesc, input: &[u8]) -> Vec<Complex64> {
    let Some((view, _)) = views(desc) else { return Vec::new() };
    (0..desc.batch as usize)
        .flat_map(|b| (0..view.per_batch()).map(move |flat| (b, flat)))
        .map(|(b, f)| view.read(input, b, f))
        .collect()
}

/// ‖got − want‖₂ / ‖want‖₂ (the absolute norm when `want` is zero). Infinity for a length
/// mismatch or any NaN, so it fails every `<=` bar.
pub fn rel_l2_error(got: &[Complex64], want: &[Complex64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    let diff: f64 = got.iter().zip(want).map(|(g, w)| (g - w).norm_sqr()).sum();
    let norm: f64 = want.iter().map(|w| w.norm_sqr()).sum();
    let err = if norm > 0.0 { (diff / norm).sqrt() } else { diff.sqrt() };
    if err.is_nan() { f64::INFINITY } else { err }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::TransformType;

    fn random_complex(n: usize, seed: u64) -> Vec<Complex64> {
        let mut rng = SplitMix64::new(seed);
        (0..n).map(|_| Complex64::new(rng.uniform(), rng.uniform())).collect()
    }

    #[test]
    fn fast_matches_naive_on_many_lengths() {
        let primes = [97, 101, 127, 251, 257, 509, 1009];
        for n in (1..=64).chain(primes) {
            for dir in [Direction::Forward, Direction::Inverse] {
                let x = random_complex(n, n as u64);
                let want = naive_dft(&x, dir);
                let mut got = x.clone();
                dft(&mut got, dir);
                let err = rel_l2_error(&got, &want);
                assert!(err <= 1e-12, "n={n} {dir:?}: {err:e}");
            }
        }
    }

    #[test]
    fn known_values() {
        let mut x = vec![Complex64::new(1.0, 0.0), Complex64::new(0.0, 0.0), Complex64::new(0.0, 0.0)];
        dft(&mut x, Direction::Forward);
        assert!(x.iter().all(|v| (v - Complex64::new(1.0, 0.0)).norm() < 1e-15));
        // Forward is exp(-2πi jk/n): x = [0,1,0,0] gives X_k = exp(-iπk/2) = [1, -i, -1, i].
        let mut y = vec![Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0), Complex64::new(0.0, 0.0), Complex64::new(0.0, 0.0)];
        dft(&mut y, Direction::Forward);
        let want = [(1.0, 0.0), (0.0, -1.0), (-1.0, 0.0), (0.0, 1.0)];
        for (v, w) in y.iter().zip(want) {
            assert!((v - Complex64::new(w.0, w.1)).norm() < 1e-15, "{y:?}");
        }
    }

    #[test]
    fn multi_dimensional_matches_direct_sum() {
        for dims in [vec![3, 4], vec![2, 3, 5], vec![4, 1, 6], vec![7, 8]] {
            let per: usize = dims.iter().product();
            let x = random_complex(2 * per, 9);
            let mut got = x.clone();
            transform(&mut got, &dims, Direction::Forward);
            for b in 0..2 {
                for kf in 0..per {
                    let k = unflatten(kf, &dims);
                    let mut acc = Complex64::new(0.0, 0.0);
                    for jf in 0..per {
                        let j = unflatten(jf, &dims);
                        let phase: f64 = j.iter().zip(&k).zip(&dims).map(|((&j, &k), &n)| ((j * k) % n) as f64 / n as f64).sum();
                        acc += x[b * per + jf] * cis(-2.0 * PI * phase);
                    }
                    assert!((got[b * per + kf] - acc).norm() < 1e-12, "{dims:?}");
                }
            }
        }
    }

    #[test]
    fn hermitian_inputs_invert_to_real_signals() {
        for dims in [vec![1], vec![2], vec![9], vec![16], vec![5, 6], vec![4, 3, 7], vec![6, 6, 4]] {
            let n: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            let desc = PlanDesc::new(TransformType::Z2D, &n, 2);
            let input = random_input(&desc, 5);
            let (view, _) = views(&desc).unwrap();
            for b in 0..2 {
                let half: Vec<Complex64> = (0..view.per_batch()).map(|f| view.read(&input, b, f)).collect();
                let mut full = extend_half(&half, &dims);
                transform(&mut full, &dims, Direction::Inverse);
                let im: f64 = full.iter().map(|v| v.im.abs()).fold(0.0, f64::max);
                let re: f64 = full.iter().map(|v| v.re.abs()).fold(0.0, f64::max);
                assert!(im <= 1e-12 * re.max(1.0), "{dims:?}: imaginary {im:e} of {re:e}");
            }
        }
    }

    #[test]
    fn real_round_trip_scales_by_n() {
        let fwd = PlanDesc::new(TransformType::D2Z, &[6, 5], 3);
        let inv = PlanDesc::new(TransformType::Z2D, &[6, 5], 3);
        let x = random_input(&fwd, 1);
        let spectrum = expected_output(&fwd, Direction::Forward, &x);
        let mut buf = vec![0u8; inv.validate().unwrap().input_bytes];
        for (i, v) in spectrum.iter().enumerate() {
            buf[i * 16..i * 16 + 8].copy_from_slice(&v.re.to_ne_bytes());
            buf[i * 16 + 8..i * 16 + 16].copy_from_slice(&v.im.to_ne_bytes());
        }
        let back = expected_output(&inv, Direction::Inverse, &buf);
        let want: Vec<Complex64> = gather_input(&fwd, &x).iter().map(|v| v * 30.0).collect();
        assert!(rel_l2_error(&back, &want) < 1e-13);
    }

    #[test]
    fn layouts_place_elements_and_fill_gaps() {
        let desc = PlanDesc::new(TransformType::C2C, &[3, 2], 2).with_input_layout(Layout::new(&[4, 3], 2, 30));
        let e = desc.validate().unwrap();
        let buf = random_input(&desc, 3);
        assert_eq!(buf.len(), e.input_bytes);
        // Element (b=1, x=(2,1)) lives at 30 + (2*3 + 1)*2 = 44 complex f32 elements in.
        let (view, _) = views(&desc).unwrap();
        assert_eq!(view.offset(1, 5), 44);
        // Element offset 1 is a stride gap: still the pad pattern.
        assert!(buf[8..16].iter().all(|&b| b == PAD_BYTE));
        let vals = gather_input(&desc, &buf);
        assert_eq!(vals.len(), 12);
        assert!(vals.iter().all(|v| v.re.abs() <= 1.0 && v.im.abs() <= 1.0));
    }

    #[test]
    fn errors_fail_every_bar() {
        let a = [Complex64::new(1.0, 0.0)];
        assert_eq!(rel_l2_error(&a, &a), 0.0);
        assert!(rel_l2_error(&[Complex64::new(f64::NAN, 0.0)], &a) > 1.0);
        assert!(rel_l2_error(&a, &[]) > 1.0);
        assert!(random_input(&PlanDesc::new(TransformType::C2C, &[0], 1), 1).is_empty());
        assert!(expected_output(&PlanDesc::new(TransformType::C2C, &[4], 0), Direction::Forward, &[]).is_empty());
        // A short buffer reads as NaN, never panics.
        let d = PlanDesc::new(TransformType::C2C, &[4], 1);
        assert!(rel_l2_error(&gather_output(&d, &[0u8; 3]), &[Complex64::new(0.0, 0.0); 4]).is_infinite());
    }
}
