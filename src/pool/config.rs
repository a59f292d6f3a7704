//! Pool configuration: a builder for programs, `from_env()` for drop-in use.
//!
//! Defaults: capacity 128 plans, live ceiling = capacity, acquire timeout 10 s, no work-area
//! budget, runtime `auto`. Environment (read by `from_env()`), highest precedence first:
//! `HIPFFT_POOL_CAPACITY`, then `MLX_ROCM_FFT_CACHE_SIZE` (so MLX's knob keeps working);
//! `HIPFFT_POOL_LIVE_CEILING` (default: the capacity); `HIPFFT_POOL_ACQUIRE_TIMEOUT_MS`;
//! `HIPFFT_POOL_WORK_AREA_BUDGET` (bytes); `HIPFFT_POOL_WATCHDOG_MS` (default 10000);
//! `HIPFFT_POOL_RUNTIME` (`auto|sim|hip|cuda`); `HIPFFT_POOL_EVICTION` (`lru|cost`, default
//! `cost`); `HIPFFT_POOL_MANIFEST_OUT` (a path: the working set is written there when the pool
//! is dropped); `HIPFFT_POOL_WARMUP` (a path: that manifest's plans are made in the background
//! when the pool is made by [`crate::PlanPool::new_shared`], the C ABI or the interposers);
//! `HIPFFT_POOL_POLL_US` (how long the pool's hand-offs poll before they park, 0 to 100000;
//! read by the pool's threads, checked here so that a bad value is warned of).
//!
//! Every value is read trimmed of ASCII whitespace (`" lru"` is `lru`, `"64 "` is 64, a path
//! keeps no leading or trailing blank), and a value that is empty once trimmed counts as
//! unset: the default, with no warning ([`env_value`]; the interposers read
//! `HIPFFT_POOL_EVICTION` by the same rule). A value that is not a whole number in range, or
//! not one of the names a variable takes, keeps the default, with a one-line warning naming
//! the variable and the value. The builder rejects capacity > ceiling; `from_env()`
//! clamps the capacity to the ceiling with a warning instead, since a drop-in user cannot
//! handle an error.
//!
//! The defaults give no protection on a device that stops at a dozen live plans: the ceiling
//! is the capacity, 128. Set `HIPFFT_POOL_LIVE_CEILING` to the device's limit, which
//! `hipfft-pool sweep --runtime hip` reports; a ceiling that low caps the cache at the same
//! number, since the capacity is clamped to it. A framework that needs more handles than the
//! ceiling can run under `hipfft-pool run -- CMD` (the interposer in `intercept/`), whose
//! virtual handles let it hold more.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::pool::ceiling::LiveCeiling;
use crate::error::{Error, Result};
use crate::runtime::boundary::PlanOptions;
pub use crate::pool::eviction::Eviction;
pub use crate::runtime::select::RuntimeChoice;

/// Plans a cache holds unless configured (`HIPFFT_POOL_CAPACITY`).
pub const DEFAULT_CAPACITY: usize = 128;
/// How long a miss waits at the ceiling unless configured: long enough for GPU work to
/// drain, short enough that a stuck host gets an error instead of a hang.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `shutdown` waits for leased plans unless configured.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// Age at which a runtime call is reported as stalled unless configured.
pub const DEFAULT_WATCHDOG_THRESHOLD: Duration = Duration::from_secs(10);
/// How long a done batch's leases wait for their stream's thread ([`PoolConfig::batch_lend`]).
pub const DEFAULT_BATCH_LEND: Duration = Duration::from_micros(500);

/// Upper bounds for values from the environment (a typo like `1000000000` is caught).
const MAX_PLANS: u64 = 1 << 20;
const MAX_TIMEOUT_MS: u64 = 24 * 3600 * 1000;

/// Which ceiling a pool counts against.
#[derive(Clone, Debug, Default)]
pub enum CeilingScope {
    /// The process-wide [`LiveCeiling`] (the default).
    #[default]
    ProcessWide,
    /// An explicit ceiling, shared with whoever else holds it.
    Shared(Arc<LiveCeiling>),
    /// A process-wide ceiling per device, each of `live_ceiling` handles.
    PerDevice,
}

