//! The transform descriptor: everything that makes two hipFFT plans different.
//!
//! A `PlanDesc` is validated before any runtime call, because hipFFT itself does not reject
//! everything it cannot do: a zero length or batch makes plan creation loop forever.
//! Equality and hashing look at the fields a plan depends on (the first `rank` lengths and
//! embeds), never at raw struct bytes, so unused array slots cannot split the cache.
#![deny(missing_docs)]

use std::fmt;
use std::hash::{Hash, Hasher};

/// `hipfftType` (and `cufftType`): the numeric values are the library's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(i32)]
pub enum TransformType {
    /// Real to complex, single precision (always forward).
    R2C = 0x2a,
    /// Complex to real, single precision (always inverse; overwrites its input).
    C2R = 0x2c,
    /// Complex to complex, single precision.
    C2C = 0x29,
    /// Real to complex, double precision (always forward).
    D2Z = 0x6a,
    /// Complex to real, double precision (always inverse; overwrites its input).
    Z2D = 0x6c,
    /// Complex to complex, double precision.
    Z2Z = 0x69,
}

impl TransformType {
    /// Every transform type, for tables and exhaustive tests.
    pub const ALL: [TransformType; 6] = [
        TransformType::R2C,
        TransformType::C2R,
        TransformType::C2C,
        TransformType::D2Z,
        TransformType::Z2D,
        TransformType::Z2Z,
    ];

    /// From a raw `hipfftType` value.
    pub fn from_raw(value: i32) -> Result<Self, DescError> {
        Self::ALL
            .into_iter()
            .find(|t| *t as i32 == value)
            .ok_or(DescError::UnknownTransform { value })
    }

    /// The `hipfftType` value.
    pub fn raw(self) -> i32 {
        self as i32
    }

    /// Double precision (D2Z, Z2D, Z2Z).
    pub fn is_double(self) -> bool {
        matches!(self, TransformType::D2Z | TransformType::Z2D | TransformType::Z2Z)
    }

    /// Real input, complex output (R2C, D2Z).
    pub fn is_forward_real(self) -> bool {
        matches!(self, TransformType::R2C | TransformType::D2Z)
    }

    /// Complex input, real output (C2R, Z2D).
    pub fn is_inverse_real(self) -> bool {
        matches!(self, TransformType::C2R | TransformType::Z2D)
    }

    /// Complex input and output (C2C, Z2Z): the only types with a free direction.
    pub fn is_complex(self) -> bool {
        matches!(self, TransformType::C2C | TransformType::Z2Z)
    }

    /// Bytes of one real scalar.
    pub fn real_bytes(self) -> usize {
        if self.is_double() { 8 } else { 4 }
    }

    /// Bytes of one element on the input side.
    pub fn input_element_bytes(self) -> usize {
        if self.is_forward_real() { self.real_bytes() } else { 2 * self.real_bytes() }
    }

    /// Bytes of one element on the output side.
    pub fn output_element_bytes(self) -> usize {
        if self.is_inverse_real() { self.real_bytes() } else { 2 * self.real_bytes() }
    }

    /// The name hipFFT's headers use (`HIPFFT_R2C` without the prefix).
    pub fn name(self) -> &'static str {
        match self {
            TransformType::R2C => "R2C",
            TransformType::C2R => "C2R",
            TransformType::C2C => "C2C",
            TransformType::D2Z => "D2Z",
            TransformType::Z2D => "Z2D",
            TransformType::Z2Z => "Z2Z",
        }
    }

    /// From its name (`r2c`, `Z2Z`: any case), for command lines.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for TransformType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `HIPFFT_FORWARD` (-1) and `HIPFFT_BACKWARD` (+1). Real transforms have a fixed direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Direction {
    /// `HIPFFT_FORWARD`: the exponent's sign is negative.
    Forward = -1,
    /// `HIPFFT_BACKWARD`: unnormalized, as in hipFFT.
    Inverse = 1,
}

impl Direction {
    /// From the library's value: -1 or +1, else `None`.
    pub fn from_raw(value: i32) -> Option<Self> {
        match value {
            -1 => Some(Direction::Forward),
            1 => Some(Direction::Inverse),
            _ => None,
        }
    }
    /// The library's value: -1 or +1.
    pub fn raw(self) -> i32 {
        self as i32
    }
}

