//! The working set a pool records, and the manifest it is saved as and warmed up from.
//!
//! A pool records every descriptor it made a plan for: its hits, its creations, the
//! measured time of those creations and its work size ([`WorkingSet`], updated on the slow
//! path only). [`crate::PlanPool::manifest`] snapshots it as a [`Manifest`], keyed by the
//! runtime, the FFT library's version and each device's name, so that a manifest is only
//! warmed up where its plans mean the same thing. The file is JSON (format below, version 1);
//! `docs/warmup.md` documents it.
//!
//! ```json
//! {"format": "hipfft-pool manifest", "version": 1, "runtime": "cuda",
//!  "library": "cuFFT 12.0.0 (12000)", "devices": [{"ordinal": 0, "name": "0: NVIDIA H200"}],
//!  "plans": [{"device": 0, "transform": "R2C", "rank": 1, "n": [400], "batch": 4,
//!             "input": null, "output": null, "hits": 1200, "creations": 1,
//!             "creation_us": 181.2, "work_size": 0}]}
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::desc::{Layout, PlanDesc, TransformType};
use crate::error::{Error, Result};
use crate::runtime::boundary::{Runtime, RuntimeInfo};

/// The `format` field of every manifest.
pub const MANIFEST_FORMAT: &str = "hipfft-pool manifest";
/// The version this library writes and reads.
pub const MANIFEST_VERSION: u32 = 1;
/// At most this many descriptors are recorded; later new ones are not (a pool that sees
/// more distinct shapes than this is not one a warm-up can help). A manifest with more plans
/// than this was not written by this library, and is refused when read.
pub const WORKING_SET_LIMIT: usize = 4096;
/// The largest manifest file read, in bytes (8 MiB). The largest manifest the writer can
/// produce ([`WORKING_SET_LIMIT`] plans of rank 3 with both layouts, every number at its
/// widest) is 3.3 MiB; twice that leaves room for a file re-indented by hand, while a wrong
/// path (a log, a disk image) is refused before it is read into memory.
pub const MANIFEST_MAX_BYTES: u64 = 8 << 20;

/// A pool's working set, as saved and warmed up from. See the module documentation.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// [`MANIFEST_VERSION`] when written by this library.
    pub version: u32,
    /// `sim`, `hip` or `cuda`.
    pub runtime: String,
    /// The FFT library and its version as the runtime reports it (`cuFFT 12.0.0 (12000)`).
    pub library: String,
    /// The devices the plans were made on, by ordinal, with the runtime's name for each.
    pub devices: Vec<ManifestDevice>,
    /// Every descriptor recorded, most valuable first (creation time times uses).
    pub plans: Vec<ManifestPlan>,
}

/// One device of a manifest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestDevice {
    /// The device ordinal.
    pub ordinal: i32,
    /// The runtime's line for it (`0: NVIDIA H200`).
    pub name: String,
}

/// One descriptor of a manifest and what the pool saw of it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ManifestPlan {
    /// Device ordinal.
    pub device: i32,
    /// `R2C`, `C2R`, `C2C`, `D2Z`, `Z2D` or `Z2Z`.
    pub transform: TransformType,
    /// 1 to 3.
    pub rank: u32,
    /// The `rank` logical lengths, slowest first.
    pub n: Vec<i64>,
    /// Transforms per execution.
    pub batch: i64,
    /// The input layout; `null` for packed.
    pub input: Option<ManifestLayout>,
    /// The output layout; `null` for packed.
    pub output: Option<ManifestLayout>,
    /// Hits (acquires served by a cached plan).
    pub hits: u64,
    /// Plans made for it.
    pub creations: u64,
    /// Mean measured creation time, microseconds (`hipfftCreate` plus `hipfftMakePlanMany64`).
    pub creation_us: f64,
    /// Work-area bytes per execution, as the library returned it.
    pub work_size: usize,
}

/// An advanced layout of a manifest plan.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestLayout {
    /// The `rank` storage lengths.
    pub embed: Vec<i64>,
    /// Element stride.
    pub stride: i64,
    /// Batch distance.
    pub dist: i64,
}

