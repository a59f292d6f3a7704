//! The interposer's state: the pool, the virtual handles, and every call's meaning.
//!
//! A framework's handle is *virtual*: a descriptor plus the settings the framework gave it
//! (stream, work area, auto-allocation). It owns no library plan. Each execution leases the
//! real plan for its descriptor from the pool (made on a miss, shared by every handle with
//! that descriptor), runs it with the handle's settings, and hands the lease to the pool's
//! `release_after(stream)`, so it is released when the GPU has finished. A framework holding
//! 128 handles thus keeps at most the pool's ceiling alive; a handle whose plan was evicted
//! gets one back on its next execution.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use hipfft_pool::runtime::with_device;
use hipfft_pool::MetricsServer;
use hipfft_pool::SimRuntime;
use hipfft_pool::{
    DevicePtr, Direction, Eviction, Layout, Lease, PlanDesc, PlanPool, PoolConfig, RawStream, ReleaseAfterError, Runtime,
    RuntimeChoice, TransformType,
};
use parking_lot::{Mutex, RwLock};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::arena::{Arena, Block};
use crate::capture::{CapturePolicy, Residents};
use crate::graphs::registry::{Registry, Released};
use crate::graphs::view::{Capture, CaptureView};
use hipfft_pool::StandingLease;
use crate::codes::{Fail, Flavor, code};

use crate::handle_values::HandleValues;

pub use crate::process::{flavor, is_sim};

/// An advanced layout: `(inembed, istride, idist, onembed, ostride, odist)`.
pub type LayoutArgs = (Vec<i64>, i64, i64, Vec<i64>, i64, i64);

/// Reads `len` values from an array argument named `name`; `None` for a null pointer.
///
/// # Safety
/// `ptr` is null or valid for `len` reads of `T`.
unsafe fn read_array<T: Copy + Into<i64>>(ptr: *const T, len: usize, name: &str) -> Result<Option<Vec<i64>>, Fail> {
    if ptr.is_null() {
        return Ok(None);
    }
    if len > 3 {
        return Err(Fail::new(code::INVALID_SIZE, format!("invalid argument `rank`: {len} is outside 1..=3 (reading `{name}`)")));
    }
    // SAFETY: the caller's contract.
    Ok(Some((0..len).map(|i| unsafe { *ptr.add(i) }.into()).collect()))
}

/// What a plan call asks for, in the library's terms (`cufftMakePlanMany64`'s arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRequest {
    pub transform: TransformType,
    pub n: Vec<i64>,
    /// `(inembed, istride, idist, onembed, ostride, odist)`: both embeds, or neither. cuFFT
    /// and hipFFT take the advanced layout only when both are given, and ignore the strides
    /// and distances otherwise.
    pub layout: Option<LayoutArgs>,
    pub batch: i64,
}

impl PlanRequest {
    /// A packed transform (`cufftPlan1d`, `cufftMakePlan2d`, ...). `transform` is the
    /// library's type value.
    pub fn basic(transform: i32, n: &[i64], batch: i64) -> Result<PlanRequest, Fail> {
        Ok(PlanRequest { transform: TransformType::from_raw(transform)?, n: n.to_vec(), batch, layout: None })
    }

    /// The advanced layout (`cufftPlanMany`, `cufftMakePlanMany64`, ...).
    ///
    /// # Safety
    /// `n` is null or holds `rank` values; each embed is null or holds `rank` values.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn many<T: Copy + Into<i64>>(
        transform: TransformType,
        rank: i32,
        n: *const T,
        inembed: *const T,
        istride: i64,
        idist: i64,
        onembed: *const T,
        ostride: i64,
        odist: i64,
        batch: i64,
    ) -> Result<PlanRequest, Fail> {
        if !(1..=3).contains(&rank) {
            return Err(Fail::new(code::INVALID_SIZE, format!("invalid argument `rank`: {rank} is outside 1..=3")));
        }
        let r = rank as usize;
        // SAFETY: the caller's contract, for each array.
        let n = unsafe { read_array(n, r, "n") }?.ok_or_else(|| Fail::invalid("n", "null pointer"))?;
        // SAFETY: as above.
        let (ie, oe) = unsafe { (read_array(inembed, r, "inembed")?, read_array(onembed, r, "onembed")?) };
        let layout = match (ie, oe) {
            (Some(ie), Some(oe)) => Some((ie, istride, idist, oe, ostride, odist)),
            _ => None,
        };
        Ok(PlanRequest { transform, n, layout, batch })
    }
}

/// Which exec entry point was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecKind {
    /// `cufftExecC2C` and the others: the plan must be of this type.
    Typed(TransformType),
    /// `cufftXtExec`: whatever the plan is.
    Xt,
}

/// The settings a framework gave one handle, under its lock (`VirtualPlan::lock`).
struct Settings {
    /// The resident plan of the handle's descriptor, once there is one (it stays for the
    /// engine's life): its executions go straight to it (`Hot::direct`), with no map, no
    /// lease of their own and no capture check.
    resident: Option<Arc<StandingLease>>,
    stream: RawStream,
    work_area: Option<DevicePtr>,
    work_size: usize,
    /// `desc`'s transform, where an execution checks it without reading the descriptor.
    transform: Option<TransformType>,
    stream_registered: bool,
    auto_allocation: bool,
    /// The lease of the handle's last (uncaptured) execution, kept for its next one on the
    /// same stream: a framework executing a handle again pays no acquire and no event. It
    /// goes back (`release_after` its stream) when the stream changes, the handle is
    /// destroyed, or the pool's flush hook asks (a miss found the ceiling full).
    sticky: Option<Lease>,
    sticky_stream: RawStream,
    /// A lease taken when the stream or work area was set, outside any capture, for the
    /// next execution (see `prepare`).
    prepared: Option<Lease>,
    /// A real plan of the handle's own, for what the pool's descriptor cannot say (half
    /// precision): every call on the handle goes to it. It holds one slot of the ceiling.
    real: Option<i64>,
    desc: Option<PlanDesc>,
}

impl Settings {
    fn new() -> Settings {
        Settings {
            resident: None,
            stream: RawStream::NULL,
            work_area: None,
            work_size: 0,
            transform: None,
            stream_registered: false,
            auto_allocation: true,
            sticky: None,
            sticky_stream: RawStream::NULL,
            prepared: None,
            real: None,
            desc: None,
        }
    }

    /// The resident lease an execution with these settings may go straight to: the plan is
    /// resident, no sticky lease competes, the stream is registered, and the work area is
    /// one the plan can use (the caller's, of the size the plan call reported, or none for
    /// a plan that needs none).
    fn direct(&self) -> Option<&Arc<StandingLease>> {
        let r = self.resident.as_ref()?;
        let area_fits = match self.work_area {
            Some(_) => r.work_size() <= self.work_size,
            None => r.work_size() == 0,
        };
        (self.sticky.is_none() && self.stream_registered && area_fits).then_some(r)
    }
}

/// What the per-transform calls of a framework read without taking the handle's lock:
/// published from `Settings` each time the lock is let go (`SettingsGuard`), on lines of
/// their own.
///
/// A framework sets the stream and the work area of a handle and executes it, in a row,
/// between stretches of its own work that evict the interposer's lines (MLX). With the
/// handle's resident plan published here, those three calls read this line and the plan's
/// own, and write nothing shared: no lock word, no reference count.
#[repr(C, align(64))]
struct Hot {
    /// Set when the handle is destroyed (a thread's `RECENT_HANDLES` may still hold it).
    destroyed: AtomicBool,
    /// `Settings::transform`, as one more than its place in `TransformType::ALL` (0: none):
    /// the execution checks it here while the lines it prefetched arrive.
    transform: std::sync::atomic::AtomicU8,
    stream: AtomicUsize,
    /// The work area's address, 0 for none.
    area: AtomicUsize,
    /// `Settings::direct`'s lease, or null. It points into an `Arc` the engine's residents
    /// keep for the engine's life (resident plans are never dropped before the engine).
    direct: std::sync::atomic::AtomicPtr<Lease>,
    /// Executions that went to `direct` (or to the resident plan under the lock).
    resident_execs: AtomicU64,
    /// What an execution on the resident plan reads first (`Lease::exec_lines`, as
    /// numbers), prefetched by the calls that come before it (set-stream, set-work-area)
    /// and by the execution as it starts: found one after the other (each address read
    /// from the line before) they cost a memory latency each; prefetched, they arrive
    /// together. Stale numbers are harmless (a prefetch never faults).
    lines: ExecLineNumbers,
}

#[repr(C, align(64))]
#[derive(Default)]
struct ExecLineNumbers([AtomicUsize; 8]);

impl Hot {
    fn new() -> Hot {
        Hot {
            destroyed: AtomicBool::new(false),
            transform: std::sync::atomic::AtomicU8::new(0),
            stream: AtomicUsize::new(0),
            area: AtomicUsize::new(0),
            direct: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            resident_execs: AtomicU64::new(0),
            lines: ExecLineNumbers::default(),
        }
    }

    /// The lease an execution may go straight to, if any (see `Settings::direct`).
    #[inline(always)]
    fn direct(&self) -> Option<&Lease> {
        let p = self.direct.load(Ordering::Acquire);
        // SAFETY: non-null, `p` is `lease_ptr` of a resident lease, which the engine's
        // residents hold until the engine drops; the engine nulls this pointer first, and
        // no call can be inside the engine (borrowed) while it drops.
        unsafe { p.as_ref() }
    }