/// An advanced data layout of one side (`inembed`/`istride`/`idist` or the `o` ones).
///
/// Element `x` of batch `b` lives at `b * dist + (((x0 * embed[1]) + x1) * embed[2] + x2) * stride`,
/// as in hipFFT and cuFFT. Only the first `rank` embeds are used.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Storage lengths per dimension (`inembed`/`onembed`), at least the logical ones.
    pub embed: [i64; 3],
    /// Distance between two consecutive elements of the innermost dimension.
    pub stride: i64,
    /// Distance between the first elements of two consecutive batches.
    pub dist: i64,
}

impl Layout {
    /// A layout from 1 to 3 embeds (slowest first); unused slots are zero.
    pub fn new(embed: &[i64], stride: i64, dist: i64) -> Self {
        let mut e = [0; 3];
        for (slot, v) in e.iter_mut().zip(embed) {
            *slot = *v;
        }
        Layout { embed: e, stride, dist }
    }

    fn eq_rank(&self, other: &Layout, rank: usize) -> bool {
        first_eq(&self.embed, &other.embed, rank) && self.stride == other.stride && self.dist == other.dist
    }

    fn hash_rank<H: Hasher>(&self, rank: usize, h: &mut H) {
        for e in &self.embed[..rank] {
            h.write_i64(*e);
        }
        h.write_i64(self.stride);
        h.write_i64(self.dist);
    }
}

/// A descriptor field, for error messages: `n[1]`, `batch`, `inembed[0]`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name as the C struct spells it (`n`, `inembed`, `batch`).
    pub name: &'static str,
    /// The array index, for array fields.
    pub index: Option<u8>,
}

impl Field {
    /// A scalar field.
    pub const fn plain(name: &'static str) -> Self {
        Field { name, index: None }
    }
    /// Element `index` of an array field.
    pub const fn at(name: &'static str, index: usize) -> Self {
        Field { name, index: Some(index as u8) }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{}]", self.name, i),
            None => f.write_str(self.name),
        }
    }
}

/// Why a descriptor was rejected. Each names the field and the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DescError {
    #[error("`transform` = {value:#x} is not a hipfftType (R2C 0x2a, C2R 0x2c, C2C 0x29, D2Z 0x6a, Z2D 0x6c, Z2Z 0x69)")]
    /// `transform` is not one of the six `hipfftType` values.
    UnknownTransform {
        /// The value given.
        value: i32,
    },
    #[error("`rank` = {value} is outside 1..=3")]
    /// `rank` is not 1, 2 or 3.
    RankOutOfRange {
        /// The value given.
        value: i64,
    },
    #[error("`device` = {value} is negative")]
    /// `device` is negative.
    NegativeDevice {
        /// The value given.
        value: i64,
    },
    #[error("`{field}` = {value} must be at least 1 (hipFFT loops forever on a zero length or batch)")]
    /// A length, batch, stride or distance is zero or negative.
    NotPositive {
        /// The field.
        field: Field,
        /// The value given.
        value: i64,
    },
    #[error("`{field}` = {value} is smaller than the {side} extent {min} of that dimension")]
    /// An embed is smaller than the logical length it must hold.
    EmbedTooSmall {
        /// The embed field.
        field: Field,
        /// The value given.
        value: i64,
        /// The smallest value that fits.
        min: i64,
        /// `input` or `output`.
        side: &'static str,
    },
    #[error("`{field}` = {value} makes the {what} overflow")]
    /// A size computed from the descriptor does not fit the integer types the libraries use.
    Overflow {
        /// The field that makes it overflow.
        field: Field,
        /// The value given.
        value: i64,
        /// What overflows (`input size`, `batch offset`, ...).
        what: &'static str,
    },
    #[error(
        "`odist` = {odist} with `ostride` = {ostride} makes batches 0 and {batch} write the same output \
         element (offset {offset}): the transform's result would be undefined"
    )]
    /// Two batches would write the same output element.
    OutputOverlap {
        /// The output distance given.
        odist: i64,
        /// The output stride given.
        ostride: i64,
        /// A batch that writes where batch 0 does.
        batch: i64,
        /// The element offset both write.
        offset: i64,
    },
}

