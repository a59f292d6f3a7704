//! The `#[repr(C)]` structs of the C ABI and their conversions to the crate's types.

use std::ffi::{CStr, c_char, c_int};
use std::mem::{offset_of, size_of};
use std::time::Duration;

use super::boundary::Failure;
use crate::pool::config::{
    DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_CAPACITY, DEFAULT_SHUTDOWN_TIMEOUT, DEFAULT_WATCHDOG_THRESHOLD, PoolConfig, RuntimeChoice,
};
use crate::observe::histogram::HistogramSnapshot;
use crate::desc::{DescError, Layout, PlanDesc, TransformType};
use crate::observe::counters::MetricsSnapshot;

/// Pool settings for `hfp_pool_new`. Fill it with `hfp_config_default`, then change fields.
///
/// It can grow: `struct_size` must be set to `sizeof(hfp_config)` of the header the caller
/// was compiled with. Fields past `runtime` are read only when `struct_size` covers them,
/// so a caller built against an older header keeps working; a `struct_size` smaller than
/// `HFP_CONFIG_MIN_SIZE` (the first version's fields, up to and including `runtime`) is
/// rejected with `HFP_INVALID_ARGUMENT`. In every field 0 (or NULL) means "the default".
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct hfp_config {
    /// `sizeof(hfp_config)`; set by `hfp_config_default`.
    pub struct_size: usize,
    /// Plans the cache holds (LRU). 0: 128.
    pub capacity: usize,
    /// Live hipFFT handles allowed at once: cached plans, evicted plans whose executions are
    /// still leased, and plans being created. 0: the same as `capacity`. Must be at least
    /// `capacity`.
    pub live_ceiling: usize,
    /// How long a miss waits at the ceiling (or for another thread's creation of the same
    /// plan) before it fails with `HFP_CEILING_TIMEOUT`, in milliseconds. 0: 10000.
    pub acquire_timeout_ms: u64,
    /// Bound on the total work-area bytes of cached plans; least recently used plans are
    /// evicted past it. 0: no bound.
    pub work_area_budget: usize,
    /// Borrowed, NUL-terminated runtime name, read during `hfp_pool_new` only: "auto"
    /// (hip if a device is there, else cuda, else sim), "sim", "hip" or "cuda". NULL: "auto".
    pub runtime: *const c_char,
    /// How long `hfp_pool_free` waits for outstanding leases, in milliseconds. 0: 5000.
    pub shutdown_timeout_ms: u64,
    /// Which ceiling the pool counts against. `HFP_CEILING_PROCESS_WIDE` (0): the process-wide
    /// one, shared by every pool of the process that uses it; its limit is set by the first
    /// such pool, later pools share it whatever they ask for, and a capacity above it is
    /// rejected. `HFP_CEILING_PRIVATE`: a ceiling of `live_ceiling` handles of its own.
    /// `HFP_CEILING_PER_DEVICE`: a process-wide ceiling of `live_ceiling` handles per device.
    pub ceiling_scope: c_int,
    /// A runtime call running longer than this is reported (a `tracing` error, and the
    /// `stalled` metric), in milliseconds. 0: 10000.
    pub watchdog_ms: u64,
}

/// `hfp_config.ceiling_scope`: one ceiling shared by every pool of the process (the default).
pub const HFP_CEILING_PROCESS_WIDE: c_int = 0;
/// A ceiling of the pool's own (`CeilingScope::Private`).
pub const HFP_CEILING_PRIVATE: c_int = 1;
/// One process-wide ceiling per device (`CeilingScope::PerDevice`).
pub const HFP_CEILING_PER_DEVICE: c_int = 2;

/// The smallest `struct_size` `hfp_pool_new` accepts: the first version's fields. (The
/// header defines it as a macro with `offsetof`, in cbindgen.toml's trailer.)
pub(crate) const HFP_CONFIG_MIN_SIZE: usize = offset_of!(hfp_config, runtime) + size_of::<*const c_char>();

