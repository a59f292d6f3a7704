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
/// more distinct shapes than this is not one a warm-up can help).
pub const WORKING_SET_LIMIT: usize = 4096;

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
        self.creation_us.max(0.0) * (self.hits + self.creations).max(1) as f64
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

    /// Reads a manifest, checking its format and version.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::manifest::Manifest;
    /// let e = Manifest::load("/nonexistent/plans.json").unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent/plans.json"));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::invalid_argument("manifest", format!("cannot read {}: {e}", path.display())))?;
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
        serde_json::from_str(text).map_err(|e| Error::invalid_argument("manifest", format!("malformed: {e}")))
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
        let here = Manifest::empty_for(runtime);
        if self.runtime != here.runtime || self.library != here.library {
            return Some(format!(
                "the manifest was recorded with {} on runtime {}; this process has {} on runtime {}",
                self.library, self.runtime, here.library, here.runtime
            ));
        }
        None
    }

    /// The device name the manifest has for `ordinal`.
    pub(crate) fn device_name(&self, ordinal: i32) -> Option<&str> {
        self.devices.iter().find(|d| d.ordinal == ordinal).map(|d| d.name.as_str())
    }
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
