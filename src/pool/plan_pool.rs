//! `PlanPool`: the bounded plan cache in front of the live ceiling.
//!
//! The hit path is a sharded map read plus two atomics on the plan itself: no allocation,
//! no formatting, no lock beyond the map shard's read lock. Everything else (misses,
//! eviction, waiting at the ceiling) runs on the slow path under one pool mutex that is
//! never held across a runtime call. Plans are destroyed by whoever evicts them idle, or
//! by the destroyer thread when the last lease of a retired plan goes; never under a lock
//! and never inside a release.

use std::collections::HashMap;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lru::LruCache;
use rustc_hash::FxBuildHasher;

use crate::pool::batch::OpenBatches;
use crate::pool::ceiling::{LiveCeiling, Reclaim, Waiting};
use crate::pool::clock::Recency;
use crate::pool::creator::{Creators, Handoff, Rejoin};
use crate::pool::config::{CeilingScope, PoolConfig};
use crate::desc::PlanDesc;
use crate::pool::device::{CeilingPlan, Device};
use crate::pool::entry::{Core, Held, PendingRelease, PlanEntry};
use crate::pool::front;
use crate::error::{CeilingState, Error, Result, panic_message};
use crate::pool::lease::Lease;
use crate::pool::lease_state::{Evicted, LeaseState, Stripe};
use crate::pool::eviction::{CostState, Eviction};
use crate::pool::manifest::{Manifest, ManifestPlan, WorkingSet};
use crate::pool::thrash::ThrashDetector;
use crate::observe::counters::{Counters, Latency, MetricsSnapshot};
use crate::runtime::boundary::{CreatedPlan, DEVICE_SCHEDULE_BLOCKING_SYNC, PlanOptions, RawStream, Runtime, with_device};
#[cfg(not(loom))]
use crate::sync::channel::RecvTimeoutError;
use crate::sync::channel::{Receiver, Sender, bounded, unbounded};
use crate::sync::map::{ConcurrentMap, new_map};
use crate::sync::thread::{self, JoinHandle};
use crate::sync::stat::AtomicU64;
use crate::sync::{Mutex, Ordering, lock, parking};
use crate::observe::watchdog::{CallKind, StalledCall, Watchdog};

/// Called once by a miss that found the ceiling full and nothing idle to evict, before it
/// waits: a host that batches GPU work (into graphs, say) must submit it now, or the
/// executions holding the live plans can never complete.
pub type FlushHook = Arc<dyn Fn() + Send + Sync>;

/// A bounded cache of FFT plans in front of a hard ceiling on live handles: the one object a
/// host keeps. Every method may be called from any thread, concurrently.
///
/// # Examples
///
/// ```
/// # use std::sync::Arc;
/// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
/// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
/// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
/// # let pool = PlanPool::new(config, runtime.clone())?;
/// // A transform, as MLX runs one: acquire, execute on a stream, release after the stream.
/// let desc = PlanDesc::new(TransformType::C2C, &[256], 8);
/// let lease = pool.acquire(&desc)?;
/// let ext = desc.extents()?;
/// let (input, output) = (runtime.malloc(ext.input_bytes)?, runtime.malloc(ext.output_bytes)?);
/// let work = runtime.malloc(lease.work_size())?;
/// let stream = runtime.stream_create()?;
/// // SAFETY: the runtime's buffers of the plan's sizes, freed after the stream finished.
/// unsafe {
///     lease.exec(stream, input, output, hipfft_pool::Direction::Forward, Some(work))?;
///     lease.release_after(stream)?;
///     runtime.stream_synchronize(stream)?;
///     for buffer in [input, output, work] {
///         runtime.free(buffer)?;
///     }
///     runtime.stream_destroy(stream)?;
/// }
/// assert_eq!(pool.metrics().creations, 1);
/// # Ok::<(), hipfft_pool::Error>(())
/// ```
pub struct PlanPool {
    /// This pool among the process's pools, for the threads' front caches (`front`).
    id: u64,
    /// The fork generation it was made in (`sync::fork`): in a later one (a forked child) it
    /// refuses every call and is left alone when dropped.
    born: u64,
    /// The process that made it, for the message a forked child gets.
    born_in: u32,
    core: Arc<Core>,
    /// The cached plans; shared with the ceiling, which asks it for an idle plan when a
    /// miss of another pool at that ceiling finds nothing idle of its own.
    cache: Arc<Cache>,
    retire_rx: Receiver<Arc<PlanEntry>>,
    flush_hook: parking::RwLock<Option<FlushHook>>,
    recency: Recency,
    acquire_timeout: Duration,
    shutdown_timeout: Duration,
    plan_options: PlanOptions,
    /// Disconnects when the completion thread has ended.
    completion_done: Receiver<()>,
    /// The destroyer and completion threads end on their own once every plan is gone (a
    /// destroy may block forever, so they are never joined); the watchdog is joined on drop.
    _threads: Vec<JoinHandle<()>>,
    watchdog: Option<(std::thread::JoinHandle<()>, crossbeam_channel::Sender<()>)>,
    /// What the pool could not do as configured (see [`PlanPool::warnings`]).
    warnings: Vec<String>,
    /// Where the working set goes when the pool is dropped.
    manifest_out: Option<std::path::PathBuf>,
    /// The report of the warm-up `new_shared` started, until someone waits for it.
    warming: Mutex<Option<Receiver<WarmUpReport>>>,
}

/// How long after the last capture seen a warm-up waits before it makes a plan.
pub const CAPTURE_QUIET: Duration = Duration::from_millis(100);

/// What a warm-up did ([`PlanPool::warm_up`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WarmUpReport {
    /// Plans made.
    pub made: usize,
    /// Plans that were cached or being made already.
    pub already: usize,
    /// Plans not made, each with why (another device, an invalid entry, a failed creation);
    /// a manifest of another runtime or library version is one entry naming both.
    pub skipped: Vec<String>,
    /// Why the warm-up stopped before the end of the manifest (the capacity or the ceiling
    /// reached, the pool shut down, real misses kept it busy), or never started (the file
    /// `HIPFFT_POOL_WARMUP` names could not be read), if it did.
    pub stopped: Option<String>,
    /// How long it ran.
    pub elapsed: Duration,
}

enum Warm {
    Made,
    Already,
    Failed(Error),
    Stop(String),
}

/// A pool's cached plans: the lookup map, the recency list and its bounds. Apart from the
/// pool so that other pools at the same ceiling can reach it (see [`Reclaim`]).
struct Cache {
    core: Arc<Core>,
    map: ConcurrentMap<PlanDesc, Arc<PlanEntry>>,
    inner: Mutex<Inner>,
}

impl Cache {

    /// Marks an entry evicted. It joins the retired set first, so that a last release
    /// racing this eviction always finds it there. Returns it when it was idle (the caller
    /// destroys it outside the lock).
    fn retire(&self, e: &Arc<PlanEntry>) -> Option<Arc<PlanEntry>> {
        let mut retired = lock(&self.core.retired);
        retired.insert(e.plan, e.clone());
        match e.state.evict() {
            Evicted::Idle => {
                retired.remove(&e.plan);
                // Listed nowhere from here on (its destroy runs later, on the destroyer
                // thread): its hits move to the counter now, so metrics never miss them.
                e.dev.counters.hits_of_destroyed.fetch_add(e.state.hits(), Ordering::Relaxed);
                // The caller destroys it (`Core::destroy`, which counts it back out).
                self.core.destroying.fetch_add(1, Ordering::SeqCst);
                Some(e.clone())
            }
            Evicted::Leased => None,
        }
    }
    /// Removes `key` from the cache and evicts it.
    fn evict_key(&self, inner: &mut Inner, key: &PlanDesc) -> Option<Arc<PlanEntry>> {
        let e = inner.lru.pop(key)?;
        self.map.remove(key);
        let hits = e.state.hits();
        inner.working_set.evicted(key, hits);
        if inner.eviction == Eviction::Cost {
            inner.cost.evicted(*key, e.priority(), e.uses());
        }
        inner.work_area_bytes -= e.work_size;
        let cap = inner.capacity;
        inner.thrash.evicted(*key, cap);
        Counters::bump(&e.dev.counters.evictions);
        self.retire(&e)
    }
    /// Replays hit stamps into the LRU list, oldest first, so its order is exact.
    fn sync_recency(inner: &mut Inner) {
        let mut touched: Vec<(u64, PlanDesc)> = inner
            .lru
            .iter()
            .filter_map(|(k, e)| {
                let s = e.last_used.load(Ordering::Relaxed);
                (s != e.listed.load(Ordering::Relaxed)).then_some((s, *k))
            })
            .collect();
        touched.sort_unstable_by_key(|t| t.0);
        for (s, k) in touched {
            inner.lru.promote(&k);
            if let Some(e) = inner.lru.peek(&k) {
                e.listed.store(s, Ordering::Relaxed);
                // Used since it was last listed: GreedyDual's `L` at that use is today's.
                e.base.store(inner.cost.inflation().to_bits(), Ordering::Relaxed);
            }
        }
    }
    /// The plan the eviction policy gives up first among those `eligible`: the least
    /// recently used, or the lowest GreedyDual priority. The recency must be in sync.
    fn victim(inner: &Inner, eligible: impl Fn(&PlanEntry) -> bool) -> Option<PlanDesc> {
        match inner.eviction {
            Eviction::Lru => inner.lru.iter().rev().find(|(_, e)| eligible(e)).map(|(k, _)| *k),
            // Ties go to the least recently used (the scan runs oldest first).
            Eviction::Cost => inner
                .lru
                .iter()
                .rev()
                .filter(|(_, e)| eligible(e))
                .fold(None::<(f64, PlanDesc)>, |best, (k, e)| {
                    let p = e.priority();
                    match best {
                        Some((bp, _)) if bp <= p => best,
                        _ => Some((p, *k)),
                    }
                })
                .map(|(_, k)| k),
        }
    }