/// `hfp_plan_desc.transform`: `HIPFFT_R2C`, real to complex, single precision.
pub const HFP_R2C: c_int = 0x2a;
/// `HIPFFT_C2R`: complex to real, single precision.
pub const HFP_C2R: c_int = 0x2c;
/// `HIPFFT_C2C`: complex to complex, single precision.
pub const HFP_C2C: c_int = 0x29;
/// `HIPFFT_D2Z`: real to complex, double precision.
pub const HFP_D2Z: c_int = 0x6a;
/// `HIPFFT_Z2D`: complex to real, double precision.
pub const HFP_Z2D: c_int = 0x6c;
/// `HIPFFT_Z2Z`: complex to complex, double precision.
pub const HFP_Z2Z: c_int = 0x69;
/// `hfp_lease_exec`'s direction: `HIPFFT_FORWARD` (-1).
pub const HFP_FORWARD: c_int = -1;
/// `HIPFFT_BACKWARD` (+1), unnormalized.
pub const HFP_INVERSE: c_int = 1;

impl hfp_config {
    pub(crate) fn defaults() -> Self {
        hfp_config {
            struct_size: size_of::<hfp_config>(),
            capacity: DEFAULT_CAPACITY,
            live_ceiling: 0,
            acquire_timeout_ms: DEFAULT_ACQUIRE_TIMEOUT.as_millis() as u64,
            work_area_budget: 0,
            runtime: std::ptr::null(),
            shutdown_timeout_ms: DEFAULT_SHUTDOWN_TIMEOUT.as_millis() as u64,
            ceiling_scope: HFP_CEILING_PROCESS_WIDE,
            watchdog_ms: DEFAULT_WATCHDOG_THRESHOLD.as_millis() as u64,
        }
    }

    /// Reads a caller's config (of any version at least `HFP_CONFIG_MIN_SIZE`) into a
    /// checked `PoolConfig`.
    ///
    /// # Safety
    /// `cfg` points to at least `struct_size` readable bytes (at least the first field), and
    /// `runtime` is NULL or a NUL-terminated string.
    pub(crate) unsafe fn to_pool_config(cfg: *const hfp_config) -> Result<PoolConfig, Failure> {
        // SAFETY: the caller vouches for the first field.
        let size = unsafe { std::ptr::addr_of!((*cfg).struct_size).read_unaligned() };
        if size < HFP_CONFIG_MIN_SIZE {
            return Err(Failure::invalid(format!(
                "invalid configuration: `struct_size` = {size} is smaller than the first version of hfp_config \
                 ({HFP_CONFIG_MIN_SIZE} bytes); set it to sizeof(hfp_config) or call hfp_config_default"
            )));
        }
        let covers = |end: usize| size >= end;
        // Fields are read through raw pointers, never through a `&hfp_config`: an older
        // caller's struct may be shorter than this version's.
        macro_rules! field {
            ($name:ident) => {
                // SAFETY: `struct_size` bytes are readable and cover this field (checked by
                // the caller of the macro: the first version's fields are always covered).
                unsafe { std::ptr::addr_of!((*cfg).$name).read() }
            };
        }
        macro_rules! later_field {
            ($name:ident, $ty:ty) => {
                if covers(offset_of!(hfp_config, $name) + size_of::<$ty>()) { field!($name) } else { Default::default() }
            };
        }
        let or = |v: usize, d: usize| if v == 0 { d } else { v };
        let capacity = or(field!(capacity), DEFAULT_CAPACITY);
        let live_ceiling = or(field!(live_ceiling), capacity);
        let ms = |v: u64, d: Duration| if v == 0 { d } else { Duration::from_millis(v) };
        let name: *const c_char = field!(runtime);
        let runtime = if name.is_null() {
            RuntimeChoice::Auto
        } else {
            // SAFETY: the caller vouches for a NUL-terminated string.
            let raw = unsafe { CStr::from_ptr(name) };
            raw.to_str().ok().and_then(RuntimeChoice::parse).ok_or_else(|| {
                Failure::invalid(format!(
                    "invalid configuration: `runtime` = {:?}: expected \"auto\", \"sim\", \"hip\" or \"cuda\" (or NULL for auto)",
                    raw.to_string_lossy()
                ))
            })?
        };
        let shutdown: u64 = later_field!(shutdown_timeout_ms, u64);
        let scope: c_int = later_field!(ceiling_scope, c_int);
        let watchdog: u64 = later_field!(watchdog_ms, u64);
        let work_area_budget: usize = field!(work_area_budget);
        let acquire_ms: u64 = field!(acquire_timeout_ms);
        let mut b = PoolConfig::builder()
            .capacity(capacity)
            .live_ceiling(live_ceiling)
            .acquire_timeout(ms(acquire_ms, DEFAULT_ACQUIRE_TIMEOUT))
            .shutdown_timeout(ms(shutdown, DEFAULT_SHUTDOWN_TIMEOUT))
            .watchdog_threshold(ms(watchdog, DEFAULT_WATCHDOG_THRESHOLD))
            .runtime(runtime);
        b = match scope {
            HFP_CEILING_PROCESS_WIDE => b,
            HFP_CEILING_PRIVATE => b.private_ceiling(live_ceiling),
            HFP_CEILING_PER_DEVICE => b.per_device_ceiling(live_ceiling),
            other => {
                return Err(Failure::invalid(format!(
                    "invalid configuration: `ceiling_scope` = {other}: expected HFP_CEILING_PROCESS_WIDE (0), \
                     HFP_CEILING_PRIVATE (1) or HFP_CEILING_PER_DEVICE (2)"
                )));
            }
        };
        if work_area_budget != 0 {
            b = b.work_area_budget(work_area_budget);
        }
        Ok(b.build()?)
    }
}