/// How a [`PlanPool`](crate::PlanPool) is configured: build one with [`PoolConfig::builder`]
/// (checked) or read it from the environment with [`PoolConfig::from_env`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use hipfft_pool::PoolConfig;
///
/// let config = PoolConfig::builder()
///     .capacity(64)
///     .private_ceiling(96) // this pool's own ceiling, not the process-wide one
///     .acquire_timeout(Duration::from_secs(2))
///     .build()?;
/// assert_eq!((config.capacity, config.live_ceiling), (64, 96));
///
/// // What `from_env` reads, from any lookup; a bad value is a warning, not an error.
/// let (config, warnings) = PoolConfig::from_lookup(|name| (name == "HIPFFT_POOL_CAPACITY").then(|| "32".to_string()));
/// assert_eq!(config.capacity, 32);
/// assert!(warnings.is_empty());
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Plans the cache holds.
    pub capacity: usize,
    /// Live handles allowed at once (cached + evicted-but-in-flight + being created).
    pub live_ceiling: usize,
    /// Which ceiling the pool counts against.
    pub ceiling_scope: CeilingScope,
    /// How long a miss waits for a live slot (or for another thread's creation) before failing.
    pub acquire_timeout: Duration,
    /// Optional bound on the total work-area bytes of cached plans.
    pub work_area_budget: Option<usize>,
    /// Which runtime to open (`HIPFFT_POOL_RUNTIME`).
    pub runtime: RuntimeChoice,
    /// How plans are made.
    pub plan_options: PlanOptions,
    /// How long shutdown waits for outstanding leases.
    pub shutdown_timeout: Duration,
    /// A runtime call running longer than this is reported (`HIPFFT_POOL_WATCHDOG_MS`).
    pub watchdog_threshold: Duration,
    /// Which idle plan a miss evicts (`HIPFFT_POOL_EVICTION`).
    pub eviction: Eviction,
    /// Where the working set is written when the pool is dropped (`HIPFFT_POOL_MANIFEST_OUT`).
    pub manifest_out: Option<PathBuf>,
    /// A manifest whose plans are made in the background when the pool is made through
    /// [`crate::PlanPool::new_shared`] (`HIPFFT_POOL_WARMUP`).
    pub warmup: Option<PathBuf>,
    /// How long the leases of a batch whose work is done wait for the next
    /// `release_in_batch` or `end_batch` on their stream to release them, on that thread,
    /// before the completion thread does (at once while a miss waits at a ceiling).
    pub batch_lend: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            capacity: DEFAULT_CAPACITY,
            live_ceiling: DEFAULT_CAPACITY,
            ceiling_scope: CeilingScope::ProcessWide,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            work_area_budget: None,
            runtime: RuntimeChoice::Auto,
            plan_options: PlanOptions::default(),
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            watchdog_threshold: DEFAULT_WATCHDOG_THRESHOLD,
            eviction: Eviction::default(),
            manifest_out: None,
            warmup: None,
            batch_lend: DEFAULT_BATCH_LEND,
        }
    }
}

/// Builds a checked [`PoolConfig`].
#[derive(Clone, Debug, Default)]
pub struct PoolConfigBuilder {
    capacity: Option<usize>,
    live_ceiling: Option<usize>,
    ceiling_scope: CeilingScope,
    acquire_timeout: Option<Duration>,
    work_area_budget: Option<usize>,
    runtime: RuntimeChoice,
    plan_options: PlanOptions,
    shutdown_timeout: Option<Duration>,
    watchdog_threshold: Option<Duration>,
    eviction: Eviction,
    manifest_out: Option<PathBuf>,
    warmup: Option<PathBuf>,
    batch_lend: Option<Duration>,
}

impl PoolConfig {
    /// A builder with every value at its default.
    pub fn builder() -> PoolConfigBuilder {
        PoolConfigBuilder::default()
    }