    /// Makes what the lock-free paths read follow `s` (under the handle's lock).
    fn publish(&self, s: &Settings) {
        let t = s.transform.and_then(|t| TransformType::ALL.iter().position(|&a| a == t)).map_or(0, |i| i as u8 + 1);
        self.transform.store(t, Ordering::Relaxed);
        self.stream.store(s.stream.0, Ordering::Relaxed);
        self.area.store(s.work_area.map_or(0, |p| p.0), Ordering::Relaxed);
        if let Some(r) = &s.resident {
            let at = lease_ptr(r) as usize;
            // The first address is the lease's own: the numbers are this lease's already.
            if self.lines.0[0].load(Ordering::Relaxed) != at {
                for (slot, a) in self.lines.0.iter().zip(r.exec_lines().addresses()) {
                    slot.store(a, Ordering::Relaxed);
                }
            }
        }
        let direct = s.direct().map_or(std::ptr::null(), lease_ptr);
        self.direct.store(direct.cast_mut(), Ordering::Release);
    }

    /// The handle's transform (`transform`).
    #[inline(always)]
    fn transform(&self) -> Option<TransformType> {
        (self.transform.load(Ordering::Relaxed) as usize).checked_sub(1).and_then(|i| TransformType::ALL.get(i).copied())
    }

    /// Prefetches what an execution on the resident plan reads first (`lines`).
    #[inline(always)]
    fn prefetch(&self) {
        let a = std::array::from_fn(|i| self.lines.0[i].load(Ordering::Relaxed));
        if a[0] != 0 {
            hipfft_pool::ExecLines::from_addresses(a).prefetch();
        }
    }
}

/// One virtual handle: what its per-transform calls read without a lock (`Hot`), then the
/// settings that everything else reads and writes under it.
#[repr(C)]
pub struct VirtualPlan {
    hot: Hot,
    settings: Mutex<Settings>,
}

impl VirtualPlan {
    /// The handle's settings, locked; what the lock-free paths read follows them when the
    /// guard goes.
    fn lock(&self) -> SettingsGuard<'_> {
        SettingsGuard { hot: &self.hot, s: self.settings.lock() }
    }

    fn try_lock(&self) -> Option<SettingsGuard<'_>> {
        Some(SettingsGuard { hot: &self.hot, s: self.settings.try_lock()? })
    }
}

/// A handle's settings, locked (`VirtualPlan::lock`).
struct SettingsGuard<'a> {
    hot: &'a Hot,
    s: parking_lot::MutexGuard<'a, Settings>,
}

impl std::ops::Deref for SettingsGuard<'_> {
    type Target = Settings;
    fn deref(&self) -> &Settings {
        &self.s
    }
}

impl std::ops::DerefMut for SettingsGuard<'_> {
    fn deref_mut(&mut self) -> &mut Settings {
        &mut self.s
    }
}

impl Drop for SettingsGuard<'_> {
    fn drop(&mut self) {
        self.hot.publish(&self.s);
    }
}

/// A handle's work area for one execution.
enum Area {
    None,
    User(DevicePtr),
    Arena(Block),
}

impl Area {
    fn ptr(&self) -> Option<DevicePtr> {
        match self {
            Area::None => None,
            Area::User(p) => Some(*p),
            Area::Arena(b) => Some(b.ptr),
        }
    }
}

#[derive(Default)]
struct Counts {
    handles_created: AtomicU64,
    handles_peak: AtomicUsize,
    plans: AtomicU64,
    execs: AtomicU64,
    captured_execs: AtomicU64,
    capture_misses: AtomicU64,
    prepared_taken: AtomicU64,
    /// Prepared leases the flush hook took back before their execution.
    prepared_returned: AtomicU64,
    real_plans: AtomicUsize,
    real_plans_peak: AtomicUsize,
    sticky_uses: AtomicU64,
    sticky_flushes: AtomicU64,
    /// Captured executions that made their plan resident or found it so, with no node
    /// after them (on the slow path: later ones are `resident_execs`).
    captured_on_residents: AtomicU64,
    /// Captured executions whose plans the graph registry holds (beyond the residents).
    captured_followed: AtomicU64,
    /// Captured executions whose plans were kept for good (a capture not followed, `pin`).
    captured_kept: AtomicU64,
    /// Executions on a handle's known resident plan (`exec`'s fast path), captured or not
    /// (telling them apart would cost a driver call each), of handles destroyed since; the
    /// live handles count theirs (`Settings::resident_execs`).
    resident_execs: AtomicU64,
    /// Plan calls answered from `work_sizes`, with no lease.
    work_sizes_remembered: AtomicU64,
}

/// Descriptors whose work size is remembered (beyond, plan calls lease as before).
const WORK_SIZES_KEPT: usize = 4096;

/// The leases whose release waits (see `Engine::deferred`), and whether there are any: every
/// execution drains them, and the common case (none) must not take a lock shared by all.
#[derive(Default)]
struct DeferredReleases {
    list: Mutex<Vec<(Lease, RawStream)>>,
    any: AtomicBool,
}

/// The deferred list, locked; on unlock `any` follows its length.
struct DeferredGuard<'a> {
    guard: parking_lot::MutexGuard<'a, Vec<(Lease, RawStream)>>,
    any: &'a AtomicBool,
}

impl DeferredReleases {
    fn lock(&self) -> DeferredGuard<'_> {
        DeferredGuard { guard: self.list.lock(), any: &self.any }
    }

    /// No release was deferred when last unlocked. One deferred by another thread just now
    /// may be missed; the next call that drains takes it.
    fn looks_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }
}

impl std::ops::Deref for DeferredGuard<'_> {
    type Target = Vec<(Lease, RawStream)>;
    fn deref(&self) -> &Self::Target {
        &self.guard
    }
}

impl std::ops::DerefMut for DeferredGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.guard
    }
}

impl Drop for DeferredGuard<'_> {
    fn drop(&mut self) {
        self.any.store(!self.guard.is_empty(), Ordering::Release);
    }
}

/// Engines made so far: each has its own number, so that a thread's recent handles
/// (`RECENT_HANDLES`) are never taken for another engine's handle of the same value.
static ENGINES: AtomicU64 = AtomicU64::new(0);

/// Slots of a thread's handle cache (`RECENT_HANDLES`).
const RECENT_SLOTS: usize = 64;

/// One slot of `RECENT_HANDLES`: (engine, handle, plan), its borrow flag on the same line.
/// The plan's reference is let go by hand (`RecentHandle::set`, `forget_recent`): the
/// thread-local has no drop glue, so `exit()` frees nothing of it (see
/// `hipfft_pool::ThreadEnd`).
#[repr(align(32))]
struct RecentHandle(std::cell::RefCell<Option<Recent>>);

/// What a `RecentHandle` holds: (engine, handle, plan).
type Recent = (u64, u64, std::mem::ManuallyDrop<Arc<VirtualPlan>>);

impl RecentHandle {
    /// Replaces what the slot holds, letting go of the reference it held.
    fn set(&self, to: Option<(u64, u64, Arc<VirtualPlan>)>) -> bool {
        let Ok(mut slot) = self.0.try_borrow_mut() else { return false };
        let old = std::mem::replace(&mut *slot, to.map(|(e, h, v)| (e, h, std::mem::ManuallyDrop::new(v))));
        drop(slot);
        if let Some((_, _, v)) = old {
            drop(std::mem::ManuallyDrop::into_inner(v));
        }
        true
    }
}

/// Lets go of this thread's recent handles as the thread ends (never at `exit()`).
unsafe extern "C" fn forget_recent(_: *mut std::ffi::c_void) {
    let _ = RECENT_HANDLES.try_with(|r| r.iter().for_each(|s| {
        s.set(None);
    }));
}

static FORGET_RECENT: hipfft_pool::ThreadEnd = hipfft_pool::ThreadEnd::new(forget_recent);

thread_local! {
    /// The handles this thread looked up lately, direct-mapped by handle value: (engine,
    /// handle, plan). A framework sets the stream and the work area of a handle and executes
    /// it, in a row, cycling through a working set of handles (MLX, PyTorch): those calls
    /// skip the handle map, whose lock word and buckets are cold cache lines after the
    /// framework's own work (each a few tens of nanoseconds), and they borrow the slot's
    /// reference instead of taking one. A destroyed handle is never taken from here
    /// (`Hot::destroyed`); what a slot holds of it is memory only.
    static RECENT_HANDLES: [RecentHandle; RECENT_SLOTS] =
        const { [const { RecentHandle(std::cell::RefCell::new(None)) }; RECENT_SLOTS] };
}

/// The slot of `h` in `RECENT_HANDLES` (Fibonacci hashing: handle values are evenly spaced).
#[inline]
fn recent_slot(h: u64) -> usize {
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT_SLOTS.trailing_zeros())) as usize
}

/// An execution on a handle that has no plan yet.
#[cold]
fn no_plan(call: &str, h: u64) -> Fail {
    Fail::new(code::INVALID_PLAN, format!("{call}: handle {h:#x} has no plan yet: make one first"))
}

/// An execution's direction, once its kind fits the handle's transform `t` (`desc`: the
/// handle's descriptor, for the message).
#[inline(always)]
fn exec_direction(
    t: TransformType,
    desc: impl FnOnce() -> Option<PlanDesc>,
    kind: ExecKind,
    call: &str,
    h: u64,
    direction: i32,
) -> Result<Direction, Fail> {
    if let ExecKind::Typed(want) = kind {
        if want != t {
            return Err(wrong_exec(call, h, t, desc(), want));
        }
    }
    if t.is_forward_real() {
        Ok(Direction::Forward)
    } else if t.is_inverse_real() {
        Ok(Direction::Inverse)
    } else {
        Direction::from_raw(direction).ok_or_else(|| bad_direction(direction))
    }
}