/// One transform, as `hipfftMakePlanMany64` takes it. Two descriptors get the same plan
/// when the fields the plan depends on are equal (unused `n` slots and embeds past `rank`
/// are ignored).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct hfp_plan_desc {
    /// Device ordinal the plan is made on (and executes on).
    pub device: c_int,
    /// A `hipfftType` value: `HFP_R2C`, `HFP_C2R`, `HFP_C2C`, `HFP_D2Z`, `HFP_Z2D`, `HFP_Z2Z`.
    pub transform: c_int,
    /// 1, 2 or 3.
    pub rank: c_int,
    /// Logical lengths, slowest first; only the first `rank` are read. For real transforms
    /// the last one is the real length (the complex side holds n/2+1 points).
    pub n: [i64; 3],
    /// Transforms per execution.
    pub batch: i64,
    /// Borrowed, read during the call only: `rank` input embeds, or NULL for the packed
    /// layout (then `istride` and `idist` are ignored, as in hipFFT).
    pub inembed: *const i64,
    /// Input element stride (with `inembed`).
    pub istride: i64,
    /// Input batch distance (with `inembed`).
    pub idist: i64,
    /// Borrowed, read during the call only: `rank` output embeds, or NULL for packed
    /// (then `ostride` and `odist` are ignored).
    pub onembed: *const i64,
    /// Output element stride (with `onembed`).
    pub ostride: i64,
    /// Output batch distance (with `onembed`).
    pub odist: i64,
}

impl hfp_plan_desc {
    /// The crate's descriptor. The transform and the rank are checked here (the rank before
    /// any embed is read); every other field is checked by `PlanDesc::validate` on a miss.
    ///
    /// # Safety
    /// When `rank` is 1..=3, non-null embed pointers point to `rank` readable `int64_t`s.
    pub(crate) unsafe fn to_desc(self) -> Result<PlanDesc, DescError> {
        let transform = TransformType::from_raw(self.transform)?;
        if !(1..=3).contains(&self.rank) {
            return Err(DescError::RankOutOfRange { value: self.rank as i64 });
        }
        let rank = self.rank as usize;
        let layout = |embed: *const i64, stride: i64, dist: i64| {
            // SAFETY: the caller vouches for `rank` readable entries.
            (!embed.is_null()).then(|| Layout::new(unsafe { std::slice::from_raw_parts(embed, rank) }, stride, dist))
        };
        let mut n = [0i64; 3];
        n[..rank].copy_from_slice(&self.n[..rank]);
        Ok(PlanDesc {
            device: self.device,
            transform,
            rank: rank as u32,
            n,
            batch: self.batch,
            input: layout(self.inembed, self.istride, self.idist),
            output: layout(self.onembed, self.ostride, self.odist),
        })
    }
}