    /// The configuration the environment asks for, with a warning for every value ignored.
    /// Warnings are also logged through `tracing`.
    pub fn from_env() -> (PoolConfig, Vec<String>) {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// `from_env` over any variable lookup (tests pass a map instead of the process env).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> (PoolConfig, Vec<String>) {
        let get = |name: &str| get(name).as_deref().and_then(env_value).map(str::to_string);
        let mut warnings = Vec::new();
        let mut cfg = PoolConfig::default();
        let read = |name: &str, max: u64, warnings: &mut Vec<String>| -> Option<u64> {
            let raw = get(name)?;
            match parse_whole(&raw, max) {
                Ok(v) => Some(v),
                Err(why) => {
                    warnings.push(format!("{name}={raw:?} ignored ({why}); keeping the default"));
                    None
                }
            }
        };
        let capacity = read("HIPFFT_POOL_CAPACITY", MAX_PLANS, &mut warnings)
            .or_else(|| read("MLX_ROCM_FFT_CACHE_SIZE", MAX_PLANS, &mut warnings));
        if let Some(c) = capacity {
            cfg.capacity = c as usize;
        }
        cfg.live_ceiling = cfg.capacity;
        if let Some(c) = read("HIPFFT_POOL_LIVE_CEILING", MAX_PLANS, &mut warnings) {
            cfg.live_ceiling = c as usize;
        }
        if cfg.capacity > cfg.live_ceiling {
            warnings.push(format!(
                "capacity {} is above the live ceiling {}; using capacity {}",
                cfg.capacity, cfg.live_ceiling, cfg.live_ceiling
            ));
            cfg.capacity = cfg.live_ceiling;
        }
        if let Some(ms) = read("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", MAX_TIMEOUT_MS, &mut warnings) {
            cfg.acquire_timeout = Duration::from_millis(ms);
        }
        if let Some(b) = read("HIPFFT_POOL_WORK_AREA_BUDGET", isize::MAX as u64, &mut warnings) {
            cfg.work_area_budget = Some(b as usize);
        }
        if let Some(ms) = read("HIPFFT_POOL_WATCHDOG_MS", MAX_TIMEOUT_MS, &mut warnings) {
            cfg.watchdog_threshold = Duration::from_millis(ms);
        }
        if let Some(raw) = get("HIPFFT_POOL_EVICTION") {
            match Eviction::parse(&raw) {
                Some(e) => cfg.eviction = e,
                None => warnings.push(format!("HIPFFT_POOL_EVICTION={raw:?} ignored (expected lru or cost); keeping cost")),
            }
        }
        cfg.manifest_out = get("HIPFFT_POOL_MANIFEST_OUT").map(PathBuf::from);
        cfg.warmup = get("HIPFFT_POOL_WARMUP").map(PathBuf::from);
        if let Some(raw) = get("HIPFFT_POOL_RUNTIME") {
            match RuntimeChoice::parse(&raw) {
                Some(r) => cfg.runtime = r,
                None => warnings.push(format!(
                    "HIPFFT_POOL_RUNTIME={raw:?} ignored (expected auto, sim, hip or cuda); keeping auto"
                )),
            }
        }
        if let Some(raw) = get("HIPFFT_POOL_POLL_US") {
            if let Err(why) = crate::sync::thread::parse_poll_us(&raw) {
                warnings.push(format!("HIPFFT_POOL_POLL_US={raw:?} ignored ({why}); keeping the default"));
            }
        }
        for w in &warnings {
            tracing::warn!("{w}");
        }
        (cfg, warnings)
    }
}

/// The value of an environment variable as the pool reads it: trimmed of ASCII whitespace,
/// and `None` (unset) when nothing is left.
///
/// # Examples
///
/// ```
/// use hipfft_pool::pool::config::env_value;
/// assert_eq!(env_value(" lru\n"), Some("lru"));
/// assert_eq!(env_value("  "), None);
/// ```
pub fn env_value(raw: &str) -> Option<&str> {
    Some(raw.trim_ascii()).filter(|v| !v.is_empty())
}

/// A whole number in `1..=max`, written plainly: no sign, no spaces, no suffix ([`env_value`]
/// trims an environment value first).
pub fn parse_whole(raw: &str, max: u64) -> std::result::Result<u64, String> {
    if raw.is_empty() {
        return Err("empty".into());
    }
    if !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err("not a whole number".into());
    }
    let v: u64 = raw.parse().map_err(|_| "too large".to_string())?;
    if v == 0 {
        return Err("must be at least 1".into());
    }
    if v > max {
        return Err(format!("above the maximum {max}"));
    }
    Ok(v)
}

impl PoolConfigBuilder {
    /// Plans the cache holds (1 to the live ceiling).
    pub fn capacity(mut self, plans: usize) -> Self {
        self.capacity = Some(plans);
        self
    }
    /// Live handles allowed at once, on the process-wide ceiling (the first pool sets its limit).
    pub fn live_ceiling(mut self, handles: usize) -> Self {
        self.live_ceiling = Some(handles);
        self
    }
    /// Count against this ceiling instead of the process-wide one. Its limit is the ceiling.
    pub fn shared_ceiling(mut self, ceiling: Arc<LiveCeiling>) -> Self {
        self.live_ceiling = Some(ceiling.limit());
        self.ceiling_scope = CeilingScope::Shared(ceiling);
        self
    }
    /// A ceiling of its own (not shared with other pools).
    pub fn private_ceiling(self, handles: usize) -> Self {
        self.shared_ceiling(LiveCeiling::new(handles))
    }
    /// Split the ceiling per device: each device's plans count against a process-wide
    /// ceiling of `handles` of its own.
    pub fn per_device_ceiling(mut self, handles: usize) -> Self {
        self.live_ceiling = Some(handles);
        self.ceiling_scope = CeilingScope::PerDevice;
        self
    }