#[cold]
#[inline(never)]
fn bad_direction(direction: i32) -> Fail {
    Fail::invalid("direction", format!("{direction}: must be -1 (forward) or +1 (inverse)"))
}

#[cold]
fn wrong_exec(call: &str, h: u64, t: TransformType, desc: Option<PlanDesc>, want: TransformType) -> Fail {
    let desc = desc.map(|d| d.to_string()).unwrap_or_default();
    Fail::new(code::INVALID_VALUE, format!("{call} on handle {h:#x}, whose plan is {t} ({desc}): a {want} execution needs a {want} plan"))
}

/// The lease inside a resident's `Arc` (which the engine's residents keep for its life).
fn lease_ptr(r: &Arc<StandingLease>) -> *const Lease {
    let lease: &Lease = r;
    lease
}

/// What a set-stream or set-work-area call sets ([`Engine::set_setting`]).
#[derive(Clone, Copy)]
enum Setting {
    Stream(RawStream),
    Area(DevicePtr),
}

/// Refuses a null input or output.
#[inline(always)]
fn exec_buffers(input: DevicePtr, output: DevicePtr) -> Result<(), Fail> {
    if input.is_null() {
        return Err(null_buffer("idata"));
    }
    if output.is_null() {
        return Err(null_buffer("odata"));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn null_buffer(argument: &str) -> Fail {
    Fail::invalid(argument, "null pointer")
}

/// The interposer of one process.
pub struct Engine {
    pub flavor: Flavor,
    /// This engine's number (`ENGINES`).
    id: u64,
    pool: Arc<PlanPool>,
    rt: Arc<dyn Runtime>,
    sim: Option<Arc<SimRuntime>>,
    handles: RwLock<FxHashMap<u64, Arc<VirtualPlan>>>,
    /// The values `handles` is keyed by (issued under its write lock).
    values: HandleValues,
    streams: Mutex<FxHashSet<(i32, usize)>>,
    arena: Arena,
    policy: CapturePolicy,
    prepared: AtomicUsize,
    prepared_limit: usize,
    /// Real plans kept for the process's life because a capture held their execution
    /// (see `capture`).
    residents: Residents,
    /// The graphs and instantiated graphs that hold captured plans beyond the residents
    /// (see `graphs`): each such plan's standing lease, until none can run it again.
    graphs: Registry<StandingLease>,
    /// What a capture in progress holds, asked of the runtime (none: captures are not
    /// followed, and their plans are kept as residents).
    view: Option<Box<dyn CaptureView>>,
    /// Bumped by the flush hook: an execution that began before keeps no sticky lease.
    release_generation: AtomicU64,
    counts: Counts,
    /// Leases whose release waits for a moment their stream is not capturing: a handle
    /// destroyed (or a sticky lease taken back) from another thread must not record an event
    /// on a stream that the framework's own thread may be capturing (the record would join,
    /// or break, that capture). Drained by the next call that sets or executes on that stream
    /// outside a capture, by synchronize, and by the flush hook.
    deferred: DeferredReleases,
    /// The real work size of each descriptor a plan was made for (a function of the
    /// descriptor for a given library and device): a plan call for one seen before takes no
    /// lease, so it needs no slot (at a full ceiling it would wait for one only to learn a
    /// number, and a framework making a plan mid-buffer would wait for its own buffer).
    work_sizes: Mutex<FxHashMap<PlanDesc, usize>>,
    library: String,
    /// The pool's eviction policy (see `interposer_eviction`).
    eviction: Eviction,
    _server: Option<MetricsServer>,
}

/// Only an engine of [`Engine::over_runtime`] is ever dropped (the process's lives in a
/// static). Its handles' leases go back before its pool shuts down, which would otherwise
/// wait out its timeout for plans they still hold.
impl Drop for Engine {
    fn drop(&mut self) {
        let handles = std::mem::take(self.handles.get_mut());
        // A thread's `RECENT_HANDLES` may outlive the engine: what it holds lets go now.
        for v in handles.values() {
            v.hot.destroyed.store(true, Ordering::Release);
            let mut s = v.lock();
            s.resident = None;
            if s.prepared.take().is_some() {
                self.prepared.fetch_sub(1, Ordering::Relaxed);
            }
            drop(s.sticky.take());
        }
        drop(handles);
        let deferred = std::mem::take(&mut *self.deferred.lock());
        drop(deferred);
        self.residents.clear();
        drop(self.graphs.clear());
    }
}

/// The process's engine for `flavor`, made on first use. A child of `fork()` makes an engine
/// of its own on its first call (the parent's threads, locks and plans stayed with the parent;
/// see `hipfft_pool::fork_generation`).
#[inline]
pub fn engine(flavor: Flavor) -> Result<&'static Engine, Fail> {
    // Every export asks: once the engine is made, one load and a compare answer.
    match ready() {
        Some(e) => Ok(e),
        None => engine_slow(flavor),
    }
}

/// The engine, once made. A child of `fork()` starts with none (`forget_at_fork`): the
/// parent's engine, its threads and its plans are the parent's.
static READY: AtomicPtr<Engine> = AtomicPtr::new(std::ptr::null_mut());

/// This process's engine if it was made (the graph hooks need none before: no plan exists;
/// a forked child's is not the parent's).
#[inline]
pub fn ready() -> Option<&'static Engine> {
    // SAFETY: non-null, a leaked engine, never freed.
    unsafe { READY.load(Ordering::Acquire).as_ref() }
}

/// Registers (once) the fork handler that empties `READY` in a child: every export asks
/// `ready()`, so it stays one load, with no fork generation to compare.
fn forget_at_fork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    unsafe extern "C" fn child() {
        // An atomic store only: async-signal-safe, as a child's handler must be.
        READY.store(std::ptr::null_mut(), Ordering::Release);
    }
    // SAFETY: registers a plain function of the signature pthread_atfork takes.
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(child));
    });
}

/// Engines made, or why not, per fork generation (a failure is answered again, not retried).
static MADE: parking_lot::Mutex<Vec<(u64, Result<&'static Engine, Fail>)>> = parking_lot::Mutex::new(Vec::new());

#[cold]
#[inline(never)]
fn engine_slow(flavor: Flavor) -> Result<&'static Engine, Fail> {
    hipfft_pool::lock_around_fork(|| Box::new(MADE.lock()));
    let generation = hipfft_pool::fork_generation();
    let mut made = MADE.lock();
    if let Some((_, r)) = made.iter().find(|(g, _)| *g == generation) {
        return r.clone();
    }
    crate::process::set_flavor(flavor);
    let r = Engine::new(flavor).map(|e| &*Box::leak(Box::new(e))).map_err(|f| {
        if generation == 0 {
            return f;
        }
        let message = format!(
            "{} (this process is a child of fork(): a GPU runtime its parent initialized cannot be used here, the \
             runtime's own rule; make the FFT calls in the parent, or start the child with spawn or exec)",
            f.message
        );
        Fail::new(f.code, message)
    });
    if let Ok(e) = r {
        forget_at_fork();
        READY.store(e as *const Engine as *mut Engine, Ordering::Release);
    }
    made.push((generation, r.clone()));
    r
}

/// The interposer destroys the least recently used plan first unless `HIPFFT_POOL_EVICTION`
/// names a policy (`set`). The pool's own default (cost: the cheapest to remake) suits a host
/// that calls the pool, but a framework under the interposer may keep instantiated graphs
/// holding a plan's kernels after their launch and update them in place later (MLX 0.32.2's
/// CUDA backend does): the graph registry holds such plans until no graph can run them, and
/// among the rest the one destroyed should still be the one used longest ago.
fn interposer_eviction(from_config: Eviction, set: Option<&str>) -> Eviction {
    // Set or not by the pool's rule: trimmed, and empty is unset.
    match set.and_then(hipfft_pool::pool::config::env_value) {
        Some(_) => from_config,
        None => Eviction::Lru,
    }
}

/// Says once that graph calls escaped the hooks (`graphs::observed::blind`).
pub(crate) fn warn_once_blind(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        warn(&format!(
            "a graph call could not be followed ({why}): captured plans are kept for the process's life from now on, \
             so that no graph can run a destroyed plan"
        ))
    });
}

fn warn(line: &str) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(target: "hipfft_pool::intercept", "{line}");
    } else {
        eprintln!("hipfft-pool interposer: {line}");
    }
}