/// The full transform descriptor. Build it with [`PlanDesc::new`] and the layout methods.
///
/// # Examples
///
/// ```
/// use hipfft_pool::{Layout, PlanDesc, TransformType};
///
/// // 512 real transforms of 400 points, packed: 512 x 201 complex outputs.
/// let desc = PlanDesc::new(TransformType::R2C, &[400], 512);
/// let ext = desc.validate()?;
/// assert_eq!(ext.output_bytes, 512 * 201 * 8);
///
/// // An advanced input layout (batches 401 floats apart) on device 1.
/// let strided = desc.with_input_layout(Layout::new(&[400], 1, 401)).on_device(1);
/// assert_ne!(strided, desc);
///
/// // Rejected before any library call, naming the field.
/// let err = PlanDesc::new(TransformType::C2C, &[0], 1).validate().unwrap_err();
/// assert!(err.to_string().contains("`n[0]` = 0"));
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
///
/// `repr(C)`: device and transform first, where an execution reads them (see the pool's
/// `PlanEntry`).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct PlanDesc {
    /// Device ordinal the plan is made and executed on.
    pub device: i32,
    /// What the plan computes.
    pub transform: TransformType,
    /// Number of dimensions, 1 to 3.
    pub rank: u32,
    /// Logical lengths; for real transforms the last one is the real length.
    pub n: [i64; 3],
    /// Transforms per execution.
    pub batch: i64,
    /// `None`: the packed layout hipFFT uses for a null `inembed`.
    pub input: Option<Layout>,
    /// `None`: the packed layout hipFFT uses for a null `onembed`.
    pub output: Option<Layout>,
}

/// Whether the first `len` entries of `a` and `b` are equal. Three fixed compares rather
/// than a slice compare, which calls `memcmp`: a hit compares descriptors on every lookup
/// (about 18 of its 249 instructions went to that call, under callgrind).
#[inline]
fn first_eq(a: &[i64; 3], b: &[i64; 3], len: usize) -> bool {
    (0..3).all(|i| i >= len || a[i] == b[i])
}

impl PartialEq for PlanDesc {
    fn eq(&self, other: &Self) -> bool {
        let r = (self.rank as usize).min(3);
        let layout_eq = |a: &Option<Layout>, b: &Option<Layout>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.eq_rank(b, r),
            _ => false,
        };
        self.device == other.device
            && self.transform == other.transform
            && self.rank == other.rank
            && first_eq(&self.n, &other.n, r)
            && self.batch == other.batch
            && layout_eq(&self.input, &other.input)
            && layout_eq(&self.output, &other.output)
    }
}

impl Eq for PlanDesc {}

impl Hash for PlanDesc {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let r = (self.rank as usize).min(3);
        h.write_i32(self.device);
        h.write_i32(self.transform as i32);
        h.write_u32(self.rank);
        for n in &self.n[..r] {
            h.write_i64(*n);
        }
        h.write_i64(self.batch);
        for side in [&self.input, &self.output] {
            match side {
                None => h.write_u8(0),
                Some(l) => {
                    h.write_u8(1);
                    l.hash_rank(r, h);
                }
            }
        }
    }
}

impl fmt::Display for PlanDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = (self.rank as usize).min(3);
        write!(f, "dev{} {} n=", self.device, self.transform)?;
        for (i, n) in self.n[..r].iter().enumerate() {
            if i > 0 {
                f.write_str("x")?;
            }
            write!(f, "{n}")?;
        }
        write!(f, " batch={}", self.batch)?;
        for (name, side) in [("in", &self.input), ("out", &self.output)] {
            if let Some(l) = side {
                write!(f, " {name}embed={:?} {name}stride={} {name}dist={}", &l.embed[..r], l.stride, l.dist)?;
            }
        }
        Ok(())
    }
}

/// Sizes derived from a valid descriptor, in elements of each side's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extents {
    /// Logical lengths of the input side (the last one halved + 1 for C2R/Z2D).
    pub input_dims: [i64; 3],
    /// Logical lengths of the output side (the last one halved + 1 for R2C/D2Z).
    pub output_dims: [i64; 3],
    /// Elements the input buffer must hold: one past the largest index touched.
    pub input_elements: u64,
    /// Elements the output buffer must hold: one past the largest index written.
    pub output_elements: u64,
    /// `input_elements` in bytes of the input element type.
    pub input_bytes: usize,
    /// `output_elements` in bytes of the output element type.
    pub output_bytes: usize,
}