    /// Evicts the idle plan counting against `ceiling` that the policy gives up first, if
    /// any, for a miss at that ceiling.
    fn evict_one_idle(&self, inner: &mut Inner, ceiling: &Arc<LiveCeiling>) -> Option<Arc<PlanEntry>> {
        Self::sync_recency(inner);
        let key = Self::victim(inner, |e| e.state.leases() == 0 && Arc::ptr_eq(&e.dev.ceiling, ceiling))?;
        // A hit may lease it between the check and the eviction; it is then retired and
        // the caller looks again.
        self.evict_key(inner, &key)
    }
}

impl Reclaim for Cache {
    fn reclaim_one(&self, ceiling: &Arc<LiveCeiling>) -> bool {
        let victim = {
            let mut inner = lock(&self.inner);
            if inner.shut_down {
                return false;
            }
            self.evict_one_idle(&mut inner, ceiling)
        };
        match victim {
            Some(e) => {
                self.core.doom(e);
                true
            }
            None => false,
        }
    }
}

struct Inner {
    /// Recency order. Hits do not reorder it (they only stamp the plan); the slow path
    /// replays the stamps into it before it picks a victim, so eviction is exact LRU.
    lru: LruCache<PlanDesc, Arc<PlanEntry>, FxBuildHasher>,
    capacity: usize,
    work_area_budget: Option<usize>,
    work_area_bytes: usize,
    /// Single-flight creations in progress.
    creating: HashMap<PlanDesc, Arc<Flight>, FxBuildHasher>,
    shut_down: bool,
    thrash: ThrashDetector,
    eviction: Eviction,
    /// GreedyDual's inflation and ghosts (kept current under `Eviction::Cost` only).
    cost: CostState,
    /// Every descriptor made, for the manifest.
    working_set: WorkingSet,
}

/// One creation that concurrent misses on the same key wait for.
type Flight = crate::pool::flight::Flight<Result<Arc<PlanEntry>>>;

/// Whether a miss at a full ceiling waits for a slot (see [`PlanPool::acquire_now`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waits {
    UpToTimeout,
    Never,
}

enum Step {
    Retry,
    Join(Arc<Flight>),
    Create(Arc<Flight>),
    /// At the ceiling, our own idle plan was evicted and this miss takes its slot over: one
    /// job destroys it and then makes the new plan.
    Swap(Arc<PlanEntry>, Arc<Flight>),
    Wait,
}

/// What `shutdown` could and could not do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Plans destroyed by the shutdown itself or while it waited.
    pub destroyed: usize,
    /// Plans still leased when the wait ended: they are destroyed when released.
    pub still_leased: Vec<PlanDesc>,
    /// Whether the wait for outstanding leases ran out.
    pub timed_out: bool,
}

/// One cached plan, for summaries.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CachedPlan {
    /// The descriptor, as text.
    pub desc: String,
    /// Work-area bytes per execution.
    pub work_size: usize,
    /// Hits since it was made.
    pub hits: u64,
    /// Leases out now.
    pub leases: usize,
}

impl PlanPool {
    /// A pool over `runtime`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    ///
    /// // The simulated runtime; `runtime::select::open` opens hipFFT or cuFFT where there is a GPU.
    /// let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let config = PoolConfig::builder().capacity(16).private_ceiling(32).build()?;
    /// let pool = PlanPool::new(config, runtime)?;
    /// assert_eq!(pool.capacity(), 16);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn new(config: PoolConfig, runtime: Arc<dyn Runtime>) -> Result<PlanPool> {
        let mut warnings = Vec::new();
        let ceilings = match &config.ceiling_scope {
            CeilingScope::Shared(c) => CeilingPlan::Shared(c.clone()),
            CeilingScope::PerDevice => CeilingPlan::PerDevice(config.live_ceiling),
            CeilingScope::ProcessWide => {
                let c = LiveCeiling::process_wide(config.live_ceiling);
                if c.limit() != config.live_ceiling {
                    // A C or C++ host has no tracing subscriber: the message is also kept
                    // for `warnings()` (hfp_pool_warnings) and printed when none is installed.
                    let w = format!(
                        "live_ceiling {} asked, but the process-wide live ceiling was already set to {} by the first pool; \
                         this pool shares it (give this pool a private ceiling to use its own)",
                        config.live_ceiling,
                        c.limit()
                    );
                    tracing::warn!(asked = config.live_ceiling, effective = c.limit(), "{w}");
                    if !tracing::dispatcher::has_been_set() {
                        eprintln!("hipfft-pool: warning: {w}");
                    }
                    warnings.push(w);
                }
                CeilingPlan::Shared(c)
            }
        };
        // The seed's hang: blocking sync set after the null stream's queue existed made the
        // wait inside hipFree (which hipfftDestroy reaches) never wake.
        if let Ok(Some(flags)) = runtime.device_flags()
            && flags & DEVICE_SCHEDULE_BLOCKING_SYNC != 0
        {
            let w = format!(
                "the current device's flags are {flags:#x}, which include hipDeviceScheduleBlockingSync: if they were set \
                 after the device's first use (its null stream already existed), a hipfftDestroy can wait forever in \
                 hipFree (the gfx1151 hang); call hipSetDeviceFlags before any other HIP call, or not at all"
            );
            tracing::warn!(flags, "{w}");
            if !tracing::dispatcher::has_been_set() {
                eprintln!("hipfft-pool: warning: {w}");
            }
            warnings.push(w);
        }
        // With one ceiling every cached plan counts against it, so the capacity must fit;
        // split per device, misses evict idle plans of their own device instead.
        let limit = match &ceilings {
            CeilingPlan::Shared(c) => c.limit(),
            CeilingPlan::PerDevice(_) => usize::MAX,
        };
        let mut config = config;
        if matches!(config.ceiling_scope, CeilingScope::ProcessWide) && config.capacity > limit && config.capacity <= config.live_ceiling {
            // The capacity fit the ceiling asked for; the one an earlier pool set is smaller
            // (the warning above says so). Fitting it beats refusing a pool the caller could
            // not have configured otherwise (the default pool of a process whose first pool
            // set a small ceiling).
            let w = format!(
                "capacity {} is above the process-wide live ceiling {limit} this pool shares; using capacity {limit}",
                config.capacity
            );
            tracing::warn!(asked = config.capacity, effective = limit, "{w}");
            if !tracing::dispatcher::has_been_set() {
                eprintln!("hipfft-pool: warning: {w}");
            }
            warnings.push(w);
            config.capacity = limit;
        }
        if config.capacity == 0 || config.capacity > limit {
            return Err(Error::InvalidConfig {
                field: "capacity",
                value: format!("{} (live ceiling {})", config.capacity, limit),
                reason: "must be between 1 and the live ceiling",
            });
        }
        let (retire_tx, retire_rx) = unbounded::<Arc<PlanEntry>>();
        let (completion_tx, completion_rx) = unbounded::<PendingRelease>();
        let watchdog = Arc::new(Watchdog::new(config.watchdog_threshold));
        // Under loom the watchdog's thread (an OS thread that only reports) is not started;
        // its registrations still run on every call.
        #[cfg(not(loom))]
        let watchdog_thread = Some(
            Watchdog::spawn(Arc::downgrade(&watchdog), watchdog.period())
                .map_err(|e| Error::Internal(format!("cannot start the watchdog thread: {e}")))?,
        );
        #[cfg(loom)]
        let watchdog_thread = {
            let _unused_under_loom = (Watchdog::spawn, Watchdog::period);
            None
        };
        let one_device = matches!(runtime.device_count(), Ok(1));
        let core = Arc::new(Core {
            one_device,
            runtime,
            ceilings,
            devices: Default::default(),
            watchdog,
            live: Default::default(),
            peak_live: Default::default(),
            retire_tx,
            retired: Mutex::new(HashMap::default()),
            completion_tx: parking::Mutex::new(Some(completion_tx)),
            shut: Default::default(),
            batches: OpenBatches::new(front::next_pool_id()),
            destroying: Default::default(),
            creators: Creators::new(),
            undestroyed: Mutex::new(Vec::new()),
            capture_seen: parking::Mutex::new(None),
            batch_lend: config.batch_lend,
        });
        let destroyer_rx = retire_rx.clone();
        let weak_core = Arc::downgrade(&core);
        let destroyer = thread::spawn("hipfft-pool-destroy", move || {
            // Every destroy a miss needs runs here, never on the miss's thread. Ends when
            // every plan and the pool are gone (all senders dropped).
            #[cfg(not(loom))]
            let mut just_worked = false;
            #[cfg(not(loom))]
            loop {
                const RETRY: Duration = Duration::from_millis(50);
                // Polls before it parks, as the creation workers do (`poll_until`), but only
                // right after a destroy: a destroy often follows another. An idle destroyer
                // that polled after each retry tick spun 2 ms of every 50 for the pool's
                // whole life, on a core the creation worker and the host may need.
                let polled = if std::mem::take(&mut just_worked) { thread::poll_recv(&destroyer_rx) } else { None };
                let next = match polled {
                    Some(e) => Ok(e),
                    None => destroyer_rx.recv_timeout(RETRY),
                };
                match next {
                    Ok(entry) => {
                        let core = entry.core.clone();
                        core.destroy_doomed(entry);
                        just_worked = true;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if let Some(core) = weak_core.upgrade() {
                            core.retry_undestroyed();
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            // Under loom the retry of undestroyed plans (a timed poll) is not modelled.
            #[cfg(loom)]
            {
                drop(weak_core);
                while let Ok(entry) = destroyer_rx.recv() {
                    let core = entry.core.clone();
                    core.destroy_doomed(entry);
                }
            }
        })
        .map_err(|e| Error::Internal(format!("cannot start the destroyer thread: {e}")))?;
        let (done_tx, completion_done) = bounded::<()>(0);
        let completion = thread::spawn("hipfft-pool-complete", move || {
            let _done: Sender<()> = done_tx;
            crate::pool::completion::run(completion_rx);
        })
        .map_err(|e| Error::Internal(format!("cannot start the completion thread: {e}")))?;
        let cache = Arc::new(Cache {
            core: core.clone(),
            map: new_map(),
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded_with_hasher(FxBuildHasher),
                capacity: config.capacity,
                work_area_budget: config.work_area_budget,
                work_area_bytes: 0,
                creating: HashMap::default(),
                shut_down: false,
                thrash: ThrashDetector::new(),
                eviction: config.eviction,
                cost: CostState::new(config.capacity),
                working_set: WorkingSet::default(),
            }),
        });
        crate::sync::fork::install();
        Ok(PlanPool {
            id: front::next_pool_id(),
            born: crate::sync::fork::generation(),
            born_in: std::process::id(),
            core,
            cache,
            retire_rx,
            flush_hook: parking::RwLock::new(None),
            recency: Recency::default(),
            acquire_timeout: config.acquire_timeout,
            shutdown_timeout: config.shutdown_timeout,
            plan_options: config.plan_options,
            completion_done,
            _threads: vec![destroyer, completion],
            watchdog: watchdog_thread,
            warnings,
            manifest_out: config.manifest_out,
            warming: Mutex::new(None),
        })
    }

    /// A pool shared by reference count, which starts the warm-up the configuration names
    /// ([`PoolConfig::warmup`], `HIPFFT_POOL_WARMUP`) in the background: the manifest is read
    /// on the warm-up's own thread ([`Manifest::load`]: a regular file, within its caps). A
    /// manifest that cannot be read is a warning naming `HIPFFT_POOL_WARMUP` and the path
    /// (logged, on stderr when no `tracing` subscriber is installed, and the `stopped` of the
    /// report [`PlanPool::wait_warm_up`] returns), not an error: the pool works without it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    ///
    /// let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let path = std::env::temp_dir().join(format!("hfp-doc-new-shared-{}.json", std::process::id()));
    /// {
    ///     let first = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime.clone())?;
    ///     first.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    ///     first.save_manifest(&path)?;
    /// }
    /// let config = PoolConfig::builder().capacity(4).private_ceiling(4).warmup(&path).build()?;
    /// let pool = PlanPool::new_shared(config, runtime)?;
    /// assert_eq!(pool.wait_warm_up(Duration::from_secs(10)).map(|r| r.made), Some(1));
    /// assert_eq!(pool.metrics().cached, 1);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn new_shared(config: PoolConfig, runtime: Arc<dyn Runtime>) -> Result<Arc<PlanPool>> {
        let warmup = config.warmup.clone();
        let pool = Arc::new(PlanPool::new(config, runtime)?);
        if let Some(path) = warmup {
            // Read on the warm-up thread: under the interposers the caller is a host's first
            // FFT call, which must not wait on the file.
            let rx = pool.spawn_warm_up(WarmSource::File(path))?;
            *lock(&pool.warming) = Some(rx);
        }
        Ok(pool)
    }