impl Engine {
    fn new(flavor: Flavor) -> Result<Engine, Fail> {
        let (mut config, warnings) = PoolConfig::from_env();
        config.eviction = interposer_eviction(config.eviction, std::env::var("HIPFFT_POOL_EVICTION").ok().as_deref());
        // PoolConfig::from_env logged them through tracing already; a C host sees stderr.
        if !tracing::dispatcher::has_been_set() {
            for w in &warnings {
                warn(w);
            }
        }
        let (policy, w) = CapturePolicy::from_env();
        w.iter().for_each(|w| warn(w));
        let (budget, w) = Arena::budget_from_env();
        w.iter().for_each(|w| warn(w));
        crate::profile::warning().into_iter().for_each(warn);
        let mut sim = None;
        let (rt, library): (Arc<dyn Runtime>, String) = match (config.runtime, flavor) {
            (RuntimeChoice::Sim, _) => {
                // Its warnings as the pool's: a C host sees them on stderr.
                let (sim_config, w) = hipfft_pool::SimConfig::from_env();
                w.iter().for_each(|w| warn(w));
                let s = Arc::new(SimRuntime::new(sim_config));
                sim = Some(s.clone());
                (s, "simulated".into())
            }
            (RuntimeChoice::Auto | RuntimeChoice::Cuda, Flavor::Cufft) => {
                let b = Arc::new(crate::cuda::CudaBackend::load().map_err(|e| Fail::from_pool(&e))?);
                let lib = b.cufft_path().to_string();
                (b, lib)
            }
            (RuntimeChoice::Auto | RuntimeChoice::Hip, Flavor::Hipfft) => {
                let h = hipfft_pool::runtime::hip::HipRuntime::load().map_err(|e| Fail::from_pool(&e))?;
                (Arc::new(h), "hipFFT".into())
            }
            (choice, flavor) => {
                return Err(Fail::new(
                    code::SETUP_FAILED,
                    format!(
                        "HIPFFT_POOL_RUNTIME={} cannot serve the {} interposer (use sim, or the {} runtime)",
                        choice.name(),
                        flavor.library(),
                        if flavor == Flavor::Cufft { "cuda" } else { "hip" }
                    ),
                ));
            }
        };
        let rt = if crate::profile::on() { crate::profile::Profiled::wrap(rt) } else { rt };
        let server = match std::env::var("HIPFFT_POOL_METRICS_ADDR") {
            Ok(addr) if !addr.is_empty() => Some(addr),
            _ => None,
        };
        let view = crate::graphs::view::for_runtime(&rt, sim.as_ref(), flavor);
        let built = Engine::build(flavor, config, rt, sim, library, (policy, budget, view), server.as_deref())?;
        // A miss at a full ceiling first asks for the sticky leases back (the engine exists
        // by the time any acquire can miss).
        built.pool.set_flush_hook(Some(Arc::new(move || {
            if let Ok(e) = engine(flavor) {
                e.release_sticky();
            }
        })));
        register_exit_hook();
        Ok(built)
    }

    /// An engine of its own over `rt`, beside the process's (which [`engine`] makes from
    /// the environment): for benchmarks and tests that measure the interposer over a
    /// runtime of their choosing, such as [`hipfft_pool::runtime::null::NullRuntime`]. The
    /// capture policy, run release and arena budget are the defaults (only the limit on
    /// resident plans still comes from `HIPFFT_POOL_CAPTURE_RESIDENTS`, as for the process's
    /// engine); no metrics server, no exit hook.
    ///
    /// Its example runs as a test, `intercept/tests/over_runtime.rs` (a doctest here would
    /// link `hipfft_pool` through rustdoc, which picks up the wrong one of its builds when the
    /// workspace builds it in more than one feature set: hipfft-pool is also a cdylib).
    pub fn over_runtime(flavor: Flavor, config: PoolConfig, rt: Arc<dyn Runtime>) -> Result<Arc<Engine>, Fail> {
        let defaults = (CapturePolicy::Auto, crate::arena::DEFAULT_BUDGET, None);
        let e = Arc::new(Engine::build(flavor, config, rt, None, "given".into(), defaults, None)?);
        let weak = Arc::downgrade(&e);
        e.pool.set_flush_hook(Some(Arc::new(move || {
            if let Some(e) = weak.upgrade() {
                e.release_sticky();
            }
        })));
        Ok(e)
    }

    fn build(
        flavor: Flavor,
        config: PoolConfig,
        rt: Arc<dyn Runtime>,
        sim: Option<Arc<SimRuntime>>,
        library: String,
        (policy, budget, view): (CapturePolicy, usize, Option<Box<dyn CaptureView>>),
        metrics_addr: Option<&str>,
    ) -> Result<Engine, Fail> {
        let ceiling = config.live_ceiling;
        let (resident_limit, w) = Residents::limit_from_env(policy, ceiling);
        w.iter().for_each(|w| warn(w));
        // `new_shared` starts the warm-up `HIPFFT_POOL_WARMUP` names; the manifest
        // `HIPFFT_POOL_MANIFEST_OUT` names is written by the exit hook (this pool is never
        // dropped).
        let eviction = config.eviction;
        let pool = PlanPool::new_shared(config, rt.clone()).map_err(|e| Fail::from_pool(&e))?;
        let server = match metrics_addr {
            Some(addr) => match MetricsServer::start(addr, &pool) {
                Ok(s) => Some(s),
                Err(e) => {
                    warn(&format!("HIPFFT_POOL_METRICS_ADDR={addr}: {e}; not serving metrics"));
                    None
                }
            },
            None => None,
        };
        Ok(Engine {
            flavor,
            id: ENGINES.fetch_add(1, Ordering::Relaxed),
            pool,
            rt,
            sim,
            handles: RwLock::new(FxHashMap::default()),
            values: match flavor {
                Flavor::Cufft => HandleValues::cufft(),
                Flavor::Hipfft => HandleValues::hipfft(),
            },
            streams: Mutex::new(FxHashSet::default()),
            arena: Arena::new(budget),
            policy,
            prepared: AtomicUsize::new(0),
            prepared_limit: (ceiling / 2).max(1),
            residents: Residents::new(resident_limit),
            graphs: Registry::default(),
            view,
            release_generation: AtomicU64::new(0),
            counts: Counts::default(),
            deferred: DeferredReleases::default(),
            work_sizes: Mutex::new(FxHashMap::default()),
            library,
            eviction,
            _server: server,
        })
    }