impl ManifestPlan {
    /// The descriptor, checked as [`PlanDesc::validate`] checks one.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::ManifestPlan;
    /// use hipfft_pool::{PlanDesc, TransformType};
    /// let desc = PlanDesc::new(TransformType::R2C, &[400], 4);
    /// let plan = ManifestPlan::new(&desc, 10, 1, 180.0, 0);
    /// assert_eq!(plan.desc()?, desc);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn desc(&self) -> Result<PlanDesc> {
        let rank = self.rank as usize;
        if !(1..=3).contains(&rank) {
            return Err(Error::invalid_argument("manifest plan rank", format!("{} (expected 1 to 3)", self.rank)));
        }
        if self.n.len() != rank {
            return Err(Error::invalid_argument("manifest plan n", format!("{:?} has not rank {rank} lengths", self.n)));
        }
        let mut d = PlanDesc::new(self.transform, &self.n, self.batch).on_device(self.device);
        let layout = |l: &ManifestLayout, which: &'static str| {
            if l.embed.len() != rank {
                return Err(Error::invalid_argument(which, format!("embed {:?} has not rank {rank} lengths", l.embed)));
            }
            Ok(Layout::new(&l.embed, l.stride, l.dist))
        };
        d.input = self.input.as_ref().map(|l| layout(l, "manifest plan input")).transpose()?;
        d.output = self.output.as_ref().map(|l| layout(l, "manifest plan output")).transpose()?;
        d.validate()?;
        Ok(d)
    }

    /// The record of `desc`: its hits, creations, mean creation time and work size.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::ManifestPlan;
    /// use hipfft_pool::{PlanDesc, TransformType};
    /// let plan = ManifestPlan::new(&PlanDesc::new(TransformType::C2C, &[8, 8], 2), 5, 2, 90.5, 1024);
    /// assert_eq!((plan.rank, plan.n.clone(), plan.hits), (2, vec![8, 8], 5));
    /// ```
    pub fn new(desc: &PlanDesc, hits: u64, creations: u64, creation_us: f64, work_size: usize) -> ManifestPlan {
        let rank = (desc.rank as usize).clamp(1, 3);
        let layout = |l: &Layout| ManifestLayout { embed: l.embed[..rank].to_vec(), stride: l.stride, dist: l.dist };
        ManifestPlan {
            device: desc.device,
            transform: desc.transform,
            rank: desc.rank,
            n: desc.n[..rank].to_vec(),
            batch: desc.batch,
            input: desc.input.as_ref().map(layout),
            output: desc.output.as_ref().map(layout),
            hits,
            creations,
            creation_us,
            work_size,
        }
    }

    /// What warming it up is worth: the creation time a miss would pay, times its uses.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::ManifestPlan;
    /// use hipfft_pool::{PlanDesc, TransformType};
    /// let d = PlanDesc::new(TransformType::C2C, &[8], 1);
    /// assert!(ManifestPlan::new(&d, 9, 1, 100.0, 0).value() > ManifestPlan::new(&d, 0, 1, 500.0, 0).value());
    /// ```
    pub fn value(&self) -> f64 {
        // Saturating: the counts come from a file, and may be anything up to u64::MAX.
        self.creation_us.max(0.0) * self.hits.saturating_add(self.creations).max(1) as f64
    }
}

impl Manifest {
    /// The identity of `runtime`: its kind, its FFT library and version, and its devices.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// use hipfft_pool::{SimConfig, SimRuntime};
    /// let m = Manifest::empty_for(&SimRuntime::new(SimConfig::default()));
    /// assert_eq!((m.runtime.as_str(), m.plans.len()), ("sim", 0));
    /// ```
    pub fn empty_for(runtime: &dyn Runtime) -> Manifest {
        let info = runtime.info();
        Manifest {
            format: MANIFEST_FORMAT.into(),
            version: MANIFEST_VERSION,
            runtime: runtime.kind().name().into(),
            library: library_of(&info),
            devices: info.devices.iter().enumerate().map(|(i, name)| ManifestDevice { ordinal: i as i32, name: name.clone() }).collect(),
            plans: Vec::new(),
        }
    }

    /// Reads a manifest, checking its format and version. Only a regular file of at most
    /// [`MANIFEST_MAX_BYTES`] is read: a FIFO, a device or a directory is refused before it
    /// is opened (opening a FIFO would wait for a writer), a larger file before any byte is
    /// read. The error names the path.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// let e = Manifest::load("/nonexistent/plans.json").unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent/plans.json"));
    /// let e = Manifest::load("/dev/zero").unwrap_err();
    /// assert!(e.to_string().contains("character device"), "{e}");
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest> {
        let path = path.as_ref();
        let text = read_capped(path, MANIFEST_MAX_BYTES)?;
        Manifest::parse(&text).map_err(|e| match e {
            Error::InvalidArgument { name, reason } => Error::InvalidArgument { name, reason: format!("{}: {reason}", path.display()) },
            e => e,
        })
    }