    /// How long a miss waits at the ceiling, or for another thread's creation, before it fails.
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = Some(timeout);
        self
    }
    /// A bound on the work-area bytes of cached plans: beyond it the least recently used are evicted.
    pub fn work_area_budget(mut self, bytes: usize) -> Self {
        self.work_area_budget = Some(bytes);
        self
    }
    /// Which runtime `select::open` picks for this configuration.
    pub fn runtime(mut self, runtime: RuntimeChoice) -> Self {
        self.runtime = runtime;
        self
    }
    /// How plans are made (whether the library owns the work area).
    pub fn plan_options(mut self, options: PlanOptions) -> Self {
        self.plan_options = options;
        self
    }
    /// How long `shutdown` waits for leased plans before it reports them still leased.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = Some(timeout);
        self
    }

    /// How long the leases of a batch whose work is done wait for the next
    /// `release_in_batch` or `end_batch` on their stream, which releases them on its own
    /// thread (the lines a hit writes stay in that thread's cache), before the completion
    /// thread releases them itself. While a miss waits at a ceiling they are released at
    /// once. Default [`DEFAULT_BATCH_LEND`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// let config = hipfft_pool::PoolConfig::builder().batch_lend(Duration::ZERO).build()?;
    /// assert_eq!(config.batch_lend, Duration::ZERO);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn batch_lend(mut self, lend: Duration) -> Self {
        self.batch_lend = Some(lend);
        self
    }

    /// A runtime call running longer than this is reported by the watchdog.
    pub fn watchdog_threshold(mut self, threshold: Duration) -> Self {
        self.watchdog_threshold = Some(threshold);
        self
    }

    /// Which idle plan a miss evicts: least recently used, or the one cheapest to make again
    /// weighed by its reuse ([`Eviction::Cost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::{Eviction, PoolConfig};
    /// let config = PoolConfig::builder().capacity(8).private_ceiling(8).eviction(Eviction::Cost).build()?;
    /// assert_eq!(config.eviction, Eviction::Cost);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn eviction(mut self, eviction: Eviction) -> Self {
        self.eviction = eviction;
        self
    }

    /// Writes the pool's working set (a manifest) to `path` when the pool is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::PoolConfig;
    /// let config = PoolConfig::builder().manifest_out("/tmp/plans.json").build()?;
    /// assert!(config.manifest_out.is_some());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn manifest_out(mut self, path: impl Into<PathBuf>) -> Self {
        self.manifest_out = Some(path.into());
        self
    }

    /// Makes the plans of the manifest at `path` in the background when the pool is made
    /// with [`crate::PlanPool::new_shared`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hipfft_pool::PoolConfig;
    /// let config = PoolConfig::builder().warmup("/tmp/plans.json").build()?;
    /// assert!(config.warmup.is_some());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn warmup(mut self, path: impl Into<PathBuf>) -> Self {
        self.warmup = Some(path.into());
        self
    }

    /// The configuration, or `InvalidConfig` naming the field (a zero, or a capacity above a
    /// shared ceiling: every cached plan is a live handle).
    pub fn build(self) -> Result<PoolConfig> {
        let capacity = self.capacity.unwrap_or(DEFAULT_CAPACITY);
        let live_ceiling = self.live_ceiling.unwrap_or(capacity);
        if capacity == 0 {
            return Err(Error::InvalidConfig { field: "capacity", value: "0".into(), reason: "must be at least 1" });
        }
        if live_ceiling == 0 {
            return Err(Error::InvalidConfig { field: "live_ceiling", value: "0".into(), reason: "must be at least 1" });
        }
        if capacity > live_ceiling && !matches!(self.ceiling_scope, CeilingScope::PerDevice) {
            return Err(Error::InvalidConfig {
                field: "capacity",
                value: format!("{capacity} (live_ceiling {live_ceiling})"),
                reason: "must not exceed the live ceiling: every cached plan is a live handle",
            });
        }
        Ok(PoolConfig {
            capacity,
            live_ceiling,
            ceiling_scope: self.ceiling_scope,
            acquire_timeout: self.acquire_timeout.unwrap_or(DEFAULT_ACQUIRE_TIMEOUT),
            work_area_budget: self.work_area_budget,
            runtime: self.runtime,
            plan_options: self.plan_options,
            shutdown_timeout: self.shutdown_timeout.unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT),
            watchdog_threshold: self.watchdog_threshold.unwrap_or(DEFAULT_WATCHDOG_THRESHOLD),
            eviction: self.eviction,
            manifest_out: self.manifest_out,
            warmup: self.warmup,
            batch_lend: self.batch_lend.unwrap_or(DEFAULT_BATCH_LEND),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> (PoolConfig, Vec<String>) {
        PoolConfig::from_lookup(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn an_empty_value_is_unset_with_no_warning_for_every_variable() {
        let names = [
            "HIPFFT_POOL_CAPACITY",
            "MLX_ROCM_FFT_CACHE_SIZE",
            "HIPFFT_POOL_LIVE_CEILING",
            "HIPFFT_POOL_ACQUIRE_TIMEOUT_MS",
            "HIPFFT_POOL_WORK_AREA_BUDGET",
            "HIPFFT_POOL_WATCHDOG_MS",
            "HIPFFT_POOL_EVICTION",
            "HIPFFT_POOL_MANIFEST_OUT",
            "HIPFFT_POOL_WARMUP",
            "HIPFFT_POOL_RUNTIME",
            "HIPFFT_POOL_POLL_US",
        ];
        for empty in ["", " ", "\t\n"] {
            let pairs: Vec<(&str, &str)> = names.iter().map(|n| (*n, empty)).collect();
            let (c, w) = env(&pairs);
            assert!(w.is_empty(), "{empty:?}: {w:?}");
            assert_eq!((c.capacity, c.eviction, c.runtime), (DEFAULT_CAPACITY, Eviction::Cost, RuntimeChoice::Auto));
            assert_eq!((c.manifest_out, c.warmup, c.work_area_budget), (None, None, None));
        }
    }

    #[test]
    fn every_value_is_trimmed_of_ascii_whitespace() {
        let (c, w) = env(&[
            ("HIPFFT_POOL_EVICTION", " lru"),
            ("HIPFFT_POOL_CAPACITY", "32 "),
            ("HIPFFT_POOL_LIVE_CEILING", "\t64\n"),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", " 250 "),
            ("HIPFFT_POOL_WORK_AREA_BUDGET", " 4096"),
            ("HIPFFT_POOL_WATCHDOG_MS", "900 "),
            ("HIPFFT_POOL_RUNTIME", " sim "),
            ("HIPFFT_POOL_WARMUP", " /tmp/plans.json "),
            ("HIPFFT_POOL_MANIFEST_OUT", "/tmp/out.json\n"),
            ("HIPFFT_POOL_POLL_US", " 0 "),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((c.eviction, c.capacity, c.live_ceiling), (Eviction::Lru, 32, 64));
        assert_eq!((c.acquire_timeout, c.watchdog_threshold), (Duration::from_millis(250), Duration::from_millis(900)));
        assert_eq!((c.work_area_budget, c.runtime), (Some(4096), RuntimeChoice::Sim));
        assert_eq!(c.warmup.as_deref(), Some(std::path::Path::new("/tmp/plans.json")));
        assert_eq!(c.manifest_out.as_deref(), Some(std::path::Path::new("/tmp/out.json")));
        // What is left after trimming is checked as before, and named as trimmed.
        let (c, w) = env(&[("HIPFFT_POOL_EVICTION", " lfu ")]);
        assert_eq!((c.eviction, w.len()), (Eviction::Cost, 1));
        assert!(w[0].contains("HIPFFT_POOL_EVICTION=\"lfu\""), "{w:?}");
    }

    #[test]
    fn a_bad_poll_budget_is_warned_of() {
        for bad in ["abc", "-5", "1.5", "100001", "99999999999999999999999"] {
            let (_, w) = env(&[("HIPFFT_POOL_POLL_US", bad)]);
            assert_eq!(w.len(), 1, "{bad:?}: {w:?}");
            assert!(w[0].starts_with(&format!("HIPFFT_POOL_POLL_US={bad:?} ignored")), "{w:?}");
        }
        for good in ["0", "500", "100000"] {
            assert!(env(&[("HIPFFT_POOL_POLL_US", good)]).1.is_empty(), "{good}");
        }
    }
}