    pub fn pool(&self) -> &Arc<PlanPool> {
        &self.pool
    }

    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.rt
    }

    /// The simulated runtime, when that is what the interposer runs on.
    pub fn sim(&self) -> Option<&Arc<SimRuntime>> {
        self.sim.as_ref()
    }

    /// Runs `f` on the handle `h` if this thread looked it up lately (`RECENT_HANDLES`),
    /// borrowing the slot's reference; `None` if it did not.
    #[inline(always)]
    fn with_recent<R>(&self, h: u64, f: impl FnOnce(&Arc<VirtualPlan>) -> R) -> Option<R> {
        RECENT_HANDLES
            .try_with(|r| {
                // Fails only while this thread writes the slot (`lookup_map`, which looks no
                // handle up meanwhile): then the map answers.
                let slot = r[recent_slot(h)].0.try_borrow().ok()?;
                match &*slot {
                    Some((e, rh, v)) if *e == self.id && *rh == h && !v.hot.destroyed.load(Ordering::Acquire) => Some(f(v)),
                    _ => None,
                }
            })
            .ok()
            .flatten()
    }

    #[inline(always)]
    fn lookup(&self, h: u64, call: &str) -> Result<Arc<VirtualPlan>, Fail> {
        match self.with_recent(h, Arc::clone) {
            Some(v) => Ok(v),
            None => self.lookup_map(h, call),
        }
    }

    /// [`Engine::lookup`] past the thread's recent handles: the map (remembering what it
    /// found in the thread's slot), or the error.
    #[inline(never)]
    fn lookup_map(&self, h: u64, call: &str) -> Result<Arc<VirtualPlan>, Fail> {
        if let Some(v) = self.handles.read().get(&h).cloned() {
            let _ = RECENT_HANDLES.try_with(|r| {
                // A slot borrowed by this thread's call in progress keeps what it holds.
                if r[recent_slot(h)].set(Some((self.id, h, v.clone()))) {
                    FORGET_RECENT.arm();
                }
            });
            return Ok(v);
        }
        let what = if self.values.was_issued(h) { "was destroyed" } else { "is not a handle this interposer made" };
        Err(Fail::new(code::INVALID_PLAN, format!("{call}: handle {h:#x} {what}")))
    }

    /// `cufftCreate`: a new virtual handle with the library's defaults (auto-allocation on,
    /// the null stream, no work area).
    pub fn create(&self) -> Result<u64, Fail> {
        let v = Arc::new(VirtualPlan { hot: Hot::new(), settings: Mutex::new(Settings::new()) });
        let (h, live) = {
            let mut map = self.handles.write();
            let Some(h) = self.values.issue(map.len(), |h| map.contains_key(&h)) else {
                return Err(Fail::new(
                    code::ALLOC_FAILED,
                    format!("every one of the {} handle values is live: destroy handles to make more", self.values.space()),
                ));
            };
            map.insert(h, v);
            (h, map.len())
        };
        self.counts.handles_created.fetch_add(1, Ordering::Relaxed);
        self.counts.handles_peak.fetch_max(live, Ordering::Relaxed);
        Ok(h)
    }

    /// `cufftDestroy`: the handle goes; its real plan stays in the pool for other handles.
    /// Returns the handle's own real plan, if it had one: the caller destroys it with the
    /// real library, then calls [`Engine::real_plan_destroyed`].
    pub fn destroy(&self, h: u64, call: &str) -> Result<Option<i64>, Fail> {
        let v = self.handles.write().remove(&h);
        let Some(v) = v else { return Err(self.lookup(h, call).err().unwrap_or_else(|| Fail::new(code::INVALID_PLAN, call))) };
        v.hot.destroyed.store(true, Ordering::Release);
        let mut s = v.lock();
        s.resident = None;
        self.counts.resident_execs.fetch_add(v.hot.resident_execs.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        let real = s.real.take();
        if s.prepared.take().is_some() {
            self.prepared.fetch_sub(1, Ordering::Relaxed);
        }
        let sticky = s.sticky.take().map(|l| (l, s.sticky_stream));
        drop(s);
        if exiting() {
            // The runtime may be torn down already: the process is ending, leak it.
            std::mem::forget(sticky);
            return Ok(real);
        }
        self.deferred.lock().extend(sticky);
        Ok(real)
    }

    /// Gives a handle a real plan of its own, made by `make(auto_allocation)` with the real
    /// library, under one slot of the pool's ceiling (idle cached plans are trimmed to find
    /// one). Returns the handle's stream and work area, for the caller to set on the plan.
    pub fn pin_real(
        &self,
        h: u64,
        call: &str,
        make: impl FnOnce(bool) -> Result<i64, Fail>,
    ) -> Result<(RawStream, Option<DevicePtr>), Fail> {
        let v = self.lookup(h, call)?;
        let mut s = v.lock();
        if s.real.is_some() || s.desc.is_some() {
            return Err(Fail::new(code::INVALID_PLAN, format!("{call}: handle {h:#x} already has a plan")));
        }
        let ceiling = self.pool.ceiling();
        if !ceiling.try_acquire() {
            self.pool.trim();
            if !ceiling.try_acquire() {
                return Err(Fail::new(
                    code::ALLOC_FAILED,
                    format!("{call}: a plan of the handle's own needs a slot of the live ceiling ({}), and every one is in use", ceiling.limit()),
                ));
            }
        }
        match make(s.auto_allocation) {
            Ok(real) => {
                s.real = Some(real);
                let n = self.counts.real_plans.fetch_add(1, Ordering::Relaxed) + 1;
                self.counts.real_plans_peak.fetch_max(n, Ordering::Relaxed);
                Ok((s.stream, s.work_area))
            }
            Err(f) => {
                ceiling.release();
                Err(f)
            }
        }
    }

    /// The handle's own real plan, if it has one (see [`Engine::pin_real`]).
    #[inline(always)]
    pub fn real_plan(&self, h: u64) -> Option<i64> {
        // Every set-stream, set-work-area and exec asks, and only half-precision handles
        // have one: most processes never make one, and then the answer is one load.
        if self.counts.real_plans.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.real_plan_of(h)
    }

    #[inline(never)]
    fn real_plan_of(&self, h: u64) -> Option<i64> {
        self.lookup(h, "").ok().and_then(|v| v.lock().real)
    }

    /// A handle's own real plan was destroyed: its slot goes back to the ceiling.
    pub fn real_plan_destroyed(&self) {
        self.counts.real_plans.fetch_sub(1, Ordering::Relaxed);
        let c = self.pool.ceiling();
        c.release();
        c.notify();
    }

    /// A checked descriptor for `r` on the calling thread's current device.
    pub fn desc(&self, r: &PlanRequest) -> Result<PlanDesc, Fail> {
        if !(1..=3).contains(&r.n.len()) {
            return Err(Fail::new(code::INVALID_SIZE, format!("invalid argument `rank`: {} is outside 1..=3", r.n.len())));
        }
        let device = self.rt.current_device().map_err(|e| Fail::from_pool(&e))?;
        let mut d = PlanDesc::new(r.transform, &r.n, r.batch).on_device(device);
        if let Some((ie, is, id, oe, os, od)) = &r.layout {
            d = d.with_input_layout(Layout::new(ie, *is, *id)).with_output_layout(Layout::new(oe, *os, *od));
        }
        d.validate()?;
        Ok(d)
    }

    /// The real work size for `desc`: the plan is leased (made if needed) and released.
    /// The real work size for `desc`: remembered from an earlier plan, or the plan is leased
    /// (made if needed) and released.
    fn work_size_of(&self, desc: &PlanDesc) -> Result<usize, Fail> {
        if let Some(&w) = self.work_sizes.lock().get(desc) {
            self.counts.work_sizes_remembered.fetch_add(1, Ordering::Relaxed);
            return Ok(w);
        }
        let lease = self.pool.acquire(desc).map_err(|e| Fail::from_pool(&e))?;
        let w = lease.work_size();
        drop(lease);
        let mut m = self.work_sizes.lock();
        if m.len() < WORK_SIZES_KEPT {
            m.insert(*desc, w);
        }
        Ok(w)
    }

    /// `cufftMakePlan*`: gives the handle its descriptor; returns the real work size.
    pub fn make_plan(&self, h: u64, r: &PlanRequest, call: &str) -> Result<usize, Fail> {
        let v = self.lookup(h, call)?;
        let desc = self.desc(r)?;
        let work = self.work_size_of(&desc)?;
        let mut s = v.lock();
        if s.prepared.take().is_some() {
            self.prepared.fetch_sub(1, Ordering::Relaxed);
        }
        s.desc = Some(desc);
        s.transform = Some(desc.transform);
        s.resident = None;
        s.work_size = work;
        self.counts.plans.fetch_add(1, Ordering::Relaxed);
        Ok(work)
    }

    /// `cufftPlan1d` and friends: create and make in one call; no handle on failure.
    pub fn plan(&self, r: &PlanRequest, call: &str) -> Result<u64, Fail> {
        let h = self.create()?;
        match self.make_plan(h, r, call) {
            Ok(_) => Ok(h),
            Err(f) => {
                let _ = self.destroy(h, call);
                Err(f)
            }
        }
    }

    /// `cufftGetSize1d` and friends: the work size a plan for `r` needs, leaving the handle as it is.
    pub fn size_for(&self, h: u64, r: &PlanRequest, call: &str) -> Result<usize, Fail> {
        self.lookup(h, call)?;
        let desc = self.desc(r)?;
        self.work_size_of(&desc)
    }

    /// `cufftGetSize`: the work size of the handle's plan.
    pub fn work_size(&self, h: u64, call: &str) -> Result<usize, Fail> {
        let v = self.lookup(h, call)?;
        let s = v.lock();
        if s.desc.is_none() {
            return Err(Fail::new(code::INVALID_PLAN, format!("{call}: handle {h:#x} has no plan yet")));
        }
        Ok(s.work_size)
    }

    pub fn set_auto_allocation(&self, h: u64, on: bool, call: &str) -> Result<(), Fail> {
        self.lookup(h, call)?.lock().auto_allocation = on;
        Ok(())
    }

    /// Every `SetWorkArea`.
    #[inline(always)]
    pub fn set_work_area(&self, h: u64, area: DevicePtr, call: &str) -> Result<(), Fail> {
        self.set_setting(h, call, Setting::Area(area))
    }

    #[inline(never)]
    fn set_work_area_locked(&self, v: &VirtualPlan, area: DevicePtr) {
        let mut s = v.lock();
        let area = (!area.is_null()).then_some(area);
        if s.work_area == area && self.settled(&s) {
            v.hot.prefetch();
            return;
        }
        s.work_area = area;
        self.prepare(v, &mut s);
        self.bind_ahead(&s, None, s.work_area);
    }

    /// Every `SetStream`.
    #[inline(always)]
    pub fn set_stream(&self, h: u64, stream: RawStream, call: &str) -> Result<(), Fail> {
        self.set_setting(h, call, Setting::Stream(stream))
    }

    #[inline(never)]
    fn set_stream_locked(&self, v: &VirtualPlan, stream: RawStream) {
        let mut s = v.lock();
        if s.stream == stream && self.settled(&s) {
            v.hot.prefetch();
            return;
        }
        if s.stream != stream {
            s.stream = stream;
            s.stream_registered = false;
        }
        self.prepare(v, &mut s);
        self.bind_ahead(&s, Some(stream), None);
    }

    /// Set-stream and set-work-area: nothing to do when the handle's published line holds
    /// the value already and its plan is resident; else it is set under the handle's lock.
    /// One function for both, not one each: MLX makes the two calls back to back, and the
    /// second then runs on the instruction lines the first fetched (docs/design.md, "The
    /// hot path's code").
    #[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    #[inline(never)]
    fn set_setting(&self, h: u64, call: &str, setting: Setting) -> Result<(), Fail> {
        let on = |v: &Arc<VirtualPlan>| {
            let has = match setting {
                Setting::Stream(stream) => v.hot.stream.load(Ordering::Relaxed) == stream.0,
                Setting::Area(area) => v.hot.area.load(Ordering::Relaxed) == area.0,
            };
            if has && self.goes_direct(v) {
                v.hot.prefetch();
                return;
            }
            match setting {
                Setting::Stream(stream) => self.set_stream_locked(v, stream),
                Setting::Area(area) => self.set_work_area_locked(v, area),
            }
        };
        if self.with_recent(h, on).is_none() {
            on(&self.lookup_map(h, call)?);
        }
        Ok(())
    }

    /// Whether the handle's next execution goes straight to its resident plan, as things
    /// stand: the plan is published (`Hot::direct`) and no release waits to be drained
    /// (which the locked paths do).
    #[inline(always)]
    fn goes_direct(&self, v: &VirtualPlan) -> bool {
        !v.hot.direct.load(Ordering::Relaxed).is_null() && self.deferred.looks_empty()
    }

    /// Whether setting what a handle already has can be skipped: its resident plan serves
    /// it and nothing waits to be drained (what `prepare` would do), so only `bind_ahead`
    /// is left, and the execution sets whatever the plan does not carry anyway. A framework
    /// that sets the same stream and area before every execution (MLX) then reads one line
    /// of the handle per call instead of the real plan's too.
    #[inline]
    fn settled(&self, s: &Settings) -> bool {
        s.resident.is_some() && s.sticky.is_none() && self.deferred.looks_empty()
    }

    /// Passes what the framework just set on to the real plan its next execution will take
    /// (the same order as `exec`: sticky, resident, prepared), when one is known now. A
    /// framework sets stream and work area before a graph capture and executes inside it
    /// (MLX): the capture then holds the transform's call alone, as it would natively,
    /// instead of two more library calls before it. The execution sets whatever still
    /// differs, so a bind that fails or finds no lease costs nothing but itself.
    fn bind_ahead(&self, s: &Settings, stream: Option<RawStream>, area: Option<DevicePtr>) {
        let bind = |lease: &Lease| {
            // An area sized by the plan call's report, too small for this real plan, is
            // refused by the execution; it is never bound.
            if area.is_some() && lease.work_size() > s.work_size {
                return;
            }
            // SAFETY: the stream and area the framework passed to SetStream/SetWorkArea for
            // this handle: live (and of the reported work size) by the library's contract
            // for the executions that follow; the next execution passes its own anyway.
            let _ = unsafe { lease.bind(stream, area) };
        };
        // A handle with no plan yet holds no lease: nothing matches.
        match (&s.sticky, &s.resident, &s.prepared) {
            (Some(l), _, _) if s.sticky_stream == s.stream => bind(l),
            (_, Some(l), _) => bind(l),
            (_, None, Some(l)) => bind(l),
            _ => {}
        }
    }

    /// Whether the handle's descriptor has a resident plan, which the handle then keeps. A
    /// sticky lease it held goes (released after its stream's work), and a prepared one at
    /// once: from now on the resident plan serves the handle.
    fn cache_resident(&self, s: &mut Settings) -> bool {
        if s.resident.is_some() {
            return true;
        }
        let Some(desc) = s.desc else { return false };
        let Some(r) = self.residents.get(&desc) else { return false };
        s.resident = Some(r);
        if let Some(l) = s.sticky.take() {
            self.deferred.lock().push((l, s.sticky_stream));
        }
        // Never executed: it goes back at once.
        if s.prepared.take().is_some() {
            self.prepared.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    /// Takes the lease for the handle's next execution now, while the stream is not
    /// capturing, so that an execution inside a capture finds its plan without creating one.
    /// Frameworks set the stream (and work area) right before each execution; at most half
    /// the ceiling is held this way at once. Never waits for a slot (the handle's lock is
    /// held): at a full ceiling the execution acquires, and the flush hook takes prepared
    /// leases back from handles whose stream is not capturing.
    fn prepare(&self, v: &VirtualPlan, s: &mut Settings) {
        // Asked only when something waits: a call per SetStream is a driver call.
        if !self.deferred.looks_empty() && matches!(self.capturing(s.stream), Ok(false)) {
            self.drain_deferred(Some(s.stream));
        }
        // A handle destroyed by another thread while this call was on its way holds nothing.
        if v.hot.destroyed.load(Ordering::Acquire) {
            return;
        }
        // A resident plan serves every execution of its descriptor.
        if self.cache_resident(s) {
            return;
        }
        let Some(desc) = s.desc else { return };
        if s.sticky.is_some() && s.sticky_stream == s.stream {
            return;
        }
        if s.prepared.is_some() || !matches!(self.capturing(s.stream), Ok(false)) {
            return;
        }
        if self.prepared.fetch_add(1, Ordering::Relaxed) >= self.prepared_limit {
            self.prepared.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        match self.pool.acquire_now(&desc) {
            Ok(Some(lease)) => s.prepared = Some(lease),
            // No slot now, or a failure the execution will meet again and report.
            Ok(None) | Err(_) => {
                self.prepared.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Releases the deferred leases of `only` (all streams for `None`) whose stream is not
    /// capturing now (each after the work enqueued on it so far).
    fn drain_deferred(&self, only: Option<RawStream>) {
        if self.deferred.looks_empty() {
            return;
        }
        let ready: Vec<(Lease, RawStream)> = {
            let mut d = self.deferred.lock();
            if d.is_empty() {
                return;
            }
            let all = std::mem::take(&mut *d);
            let (ready, keep): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, st)| {
                only.is_none_or(|o| o == *st) && matches!(self.capturing(*st), Ok(false))
            });
            *d = keep;
            ready
        };
        for (lease, stream) in ready {
            self.release_after(lease, stream);
        }
    }

    /// Whether `stream` (one a framework handed us) is capturing now.
    fn capturing(&self, stream: RawStream) -> hipfft_pool::Result<bool> {
        // SAFETY: the stream is the framework's, passed to a cuFFT call that takes it, which
        // the library's contract requires to be live.
        let capturing = unsafe { self.rt.stream_is_capturing(stream) };
        if let Ok(true) = capturing {
            // The warm-up makes no plan while the framework captures.
            self.pool.capture_seen();
        }
        capturing
    }

    fn register_stream(&self, device: i32, stream: RawStream) {
        self.streams.lock().insert((device, stream.0));
    }

    fn release_after(&self, lease: Lease, stream: RawStream) {
        // SAFETY: the framework's stream of the execution this lease served (live by the
        // library's contract while the framework uses the handle).
        if let Err(ReleaseAfterError { lease, .. }) = unsafe { lease.release_after(stream) } {
            // Nothing will watch the stream for us: wait for it, then release.
            let device = lease.desc().device;
            // SAFETY: as above.
            let _ = with_device(&*self.rt, device, || unsafe { self.rt.stream_synchronize(stream) });
            lease.release();
        }
    }

    /// Every `cufftExec*` and `cufftXtExec`.
#[cfg_attr(target_os = "linux", unsafe(link_section = ".text.hot.hipfft_pool"))]
    pub fn exec(
        &self,
        h: u64,
        kind: ExecKind,
        call: &'static str,
        input: DevicePtr,
        output: DevicePtr,
        direction: i32,
    ) -> Result<(), Fail> {
        let on = |v: &Arc<VirtualPlan>| {
            v.hot.prefetch();
            match v.hot.direct() {
                // The fast path: the handle's resident plan with the settings it had when
                // its lock was let go (see `Settings::direct`); never destroyed, so whether
                // the stream is capturing changes nothing. Releases waiting to be drained
                // take the locked path, which drains.
                Some(r) if self.deferred.looks_empty() => {
                    // Published with `direct`: a resident plan's handle has its transform.
                    let t = v.hot.transform().unwrap_or(r.desc().transform);
                    let direction = exec_direction(t, || Some(*r.desc()), kind, call, h, direction)?;
                    exec_buffers(input, output)?;
                    let stream = RawStream(v.hot.stream.load(Ordering::Relaxed));
                    let area = DevicePtr(v.hot.area.load(Ordering::Relaxed));
                    // SAFETY: the stream, buffers and work area are the framework's, passed
                    // to this exec call and to SetStream/SetWorkArea, which the library's
                    // contract requires to be valid for the transform; the resident lease
                    // keeps the plan for the engine's life.
                    unsafe { r.exec(stream, input, output, direction, (!area.is_null()).then_some(area)) }
                        .map_err(|e| Fail::from_pool(&e))?;
                    v.hot.resident_execs.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                _ => self.exec_locked(h, v, kind, call, input, output, direction),
            }
        };
        match self.with_recent(h, on) {
            Some(r) => r,
            None => on(&self.lookup_map(h, call)?),
        }
    }

    /// [`Engine::exec`] under the handle's lock: its first execution on a stream, a plan
    /// that is not resident, or releases to drain.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn exec_locked(
        &self,
        h: u64,
        v: &VirtualPlan,
        kind: ExecKind,
        call: &'static str,
        input: DevicePtr,
        output: DevicePtr,
        direction: i32,
    ) -> Result<(), Fail> {
        let mut s = v.lock();
        let Some(t) = s.transform else { return Err(no_plan(call, h)) };
        let direction = exec_direction(t, || s.desc, kind, call, h, direction)?;
        exec_buffers(input, output)?;
        let stream = s.stream;
        if !s.stream_registered {
            if let Some(device) = s.desc.as_ref().map(|d| d.device) {
                self.register_stream(device, stream);
                s.stream_registered = true;
            }
        }
        // The resident plan, as on the fast path, for an execution that registered its
        // stream just now (the lock is held: the settings are these).
        if let Some(r) = s.direct() {
            if self.deferred.looks_empty() {
                // SAFETY: as on `exec`'s fast path.
                unsafe { r.exec(stream, input, output, direction, s.work_area) }.map_err(|e| Fail::from_pool(&e))?;
                v.hot.resident_execs.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        self.exec_slow(h, v, s, call, stream, input, output, direction)
    }

    /// [`Engine::exec`] beyond a resident plan: the descriptor itself, a lease from the pool
    /// (or a sticky or prepared one), capture, the work area, the release. Out of line, so
    /// that the hot text holds the fast path alone.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn exec_slow(
        &self,
        h: u64,
        v: &VirtualPlan,
        mut s: SettingsGuard<'_>,
        call: &'static str,
        stream: RawStream,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
    ) -> Result<(), Fail> {
        let Some(desc) = s.desc else { return Err(no_plan(call, h)) };
        let capture = self.capture_of(stream).map_err(|e| Fail::from_pool(&e))?;
        let capturing = capture.is_some();
        let generation = self.release_generation.load(Ordering::Acquire);
        let mut sticky = s.sticky.take();
        if sticky.is_some() && s.sticky_stream != stream {
            let old = s.sticky_stream;
            if let Some(l) = sticky.take() {
                self.deferred.lock().push((l, old));
            }
        }
        if !capturing {
            self.drain_deferred(Some(stream));
        }
        let lease = match sticky.or_else(|| self.residents.lease(&desc)).or_else(|| s.prepared.take().inspect(|_| {
            self.prepared.fetch_sub(1, Ordering::Relaxed);
            self.counts.prepared_taken.fetch_add(1, Ordering::Relaxed);
        })) {
            Some(l) => l,
            // A plan the pool still caches serves a capture (none may be made inside it).
            None if capturing && let Some(l) = self.pool.acquire_cached(&desc) => l,
            None if capturing => {
                self.counts.capture_misses.fetch_add(1, Ordering::Relaxed);
                return Err(Fail::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "{call} on handle {h:#x} while stream {:#x} is capturing a graph: no real plan for {desc} was prepared, \
                         and none may be created inside a capture; set the stream (cufftSetStream) before the capture begins",
                        stream.0
                    ),
                ));
            }
            None => self.pool.acquire(&desc).map_err(|e| Fail::from_pool(&e))?,
        };
        let area = match s.work_area {
            // The area was sized by what the plan call reported: a real plan that needed more
            // would write past it.
            Some(_) if lease.work_size() > s.work_size => {
                return Err(Fail::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "{call} on handle {h:#x}: the real plan for {desc} needs {} bytes of work area, more than the {} its plan call reported",
                        lease.work_size(),
                        s.work_size
                    ),
                ));
            }
            Some(p) => Area::User(p),
            None if lease.work_size() == 0 => Area::None,
            None if s.auto_allocation && capturing => {
                return Err(Fail::not_supported(
                    call,
                    "an auto-allocated work area inside a graph capture (it would have to outlive every launch); set one with SetWorkArea",
                ));
            }
            None if s.auto_allocation => Area::Arena(self.arena.take(&*self.rt, desc.device, lease.work_size())?),
            None => {
                return Err(Fail::new(
                    code::NO_WORKSPACE,
                    format!(
                        "{call} on handle {h:#x}: auto-allocation is off and no work area was set; the plan needs {} bytes",
                        lease.work_size()
                    ),
                ));
            }
        };
        drop(s);
        // SAFETY: the stream, buffers and work area are the framework's, passed to this exec
        // call, which the library's contract requires to be valid for the transform.
        if let Err(e) = unsafe { lease.exec(stream, input, output, direction, area.ptr()) } {
            if let Area::Arena(b) = area {
                // Nothing was enqueued on the block.
                self.arena.give_after(&*self.rt, b, stream);
            }
            return Err(Fail::from_pool(&e));
        }
        self.counts.execs.fetch_add(1, Ordering::Relaxed);
        if let Some(before) = capture {
            self.counts.captured_execs.fetch_add(1, Ordering::Relaxed);
            self.hold_captured(v, lease, stream, before);
            return Ok(());
        }
        if let Area::Arena(b) = area {
            self.arena.give_after(&*self.rt, b, stream);
        }
        let mut s = v.lock();
        // Kept for the handle's next execution unless the flush hook ran since this one began,
        // a miss waits for a slot right now (it would sleep on this lease), or the handle was
        // destroyed meanwhile by another thread (its leases went already; this one would be
        // held by nobody).
        let keep = self.release_generation.load(Ordering::Acquire) == generation
            && s.sticky.is_none()
            && !v.hot.destroyed.load(Ordering::Acquire)
            && !lease.ceiling_has_waiters();
        if keep {
            self.counts.sticky_uses.fetch_add(1, Ordering::Relaxed);
            s.sticky = Some(lease);
            s.sticky_stream = stream;
        } else {
            drop(s);
            self.release_after(lease, stream);
        }
        Ok(())
    }

    /// The capture in progress on `stream` (asked of the runtime's graph view), or `None`.
    /// Without a view, a capturing stream gives a capture that is not followed.
    fn capture_of(&self, stream: RawStream) -> hipfft_pool::Result<Option<Capture>> {
        let Some(view) = &self.view else {
            return Ok(self.capturing(stream)?.then(Capture::unfollowed));
        };
        // SAFETY: the framework's stream, passed to a call that takes it, which the library's
        // contract requires to be live.
        let c = unsafe { view.capture(stream) }.map_err(hipfft_pool::Error::Internal)?;
        if c.is_some() {
            // The warm-up makes no plan while the framework captures.
            self.pool.capture_seen();
        }
        Ok(c)
    }

    /// Holds the plan of an execution just captured on `stream` (`before`: the capture as it
    /// was before the execution) until no graph can run it: as a resident, or pinned by the
    /// graphs that hold it (see `capture`).
    fn hold_captured(&self, v: &VirtualPlan, lease: Lease, stream: RawStream, before: Capture) {
        if self.residents.admit(&lease) {
            self.counts.captured_on_residents.fetch_add(1, Ordering::Relaxed);
            self.cache_resident(&mut v.lock());
            // The resident lease keeps the plan; this one goes at once (an event on the
            // capturing stream would join the capture).
            lease.release();
            return;
        }
        let functions = match (&self.view, self.policy) {
            (Some(view), CapturePolicy::Auto) if crate::graphs::observed::is_followed(before.id) => {
                // SAFETY: as in `capture_of`; the nodes walked are the capture's own.
                let learned = unsafe {
                    view.capture(stream).and_then(|after| {
                        let after = after.ok_or_else(|| "the capture ended during the execution".to_string())?;
                        crate::graphs::view::kernels_since(&**view, &before, &after)
                    })
                };
                match learned {
                    Ok(f) => Some(f),
                    Err(why) => {
                        self.warn_kept_capture(&why);
                        None
                    }
                }
            }
            (_, CapturePolicy::Pin) => None,
            _ => {
                self.warn_kept_capture("the capture began where the interposer's graph hooks could not see it");
                None
            }
        };
        let Some(functions) = functions else {
            self.counts.captured_kept.fetch_add(1, Ordering::Relaxed);
            self.residents.keep(lease);
            return;
        };
        self.counts.captured_followed.fetch_add(1, Ordering::Relaxed);
        let plan = lease.plan().0;
        // Already pinned: its pin holds it, and this lease goes at once (dropped).
        drop(self.graphs.captured(plan, lease.into_standing(), before.id, before.graph, &functions));
    }

    /// Says once that captured plans are being kept for the process's life, and why.
    fn warn_kept_capture(&self, why: &str) {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            warn(&format!(
                "a captured execution's graphs cannot be followed ({why}); its plan is kept for the process's life, \
                 so that no graph can run a destroyed plan; such plans count against HIPFFT_POOL_LIVE_CEILING for good"
            ))
        });
    }

    /// The graph registry (the hooks report graph calls to it).
    pub fn graphs(&self) -> &Registry<StandingLease> {
        &self.graphs
    }

    /// Lets go of plans no graph holds any more: at once when no instantiation that held
    /// them was launched, else after the work on the streams they were launched on.
    pub fn settle(&self, released: Vec<Released<StandingLease>>) {
        if released.is_empty() {
            return;
        }
        if exiting() {
            // The runtime may be torn down already: the process is ending.
            std::mem::forget(released);
            return;
        }
        for r in released {
            let lease = r.pin.into_lease();
            match r.waits.split_first() {
                None => lease.release(),
                Some((first, rest)) => {
                    let mut d = self.deferred.lock();
                    for s in rest {
                        d.push((lease.share(), *s));
                    }
                    d.push((lease, *first));
                }
            }
        }
        self.drain_deferred(None);
    }

    /// The flush hook (a miss found the ceiling full): every sticky lease goes back, released
    /// once its stream's work is done, and every prepared lease of a handle whose stream is
    /// not capturing (never executed: it goes at once; the execution acquires instead). A
    /// handle in use right now is skipped; its execution keeps no sticky lease while a miss
    /// waits.
    pub fn release_sticky(&self) {
        self.release_generation.fetch_add(1, Ordering::AcqRel);
        self.counts.sticky_flushes.fetch_add(1, Ordering::Relaxed);
        let handles: Vec<Arc<VirtualPlan>> = self.handles.read().values().cloned().collect();
        for v in handles {
            let Some(mut s) = v.try_lock() else { continue };
            let sticky = s.sticky.take().map(|l| (l, s.sticky_stream));
            let prepared = match s.prepared {
                Some(_) if matches!(self.capturing(s.stream), Ok(false)) => s.prepared.take(),
                _ => None,
            };
            drop(s);
            if prepared.is_some() {
                self.prepared.fetch_sub(1, Ordering::Relaxed);
                self.counts.prepared_returned.fetch_add(1, Ordering::Relaxed);
            }
            drop(prepared);
            if let Some(held) = sticky {
                self.deferred.lock().push(held);
            }
        }
        self.drain_deferred(None);
    }

    /// `hfp_intercept_synchronize`: waits for every stream an execution was enqueued on.
    pub fn synchronize(&self) -> Result<(), Fail> {
        self.drain_deferred(None);
        let streams: Vec<(i32, usize)> = self.streams.lock().iter().copied().collect();
        for (device, stream) in streams {
            // SAFETY: a stream an execution was enqueued on; frameworks keep their streams
            // alive while their plans use them.
            with_device(&*self.rt, device, || unsafe { self.rt.stream_synchronize(RawStream(stream)) }).map_err(|e| Fail::from_pool(&e))?;
        }
        Ok(())
    }

    /// A stream of the runtime's own (tests use it to spread work over streams).
    pub fn stream_create(&self) -> Result<RawStream, Fail> {
        self.rt.stream_create().map_err(|e| Fail::from_pool(&e))
    }

    pub fn virtual_handles_live(&self) -> usize {
        self.handles.read().len()
    }


    /// Executions that went straight to a handle's resident plan, all handles so far; `None`
    /// if the handle map stays locked until `deadline`.
    fn resident_execs_until(&self, deadline: Option<std::time::Instant>) -> Option<(u64, usize)> {
        let handles = match deadline {
            None => self.handles.read(),
            Some(by) => self.handles.try_read_until(by)?,
        };
        let live: u64 = handles.values().map(|v| v.hot.resident_execs.load(Ordering::Relaxed)).sum();
        Some((self.counts.resident_execs.load(Ordering::Relaxed) + live, handles.len()))
    }

    /// One JSON object with the counts `HIPFFT_POOL_METRICS_OUT` writes at exit.
    pub fn metrics_json(&self) -> String {
        self.metrics_json_inner(None)
    }

    /// [`Engine::metrics_json`], waiting for no lock past `deadline`: what could not be read
    /// is left out and named under `"unreadable"` (the exit hook's, which must never hang).
    pub fn metrics_json_until(&self, deadline: std::time::Instant) -> String {
        self.metrics_json_inner(Some(deadline))
    }

    fn metrics_json_inner(&self, deadline: Option<std::time::Instant>) -> String {
        let mut unreadable: Vec<&str> = Vec::new();
        let failures = crate::process::failures();
        let mut j = serde_json::json!({
            "api": match self.flavor { Flavor::Cufft => "cufft", Flavor::Hipfft => "hipfft" },
            "runtime": self.rt.kind().name(),
            "library": self.library,
            "pid": std::process::id(),
            "eviction": self.eviction.name(),
            "virtual_handles_peak": self.counts.handles_peak.load(Ordering::Relaxed),
            "virtual_handles_created": self.counts.handles_created.load(Ordering::Relaxed),
            "plans_made": self.counts.plans.load(Ordering::Relaxed),
            "prepared_leases_used": self.counts.prepared_taken.load(Ordering::Relaxed),
            "sticky_lease_uses": self.counts.sticky_uses.load(Ordering::Relaxed),
            "sticky_flushes": self.counts.sticky_flushes.load(Ordering::Relaxed),
            "prepared_returned": self.counts.prepared_returned.load(Ordering::Relaxed),
            "captured_execs": self.counts.captured_execs.load(Ordering::Relaxed),
            "capture_misses": self.counts.capture_misses.load(Ordering::Relaxed),
            "capture_policy": self.policy.name(),
            "failures": failures,
            "own_real_plans": self.counts.real_plans.load(Ordering::Relaxed),
            "own_real_plans_peak": self.counts.real_plans_peak.load(Ordering::Relaxed),
            "auto_area_bytes": self.arena.bytes(),
            "auto_area_peak_bytes": self.arena.peak(),
            "auto_area_budget": self.arena.budget(),
            "auto_area_allocations": self.arena.allocations.load(Ordering::Relaxed),
            "auto_area_reuses": self.arena.reuses.load(Ordering::Relaxed),
        });
        let m = match deadline {
            None => Some(self.pool.metrics()),
            Some(by) => self.pool.metrics_until(by),
        };
        match &m {
            Some(m) => {
                for (k, v) in [
                    ("capacity", m.capacity as u64),
                    ("ceiling", m.ceiling as u64),
                    ("peak_live", m.process_peak_live as u64),
                    ("live_at_exit", m.process_live as u64),
                    ("cached", m.cached as u64),
                    ("in_flight", m.in_flight as u64),
                    ("creations", m.creations),
                    ("destroys", m.destroys),
                    ("hits", m.hits),
                    ("misses", m.misses),
                    ("evictions", m.evictions),
                    ("ceiling_waits", m.ceiling_waits),
                    ("ceiling_timeouts", m.ceiling_timeouts),
                ] {
                    j[k] = v.into();
                }
                // `pin` has no limit of its own (the ceiling bounds it): written as the ceiling.
                j["capture_resident_limit"] = self.residents.limit().min(m.ceiling).into();
            }
            None => unreadable.push("pool"),
        }
        match self.resident_execs_until(deadline) {
            Some((resident, live)) => {
                j["virtual_handles_live"] = live.into();
                j["resident_execs"] = resident.into();
                j["execs"] = (self.counts.execs.load(Ordering::Relaxed) + resident).into();
            }
            None => unreadable.push("handles"),
        }
        let deferred = match deadline {
            None => Some(self.deferred.lock().len()),
            Some(by) => self.deferred.list.try_lock_until(by).map(|d| d.len()),
        };
        match deferred {
            Some(n) => j["deferred_releases"] = n.into(),
            None => unreadable.push("deferred releases"),
        }
        match self.graphs.holdings_until(deadline) {
            Some(held) => {
                j["graph_held_plans"] = held.plans.into();
                j["graph_held_for_good"] = held.forever.into();
                j["graphs_holding_plans"] = held.graphs.into();
                j["instantiations_holding_plans"] = held.execs.into();
            }
            None => unreadable.push("graphs"),
        }
        j["captured_followed"] = self.counts.captured_followed.load(Ordering::Relaxed).into();
        j["captured_kept"] = self.counts.captured_kept.load(Ordering::Relaxed).into();
        j["standing"] = self.pool.ceiling().standing().into();
        j["capture_residents"] = self.residents.len().into();
        j["captured_on_residents"] = self.counts.captured_on_residents.load(Ordering::Relaxed).into();
        j["work_sizes_remembered"] = self.counts.work_sizes_remembered.load(Ordering::Relaxed).into();
        if let Some(p) = crate::profile::json() {
            j["host_profile"] = p;
        }
        if let Some(sim) = &self.sim {
            j["sim_live_handles"] = sim.live_handles().into();
            j["sim_peak_live_handles"] = sim.peak_live_handles().into();
            j["sim_created"] = sim.created_total().into();
            j["sim_violations"] = sim.violations().into();
            j["sim_live_graphs"] = sim.live_graphs().0.into();
            j["sim_live_instantiations"] = sim.live_graphs().1.into();
        }
        if !unreadable.is_empty() {
            j["unreadable"] = unreadable.into();
        }
        j.to_string()
    }
}