    /// Parses a manifest's text, checking its format and version.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// let e = Manifest::parse(r#"{"format": "hipfft-pool manifest", "version": 7}"#).unwrap_err();
    /// assert!(e.to_string().contains("version 7"), "{e}");
    /// ```
    pub fn parse(text: &str) -> Result<Manifest> {
        #[derive(serde::Deserialize)]
        struct Head {
            format: String,
            version: u32,
        }
        let head: Head = serde_json::from_str(text).map_err(|e| Error::invalid_argument("manifest", format!("not a manifest: {e}")))?;
        if head.format != MANIFEST_FORMAT {
            return Err(Error::invalid_argument("manifest", format!("format {:?}, expected {MANIFEST_FORMAT:?}", head.format)));
        }
        if head.version != MANIFEST_VERSION {
            return Err(Error::invalid_argument(
                "manifest",
                format!("version {}, this library reads version {MANIFEST_VERSION}", head.version),
            ));
        }
        let m: Manifest = serde_json::from_str(text).map_err(|e| Error::invalid_argument("manifest", format!("malformed: {e}")))?;
        if m.plans.len() > WORKING_SET_LIMIT {
            return Err(Error::invalid_argument(
                "manifest",
                format!("{} plans, above the {WORKING_SET_LIMIT} a manifest holds", m.plans.len()),
            ));
        }
        Ok(m)
    }

    /// Writes the manifest as JSON, through a temporary file renamed into place (a reader
    /// never sees half a manifest).
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// use hipfft_pool::{SimConfig, SimRuntime};
    /// let path = std::env::temp_dir().join(format!("hfp-doc-manifest-{}.json", std::process::id()));
    /// let m = Manifest::empty_for(&SimRuntime::new(SimConfig::default()));
    /// m.save(&path)?;
    /// assert_eq!(Manifest::load(&path)?, m);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |e: std::io::Error| Error::invalid_argument("manifest path", format!("cannot write {}: {e}", path.display()));
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Internal(format!("manifest to JSON: {e}")))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text + "\n").map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    /// Why this manifest's plans do not apply to `runtime` (another runtime or library
    /// version), naming both; `None` when they do. Device names are checked per plan.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// use hipfft_pool::{SimConfig, SimRuntime};
    /// let rt = SimRuntime::new(SimConfig::default());
    /// let mut m = Manifest::empty_for(&rt);
    /// assert!(m.mismatch(&rt).is_none());
    /// m.library = "cuFFT 11.0.0".into();
    /// assert!(m.mismatch(&rt).unwrap().contains("cuFFT 11.0.0"));
    /// ```
    pub fn mismatch(&self, runtime: &dyn Runtime) -> Option<String> {
        self.mismatch_with(&Manifest::empty_for(runtime))
    }

    /// [`Manifest::mismatch`] against `here`, the identity of a runtime ([`Manifest::empty_for`]).
    pub(crate) fn mismatch_with(&self, here: &Manifest) -> Option<String> {
        if self.runtime != here.runtime || self.library != here.library {
            return Some(format!(
                "the manifest was recorded with {} on runtime {}; this process has {} on runtime {}",
                self.library, self.runtime, here.library, here.runtime
            ));
        }
        None
    }

    /// The device names the manifest has, by ordinal (the first, for an ordinal listed twice):
    /// a warm-up looks each entry's device up in it.
    pub(crate) fn device_names(&self) -> HashMap<i32, &str> {
        let mut names = HashMap::with_capacity(self.devices.len());
        for d in &self.devices {
            names.entry(d.ordinal).or_insert(d.name.as_str());
        }
        names
    }
}

/// The text of the regular file at `path`, refused (naming the path) when it is anything
/// else or holds more than `cap` bytes.
fn read_capped(path: &Path, cap: u64) -> Result<String> {
    let refuse = |why: String| Error::invalid_argument("manifest", format!("{}: {why}", path.display()));
    // The type from the path, before opening: `open` itself blocks on a FIFO with no writer.
    let meta = std::fs::metadata(path).map_err(|e| refuse(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse(format!("{}, not a regular file", kind_of(&meta.file_type()))));
    }
    if meta.len() > cap {
        return Err(refuse(format!("{} bytes, above the manifest cap of {cap} bytes", meta.len())));
    }
    let file = std::fs::File::open(path).map_err(|e| refuse(format!("cannot read: {e}")))?;
    // A file swapped in between the two looks (the open did not block: it is no FIFO).
    let meta = file.metadata().map_err(|e| refuse(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse(format!("{}, not a regular file", kind_of(&meta.file_type()))));
    }
    read_at_most(file, cap).map_err(refuse)
}

/// All of `reader` as text, or why not: more than `cap` bytes (never more than `cap + 1`
/// are read, whatever size the file claimed: a file of `/proc` claims none), or not UTF-8.
fn read_at_most(reader: impl std::io::Read, cap: u64) -> std::result::Result<String, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    reader.take(cap + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("more than the manifest cap of {cap} bytes"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))
}