    /// The runtime the pool makes, executes and destroys its plans on.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// assert_eq!(pool.runtime().kind(), hipfft_pool::RuntimeKind::Sim);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.core.runtime
    }

    /// The ceiling device 0's plans count against (the only one unless split per device).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// assert_eq!((pool.ceiling().live(), pool.ceiling().limit()), (1, 8));
    /// drop(lease);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn ceiling(&self) -> Arc<LiveCeiling> {
        self.ceiling_for(0)
    }

    /// The ceiling a device's plans count against.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// // One ceiling for every device unless the pool splits it per device.
    /// assert!(Arc::ptr_eq(&pool.ceiling_for(0), &pool.ceiling()));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn ceiling_for(&self, device: i32) -> Arc<LiveCeiling> {
        self.core.device(device).ceiling.clone()
    }

    /// What this pool could not do as configured, one line each (empty when it did all):
    /// today, a process-wide live ceiling asked for after the first pool had set another
    /// limit. C hosts read the same lines with `hfp_pool_warnings`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    ///
    /// let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// let pool = PlanPool::new(config, runtime)?;
    /// assert!(pool.warnings().is_empty());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The most plans the cache keeps.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// assert_eq!(pool.capacity(), 4);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn capacity(&self) -> usize {
        lock(&self.cache.inner).capacity
    }

    /// How long a miss waits at the ceiling before it fails with `CeilingTimeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// use std::time::Duration;
    /// let config = PoolConfig::builder().capacity(4).private_ceiling(8).acquire_timeout(Duration::from_millis(250)).build()?;
    /// let pool = PlanPool::new(config, runtime)?;
    /// assert_eq!(pool.acquire_timeout(), Duration::from_millis(250));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn acquire_timeout(&self) -> Duration {
        self.acquire_timeout
    }

    /// A lease on the plan for `desc`, made if needed. On a miss at the ceiling it destroys
    /// retired plans whose executions finished, evicts idle plans, calls the flush hook
    /// (again at each wake-up), then waits up to the acquire timeout; it never waits
    /// unbounded.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let desc = PlanDesc::new(TransformType::R2C, &[400], 512);
    /// let first = pool.acquire(&desc)?; // a miss: the plan is made
    /// drop(first); // released (no execution was enqueued under it)
    /// let second = pool.acquire(&desc)?; // a hit: the same plan
    /// assert_eq!(second.desc(), &desc);
    /// assert_eq!((pool.metrics().misses, pool.metrics().hits), (1, 1));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    #[inline]
    pub fn acquire(&self, desc: &PlanDesc) -> Result<Lease> {
        if self.born != crate::sync::fork::generation() {
            return Err(self.forked());
        }
        match self.try_hit(desc) {
            Some(lease) => Ok(lease),
            // A miss that waits ends in a lease or an error, never in `None`.
            None => self.acquire_slow(desc, Waits::UpToTimeout)?.ok_or_else(|| Error::Internal("a waiting miss returned no lease".into())),
        }
    }

    /// [`acquire`](Self::acquire) for a caller that must not wait for a slot (it holds a
    /// lock of its own, say): a hit, or a miss that finds a free slot or an idle plan to
    /// evict (the plan is then made, which takes the creation's time); `Ok(None)` where
    /// `acquire` would wait for plans in use to be released.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new(PoolConfig::builder().capacity(1).private_ceiling(1).build()?, runtime)?;
    /// let busy = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let other = PlanDesc::new(TransformType::C2C, &[128], 1);
    /// assert!(pool.acquire_now(&other)?.is_none(), "the one slot is in use");
    /// drop(busy); // idle now: evicted for the next miss
    /// assert!(pool.acquire_now(&other)?.is_some());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn acquire_now(&self, desc: &PlanDesc) -> Result<Option<Lease>> {
        if self.born != crate::sync::fork::generation() {
            return Err(self.forked());
        }
        match self.try_hit(desc) {
            Some(lease) => Ok(Some(lease)),
            None => self.acquire_slow(desc, Waits::Never),
        }
    }

    /// A lease on the cached plan for `desc`, if there is one: never makes a plan, never
    /// waits. For a caller that may not make one now (a stream capturing a graph).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
    /// let desc = PlanDesc::new(TransformType::C2C, &[64], 1);
    /// assert!(pool.acquire_cached(&desc).is_none(), "not made yet");
    /// drop(pool.acquire(&desc)?);
    /// assert!(pool.acquire_cached(&desc).is_some());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn acquire_cached(&self, desc: &PlanDesc) -> Option<Lease> {
        if self.born != crate::sync::fork::generation() {
            return None;
        }
        self.try_hit(desc)
    }

    /// Threads waiting for a slot of `device`'s ceiling right now (in this pool or another
    /// that shares the ceiling).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
    /// assert_eq!(pool.waiters(0), 0);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn waiters(&self, device: i32) -> usize {
        self.core.device(device).ceiling.waiters()
    }

    /// A hit: this thread's front cache first (no shared lock word), then the map.
    #[inline]
    fn try_hit(&self, desc: &PlanDesc) -> Option<Lease> {
        let hash = front::hash(desc);
        let stripe = Stripe::this_thread();
        // Not found or evicted: the map may hold a newer plan for this key.
        if let Some(e) = front::find(self.id, hash, desc, stripe) {
            return Some(self.hit(e));
        }
        let e = {
            // The guard spans the `try_lease`, so a lease is never taken on an entry whose
            // removal from the map (an eviction) has returned.
            let guard = self.cache.map.get(desc)?;
            let e = guard.value();
            if !e.state.try_lease(stripe) {
                return None;
            }
            // SAFETY: the lease was just taken, on an entry the map lists.
            unsafe { Held::new(e, stripe) }
        };
        front::remember(self.id, hash, &e);
        Some(self.hit(e))
    }

    /// Stamps a hit on `e`, whose lease (and hit count) `try_lease` just took.
    #[inline]
    fn hit(&self, e: Held) -> Lease {
        // Stored only when the clock moved (a miss since this plan's last hit): hits between
        // misses write no line beyond the lease count and the hit count.
        let now = self.recency.now();
        if e.last_used.load(Ordering::Relaxed) != now {
            e.last_used.store(now, Ordering::Relaxed);
        }
        Lease::new(e)
    }

    /// A miss: makes the plan, joins its creation, evicts, or waits (per `waits`). `Ok(None)`
    /// only for [`Waits::Never`], where it would have waited.
    #[cold]
    fn acquire_slow(&self, desc: &PlanDesc, waits: Waits) -> Result<Option<Lease>> {
        desc.validate()?;
        let dev = self.core.device(desc.device);
        // A create or destroy that has not returned for the whole timeout: a miss here could
        // only wait for it, so it fails at once, naming the call.
        if let Some(stuck) = dev.calls.stuck(self.acquire_timeout) {
            return Err(stuck.into_error(desc.device));
        }
        let c = &dev.counters;
        let started = Instant::now();
        let deadline = started + self.acquire_timeout;
        let mut flushed = false;
        let mut waited = false;
        // Held from the first time there was nothing to do (see `Step::Wait`).
        let mut registered: Option<Waiting<'_>> = None;
        // One reclaim from another pool per wake-up: its destroy runs on that pool's
        // destroyer, and reclaiming more while it runs would empty their caches for one slot.
        // (Our own idle victims are swapped, never waited for: see `Step::Swap`.)
        let mut reclaimed_since_wake = false;
        let mut missed = false;
        let mut miss_once = |c: &Counters| {
            if !std::mem::replace(&mut missed, true) {
                Counters::bump(&c.misses);
            }
        };
        loop {
            if let Some(lease) = self.try_hit(desc) {
                return Ok(Some(lease));
            }
            let epoch = dev.ceiling.epoch();
            // A new recency period: hits from here on rank above everything stamped before.
            self.recency.advance();
            let step = {
                let mut inner = lock(&self.cache.inner);
                if inner.shut_down {
                    return Err(Error::ShutDown);
                }
                if let Some(f) = inner.creating.get(desc) {
                    Step::Join(f.clone())
                } else if self.cache.map.contains_key(desc) {
                    Step::Retry
                } else if dev.ceiling.try_acquire() {
                    self.core.live_up(&dev);
                    Step::Create(Self::start_flight(&mut inner, desc, &dev))
                } else if reclaimed_since_wake {
                    Step::Wait
                } else if let Some(e) = self.cache.evict_one_idle(&mut inner, &dev.ceiling) {
                    // The victim's slot passes to this miss once it is destroyed (never back
                    // to the ceiling, so no other miss takes it in between).
                    Step::Swap(e, Self::start_flight(&mut inner, desc, &dev))
                } else {
                    Step::Wait
                }
            };
            match step {
                Step::Retry => continue,
                Step::Create(flight) => {
                    miss_once(c);
                    drop(registered.take());
                    return self.create(desc, flight, &dev, deadline, started, None).map(Some);
                }
                Step::Swap(victim, flight) => {
                    miss_once(c);
                    drop(registered.take());
                    return self.create(desc, flight, &dev, deadline, started, Some(victim)).map(Some);
                }
                Step::Join(flight) => {
                    miss_once(c);
                    drop(registered.take());
                    match flight.wait(deadline) {
                        Some(Ok(entry)) => {
                            let stripe = Stripe::this_thread();
                            if entry.state.try_join(stripe) {
                                entry.last_used.store(self.recency.now(), Ordering::Relaxed);
                                // SAFETY: the lease was just taken, on a plan not evicted
                                // (so listed in the map, or retired since).
                                return Ok(Some(Lease::new(unsafe { Held::new(&entry, stripe) })));
                            }
                            // Evicted before we got to it: go round again.
                        }
                        Some(Err(e)) => return Err(e),
                        None => return Err(self.timeout_error(desc, started, true)),
                    }
                }
                Step::Wait => {
                    // Every slot held by a plan no GPU work will give back: waiting could
                    // only end in the timeout.
                    if dev.ceiling.all_standing() {
                        drop(registered.take());
                        return Err(self.held_error(desc));
                    }
                    // Nothing idle of our own: another pool at this ceiling may sit on idle
                    // plans. One reclaim per wake-up, like our own evictions.
                    if !reclaimed_since_wake && dev.ceiling.reclaim_from_others(Arc::as_ptr(&self.cache) as *const ()) {
                        reclaimed_since_wake = true;
                        continue;
                    }
                    if waits == Waits::Never {
                        drop(registered.take());
                        return Ok(None);
                    }
                    #[cfg(all(test, loom))]
                    let registered_before_last_look = !crate::pool::tests::regressed(crate::pool::tests::Regression::WaitWithoutRegistering);
                    #[cfg(not(all(test, loom)))]
                    let registered_before_last_look = true;
                    if registered.is_none() && registered_before_last_look {
                        // Register as a waiter, then look once more before sleeping: a plan
                        // that goes idle after a registered look bumps the epoch, but one
                        // that went idle between an unregistered look and the wait would
                        // signal nobody, and the miss would sleep out its whole timeout.
                        registered = Some(dev.ceiling.register());
                        continue;
                    }
                    // Nothing is on its way: the host may be holding the work that would free
                    // a slot. Asked again at every wake-up: a slot another waiter took may
                    // have gone to work the host holds again. (With an eviction on its way
                    // there is nothing to flush for.)
                    if !flushed && !reclaimed_since_wake {
                        flushed = true;
                        let hook = self.flush_hook.read().clone();
                        if let Some(hook) = hook {
                            Counters::bump(&c.flush_hook_calls);
                            let _span = tracing::debug_span!("flush_hook", desc = %desc).entered();
                            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook())) {
                                tracing::error!("the flush hook panicked: {}; the miss goes on waiting", panic_message(&*p));
                            }
                            continue;
                        }
                    }
                    if !std::mem::replace(&mut waited, true) {
                        Counters::bump(&c.ceiling_waits);
                    }
                    let _span = tracing::debug_span!("ceiling_wait", desc = %desc).entered();
                    let wait_started = Instant::now();
                    let changed = dev.ceiling.wait_for_change(epoch, deadline);
                    c.record_latency(Latency::CeilingWait, desc.device, wait_started.elapsed());
                    reclaimed_since_wake = false;
                    flushed = false;
                    if !changed {
                        Counters::bump(&c.ceiling_timeouts);
                        return Err(self.timeout_error(desc, started, false));
                    }
                }
            }
        }
    }

    /// Lists the creation a miss is about to make for `desc` (its single flight, counted in
    /// `creating` until it settles) and feeds the thrash check. Under the cache lock.
    fn start_flight(inner: &mut Inner, desc: &PlanDesc, dev: &Device) -> Arc<Flight> {
        let c = &dev.counters;
        c.creating.fetch_add(1, Ordering::SeqCst);
        let f = Arc::new(Flight::new());
        inner.creating.insert(*desc, f.clone());
        let (cap, lim) = (inner.capacity, dev.ceiling.limit());
        if let Some(w) = inner.thrash.missed(desc, cap, lim, c) {
            tracing::warn!("{w}");
        }
        f
    }

    /// Whether this pool was made before this process forked (see `sync::fork`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
    /// assert!(!pool.is_inherited(), "made in this process");
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn is_inherited(&self) -> bool {
        self.born != crate::sync::fork::generation()
    }

    #[cold]
    #[inline(never)]
    fn forked(&self) -> Error {
        Error::Forked { made_in: self.born_in, now: std::process::id() }
    }

    #[cold]
    fn held_error(&self, desc: &PlanDesc) -> Error {
        let c = self.core.device(desc.device).ceiling.clone();
        let standing = c.standing();
        Error::CeilingHeld { device: desc.device, standing, ceiling: c.limit(), needed: standing + 1 }
    }

    fn timeout_error(&self, desc: &PlanDesc, started: Instant, joined_creation: bool) -> Error {
        let m = self.metrics_for(desc.device);
        Error::CeilingTimeout {
            device: desc.device,
            waited: started.elapsed(),
            state: CeilingState {
                live: m.process_live,
                cached: m.cached,
                in_flight: m.in_flight,
                retired: m.retired_pending,
                ceiling: m.ceiling,
            },
            joined_creation,
        }
    }

    /// Makes the plan for a miss that took a slot, or that takes over `victim`'s (an idle
    /// plan it evicted at the ceiling, destroyed first in the same job): the runtime calls
    /// run on a creation worker, and this thread waits for them until `deadline`. Whatever
    /// happens, the slot, the single flight and the `creating` count are settled: by this
    /// thread, or (for a creation that outlived the wait) by the worker when the call
    /// returns.
    fn create(
        &self,
        desc: &PlanDesc,
        flight: Arc<Flight>,
        dev: &Arc<Device>,
        deadline: Instant,
        started: Instant,
        victim: Option<Arc<PlanEntry>>,
    ) -> Result<Lease> {
        let c = &dev.counters;
        let options = self.plan_options;
        // Until the hand-off is settled, leaving this function (an error or a panic) undoes
        // the miss: no key stays `creating`, no flight unfinished, no slot taken. A swap's
        // slot is the victim's until the victim is destroyed.
        let mut unsettled = CreationGuard {
            pool: self,
            desc: *desc,
            flight: &flight,
            dev,
            armed: true,
            release_slot: true,
            owns_slot: victim.is_none(),
            error: None,
        };
        let handoff = Handoff::<Made>::new();
        let job = {
            let (core, dev, desc, handoff) = (self.core.clone(), dev.clone(), *desc, handoff.clone());
            let mut victim = SwapVictim { core: self.core.clone(), entry: victim };
            move |rejoin: &Rejoin<'_>| {
                // The slot is this creation's once the victim is destroyed; without a victim
                // it was taken from the ceiling already.
                let owns_slot = match victim.entry.take() {
                    None => Ok(()),
                    Some(v) => core.destroy_for_swap(&v, &dev).map_err(|e| {
                        Error::Internal(format!("the plan {} evicted to make room for {desc} could not be destroyed: {e}", v.desc))
                    }),
                };
                let started = Instant::now();
                let (made, owns_slot) = match owns_slot {
                    Ok(()) => (run_create(&core, &dev, &desc, options), true),
                    Err(e) => (Err(e), false),
                };
                let made = Made { made, took: started.elapsed(), owns_slot };
                // This worker is first in line for the next miss's job before the miss is
                // woken: a thrashing caller's misses all run on one thread (see `Rejoin`).
                if let Some(late) = handoff.deliver_after(made, || rejoin.now()) {
                    // The miss stopped waiting: this worker settles the creation.
                    core.settle_abandoned(&dev, &desc, late.made, late.owns_slot);
                }
            }
        };
        if let Err(e) = self.core.creators.submit(job) {
            // The job (and the victim in it) was dropped unrun: the victim went to the
            // destroyer thread with its slot.
            drop(unsettled.finish_with(e.clone()));
            return Err(e);
        }
        // Queued behind busy workers for longer than a job takes to finish: start another.
        let kick_at = Instant::now() + crate::pool::creator::KICK_AFTER;
        let waited = match (kick_at < deadline).then(|| handoff.wait_until(kick_at)).flatten() {
            Some(made) => Some(made),
            None => {
                self.core.creators.kick();
                handoff.wait(deadline)
            }
        };
        let Made { made, took, owns_slot } = match waited {
            Some(made) => made,
            None => {
                // The worker settles the slot and the count when (if ever) the call returns.
                unsettled.release_slot = false;
                let e = self.timeout_error(desc, started, true);
                Counters::bump(&c.ceiling_timeouts);
                drop(unsettled.finish_with(e.clone()));
                return Err(e);
            }
        };
        unsettled.owns_slot = owns_slot;
        let created = match made {
            Ok(created) => created,
            Err(e) => {
                Counters::bump(&c.create_failures);
                drop(unsettled.finish_with(e.clone()));
                return Err(e);
            }
        };
        unsettled.armed = false;
        Counters::bump(&c.creations);
        let now = self.recency.now();
        let (prior_uses, base) = {
            let mut inner = lock(&self.cache.inner);
            inner.working_set.created(desc, took, created.work_size);
            let prior = inner.cost.admitted(desc);
            (prior, inner.cost.inflation())
        };
        // The creation's lease is counted on the stripe of the thread it goes back to.
        let stripe = Stripe::this_thread();
        let entry = Arc::new(PlanEntry {
            core: self.core.clone(),
            dev: dev.clone(),
            desc: *desc,
            plan: created.plan,
            work_size: created.work_size,
            input_bytes: desc.extents().map_or(0, |e| e.input_bytes),
            auto_allocation: options.auto_allocation,
            state: Arc::new(LeaseState::new_leased(stripe)),
            last_used: AtomicU64::new(now),
            listed: AtomicU64::new(now),
            creation_us: took.as_secs_f64() * 1e6,
            prior_uses,
            base: AtomicU64::new(base.to_bits()),
            exec_lock: parking::Mutex::new(Default::default()),
            standing: crate::sync::AtomicUsize::new(0),
        });
        let mut victims = Vec::new();
        let shut_down = {
            let mut inner = lock(&self.cache.inner);
            inner.creating.remove(desc);
            if !inner.shut_down {
                // Replay earlier hits first, so the new plan lands above them.
                Cache::sync_recency(&mut inner);
                inner.lru.put(*desc, entry.clone());
                self.cache.map.insert(*desc, entry.clone());
                inner.work_area_bytes += entry.work_size;
                self.enforce_bounds(&mut inner, &mut victims, Some(desc));
            }
            inner.shut_down
        };
        if shut_down {
            // Retired before it stops counting as `creating`, so that `shutdown` (which
            // reads `creating` first, then the retired set) always sees it in one of them.
            // Never cached: our own release below hands it to the destroyer.
            self.cache.retire(&entry);
            c.creating.fetch_sub(1, Ordering::SeqCst);
            flight.finish(Err(Error::ShutDown));
            // SAFETY: the creation's own lease, on a plan listed as retired just above.
            drop(Lease::new(unsafe { Held::new(&entry, stripe) }));
            return Err(Error::ShutDown);
        }
        c.creating.fetch_sub(1, Ordering::SeqCst);
        flight.finish(Ok(entry.clone()));
        // From its first plan on a device, this cache can be asked by other pools at that
        // device's ceiling for an idle plan.
        if !dev.enlisted.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let cache: Arc<dyn Reclaim> = self.cache.clone();
            dev.ceiling.enlist(Arc::downgrade(&cache));
        }
        // Over capacity (not at the ceiling): the victims are never destroyed here. A destroy
        // waits for the device's whole queue (`hipFree`), so an inline one would make the
        // submitting thread pay that queue on every miss that evicts; the ceiling still
        // counts each victim until its destroy returned. They go to the creation worker that
        // just made this plan (queued, it takes them before it goes idle), so the next miss's
        // creation runs after them on that thread instead of beside them on another (the
        // destroyer thread when no worker can take them).
        for v in victims {
            if let Err((_, v)) = self.core.creators.try_submit_queued((self.core.clone(), v), |(core, e)| core.destroy_doomed(e)) {
                self.core.doom(v);
            }
        }
        // SAFETY: the creation's own lease, on a plan the map lists (or, evicted by the
        // bounds at once, the retired set).
        Ok(Lease::new(unsafe { Held::new(&entry, stripe) }))
    }

    /// Evicts least recently used plans until the cache fits its capacity and work-area
    /// budget. Idle victims are returned for destruction; leased ones are retired.
    fn enforce_bounds(&self, inner: &mut Inner, victims: &mut Vec<Arc<PlanEntry>>, admitted: Option<&PlanDesc>) {
        Cache::sync_recency(inner);
        loop {
            let over_capacity = inner.lru.len() > inner.capacity;
            let over_budget = inner.work_area_budget.is_some_and(|b| inner.work_area_bytes > b) && inner.lru.len() > 1;
            if !(over_capacity || over_budget) {
                break;
            }
            // Never the plan being admitted (it is what the room is made for), unless alone.
            // Cost eviction takes an idle plan when there is one (LRU's victim, the least
            // recently used, is idle but for leases held that long): a leased victim is only
            // retired, and stays live until its release.
            let not_admitted = |e: &PlanEntry| admitted != Some(&e.desc);
            let idle_first = match inner.eviction {
                Eviction::Cost => Cache::victim(inner, |e| not_admitted(e) && e.state.leases() == 0),
                Eviction::Lru => None,
            };
            let key = idle_first
                .or_else(|| Cache::victim(inner, not_admitted))
                .or_else(|| inner.lru.peek_lru().map(|(k, _)| *k));
            let Some(key) = key else { break };
            victims.extend(self.cache.evict_key(inner, &key));
        }
    }

    /// Changes the capacity at run time (1 to the live ceiling), evicting as needed.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// for n in [8, 16, 32] {
    ///     pool.acquire(&PlanDesc::new(TransformType::C2C, &[n], 1))?; // released at once
    /// }
    /// pool.set_capacity(1)?;
    /// assert_eq!(pool.metrics().cached, 1);
    /// assert!(pool.set_capacity(100).is_err(), "above the live ceiling of 8");
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn set_capacity(&self, capacity: usize) -> Result<()> {
        let limit = match &self.core.ceilings {
            CeilingPlan::Shared(c) => c.limit(),
            CeilingPlan::PerDevice(_) => usize::MAX,
        };
        if capacity == 0 || capacity > limit {
            return Err(Error::InvalidConfig {
                field: "capacity",
                value: capacity.to_string(),
                reason: "must be between 1 and the live ceiling",
            });
        }
        let mut victims = Vec::new();
        {
            let mut inner = lock(&self.cache.inner);
            inner.capacity = capacity;
            inner.cost.resize(capacity);
            self.enforce_bounds(&mut inner, &mut victims, None);
        }
        for v in &victims {
            self.core.destroy(v);
        }
        self.notify_all();
        Ok(())
    }

    /// Destroys every idle cached plan. Returns how many were destroyed.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// pool.acquire(&PlanDesc::new(TransformType::C2C, &[8], 1))?; // idle once released
    /// let held = pool.acquire(&PlanDesc::new(TransformType::C2C, &[16], 1))?;
    /// assert_eq!(pool.trim(), 1, "the idle plan goes, the leased one stays");
    /// drop(held);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn trim(&self) -> usize {
        let mut victims = Vec::new();
        {
            let mut inner = lock(&self.cache.inner);
            let idle: Vec<PlanDesc> =
                inner.lru.iter().filter(|(_, e)| e.state.leases() == 0).map(|(k, _)| *k).collect();
            for k in idle {
                victims.extend(self.cache.evict_key(&mut inner, &k));
            }
        }
        for v in &victims {
            self.core.destroy(v);
        }
        victims.len()
    }

    /// Sets (or, with `None`, clears) the hook a miss calls once before it waits at the ceiling
    /// (see [`FlushHook`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let hook: hipfft_pool::FlushHook = Arc::new(|| {
    ///     // Submit the GPU work the host has batched, so the leases it holds can complete.
    /// });
    /// pool.set_flush_hook(Some(hook));
    /// pool.set_flush_hook(None); // cleared
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn set_flush_hook(&self, hook: Option<FlushHook>) {
        *self.flush_hook.write() = hook;
    }

    /// Every count of the whole pool, at one moment (see [`MetricsSnapshot`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let m = pool.metrics();
    /// assert_eq!((m.live, m.cached, m.in_flight, m.capacity), (1, 1, 1, 4));
    /// drop(lease);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics(&self) -> MetricsSnapshot {
        self.snapshot(None)
    }

    /// Every count of one device's plans.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1).on_device(0))?;
    /// assert_eq!(pool.metrics_for(0).creations, 1);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics_for(&self, device: i32) -> MetricsSnapshot {
        self.snapshot(Some(device))
    }

    /// One snapshot per device the pool has used (device 0 if none yet).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let devices: Vec<i32> = pool.metrics_by_device().into_iter().map(|(d, _)| d).collect();
    /// assert_eq!(devices, [0]);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics_by_device(&self) -> Vec<(i32, MetricsSnapshot)> {
        let mut ids: Vec<i32> = self.core.devices.read().keys().copied().collect();
        if ids.is_empty() {
            ids.push(0);
        }
        ids.into_iter().map(|d| (d, self.snapshot(Some(d)))).collect()
    }

    /// Every count, as [`PlanPool::metrics`], or `None` if a lock it needs stays held until
    /// `deadline`: for exit hooks, which must never wait on a lock (a thread interrupted by a
    /// signal, or gone with a fork, may hold it).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    /// assert_eq!(pool.metrics_until(deadline).map(|m| m.cached), Some(0));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics_until(&self, deadline: Instant) -> Option<MetricsSnapshot> {
        if self.is_inherited() {
            return None;
        }
        self.snapshot_until(None, Some(deadline))
    }

    /// [`PlanPool::manifest`], or `None` if the cache stays locked until `deadline` (see
    /// [`PlanPool::metrics_until`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    /// assert!(pool.manifest_until(deadline).is_some());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn manifest_until(&self, deadline: Instant) -> Option<Manifest> {
        if self.is_inherited() {
            return None;
        }
        let mut m = Manifest::empty_for(&*self.core.runtime);
        let inner = lock_until(&self.cache.inner, Some(deadline))?;
        let live: HashMap<PlanDesc, u64> = inner.lru.iter().map(|(k, e)| (*k, e.state.hits())).collect();
        m.plans = inner.working_set.plans(&live);
        Some(m)
    }

    fn snapshot(&self, only: Option<i32>) -> MetricsSnapshot {
        self.snapshot_until(only, None).expect("no deadline: every lock is waited for")
    }

    fn snapshot_until(&self, only: Option<i32>, deadline: Option<Instant>) -> Option<MetricsSnapshot> {
        let want = |d: i32| only.is_none_or(|o| o == d);
        let mut m = MetricsSnapshot::default();
        {
            let inner = lock_until(&self.cache.inner, deadline)?;
            m.capacity = inner.capacity;
            for (_, e) in inner.lru.iter().filter(|(_, e)| want(e.desc.device)) {
                m.cached += 1;
                m.work_area_bytes += e.work_size;
                m.hits += e.state.hits();
                m.in_flight += e.state.leases();
            }
        }
        for e in lock_until(&self.core.retired, deadline)?.values().filter(|e| want(e.desc.device)) {
            m.retired_pending += 1;
            m.hits += e.state.hits();
            m.in_flight += e.state.leases();
        }
        let devices: Vec<Arc<Device>> = match (only, deadline) {
            (Some(d), _) => vec![self.core.device(d)],
            (None, None) => self.core.devices.read().values().cloned().collect(),
            (None, Some(by)) => self.core.devices.try_read_until(by)?.values().cloned().collect(),
        };
        let mut ceilings: Vec<Arc<LiveCeiling>> = Vec::new();
        for d in &devices {
            d.counters.add_to(&mut m);
            if !ceilings.iter().any(|c| Arc::ptr_eq(c, &d.ceiling)) {
                ceilings.push(d.ceiling.clone());
            }
        }
        if ceilings.is_empty() {
            ceilings.push(self.core.device(0).ceiling.clone());
        }
        for c in &ceilings {
            m.process_live += c.live();
            m.process_peak_live += c.peak();
            m.ceiling += c.limit();
        }
        if only.is_none() {
            // Exact pool-wide figures, not sums of per-device peaks.
            m.live = self.core.live.load(Ordering::SeqCst);
            m.peak_live = self.core.peak_live.load(Ordering::Relaxed);
        }
        if deadline.is_none() {
            m.stalled = self.core.watchdog.scan_device(only);
        }
        Some(m)
    }

    /// Runtime calls running past the watchdog threshold right now.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// assert!(pool.stalled_calls().is_empty(), "nothing runs past the watchdog threshold");
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn stalled_calls(&self) -> Vec<StalledCall> {
        self.core.watchdog.stalled()
    }

    /// The cached plans, most recently used first.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let plans = pool.cached_plans();
    /// assert_eq!((plans.len(), plans[0].leases), (1, 1));
    /// drop(lease);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn cached_plans(&self) -> Vec<CachedPlan> {
        let mut inner = lock(&self.cache.inner);
        Cache::sync_recency(&mut inner);
        inner
            .lru
            .iter()
            .map(|(_, e)| CachedPlan {
                desc: e.desc.to_string(),
                work_size: e.work_size,
                hits: e.state.hits(),
                leases: e.state.leases(),
            })
            .collect()
    }

    /// The working set so far, as a manifest: every descriptor the pool made a plan for,
    /// with its hits, creations, mean creation time and work size, most valuable first.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// let desc = PlanDesc::new(TransformType::R2C, &[400], 4);
    /// for _ in 0..3 {
    ///     pool.acquire(&desc)?; // one miss, then two hits
    /// }
    /// let m = pool.manifest();
    /// assert_eq!((m.plans.len(), m.plans[0].creations, m.plans[0].hits), (1, 1, 2));
    /// assert_eq!(m.plans[0].desc()?, desc);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn manifest(&self) -> Manifest {
        let mut m = Manifest::empty_for(&*self.core.runtime);
        let inner = lock(&self.cache.inner);
        let live: HashMap<PlanDesc, u64> = inner.lru.iter().map(|(k, e)| (*k, e.state.hits())).collect();
        m.plans = inner.working_set.plans(&live);
        m
    }

    /// Writes [`PlanPool::manifest`] to `path` (JSON; see `docs/warmup.md`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(8).build()?, runtime)?;
    /// pool.acquire(&PlanDesc::new(TransformType::C2C, &[8], 2))?;
    /// let path = std::env::temp_dir().join(format!("hfp-doc-save-{}.json", std::process::id()));
    /// pool.save_manifest(&path)?;
    /// assert_eq!(hipfft_pool::manifest::Manifest::load(&path)?.plans.len(), 1);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn save_manifest(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        self.manifest().save(path)
    }

    /// Makes the manifest's plans on this thread, most valuable first (creation time times
    /// uses), idle in the cache: never above the capacity or the live ceiling (it stops
    /// there, and never evicts), and waiting while real misses are being made or wait at
    /// the ceiling, so that they go first. A miss on a plan being warmed joins its creation.
    /// A manifest of another runtime or library version is skipped whole, a plan of a device
    /// whose name differs is skipped; each with a warning naming both.
    ///
    /// Creations run on the pool's creation workers, never on a capturing thread; on CUDA in
    /// relaxed capture mode, so a capture running elsewhere neither breaks nor records them.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let config = || PoolConfig::builder().capacity(2).private_ceiling(4).build();
    /// let old = PlanPool::new(config()?, runtime.clone())?;
    /// for n in [8, 16, 32] {
    ///     old.acquire(&PlanDesc::new(TransformType::C2C, &[n], 1))?;
    /// }
    /// let manifest = old.manifest();
    /// let pool = PlanPool::new(config()?, runtime)?;
    /// let report = pool.warm_up(&manifest);
    /// assert_eq!(report.made, 2, "capacity 2");
    /// assert!(report.stopped.unwrap().contains("capacity"));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn warm_up(&self, manifest: &Manifest) -> WarmUpReport {
        let started = Instant::now();
        let mut report = WarmUpReport::default();
        let _span = tracing::debug_span!("warm_up", plans = manifest.plans.len()).entered();
        let Some(names) = self.warm_up_identity(manifest, &mut report) else {
            report.elapsed = started.elapsed();
            return report;
        };
        for (index, plan) in by_value(manifest) {
            if self.warm_entry(&names, index, plan, &mut report).is_break() {
                break;
            }
        }
        warm_up_done(&mut report, started);
        report
    }

    /// The device names each entry of a warm-up of `manifest` is checked against; `None`, with
    /// the warning in the report, when the manifest is of another runtime or library version.
    /// Once per warm-up, so that each entry costs a lookup.
    fn warm_up_identity<'m>(&self, manifest: &'m Manifest, report: &mut WarmUpReport) -> Option<DeviceNames<'m>> {
        let here = Manifest::empty_for(&*self.core.runtime);
        if let Some(why) = manifest.mismatch_with(&here) {
            let w = format!("warm-up skipped: {why}");
            warn_unsubscribed(&w);
            report.skipped.push(w);
            return None;
        }
        let ours = here.device_names().into_iter().map(|(ordinal, name)| (ordinal, name.to_string())).collect();
        Some(DeviceNames { theirs: manifest.device_names(), ours })
    }

    /// One entry of a warm-up, the `index`-th of the manifest: made, found already there, or
    /// skipped with why in the report; `Break` when the warm-up stops.
    fn warm_entry(
        &self,
        names: &DeviceNames<'_>,
        index: usize,
        plan: &ManifestPlan,
        report: &mut WarmUpReport,
    ) -> ControlFlow<()> {
        let desc = match plan.desc() {
            Ok(d) => d,
            Err(e) => {
                let entry = format!("{:?} n={:?} batch={}", plan.transform, plan.n, plan.batch);
                report.skipped.push(format!("entry {index} ({entry}): {e}"));
                return ControlFlow::Continue(());
            }
        };
        let (theirs, ours) = (names.theirs.get(&desc.device).copied(), names.ours.get(&desc.device).map(String::as_str));
        if theirs != ours {
            report.skipped.push(format!(
                "entry {index} ({desc}): recorded on device {:?}, this device {} is {:?}",
                theirs.unwrap_or("(none)"),
                desc.device,
                ours.unwrap_or("(none)")
            ));
            return ControlFlow::Continue(());
        }
        match self.warm_one(&desc) {
            Warm::Made => report.made += 1,
            Warm::Already => report.already += 1,
            Warm::Failed(e) => report.skipped.push(format!("entry {index} ({desc}): {e}")),
            Warm::Stop(why) => {
                report.stopped = Some(why);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// [`PlanPool::warm_up`] on a thread of its own; the report comes on the returned
    /// channel. The thread holds the pool weakly between plans: dropping the pool ends it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = || PoolConfig::builder().capacity(4).private_ceiling(4).build();
    /// # let old = PlanPool::new(config()?, runtime.clone())?;
    /// # old.acquire(&PlanDesc::new(TransformType::C2C, &[8], 1))?;
    /// let pool = Arc::new(PlanPool::new(config()?, runtime)?);
    /// let report = pool.warm_up_in_background(old.manifest())?.recv().unwrap();
    /// assert_eq!(report.made, 1);
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    // Under loom the channel is the model's (crate-private); the public type is crossbeam's.
    #[cfg_attr(loom, allow(private_interfaces))]
    pub fn warm_up_in_background(self: &Arc<Self>, manifest: Manifest) -> Result<Receiver<WarmUpReport>> {
        self.spawn_warm_up(WarmSource::Given(manifest))
    }

    /// Starts the warm-up thread, which holds the pool weakly (see [`warm_up_weakly`]).
    fn spawn_warm_up(self: &Arc<Self>, source: WarmSource) -> Result<Receiver<WarmUpReport>> {
        let (tx, rx) = bounded(1);
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("hipfft-pool-warmup".into())
            .spawn(move || {
                let _ = tx.send(warm_up_weakly(&weak, source));
            })
            .map_err(|e| Error::Internal(format!("cannot start the warm-up thread: {e}")))?;
        Ok(rx)
    }

    /// Waits up to `timeout` for the warm-up [`PlanPool::new_shared`] started, and returns
    /// its report once; `None` when there was none, it was taken already, or it is still
    /// running at the timeout (a later call waits again).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// let pool = PlanPool::new_shared(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
    /// assert!(pool.wait_warm_up(Duration::ZERO).is_none(), "no warm-up was configured");
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn wait_warm_up(&self, timeout: Duration) -> Option<WarmUpReport> {
        let mut slot = lock(&self.warming);
        let report = slot.as_ref()?.recv_timeout(timeout).ok()?;
        *slot = None;
        Some(report)
    }

    /// Tells the pool that a stream is capturing a graph now, for captures it cannot see
    /// itself (it sees those of [`Lease::release_after`]): a warm-up makes no plan until
    /// [`CAPTURE_QUIET`] has passed without one. The interposers call it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let pool = PlanPool::new(PoolConfig::builder().capacity(4).private_ceiling(4).build()?, runtime)?;
    /// pool.capture_seen();
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn capture_seen(&self) {
        self.core.note_capture();
    }

    /// One plan of a warm-up: made idle in the cache as a miss would make it, if there is
    /// room without evicting, no real miss is waiting and no capture is going on.
    fn warm_one(&self, desc: &PlanDesc) -> Warm {
        let dev = self.core.device(desc.device);
        let c = &dev.counters;
        // Real misses first: wait while one is being made or waits at the ceiling. And no
        // creation while the host captures a graph.
        let until = Instant::now() + self.acquire_timeout;
        loop {
            let busy = c.creating.load(Ordering::SeqCst) > 0 || dev.ceiling.waiters() > 0;
            let capturing = self.core.capture_seen.lock().is_some_and(|t| t.elapsed() < CAPTURE_QUIET);
            if !busy && !capturing {
                break;
            }
            if Instant::now() >= until {
                return Warm::Stop(if capturing {
                    format!("streams kept capturing graphs for the acquire timeout ({:?})", self.acquire_timeout)
                } else {
                    format!("real misses kept the pool busy for the acquire timeout ({:?})", self.acquire_timeout)
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        if let Some(stuck) = dev.calls.stuck(self.acquire_timeout) {
            return Warm::Stop(stuck.into_error(desc.device).to_string());
        }
        let flight = {
            let mut inner = lock(&self.cache.inner);
            if inner.shut_down {
                return Warm::Stop("the pool is shut down".into());
            }
            if inner.creating.contains_key(desc) || self.cache.map.contains_key(desc) {
                return Warm::Already;
            }
            if inner.lru.len() + inner.creating.len() >= inner.capacity {
                return Warm::Stop(format!("the cache is full ({} plans, capacity {})", inner.lru.len(), inner.capacity));
            }
            if !dev.ceiling.try_acquire() {
                return Warm::Stop(format!("the live ceiling is reached ({} of {})", dev.ceiling.live(), dev.ceiling.limit()));
            }
            self.core.live_up(&dev);
            c.creating.fetch_add(1, Ordering::SeqCst);
            let f = Arc::new(Flight::new());
            inner.creating.insert(*desc, f.clone());
            f
        };
        let started = Instant::now();
        match self.create(desc, flight, &dev, started + self.acquire_timeout, started, None) {
            Ok(lease) => {
                // Nothing was executed under it.
                lease.release();
                Warm::Made
            }
            Err(e) => Warm::Failed(e),
        }
    }

    /// Stops serving, destroys idle plans, and waits up to the shutdown timeout for leased
    /// ones. Plans still leased afterwards are destroyed when their last lease goes.
    /// Calling it again returns at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// let report = pool.shutdown();
    /// assert_eq!((report.destroyed, report.timed_out), (1, false));
    /// assert!(matches!(pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1)), Err(hipfft_pool::Error::ShutDown)));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn shutdown(&self) -> ShutdownReport {
        if self.is_inherited() {
            // The parent's plans, threads and locks: nothing here may touch them.
            return ShutdownReport::default();
        }
        let mut victims = Vec::new();
        {
            let mut inner = lock(&self.cache.inner);
            if inner.shut_down {
                return ShutdownReport::default();
            }
            inner.shut_down = true;
            let keys: Vec<PlanDesc> = inner.lru.iter().map(|(k, _)| *k).collect();
            for k in keys {
                victims.extend(self.cache.evict_key(&mut inner, &k));
            }
        }
        let mut destroyed = victims.len();
        for v in &victims {
            self.core.destroy(v);
        }
        // Wake waiters so they see the shutdown; stop taking new release_after work; done
        // batches waiting for their stream's thread are released now, not when their lend ends.
        self.core.shut.store(true, Ordering::SeqCst);
        *self.core.completion_tx.lock() = None;
        let batched = self.core.batches.close_all();
        self.notify_all();
        let deadline = Instant::now() + self.shutdown_timeout;
        let timed_out = loop {
            while let Ok(e) = self.retire_rx.try_recv() {
                // Retired plans and evicted idle ones share the queue: `destroy_doomed` tells
                // them apart (an idle one must also leave `destroying`, which this loop waits on).
                self.core.destroy_doomed(e);
                destroyed += 1;
            }
            // Creations first, then idle destroys, then the retired set: a plan leaves each
            // for the next only after it entered the next.
            let creating: usize =
                self.core.devices.read().values().map(|d| d.counters.creating.load(Ordering::SeqCst)).sum();
            let destroying = self.core.destroying.load(Ordering::SeqCst);
            #[cfg(all(test, loom))]
            let destroying = if crate::pool::tests::regressed(crate::pool::tests::Regression::ShutdownIgnoresIdleDestroys) { 0 } else { destroying };
            if creating == 0 && destroying == 0 && lock(&self.core.retired).is_empty() {
                break false;
            }
            if Instant::now() >= deadline {
                break true;
            }
            // The destroyer thread may be the one destroying them: give it a moment.
            thread::pause(Duration::from_millis(1));
        };
        // The completion thread ends once its queue is empty; then all its events are free.
        // Those still pending (the wait ran out) are destroyed when they complete: after
        // the shutdown, a recycled event is destroyed, not listed (`Core::recycle_event`).
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(10));
        let _ = self.completion_done.recv_timeout(left);
        self.destroy_free_events();
        let still_leased: Vec<PlanDesc> = lock(&self.core.retired).values().map(|e| e.desc).collect();
        if batched > 0 {
            // Their streams may be gone by now: no event is recorded for them here.
            tracing::warn!(count = batched, "shutdown: leases in batches never ended (PlanPool::end_batch); they stay held");
        }
        if !still_leased.is_empty() {
            tracing::warn!(count = still_leased.len(), "shutdown: plans still leased; they are destroyed when released");
        }
        ShutdownReport { destroyed, still_leased, timed_out }
    }

    /// Ends the open batch of `stream` ([`Lease::release_in_batch`]): records one event
    /// there, after which the completion thread releases every lease of the batch. Nothing
    /// to end is not an error. If the event cannot be recorded the stream is synchronized
    /// and the batch released; if that fails too, its leases stay held (logged) and the
    /// error is returned.
    ///
    /// # Safety
    /// `stream` is a live stream of the pool's runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// let stream = runtime.stream_create()?;
    /// let lease = pool.acquire(&PlanDesc::new(TransformType::R2C, &[400], 4))?;
    /// // SAFETY: `stream` is live until its batch ends.
    /// unsafe { lease.release_in_batch(stream) }?;
    /// // SAFETY: as above.
    /// unsafe { pool.end_batch(stream) }?;
    /// # unsafe { runtime.stream_synchronize(stream)?; runtime.stream_destroy(stream)? };
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub unsafe fn end_batch(&self, stream: RawStream) -> Result<()> {
        let mut claimed = Vec::new();
        let taken = self.core.batches.take(stream.0, &mut claimed);
        // Leases of the stream's earlier batches, done: released on this thread.
        for e in claimed {
            e.release();
        }
        if taken.is_empty() {
            return Ok(());
        }
        // An event recorded in a capture proves nothing: the batch stays open until the
        // capture ended and the graph was launched on the stream (`Lease::release_in_batch`).
        // SAFETY: the caller's promise.
        let capturing = unsafe { self.core.runtime.stream_is_capturing(stream) };
        if !matches!(capturing, Ok(false)) {
            let leases: usize = taken.iter().map(|t| t.items.len()).sum();
            for t in taken {
                self.core.batches.put_back(t.key, t.items);
            }
            return Err(match capturing {
                Err(e) => e,
                _ => {
                    self.core.note_capture();
                    Error::invalid_argument(
                        "stream",
                        format!(
                            "{:#x} is capturing a graph: its batch ({leases} leases) stays open; end it once the capture \
                             ended and the graph was launched on the stream",
                            stream.0
                        ),
                    )
                }
            });
        }
        let mut result = Ok(());
        for t in taken {
            let device = t.key.0;
            // SAFETY: the caller's promise, passed on.
            if let Err((error, batch)) = unsafe { self.core.end_batch(device, stream, t.items, t.home) } {
                if let Err(e) = crate::pool::lease::release_after_failed(&self.core, device, stream, batch, error) {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// Wakes every waiter of every ceiling this pool uses.
    fn notify_all(&self) {
        for d in self.core.devices.read().values() {
            d.ceiling.notify();
        }
    }

    fn destroy_free_events(&self) {
        let rt = &*self.core.runtime;
        let devices: Vec<Arc<Device>> = self.core.devices.read().values().cloned().collect();
        for dev in devices {
            let (device, list) = (dev.ordinal, std::mem::take(&mut *lock(&dev.free_events)));
            let _ = with_device(rt, device, || {
                for ev in list {
                    // SAFETY: free-list events are live and recorded by nobody.
                    if let Err(e) = unsafe { rt.event_destroy(ev) } {
                        tracing::warn!(error = %e, "event destroy failed");
                    }
                }
                Ok(())
            });
        }
    }
}

/// `hipfftCreate` and `hipfftMakePlanMany64` for a miss, on a creation worker. A panic in the
/// runtime becomes an error, so the miss and its slot are settled as for any failure.
fn run_create(core: &Core, dev: &Device, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
    let rt = &*core.runtime;
    let started = Instant::now();
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _span = tracing::debug_span!("create", desc = %desc).entered();
        let _call = core.watchdog.enter(CallKind::Create, desc, &dev.ceiling);
        let _running = dev.calls.enter(CallKind::Create, desc);
        with_device(rt, desc.device, || rt.plan_create(desc, options))
    }))
    .unwrap_or_else(|p| Err(Error::Internal(format!("the runtime panicked in plan_create for {desc}: {}", panic_message(&*p)))));
    dev.counters.record_latency(Latency::Create, desc.device, started.elapsed());
    made
}

/// What a creation job hands its miss: the plan (or why not), how long the creation
/// itself took, and whether the miss holds a slot (see `CreationGuard::owns_slot`).
struct Made {
    made: Result<CreatedPlan>,
    took: Duration,
    owns_slot: bool,
}

/// A swap's victim inside its job: a job dropped before it ran (a pool shutting down)
/// hands the victim to the destroyer thread, so its handle is never leaked.
struct SwapVictim {
    core: Arc<Core>,
    entry: Option<Arc<PlanEntry>>,
}

impl Drop for SwapVictim {
    fn drop(&mut self) {
        if let Some(e) = self.entry.take() {
            self.core.doom(e);
        }
    }
}

/// Undoes a miss's creation when dropped armed: the key leaves `creating`, the flight ends
/// with the error (so joiners do not wait out their timeout), and, unless a worker still
/// owns the call, the slot, the live count and the `creating` count are given back. Armed
/// until the created plan is in hand, so a panic on the calling thread is undone too.
struct CreationGuard<'a> {
    pool: &'a PlanPool,
    desc: PlanDesc,
    flight: &'a Flight,
    dev: &'a Arc<Device>,
    armed: bool,
    /// Whether this thread settles the `creating` count (and the slot, if it owns one):
    /// false once a worker that outlived the wait does.
    release_slot: bool,
    /// Whether the miss holds a slot of the ceiling: false for a swap whose victim was not
    /// (or could not be) destroyed, whose slot stays the victim's.
    owns_slot: bool,
    error: Option<Error>,
}

impl CreationGuard<'_> {
    fn finish_with(mut self, e: Error) -> Self {
        self.error = Some(e);
        self
    }
}

impl Drop for CreationGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if self.release_slot {
            self.dev.counters.creating.fetch_sub(1, Ordering::SeqCst);
            if self.owns_slot {
                self.pool.core.live_down(self.dev);
                self.dev.ceiling.release();
            }
        }
        lock(&self.pool.cache.inner).creating.remove(&self.desc);
        let e = self.error.take().unwrap_or_else(|| {
            Error::Internal(format!("the creation of {} was interrupted by a panic on the calling thread", self.desc))
        });
        self.flight.finish(Err(e));
    }
}

/// The device names a warm-up checks each entry's device against, by ordinal: the manifest's
/// and this runtime's.
struct DeviceNames<'m> {
    theirs: HashMap<i32, &'m str>,
    ours: HashMap<i32, String>,
}