static EXIT_ENGINE: AtomicBool = AtomicBool::new(false);
static EXITING: AtomicBool = AtomicBool::new(false);

/// Whether the process is exiting (our exit hook ran): from then on no lease is released
/// through the GPU runtime, which may already be torn down (a framework's static
/// destructors still call cufftDestroy).
pub fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

fn register_exit_hook() {
    if EXIT_ENGINE.swap(true, Ordering::SeqCst) {
        return;
    }
    extern "C" fn at_exit() {
        EXITING.store(true, Ordering::Release);
        // `exit()` called on a thread inside one of the interposer's calls came from a signal
        // handler (or a callback) that interrupted it: locks that thread holds, the
        // allocator's among them, would never come free. Nothing is written.
        if crate::entry::inside() {
            return;
        }
        // This process's engine only: a forked child that made none has nothing to write
        // (what the parent writes is the parent's).
        let Some(e) = ready() else { return };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write_metrics_out(e)));
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write_manifest_out(e)));
    }
    // SAFETY: registers a plain function; it only reads counters and writes a file.
    unsafe { libc::atexit(at_exit) };
}

/// How long an exit hook waits for a lock before it gives up on what the lock guards: a
/// thread interrupted by the signal that called `exit`, or one still at work, may hold it.
const EXIT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// Writes the pool's working set to `HIPFFT_POOL_MANIFEST_OUT`, if set (at exit), through a
/// temporary file renamed into place; a per-process path in a forked child (see
/// [`per_process_path`]).
pub fn write_manifest_out(e: &Engine) {
    let Some(raw) = std::env::var_os("HIPFFT_POOL_MANIFEST_OUT").filter(|p| !p.is_empty()) else { return };
    let path = per_process_path(&raw.to_string_lossy());
    match e.pool().manifest_until(std::time::Instant::now() + EXIT_LOCK_WAIT) {
        Some(m) => {
            if let Err(err) = m.save(&path) {
                warn(&format!("HIPFFT_POOL_MANIFEST_OUT={path}: {err}"));
            }
        }
        None => warn(&format!("HIPFFT_POOL_MANIFEST_OUT={path} not written: the pool's cache was locked at exit")),
    }
}