/// Every count of a pool at one moment (see `hfp_pool_metrics`). Set `struct_size` to
/// `sizeof(hfp_metrics)` before the call; a smaller value than this version's size is
/// rejected, and fields a later version adds past it are not written.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hfp_metrics {
    /// `sizeof(hfp_metrics)`, set by the caller.
    pub struct_size: usize,
    /// This pool's live handles (cached + retired awaiting their last lease + being created).
    pub live: usize,
    /// The most live handles this pool has had at once.
    pub peak_live: usize,
    /// Live handles of every pool sharing the ceiling.
    pub process_live: usize,
    /// The most live handles of the ceiling's pools at once.
    pub process_peak_live: usize,
    /// The live ceiling: the most handles that may be alive at once.
    pub ceiling: usize,
    /// The most plans the cache keeps.
    pub capacity: usize,
    /// Plans in the cache now.
    pub cached: usize,
    /// Leases not yet released (executions possibly in flight).
    pub in_flight: usize,
    /// Evicted plans waiting for their last lease.
    pub retired_pending: usize,
    /// Plans being created right now (their slots are taken).
    pub creating: usize,
    /// Bytes of work areas the pool's plans own (auto-allocated plans only).
    pub work_area_bytes: usize,
    /// Acquires served from the cache.
    pub hits: u64,
    /// Acquires that had to create a plan (or join a creation).
    pub misses: u64,
    /// Plans evicted from the cache (destroyed now, or retired until their last lease).
    pub evictions: u64,
    /// Plans created.
    pub creations: u64,
    /// Plans destroyed.
    pub destroys: u64,
    /// Misses that waited at the ceiling.
    pub ceiling_waits: u64,
    /// Misses that gave up at the ceiling after the acquire timeout.
    pub ceiling_timeouts: u64,
    /// Plan creations the runtime refused.
    pub create_failures: u64,
    /// Plan destroys the runtime reported as failed (the slot is given back anyway).
    pub destroy_failures: u64,
    /// Executions the runtime refused.
    pub exec_failures: u64,
    /// Event creates, records or queries that failed (release then falls back to synchronizing).
    pub event_failures: u64,
    /// Times the flush hook was called before a wait at the ceiling.
    pub flush_hook_calls: u64,
    /// Runtime calls past the watchdog threshold right now.
    pub stalled: usize,
    /// Misses on a key evicted shortly before (a sign the capacity is too small).
    pub thrash_misses: u64,
    /// Thrash warnings logged.
    pub thrash_warnings: u64,
    /// 1 while the recent misses look like thrashing.
    pub thrashing: usize,
    /// Plan creations timed, and their total time in microseconds (buckets: the text export).
    pub create_latency_count: u64,
    /// Total plan-creation time, in microseconds.
    pub create_latency_sum_us: u64,
    /// Plan destroys timed, and their total time in microseconds.
    pub destroy_latency_count: u64,
    /// Total plan-destroy time, in microseconds.
    pub destroy_latency_sum_us: u64,
    /// Waits at the ceiling timed, and their total time in microseconds.
    pub ceiling_wait_latency_count: u64,
    /// Total ceiling-wait time, in microseconds.
    pub ceiling_wait_latency_sum_us: u64,
}

impl hfp_metrics {
    pub(crate) fn from_snapshot(struct_size: usize, m: &MetricsSnapshot) -> Self {
        // Destructured so that a field added to MetricsSnapshot fails to compile here.
        let MetricsSnapshot {
            live,
            peak_live,
            process_live,
            process_peak_live,
            ceiling,
            capacity,
            cached,
            in_flight,
            retired_pending,
            creating,
            work_area_bytes,
            hits,
            misses,
            evictions,
            creations,
            destroys,
            ceiling_waits,
            ceiling_timeouts,
            create_failures,
            destroy_failures,
            exec_failures,
            event_failures,
            flush_hook_calls,
            stalled,
            thrash_misses,
            thrash_warnings,
            thrashing,
            create_latency,
            destroy_latency,
            ceiling_wait_latency,
        } = m.clone();
        let us = |h: &HistogramSnapshot| (h.sum_s * 1e6).round() as u64;
        hfp_metrics {
            struct_size,
            live,
            peak_live,
            process_live,
            process_peak_live,
            ceiling,
            capacity,
            cached,
            in_flight,
            retired_pending,
            creating,
            work_area_bytes,
            hits,
            misses,
            evictions,
            creations,
            destroys,
            ceiling_waits,
            ceiling_timeouts,
            create_failures,
            destroy_failures,
            exec_failures,
            event_failures,
            flush_hook_calls,
            stalled,
            thrash_misses,
            thrash_warnings,
            thrashing,
            create_latency_count: create_latency.count,
            create_latency_sum_us: us(&create_latency),
            destroy_latency_count: destroy_latency.count,
            destroy_latency_sum_us: us(&destroy_latency),
            ceiling_wait_latency_count: ceiling_wait_latency.count,
            ceiling_wait_latency_sum_us: us(&ceiling_wait_latency),
        }
    }
}