/// Where a background warm-up's manifest comes from.
enum WarmSource {
    /// A manifest file, read on the warm-up thread (`HIPFFT_POOL_WARMUP`).
    File(std::path::PathBuf),
    /// A manifest in memory ([`PlanPool::warm_up_in_background`]).
    Given(Manifest),
}

/// A background warm-up: the manifest read (on this thread, for a file), then its entries
/// as [`PlanPool::warm_up`] makes them, with one upgrade of `weak` per entry so that the
/// thread never keeps a dropped pool alive for long.
fn warm_up_weakly(weak: &std::sync::Weak<PlanPool>, source: WarmSource) -> WarmUpReport {
    let started = Instant::now();
    let mut report = WarmUpReport::default();
    let manifest = match source {
        WarmSource::Given(m) => m,
        WarmSource::File(path) => match Manifest::load(&path) {
            Ok(m) => m,
            Err(e) => {
                // The error names the path.
                let w = format!("no warm-up (HIPFFT_POOL_WARMUP): {e}");
                warn_unsubscribed(&w);
                report.stopped = Some(w);
                report.elapsed = started.elapsed();
                return report;
            }
        },
    };
    let _span = tracing::debug_span!("warm_up", plans = manifest.plans.len()).entered();
    let dropped = || Some("the pool was dropped".to_string());
    let names = match weak.upgrade() {
        Some(pool) => pool.warm_up_identity(&manifest, &mut report),
        None => {
            report.stopped = dropped();
            None
        }
    };
    let Some(names) = names else {
        report.elapsed = started.elapsed();
        return report;
    };
    // The entries are borrowed, never cloned: a clone of the manifest per entry made a
    // warm-up of 4 x 10^4 entries take a minute.
    for (index, plan) in by_value(&manifest) {
        let Some(pool) = weak.upgrade() else {
            report.stopped = dropped();
            break;
        };
        if pool.warm_entry(&names, index, plan, &mut report).is_break() {
            break;
        }
    }
    warm_up_done(&mut report, started);
    report
}