/// What a file that is not a regular file is, for the error that refuses it.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() { "a directory" } else { "an unknown kind of file" }
}

/// `name version` of the FFT library: the first version the runtime reports.
fn library_of(info: &RuntimeInfo) -> String {
    info.versions.first().map_or_else(|| "unknown".into(), |(name, version)| format!("{name} {version}"))
}

/// What the pool saw of one descriptor.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Record {
    /// Hits of plans already evicted (a cached plan's own are added when saving).
    pub hits: u64,
    pub creations: u64,
    pub creation_total: Duration,
    pub work_size: usize,
}

/// The descriptors a pool made plans for, bounded by [`WORKING_SET_LIMIT`].
#[derive(Default)]
pub(crate) struct WorkingSet {
    // Written on every miss: Fx, as the cache's own maps (SipHash cost a miss about 1,750
    // instructions over its three maps).
    records: HashMap<PlanDesc, Record, rustc_hash::FxBuildHasher>,
}

impl WorkingSet {
    /// A plan was made for `desc` in `took`.
    pub(crate) fn created(&mut self, desc: &PlanDesc, took: Duration, work_size: usize) {
        if self.records.len() >= WORKING_SET_LIMIT && !self.records.contains_key(desc) {
            return;
        }
        let r = self.records.entry(*desc).or_default();
        r.creations += 1;
        r.creation_total += took;
        r.work_size = work_size;
    }

    /// A plan of `desc` with `hits` hits left the cache.
    pub(crate) fn evicted(&mut self, desc: &PlanDesc, hits: u64) {
        if let Some(r) = self.records.get_mut(desc) {
            r.hits += hits;
        }
    }

    /// The records, with `live_hits` (the hits of cached plans) added.
    pub(crate) fn plans(&self, live_hits: &HashMap<PlanDesc, u64>) -> Vec<ManifestPlan> {
        let mut plans: Vec<ManifestPlan> = self
            .records
            .iter()
            .map(|(d, r)| {
                let mean = if r.creations == 0 { 0.0 } else { r.creation_total.as_secs_f64() * 1e6 / r.creations as f64 };
                ManifestPlan::new(d, r.hits + live_hits.get(d).copied().unwrap_or(0), r.creations, mean, r.work_size)
            })
            .collect();
        plans.sort_by(|a, b| b.value().total_cmp(&a.value()));
        plans
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::sim::{SimConfig, SimRuntime};

    #[test]
    fn the_largest_manifest_the_writer_can_write_is_read() {
        // Every number at its widest, both layouts, rank 3, the most plans recorded.
        let mut m = Manifest::empty_for(&SimRuntime::new(SimConfig { devices: 64, ..SimConfig::default() }));
        let wide = ManifestLayout { embed: vec![i64::MIN; 3], stride: i64::MIN, dist: i64::MIN };
        let plan = ManifestPlan {
            device: i32::MIN,
            transform: TransformType::Z2Z,
            rank: u32::MAX,
            n: vec![i64::MIN; 3],
            batch: i64::MIN,
            input: Some(wide.clone()),
            output: Some(wide),
            hits: u64::MAX,
            creations: u64::MAX,
            creation_us: -1.234_567_890_123_456_7e-300,
            work_size: usize::MAX,
        };
        m.plans = vec![plan; WORKING_SET_LIMIT];
        let path = std::env::temp_dir().join(format!("hfp-manifest-widest-{}.json", std::process::id()));
        m.save(&path).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        assert!(bytes * 2 <= MANIFEST_MAX_BYTES, "{bytes} bytes: the cap must leave room twice over");
        assert_eq!(Manifest::load(&path).unwrap().plans.len(), WORKING_SET_LIMIT);
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_reader_that_never_ends_is_read_to_the_cap_and_one_byte_more() {
        // A file that claims a size it does not have is read the same way.
        let e = read_at_most(std::io::repeat(b' '), 1000).unwrap_err();
        assert!(e.contains("more than the manifest cap of 1000 bytes"), "{e}");
        assert_eq!(read_at_most(&b"{}"[..], 2).unwrap(), "{}");
        assert!(read_at_most(&[0xff, 0xfe][..], 2).unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn more_plans_than_a_manifest_holds_are_refused() {
        let mut m = Manifest::empty_for(&SimRuntime::new(SimConfig::default()));
        m.plans = vec![ManifestPlan::new(&PlanDesc::new(TransformType::C2C, &[8], 1), 0, 1, 1.0, 0); WORKING_SET_LIMIT + 1];
        let e = Manifest::parse(&serde_json::to_string(&m).unwrap()).unwrap_err().to_string();
        assert!(e.contains("4097 plans") && e.contains("4096"), "{e}");
    }
}
