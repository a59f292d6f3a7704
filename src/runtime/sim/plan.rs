//! Plan handles: creation (validation, injected latency, faults and hangs), the live count
//! that is the pool's ground truth, and destruction.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use super::SimRuntime;
use super::codes::{desc_code, fft_err};
use super::memory::HostBuf;
use crate::desc::{Extents, PlanDesc};
use crate::error::{Result, hipfft_result as fft};
use crate::runtime::boundary::{CreatedPlan, PlanOptions, RawPlan, RawStream};

/// Executions enqueued and not yet finished, with a wait for zero.
#[derive(Default)]
pub(crate) struct Pending {
    count: Mutex<usize>,
    zero: Condvar,
}

impl Pending {
    pub(crate) fn begin(&self) {
        *self.count.lock() += 1;
    }
    pub(crate) fn finish(&self) {
        let mut c = self.count.lock();
        *c = c.saturating_sub(1);
        if *c == 0 {
            self.zero.notify_all();
        }
    }
    pub(crate) fn get(&self) -> usize {
        *self.count.lock()
    }
    fn wait_zero(&self) {
        let mut c = self.count.lock();
        while *c > 0 {
            self.zero.wait(&mut c);
        }
    }
}

/// What the sim knows of one plan.
pub(crate) struct PlanRecord {
    pub desc: PlanDesc,
    pub extents: Extents,
    pub device: i32,
    pub work_size: usize,
    /// The area the sim owns under auto-allocation.
    pub scratch: Option<HostBuf>,
    /// The area `hipfftSetWorkArea` last set (it persists, as in hipFFT).
    pub work_area: Mutex<Option<usize>>,
    /// The stream `hipfftSetStream` last set (the null stream at first, as in hipFFT): an
    /// execution that does not set one runs there.
    pub stream: Mutex<RawStream>,
    pub pending: Pending,
    /// Threads inside `plan_exec` for this plan right now (more than one is a misuse).
    pub inside: AtomicUsize,
    /// Set when a destroy begins: the handle is still alive but no longer usable.
    destroying: AtomicBool,
    /// The functions of its kernels, one per dimension (see `graph`): what a captured
    /// transform's kernel nodes name.
    pub functions: std::sync::OnceLock<Vec<u64>>,
}

impl PlanRecord {
    /// Whether a destroy of this plan began (a captured graph that runs it then is a misuse).
    pub(crate) fn is_destroyed(&self) -> bool {
        self.destroying.load(Ordering::SeqCst)
    }
}

/// What a handle value names.
pub(crate) enum Lookup {
    Live(Arc<PlanRecord>),
    Destroyed,
    Unknown,
}

/// Base of plan handle values, so they look like the pointers hipFFT hands out.
const PLAN_BASE: usize = 0x1000;

#[derive(Default)]
pub(crate) struct Plans {
    map: Mutex<HashMap<RawPlan, Arc<PlanRecord>>>,
    gone: Mutex<HashSet<RawPlan>>,
    next: AtomicUsize,
    live: AtomicUsize,
    peak: AtomicUsize,
    created: AtomicU64,
    destroyed: AtomicU64,
    /// Nanoseconds of simulated creation latency spent (fixed plus per-shape).
    creation_ns: AtomicU64,
    /// `hipfftSetStream` and `hipfftSetWorkArea` calls that reached a live plan.
    pub(crate) settings_calls: AtomicU64,
}

impl Plans {
    /// Counts a handle being made; returns the live count including it.
    fn reserve(&self) -> usize {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        now
    }

    fn release(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }

    /// The plan `raw` names, if usable (a plan being destroyed counts as destroyed).
    pub(crate) fn lookup(&self, raw: RawPlan) -> Lookup {
        if let Some(p) = self.map.lock().get(&raw) {
            if !p.destroying.load(Ordering::SeqCst) {
                return Lookup::Live(p.clone());
            }
            return Lookup::Destroyed;
        }
        if self.gone.lock().contains(&raw) { Lookup::Destroyed } else { Lookup::Unknown }
    }