/// Writes the metrics JSON to `HIPFFT_POOL_METRICS_OUT`, if set (at exit): through a
/// temporary file renamed into place (a reader, or another process writing the same path,
/// never sees half a file), at [`per_process_path`], from a snapshot that waits for no lock
/// (what it could not read is named under `"unreadable"`).
pub fn write_metrics_out(e: &Engine) {
    let Some(raw) = std::env::var_os("HIPFFT_POOL_METRICS_OUT").filter(|p| !p.is_empty()) else { return };
    let path = per_process_path(&raw.to_string_lossy());
    let json = e.metrics_json_until(std::time::Instant::now() + EXIT_LOCK_WAIT);
    if let Err(err) = write_atomically(std::path::Path::new(&path), &(json + "\n")) {
        warn(&format!("HIPFFT_POOL_METRICS_OUT={path}: {err}"));
    }
}

/// Writes `text` to a temporary file beside `path`, then renames it into place.
fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `raw` with each `%p` replaced by this process's id; in a forked child, a path with no
/// `%p` gets `.<pid>` appended, so that the child never overwrites its parent's file.
fn per_process_path(raw: &str) -> String {
    let pid = std::process::id().to_string();
    if raw.contains("%p") {
        raw.replace("%p", &pid)
    } else if hipfft_pool::fork_generation() > 0 {
        format!("{raw}.{pid}")
    } else {
        raw.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_p_in_the_metrics_path_becomes_the_process_id() {
        let id = std::process::id();
        assert_eq!(super::per_process_path("/tmp/m-%p.json"), format!("/tmp/m-{id}.json"));
        assert_eq!(super::per_process_path("/tmp/m.json"), "/tmp/m.json");
    }

    #[test]
    fn the_interposer_evicts_the_least_recently_used_plan_unless_told_otherwise() {
        use super::{Eviction, interposer_eviction};
        assert_eq!(interposer_eviction(Eviction::Cost, None), Eviction::Lru);
        assert_eq!(interposer_eviction(Eviction::Cost, Some("")), Eviction::Lru);
        // Blanks alone are unset too, as the pool reads them (which warns of neither).
        assert_eq!(interposer_eviction(Eviction::Cost, Some(" \t")), Eviction::Lru);
        assert_eq!(interposer_eviction(Eviction::Lru, Some(" lru ")), Eviction::Lru);
        assert_eq!(interposer_eviction(Eviction::Cost, Some("cost")), Eviction::Cost);
        // A value the pool ignored (with its warning) keeps the pool's choice.
        assert_eq!(interposer_eviction(Eviction::Cost, Some("lfu")), Eviction::Cost);
    }
}