/// The manifest's entries, each with its index in the manifest, most valuable first (the
/// sort is stable: equal values keep the manifest's order).
fn by_value(manifest: &Manifest) -> Vec<(usize, &ManifestPlan)> {
    let mut plans: Vec<(usize, &ManifestPlan)> = manifest.plans.iter().enumerate().collect();
    plans.sort_by(|a, b| b.1.value().total_cmp(&a.1.value()));
    plans
}

/// Ends a warm-up's report: its time, and one warning for all the entries it skipped.
fn warm_up_done(report: &mut WarmUpReport, started: Instant) {
    report.elapsed = started.elapsed();
    match report.skipped.as_slice() {
        [] => {}
        [only] => warn_unsubscribed(&format!("warm-up skipped 1 manifest entry: {only}")),
        [first, ..] => {
            warn_unsubscribed(&format!("warm-up skipped {} manifest entries; the first: {first}", report.skipped.len()))
        }
    }
    tracing::info!(made = report.made, already = report.already, skipped = report.skipped.len(), "warm-up done");
}

/// A warning a C or C++ host sees too: logged, and printed when no subscriber is installed.
/// Locks `m`, waiting until `deadline` at the most (for ever with none): `None` if it stayed
/// held (polled, so that a lock held for good costs the caller the bound, not a hang).
fn lock_until<T>(m: &Mutex<T>, deadline: Option<Instant>) -> Option<crate::sync::MutexGuard<'_, T>> {
    #[cfg(loom)]
    let deadline: Option<Instant> = {
        let _ = deadline;
        None
    };
    let Some(deadline) = deadline else { return Some(lock(m)) };
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(Duration::from_micros(200)),
        }
    }
}