    /// Starts destroying `raw`: only one caller wins.
    fn begin_destroy(&self, raw: RawPlan) -> Lookup {
        match self.map.lock().get(&raw) {
            Some(p) if !p.destroying.swap(true, Ordering::SeqCst) => Lookup::Live(p.clone()),
            Some(_) => Lookup::Destroyed,
            None if self.gone.lock().contains(&raw) => Lookup::Destroyed,
            None => Lookup::Unknown,
        }
    }

    /// The handle is freed: no longer alive, never to be reused.
    fn finish_destroy(&self, raw: RawPlan) {
        self.map.lock().remove(&raw);
        self.gone.lock().insert(raw);
        self.destroyed.fetch_add(1, Ordering::SeqCst);
        self.release();
    }

    /// Handles alive, including ones being created or destroyed.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
    pub(crate) fn creation_time(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.creation_ns.load(Ordering::SeqCst))
    }
    pub(crate) fn created(&self) -> u64 {
        self.created.load(Ordering::SeqCst)
    }
    pub(crate) fn destroyed(&self) -> u64 {
        self.destroyed.load(Ordering::SeqCst)
    }
    /// Made handles alive on one device (those still being created are not yet counted).
    pub(crate) fn live_on(&self, device: i32) -> usize {
        self.map.lock().values().filter(|p| p.device == device).count()
    }
    pub(crate) fn is_live(&self, raw: RawPlan) -> bool {
        self.map.lock().contains_key(&raw)
    }
    pub(crate) fn pending(&self, raw: RawPlan) -> usize {
        self.map.lock().get(&raw).map_or(0, |p| p.pending.get())
    }
}

/// Releases a reserved handle unless creation succeeded.
struct Reservation<'a> {
    plans: &'a Plans,
    kept: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.plans.release();
        }
    }
}

/// The work size hipFFT would advertise: none for tiny transforms (so zero-size paths are
/// exercised), otherwise room to stage the whole complex grid.
fn work_size(desc: &PlanDesc) -> Option<usize> {
    let points = desc.dims().iter().try_fold(1usize, |a, &n| a.checked_mul(n as usize))?;
    if points <= 8 {
        return Some(0);
    }
    points.checked_mul(desc.batch as usize)?.checked_mul(2 * desc.transform.real_bytes())
}