impl PlanDesc {
    /// A packed transform on device 0. `n` holds 1 to 3 lengths (slowest first).
    pub fn new(transform: TransformType, n: &[i64], batch: i64) -> Self {
        let mut dims = [0; 3];
        for (slot, v) in dims.iter_mut().zip(n) {
            *slot = *v;
        }
        PlanDesc { device: 0, transform, rank: n.len() as u32, n: dims, batch, input: None, output: None }
    }

    /// The same transform on `device`.
    pub fn on_device(mut self, device: i32) -> Self {
        self.device = device;
        self
    }

    /// With an advanced input layout (`inembed`, `istride`, `idist`).
    pub fn with_input_layout(mut self, layout: Layout) -> Self {
        self.input = Some(layout);
        self
    }

    /// With an advanced output layout (`onembed`, `ostride`, `odist`).
    pub fn with_output_layout(mut self, layout: Layout) -> Self {
        self.output = Some(layout);
        self
    }

    /// The rank, clamped to 3 so that indexing never panics on an unvalidated value.
    pub fn rank(&self) -> usize {
        (self.rank as usize).min(3)
    }

    /// The lengths that matter (`n[..rank]`).
    pub fn dims(&self) -> &[i64] {
        &self.n[..self.rank()]
    }

    /// The layouts to hand to `hipfftMakePlanMany64` / `cufftMakePlanMany64`. The libraries
    /// take the advanced layout only when *both* embeds are given (cuFFT rejects one null
    /// embed with INVALID_VALUE), so a side left packed is spelled out as its packed layout
    /// whenever the other side has one. `None` means both embeds null.
    pub fn library_layouts(&self) -> Option<(Layout, Layout)> {
        if self.input.is_none() && self.output.is_none() {
            return None;
        }
        let ext = self.extents().ok()?;
        let r = self.rank();
        let packed = |dims: &[i64; 3]| Layout::new(&dims[..r], 1, dims[..r].iter().product());
        Some((
            self.input.unwrap_or_else(|| packed(&ext.input_dims)),
            self.output.unwrap_or_else(|| packed(&ext.output_dims)),
        ))
    }

    /// Checks every field before any runtime call and returns the derived extents. Beyond
    /// [`PlanDesc::extents`], it rejects an output layout on which two batches write the same
    /// element: hipFFT and cuFFT accept one and leave the result undefined.
    pub fn validate(&self) -> Result<Extents, DescError> {
        let ext = self.extents()?;
        if let Some(l) = &self.output {
            if let Some((batch, offset)) = overlap::first_output_overlap(&ext.output_dims[..self.rank()], self.batch, l) {
                return Err(DescError::OutputOverlap { odist: l.dist, ostride: l.stride, batch, offset });
            }
        }
        Ok(ext)
    }