fn warn_unsubscribed(w: &str) {
    tracing::warn!("{w}");
    if !tracing::dispatcher::has_been_set() {
        eprintln!("hipfft-pool: warning: {w}");
    }
}

impl Drop for PlanPool {
    fn drop(&mut self) {
        if self.is_inherited() {
            // A forked child's copy of the parent's pool: its threads stayed with the parent
            // (nothing to join), its locks may be held, its plans are the parent's. What the
            // parent writes at exit is the parent's.
            if let Some((thread, stop)) = self.watchdog.take() {
                std::mem::forget((thread, stop));
            }
            self.manifest_out = None;
            return;
        }
        if let Some(path) = self.manifest_out.take() {
            // Before the shutdown empties the cache (the cached plans' hits count).
            match self.save_manifest(&path) {
                Ok(()) => tracing::info!(path = %path.display(), "manifest written"),
                Err(e) => warn_unsubscribed(&format!("HIPFFT_POOL_MANIFEST_OUT: {e}")),
            }
        }
        self.shutdown();
        if let Some((thread, stop)) = self.watchdog.take() {
            drop(stop);
            if thread.join().is_err() {
                tracing::error!("the watchdog thread panicked");
            }
        }
    }
}

impl fmt::Debug for PlanPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanPool").field("metrics", &self.metrics()).finish()
    }
}