impl SimRuntime {
    /// `hipfftCreate` + `hipfftSetAutoAllocation` + `hipfftMakePlanMany64`.
    pub(super) fn create_plan(&self, desc: &PlanDesc, options: PlanOptions) -> Result<CreatedPlan> {
        const CALL: &str = "hipfftMakePlanMany64";
        let extents = desc.extents().map_err(|e| fft_err(CALL, desc_code(&e)))?;
        let current = self.current();
        if desc.device != current {
            self.log.record(format!("plan_create for device {} with device {current} current", desc.device));
            return Err(fft_err(CALL, fft::INVALID_DEVICE));
        }
        if self.streams.any_capturing(current) {
            // hipMalloc inside hipfftMakePlan* would break (or join) the capture.
            self.log.record(format!("plan created for {desc} while a stream of device {current} is capturing a graph"));
        }
        let config = self.config();
        // hipfftCreate: the handle is alive from here on.
        let live = self.plans.reserve();
        let mut reservation = Reservation { plans: &self.plans, kept: false };
        if config.block_above_live.is_some_and(|limit| live > limit) || config.block_create {
            self.blocker.block();
            return Err(fft_err(CALL, fft::INTERNAL_ERROR));
        }
        let latency = config.create_latency
            + if config.h200_create_costs { super::config::h200_create_cost(desc) } else { std::time::Duration::ZERO };
        std::thread::sleep(latency);
        self.plans.creation_ns.fetch_add(latency.as_nanos() as u64, Ordering::SeqCst);
        if self.faults.panic_create.hit(config.panic_create_every) {
            // The reservation gives the handle back as this unwinds.
            panic!("injected panic in hipfftMakePlanMany64 for {desc} (HIPFFT_POOL_SIM_PANIC_CREATE_EVERY)");
        }
        if self.faults.create.hit(config.fail_create_every) {
            return Err(fft_err(CALL, fft::ALLOC_FAILED));
        }
        let work_size = work_size(desc).ok_or_else(|| fft_err(CALL, fft::INVALID_SIZE))?;
        let scratch = match (options.auto_allocation, work_size) {
            (true, n) if n > 0 => Some(HostBuf::new(n).ok_or_else(|| fft_err(CALL, fft::ALLOC_FAILED))?),
            _ => None,
        };
        let raw = RawPlan(PLAN_BASE + (self.plans.next.fetch_add(1, Ordering::Relaxed) + 1) * 16);
        let record = PlanRecord {
            desc: *desc,
            extents,
            device: current,
            work_size,
            scratch,
            work_area: Mutex::new(None),
            stream: Mutex::new(RawStream::NULL),
            pending: Pending::default(),
            inside: AtomicUsize::new(0),
            destroying: AtomicBool::new(false),
            functions: std::sync::OnceLock::new(),
        };
        let record = Arc::new(record);
        let _ = record.functions.set(self.graphs.plan_functions(&record, config.shared_kernels));
        self.plans.map.lock().insert(raw, record);
        self.plans.created.fetch_add(1, Ordering::SeqCst);
        reservation.kept = true;
        Ok(CreatedPlan { plan: raw, work_size })
    }

    /// `hipfftDestroy`. Waits for the plan's pending executions (recording the misuse).
    pub(super) fn destroy_plan(&self, raw: RawPlan) -> Result<()> {
        const CALL: &str = "hipfftDestroy";
        let plan = match self.plans.begin_destroy(raw) {
            Lookup::Live(p) => p,
            Lookup::Destroyed => {
                self.log.record(format!("double destroy of plan {:#x}", raw.0));
                return Err(fft_err(CALL, fft::INVALID_PLAN));
            }
            Lookup::Unknown => {
                self.log.record(format!("destroy of unknown plan {:#x}", raw.0));
                return Err(fft_err(CALL, fft::INVALID_PLAN));
            }
        };
        let current = self.current();
        if current != plan.device {
            self.log.record(format!("destroy of plan {:#x} (device {}) with device {current} current", raw.0, plan.device));
        }
        // The pool's own threads (destroyer, completion, creation) run their calls in
        // cudaStreamCaptureModeRelaxed on CUDA, where a destroy leaves another thread's
        // capture alone; a destroy from any other thread during a capture is the misuse.
        if self.streams.any_capturing(plan.device) && !on_pool_thread() {
            self.log.record(format!("plan {:#x} destroyed while a stream of device {} is capturing a graph", raw.0, plan.device));
        }
        let pending = plan.pending.get();
        if pending > 0 {
            self.log.record(format!("destroy of plan {:#x} with {pending} executions pending", raw.0));
            plan.pending.wait_zero();
        }
        let config = self.config();
        std::thread::sleep(config.destroy_latency);
        let failed = if config.block_destroy {
            self.blocker.block();
            true
        } else {
            self.faults.destroy.hit(config.fail_destroy_every)
        };
        // The handle is freed even when the call fails (hipFFT frees the plan first).
        self.plans.finish_destroy(raw);
        if failed { Err(fft_err(CALL, fft::INTERNAL_ERROR)) } else { Ok(()) }
    }
}

/// Whether the calling thread is one of the pool's own (named `hipfft-pool-*`).
fn on_pool_thread() -> bool {
    std::thread::current().name().is_some_and(|n| n.starts_with("hipfft-pool-"))
}