    /// The derived extents, checking what hipFFT needs to make a plan at all (lengths,
    /// batch, embeds, strides, distances, overflow) but not whether outputs overlap. The
    /// runtimes use this: they take what hipFFT takes.
    pub fn extents(&self) -> Result<Extents, DescError> {
        if self.device < 0 {
            return Err(DescError::NegativeDevice { value: self.device as i64 });
        }
        if !(1..=3).contains(&self.rank) {
            return Err(DescError::RankOutOfRange { value: self.rank as i64 });
        }
        let r = self.rank();
        for (i, &n) in self.n[..r].iter().enumerate() {
            if n < 1 {
                return Err(DescError::NotPositive { field: Field::at("n", i), value: n });
            }
        }
        if self.batch < 1 {
            return Err(DescError::NotPositive { field: Field::plain("batch"), value: self.batch });
        }
        let mut real_dims = [1i64; 3];
        real_dims[..r].copy_from_slice(&self.n[..r]);
        let mut complex_dims = real_dims;
        if !self.transform.is_complex() {
            complex_dims[r - 1] = real_dims[r - 1] / 2 + 1;
        }
        // Overflow of the logical element count itself (n[0]*n[1]*n[2]*batch).
        let mut factors = [(Field::plain("batch"), self.batch); 4];
        for (i, &n) in self.n[..r].iter().enumerate() {
            factors[i] = (Field::at("n", i), n);
        }
        product(&factors[..=r], "element count (n product times batch)")?;
        let (in_dims, out_dims, in_side, out_side) = if self.transform.is_forward_real() {
            (real_dims, complex_dims, "real", "complex")
        } else if self.transform.is_inverse_real() {
            (complex_dims, real_dims, "complex", "real")
        } else {
            (real_dims, real_dims, "complex", "complex")
        };
        let t = self.transform;
        let input_elements = side_elements(r, &in_dims, self.batch, self.input.as_ref(), ["inembed", "istride", "idist"], in_side)?;
        let output_elements =
            side_elements(r, &out_dims, self.batch, self.output.as_ref(), ["onembed", "ostride", "odist"], out_side)?;
        let bytes = |elements: u64, per: usize, layout: Option<&Layout>, dist: &'static str| {
            (elements as u128).checked_mul(per as u128).filter(|b| *b <= isize::MAX as u128).map(|b| b as usize).ok_or_else(|| {
                // The largest factor of the element count: the batch or a length when packed,
                // the batch or the distance with a layout.
                let (field, value) = match layout {
                    None => largest(&factors[..=r]),
                    Some(l) => largest(&[(Field::plain("batch"), self.batch), (Field::plain(dist), l.dist)]),
                };
                DescError::Overflow { field, value, what: "byte extent of the buffer" }
            })
        };
        let input_bytes = bytes(input_elements, t.input_element_bytes(), self.input.as_ref(), "idist")?;
        let output_bytes = bytes(output_elements, t.output_element_bytes(), self.output.as_ref(), "odist")?;
        Ok(Extents { input_dims: in_dims, output_dims: out_dims, input_elements, output_elements, input_bytes, output_bytes })
    }
}

/// Elements a side's buffer must hold, checking its layout against the logical dims.
fn side_elements(
    r: usize,
    dims: &[i64; 3],
    batch: i64,
    layout: Option<&Layout>,
    names: [&'static str; 3],
    side: &'static str,
) -> Result<u64, DescError> {
    let overflow = |field: Field, value: i64| DescError::Overflow { field, value, what: "largest element index (i64)" };
    let Some(l) = layout else {
        // Packed: batch * prod(dims), already known not to overflow for the real side; the
        // complex side is no larger than the real side plus one row, so recheck cheaply.
        let mut factors = [(Field::plain("batch"), batch); 4];
        for (i, &d) in dims[..r].iter().enumerate() {
            factors[i] = (Field::at("n", i), d);
        }
        return product(&factors[..=r], "largest element index (i64)").map(|count| count as u64);
    };
    for (i, (&e, &d)) in l.embed[..r].iter().zip(&dims[..r]).enumerate() {
        if e < d {
            if e < 1 {
                return Err(DescError::NotPositive { field: Field::at(names[0], i), value: e });
            }
            return Err(DescError::EmbedTooSmall { field: Field::at(names[0], i), value: e, min: d, side });
        }
    }
    if l.stride < 1 {
        return Err(DescError::NotPositive { field: Field::plain(names[1]), value: l.stride });
    }
    if l.dist < 1 {
        return Err(DescError::NotPositive { field: Field::plain(names[2]), value: l.dist });
    }
    // Largest offset within one batch: sum over dims of (d_k - 1) * prod(embed[k+1..]) * stride.
    let mut max_off: i64 = 0;
    let mut pitch: i64 = 1;
    for k in (0..r).rev() {
        let term = (dims[k] - 1).checked_mul(pitch).ok_or(overflow(Field::at(names[0], k), l.embed[k]))?;
        max_off = max_off.checked_add(term).ok_or(overflow(Field::at(names[0], k), l.embed[k]))?;
        if k > 0 {
            pitch = pitch.checked_mul(l.embed[k]).ok_or(overflow(Field::at(names[0], k), l.embed[k]))?;
        }
    }
    // Each product names its larger factor; the span of one batch comes from the embeds.
    let max_off = max_off.checked_mul(l.stride).ok_or_else(|| {
        let embeds: Vec<(Field, i64)> = (0..r).map(|k| (Field::at(names[0], k), l.embed[k])).collect();
        let (field, value) = if l.stride >= max_off { (Field::plain(names[1]), l.stride) } else { largest(&embeds) };
        overflow(field, value)
    })?;
    let batches = (batch - 1).checked_mul(l.dist).ok_or_else(|| {
        let (field, value) = largest(&[(Field::plain(names[2]), l.dist), (Field::plain("batch"), batch)]);
        overflow(field, value)
    })?;
    let last = batches.checked_add(max_off).and_then(|v| v.checked_add(1)).ok_or(overflow(Field::plain(names[2]), l.dist))?;
    Ok(last as u64)
}

/// The product of `factors` (each at least 1), or its overflow naming the largest factor: the
/// one out of proportion, whatever the order of the multiplications (a `batch` of `i64::MAX`
/// is named, not the length it is multiplied by first).
fn product(factors: &[(Field, i64)], what: &'static str) -> Result<i64, DescError> {
    factors.iter().try_fold(1i64, |acc, &(_, v)| acc.checked_mul(v)).ok_or_else(|| {
        let (field, value) = largest(factors);
        DescError::Overflow { field, value, what }
    })
}

/// The largest of `factors`; the first of equals.
fn largest(factors: &[(Field, i64)]) -> (Field, i64) {
    factors.iter().copied().reduce(|big, f| if f.1 > big.1 { f } else { big }).expect("at least one factor")
}

mod overlap {
    //! Whether two batches of an output layout share an element.
    //!
    //! Within one batch, offsets `sum x_k * pitch_k` (pitch from the embeds) are distinct,
    //! since every embed is at least its length: so any collision is between batches. Batch
    //! `b` and `b + db` collide when `db * dist = stride * d` for a positive difference `d`
    //! of two in-batch offsets. The smallest such `db` is `m = stride / gcd`, giving
    //! `d = dist / gcd`, and every solution is a multiple `j` of both; for each `j` in range,
    //! whether `j * d` is a difference of two offsets is a digit decomposition with at most
    //! two choices per dimension (the lower dimensions' reach is below each pitch).

    use super::Layout;

    /// Multiples `j` tried before accepting a layout unproven (as hipFFT would). Layouts
    /// that need more are pathological: sparse embeds with a distance below the span.
    const MAX_MULTIPLES: i64 = 1 << 16;

    /// The first collision, as (the batch that writes an element of batch 0, that element's
    /// offset).
    pub(super) fn first_output_overlap(dims: &[i64], batch: i64, l: &Layout) -> Option<(i64, i64)> {
        let r = dims.len();
        // Pitches and reach (largest in-batch offset below dimension k), both known not to
        // overflow: `extents` checked the largest index.
        let mut pitch = [1i64; 3];
        for k in (0..r.saturating_sub(1)).rev() {
            pitch[k] = pitch[k + 1] * l.embed[k + 1];
        }
        let mut reach = [0i64; 4];
        for k in (0..r).rev() {
            reach[k] = reach[k + 1] + (dims[k] - 1) * pitch[k];
        }
        let span = reach[0]; // the largest in-batch offset, in units of `stride`
        if batch < 2 || l.dist > span.saturating_mul(l.stride) {
            return None;
        }
        let g = gcd(l.dist, l.stride);
        let (m, step) = (l.stride / g, l.dist / g);
        let last = ((batch - 1) / m).min(span / step).min(MAX_MULTIPLES);
        for j in 1..=last {
            let mut digits = [0i64; 3];
            if decompose(j * step, 0, dims, &pitch, &reach, &mut digits) {
                // Batch 0 at `o1`, batch j*m at `o2` with o1 - o2 = j*step.
                let o1: i64 = (0..r).map(|k| digits[k].max(0) * pitch[k]).sum();
                return Some((j * m, o1 * l.stride));
            }
        }
        None
    }

    /// Writes `v = sum digits[k] * pitch[k]` over `k >= from` with `|digits[k]| < dims[k]`
    /// into `digits`, if such digits exist.
    fn decompose(v: i64, from: usize, dims: &[i64], pitch: &[i64; 3], reach: &[i64; 4], digits: &mut [i64; 3]) -> bool {
        if from == dims.len() {
            return v == 0;
        }
        let p = pitch[from];
        let below = v.div_euclid(p);
        for d in [below, below + 1] {
            if d.abs() < dims[from] && (v - d * p).abs() <= reach[from + 1] {
                digits[from] = d;
                if decompose(v - d * p, from + 1, dims, pitch, reach, digits) {
                    return true;
                }
            }
        }
        false
    }

    fn gcd(mut a: i64, mut b: i64) -> i64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_names_the_factor_out_of_proportion() {
        let overflow_of = |d: PlanDesc| match d.validate() {
            Err(DescError::Overflow { field, value, .. }) => (field.to_string(), value),
            other => panic!("{d}: {other:?}"),
        };
        // The batch multiplied after the lengths, or before them: the batch is named.
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[8], i64::MAX)), ("batch".into(), i64::MAX));
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[8, 8, 8], i64::MAX / 64)), ("batch".into(), i64::MAX / 64));
        // A length out of proportion is named, whichever dimension it is.
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[2, 1 << 62], 4)), ("n[1]".into(), 1 << 62));
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[1 << 40, 1 << 40], 1)), ("n[0]".into(), 1 << 40));
        // The byte extent: the batch, or the length.
        assert_eq!(overflow_of(PlanDesc::new(TransformType::Z2Z, &[4], i64::MAX / 8)).0, "batch");
        assert_eq!(overflow_of(PlanDesc::new(TransformType::Z2Z, &[i64::MAX / 8], 4)).0, "n[0]");
        // With a layout: the batch against the distance, the stride against the embeds.
        let wide = Layout::new(&[8], 1, 8);
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[8], i64::MAX / 4).with_input_layout(wide)).0, "batch");
        let far = Layout::new(&[8], 1, i64::MAX / 4);
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[8], 8).with_input_layout(far)).0, "idist");
        let big_embed = Layout::new(&[2, i64::MAX / 4], 8, i64::MAX / 2);
        assert_eq!(overflow_of(PlanDesc::new(TransformType::C2C, &[2, 8], 1).with_input_layout(big_embed)).0, "inembed[1]");
    }

    #[test]
    fn packed_extents_follow_the_half_spectrum() {
        let e = PlanDesc::new(TransformType::R2C, &[400], 4).validate().unwrap();
        assert_eq!(e.input_elements, 1600);
        assert_eq!(e.output_elements, 4 * 201);
        assert_eq!(e.input_bytes, 6400);
        assert_eq!(e.output_bytes, 4 * 201 * 8);
        let e = PlanDesc::new(TransformType::Z2D, &[6, 10], 2).validate().unwrap();
        assert_eq!(e.input_dims, [6, 6, 1]);
        assert_eq!(e.output_elements, 120);
        assert_eq!(e.input_bytes, 2 * 36 * 16);
    }

    /// The addresses batch `b` of the output writes, by brute force.
    fn written(desc: &PlanDesc, b: i64) -> std::collections::HashSet<i64> {
        let l = desc.output.unwrap();
        let ext = desc.extents().unwrap();
        let dims = &ext.output_dims[..desc.rank()];
        let mut out = std::collections::HashSet::new();
        let mut idx = vec![0i64; dims.len()];
        loop {
            let mut off = 0;
            for (k, x) in idx.iter().enumerate() {
                off = off * if k == 0 { 1 } else { l.embed[k] } + x;
            }
            out.insert(b * l.dist + off * l.stride);
            let Some(k) = (0..dims.len()).rev().find(|&k| idx[k] + 1 < dims[k]) else { return out };
            idx[k] += 1;
            idx[k + 1..].iter_mut().for_each(|x| *x = 0);
        }
    }

    /// Whether two batches of the output write one address, by brute force.
    fn aliases(desc: &PlanDesc) -> bool {
        let batches: Vec<_> = (0..desc.batch).map(|b| written(desc, b)).collect();
        batches.iter().enumerate().any(|(i, a)| batches[i + 1..].iter().any(|b| !a.is_disjoint(b)))
    }

    #[test]
    fn overlapping_outputs_are_rejected_with_a_witness() {
        // R2C n=5: 3 complex outputs per batch, spaced 15 apart: disjoint.
        let d = PlanDesc::new(TransformType::R2C, &[5], 4).with_output_layout(Layout::new(&[3], 5, 15));
        assert!(d.validate().is_ok());
        // ostride = odist: batch 1 starts on batch 0's second element.
        let d = PlanDesc::new(TransformType::C2C, &[8], 2).with_output_layout(Layout::new(&[8], 1, 1));
        let e = d.validate().unwrap_err();
        assert_eq!(e, DescError::OutputOverlap { odist: 1, ostride: 1, batch: 1, offset: 1 });
        assert!(e.to_string().contains("`odist` = 1 with `ostride` = 1"), "{e}");
        // Interleaved batches (dist 1, stride = batch) do not collide.
        let d = PlanDesc::new(TransformType::C2C, &[8], 4).with_output_layout(Layout::new(&[8], 4, 1));
        assert!(d.validate().is_ok());
        // ...unless there are more batches than the stride.
        let d = PlanDesc::new(TransformType::C2C, &[8], 5).with_output_layout(Layout::new(&[8], 4, 1));
        assert!(matches!(d.validate(), Err(DescError::OutputOverlap { batch: 4, offset: 4, .. })));
        // A padded 2-D output whose second batch sits in the first one's row gaps.
        let d = PlanDesc::new(TransformType::C2C, &[3, 4], 2).with_output_layout(Layout::new(&[3, 8], 1, 4));
        assert!(d.validate().is_ok() && !aliases(&d));
        // The runtimes take such layouts, as hipFFT does.
        let d = PlanDesc::new(TransformType::C2C, &[8], 2).with_output_layout(Layout::new(&[8], 1, 1));
        assert!(d.extents().is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// The decomposition agrees with brute force on small layouts of every rank.
        #[test]
        fn overlap_check_matches_brute_force(
            rank in 1usize..=3,
            n in proptest::collection::vec(1i64..5, 3),
            pad in proptest::collection::vec(0i64..4, 3),
            stride in 1i64..6,
            dist in 1i64..40,
            batch in 1i64..7,
        ) {
            let embed: Vec<i64> = (0..rank).map(|k| n[k] + pad[k]).collect();
            let d = PlanDesc::new(TransformType::C2C, &n[..rank], batch)
                .with_output_layout(Layout::new(&embed, stride, dist));
            let got = d.validate();
            proptest::prop_assert_eq!(got.is_err(), aliases(&d), "{} -> {:?}", d, got);
            if let Err(DescError::OutputOverlap { batch: other, offset, .. }) = got {
                // The witness is real: batch 0 and batch `other` both write `offset`.
                proptest::prop_assert!(other >= 1 && other < batch, "{} {:?}", d, got);
                proptest::prop_assert!(written(&d, 0).contains(&offset) && written(&d, other).contains(&offset), "{} {:?}", d, got);
            }
        }
    }

    #[test]
    fn unused_slots_do_not_split_keys() {
        let mut a = PlanDesc::new(TransformType::C2C, &[64], 2);
        let mut b = a;
        a.n[1] = 7;
        b.n[2] = 9;
        assert_eq!(a, b);
        let s = std::collections::hash_map::RandomState::new();
        use std::hash::BuildHasher;
        assert_eq!(s.hash_one(a), s.hash_one(b));
    }

    #[test]
    fn every_used_slot_splits_keys_and_no_unused_one_does() {
        let dims: [&[i64]; 3] = [&[64], &[8, 16], &[4, 8, 16]];
        for d in dims {
            let rank = d.len();
            let base = PlanDesc::new(TransformType::C2C, d, 2)
                .with_input_layout(Layout { embed: [0; 3], stride: 1, dist: 4096 });
            let mut embedded = base;
            if let Some(l) = embedded.input.as_mut() {
                l.embed[..rank].copy_from_slice(d);
            }
            for slot in 0..3 {
                let (mut n, mut e) = (base, embedded);
                n.n[slot] += 1;
                if let Some(l) = e.input.as_mut() {
                    l.embed[slot] += 1;
                }
                let used = slot < rank;
                assert_eq!(n != base, used, "rank {rank}, n[{slot}]");
                assert_eq!(e != embedded, used, "rank {rank}, input embed[{slot}]");
            }
        }
    }
}
