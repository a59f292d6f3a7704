//! Arbitrary bytes through the real C entry points (`hfp_*`), on the simulated runtime
//! (device memory is host memory, so the buffers here are plain allocations).
//!
//! `hfp_config` is decoded with any `struct_size` (the struct is copied into an allocation
//! of exactly that many bytes, so AddressSanitizer catches a read past what the caller
//! said it passed), any capacity, ceiling, timeouts, ceiling scope and runtime name;
//! `hfp_plan_desc` with any device, transform, rank, lengths, batch, strides and distances,
//! and embed pointers that are NULL or point to exactly `rank` entries of their own
//! allocation. Every call must return a defined status other than `HFP_INTERNAL_ERROR`
//! (which is a caught panic: a bug), with a message naming what was wrong; a plan that is
//! made must execute correctly (small transforms are checked against
//! `hipfft_pool::check::reference`; huge ones are only made), and its lease must release cleanly.
//! Runtime names that would load a GPU library ("auto", "hip", "cuda") are replaced by
//! "sim": the fuzzer exercises the ABI, not the dynamic loader.
#![no_main]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::mem::size_of;
use std::ptr;

use arbitrary::Arbitrary;
use hipfft_pool::ffi::*;
use hipfft_pool::check::reference;
use hipfft_pool::{DescError, Direction, Layout, PlanDesc, TransformType};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    config: ConfigIn,
    descs: Vec<DescIn>,
    capacity_changes: Vec<u16>,
    metrics_text_len: u16,
}

#[derive(Arbitrary, Debug)]
enum StructSize {
    Full,
    FirstVersion,
    Any(u16),
}

#[derive(Arbitrary, Debug)]
enum Runtime {
    Sim,
    Null,
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct ConfigIn {
    struct_size: StructSize,
    capacity: Small<usize>,
    live_ceiling: Small<usize>,
    acquire_timeout_ms: u64,
    work_area_budget: Small<usize>,
    runtime: Runtime,
    shutdown_timeout_ms: u64,
    ceiling_scope: Small<i32>,
    watchdog_ms: u64,
}

/// Mostly small values, sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Small<T> {
    Small(u8),
    Any(T),
}

impl Small<usize> {
    fn get(self) -> usize {
        match self {
            Small::Small(v) => (v % 12) as usize,
            Small::Any(v) => v,
        }
    }
}
impl Small<i64> {
    fn get(self) -> i64 {
        match self {
            Small::Small(v) => (v % 20) as i64 - 2,
            Small::Any(v) => v,
        }
    }
}
impl Small<i32> {
    fn get(self) -> i32 {
        match self {
            Small::Small(v) => (v % 6) as i32 - 1,
            Small::Any(v) => v,
        }
    }
}

#[derive(Arbitrary, Debug)]
struct DescIn {
    device: Small<i32>,
    transform: Transform,
    rank: Small<i32>,
    n: [Small<i64>; 3],
    batch: Small<i64>,
    inembed: Option<[Small<i64>; 3]>,
    istride: Small<i64>,
    idist: Small<i64>,
    onembed: Option<[Small<i64>; 3]>,
    ostride: Small<i64>,
    odist: Small<i64>,
    exec: Option<ExecIn>,
    release_after: bool,
}

#[derive(Arbitrary, Debug)]
enum Transform {
    Valid(u8),
    Any(i32),
}

#[derive(Arbitrary, Debug)]
struct ExecIn {
    direction: Small<i32>,
    work_area: bool,
    null_input: bool,
    /// Through `hfp_lease_exec_preserving_input`, which must leave the input as it was.
    preserve: bool,
}

/// A status that must come with a message; `HFP_INTERNAL_ERROR` is a caught panic.
fn failed(s: hfp_status, call: &str) -> bool {
    assert_ne!(s, hfp_status::HFP_INTERNAL_ERROR, "{call}: a panic inside the library: {}", last());
    if s == hfp_status::HFP_OK {
        return false;
    }
    let msg = last();
    assert!(!msg.is_empty(), "{call}: {s:?} without a message");
    assert!(msg.len() < 8192, "{call}: runaway message");
    true
}

fn last() -> String {
    // SAFETY: always a valid NUL-terminated string.
    unsafe { CStr::from_ptr(hfp_last_error_message()) }.to_string_lossy().into_owned()
}

/// `n` bytes of fresh, 8-aligned memory (whole `u64`s: ASan's granularity is 8 bytes).
fn words(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8).max(1)]
}

fuzz_target!(|input: Input| {
    if input.descs.len() > 6 || input.capacity_changes.len() > 4 {
        return;
    }
    null_arguments();

    // ---- the configuration ----
    let c = &input.config;
    let name: Option<CString> = match &c.runtime {
        Runtime::Sim => Some(c"sim".to_owned()),
        Runtime::Null => Some(c"sim".to_owned()), // NULL means "auto": it would probe the GPU libraries
        Runtime::Bytes(b) => {
            let b: Vec<u8> = b.iter().copied().filter(|&x| x != 0).take(64).collect();
            let s = CString::new(b).unwrap();
            Some(if matches!(s.to_bytes(), b"auto" | b"hip" | b"cuda") { c"sim".to_owned() } else { s })
        }
    };
    let mut cfg = std::mem::MaybeUninit::<hfp_config>::uninit();
    // SAFETY: a whole hfp_config to write.
    assert_eq!(unsafe { hfp_config_default(cfg.as_mut_ptr()) }, hfp_status::HFP_OK);
    // SAFETY: initialized by hfp_config_default.
    let mut cfg = unsafe { cfg.assume_init() };
    assert_eq!(cfg.struct_size, size_of::<hfp_config>());
    let min = hfp_config_min_size();
    cfg.struct_size = match c.struct_size {
        StructSize::Full => size_of::<hfp_config>(),
        StructSize::FirstVersion => min,
        StructSize::Any(v) => v as usize,
    };
    cfg.capacity = c.capacity.get();
    cfg.live_ceiling = c.live_ceiling.get();
    cfg.acquire_timeout_ms = c.acquire_timeout_ms;
    cfg.work_area_budget = c.work_area_budget.get();
    cfg.runtime = name.as_ref().map_or(ptr::null(), |n| n.as_ptr());
    cfg.shutdown_timeout_ms = c.shutdown_timeout_ms;
    cfg.ceiling_scope = c.ceiling_scope.get();
    cfg.watchdog_ms = c.watchdog_ms;
    // Exactly `struct_size` bytes (at least the first field), as a caller of that header
    // version would pass.
    let given = cfg.struct_size.clamp(size_of::<usize>(), size_of::<hfp_config>());
    let mut buf = words(cfg.struct_size.max(size_of::<usize>()));
    // SAFETY: `buf` holds at least `given` bytes; `cfg` is a whole hfp_config.
    unsafe { ptr::copy_nonoverlapping((&cfg as *const hfp_config).cast::<u8>(), buf.as_mut_ptr().cast::<u8>(), given) };
    let buf = shrink(buf, cfg.struct_size.max(size_of::<usize>()));
    let mut pool: *mut hfp_pool = ptr::dangling_mut();
    // SAFETY: `buf` holds the struct the caller claims; `pool` is writable.
    let s = unsafe { hfp_pool_new(buf.as_ptr().cast::<hfp_config>(), &mut pool) };
    if failed(s, "hfp_pool_new") {
        assert!(pool.is_null(), "out not cleared on failure");
        assert_eq!(s, hfp_status::HFP_INVALID_ARGUMENT, "{}", last());
        return;
    }
    assert!(cfg.struct_size >= min, "a struct_size below the first version was accepted");
    assert!(!pool.is_null());
    // SAFETY: a pool from hfp_pool_new.
    let rt = unsafe { CStr::from_ptr(hfp_pool_runtime(pool)) };
    assert_eq!(rt.to_bytes(), b"sim");
    let mut m = metrics(pool);
    let ceiling = m.ceiling;
    // Split per device, the capacity is not bounded by one device's ceiling.
    assert!(m.capacity >= 1 && (m.capacity <= ceiling || cfg.ceiling_scope == HFP_CEILING_PER_DEVICE), "{m:?}");

    // ---- descriptors ----
    for d in &input.descs {
        let embed = |e: &Option<[Small<i64>; 3]>, rank: i32| -> Option<Vec<i64>> {
            // Exactly `rank` entries when the rank is valid, one otherwise (it must not be read).
            e.map(|e| {
                let k = if (1..=3).contains(&rank) { rank as usize } else { 1 };
                e[..k].iter().map(|v| v.get()).collect()
            })
        };
        let rank = d.rank.get();
        let transform = match d.transform {
            Transform::Valid(i) => TransformType::ALL[i as usize % 6] as c_int,
            Transform::Any(v) => v,
        };
        let inembed = embed(&d.inembed, rank);
        let onembed = embed(&d.onembed, rank);
        let device = match d.device {
            Small::Small(v) => (v % 3) as i32 - (v % 5 == 4) as i32,
            Small::Any(v) => v,
        };
        let raw = hfp_plan_desc {
            device,
            transform,
            rank,
            n: d.n.map(|v| v.get()),
            batch: d.batch.get(),
            inembed: inembed.as_ref().map_or(ptr::null(), |v| v.as_ptr()),
            istride: d.istride.get(),
            idist: d.idist.get(),
            onembed: onembed.as_ref().map_or(ptr::null(), |v| v.as_ptr()),
            ostride: d.ostride.get(),
            odist: d.odist.get(),
        };
        let mut lease: *mut hfp_lease = ptr::dangling_mut();
        // SAFETY: the pool is live; the descriptor's embeds hold `rank` entries.
        let s = unsafe { hfp_acquire(pool, &raw, &mut lease) };
        let mine = our_desc(&raw, inembed.as_deref(), onembed.as_deref());
        if failed(s, "hfp_acquire") {
            assert!(lease.is_null(), "out not cleared on failure");
            let msg = last();
            match s {
                hfp_status::HFP_INVALID_DESCRIPTOR => {
                    assert!(mine.as_ref().is_none_or(|d| d.validate().is_err()), "a valid descriptor was rejected: {msg}");
                    if let Some(d) = mine.as_ref().filter(|d| matches!(d.validate(), Err(DescError::OutputOverlap { .. }))) {
                        // Checked by brute force where that is cheap.
                        assert!(d.extents().unwrap().output_elements > 1 << 16 || output_aliases(d), "{d}: no overlap, but {msg}");
                    }
                    assert!(msg.contains('`') && msg.contains(" = "), "the message names no field: {msg}");
                }
                hfp_status::HFP_RUNTIME_ERROR => {
                    assert!(msg.contains(" failed with ") && msg.ends_with(')'), "no call and code: {msg}");
                }
                hfp_status::HFP_CEILING_TIMEOUT => {} // a process-wide ceiling shared with earlier inputs
                // A creation still running past an acquire timeout of any length (a few ms on a
                // loaded machine): the device is marked stuck until it returns.
                hfp_status::HFP_DEVICE_STUCK => assert!(msg.contains("is stuck") && msg.contains("running for"), "{msg}"),
                other => panic!("hfp_acquire: {other:?}: {msg}"),
            }
            continue;
        }
        let desc = mine.expect("a plan was made for a descriptor the library could not have read");
        let ext = desc.validate().expect("a plan was made for an invalid descriptor");
        assert!(ext.output_elements > 1 << 16 || !output_aliases(&desc), "{desc}: accepted with overlapping outputs");
        // SAFETY: a live lease.
        let (plan, work) = unsafe { (hfp_lease_plan(lease), hfp_lease_work_size(lease)) };
        assert!(!plan.is_null());
        let mut pending = false;
        if let Some(x) = &d.exec {
            let small = ext.input_bytes <= 1 << 16 && ext.output_bytes <= 1 << 16 && work <= 1 << 20;
            if small {
                pending = exec(pool, lease, &desc, work, x);
            }
        }
        if d.release_after {
            // SAFETY: a live lease; NULL is the null stream.
            let s = unsafe { hfp_lease_release_after(lease, ptr::null_mut()) };
            if failed(s, "hfp_lease_release_after") {
                // Not consumed: still ours.
                // SAFETY: as above.
                assert!(!failed(unsafe { hfp_pool_synchronize(pool, ptr::null_mut()) }, "sync"));
                assert!(!failed(unsafe { hfp_lease_release(lease) }, "hfp_lease_release"));
            }
        } else {
            if pending {
                // SAFETY: the pool is live.
                assert!(!failed(unsafe { hfp_pool_synchronize(pool, ptr::null_mut()) }, "sync"));
            }
            // SAFETY: a live lease, released once.
            assert!(!failed(unsafe { hfp_lease_release(lease) }, "hfp_lease_release"));
        }
        m = metrics(pool);
        assert!(m.process_live <= m.ceiling, "{m:?}");
    }

    // ---- pool operations ----
    for &c in &input.capacity_changes {
        let c = c as usize;
        // SAFETY: the pool is live.
        let s = unsafe { hfp_pool_set_capacity(pool, c) };
        if failed(s, "hfp_pool_set_capacity") {
            assert_eq!(s, hfp_status::HFP_INVALID_ARGUMENT);
            assert!(last().contains("capacity"), "{}", last());
        }
    }
    metrics_text(pool, input.metrics_text_len as usize);
    // SAFETY: the pool is live.
    assert!(!failed(unsafe { hfp_pool_synchronize(pool, ptr::null_mut()) }, "sync"));
    assert!(!failed(unsafe { hfp_pool_trim(pool) }, "trim"));
    let m = metrics(pool);
    assert!(m.process_live <= m.ceiling && m.cached <= m.capacity, "{m:?}");
    // SAFETY: the pool, given up; nothing uses it after.
    unsafe { hfp_pool_free(pool) };
});

/// Runs one transform and checks it. Returns whether work is still pending on the stream.
fn exec(pool: *mut hfp_pool, lease: *mut hfp_lease, desc: &PlanDesc, work: usize, x: &ExecIn) -> bool {
    let ext = desc.validate().unwrap();
    let input = reference::random_input(desc, 7);
    let mut d_in = words(ext.input_bytes);
    // SAFETY: `d_in` holds at least `input.len()` bytes.
    unsafe { ptr::copy_nonoverlapping(input.as_ptr(), d_in.as_mut_ptr().cast::<u8>(), input.len()) };
    let mut d_out = words(ext.output_bytes);
    let mut area = words(work);
    let direction = x.direction.get();
    let fixed = if desc.transform.is_forward_real() {
        Some(-1)
    } else if desc.transform.is_inverse_real() {
        Some(1)
    } else {
        None
    };
    let in_ptr: *mut c_void = if x.null_input { ptr::null_mut() } else { d_in.as_mut_ptr().cast() };
    let area_ptr: *mut c_void = if x.work_area { area.as_mut_ptr().cast() } else { ptr::null_mut() };
    // SAFETY: a live lease; the buffers hold what the descriptor implies (device memory is
    // host memory on the sim), the work area `work` bytes; the null stream.
    let s = if x.preserve {
        // SAFETY: a live lease.
        let mut scratch = words(unsafe { hfp_lease_input_bytes(lease) });
        assert!(scratch.len() * 8 >= ext.input_bytes);
        // SAFETY: as below, and `scratch` holds the input's bytes.
        let s = unsafe {
            hfp_lease_exec_preserving_input(
                lease,
                ptr::null_mut(),
                in_ptr,
                d_out.as_mut_ptr().cast(),
                direction,
                area_ptr,
                scratch.as_mut_ptr().cast(),
            )
        };
        if s == hfp_status::HFP_OK {
            // SAFETY: the pool is live; the copy must be done before `scratch` goes.
            assert!(!failed(unsafe { hfp_pool_synchronize(pool, ptr::null_mut()) }, "sync"));
            // SAFETY: `d_in` holds at least `input.len()` bytes.
            let now = unsafe { std::slice::from_raw_parts(d_in.as_ptr().cast::<u8>(), input.len()) };
            assert!(now == &input[..], "{desc}: the preserved input changed");
        }
        s
    } else {
        // SAFETY: a live lease; the buffers hold what the descriptor implies (device memory
        // is host memory on the sim), the work area `work` bytes; the null stream.
        unsafe { hfp_lease_exec(lease, ptr::null_mut(), in_ptr, d_out.as_mut_ptr().cast(), direction, area_ptr) }
    };
    let valid_direction = direction == -1 || direction == 1;
    let should_fail = x.null_input || !valid_direction || fixed.is_some_and(|f| f != direction) || (work > 0 && !x.work_area);
    if failed(s, "hfp_lease_exec") {
        assert_eq!(s, hfp_status::HFP_INVALID_ARGUMENT, "{}", last());
        assert!(should_fail, "a good execution was refused: {}", last());
        let msg = last();
        assert!(msg.contains('`'), "the message names no argument: {msg}");
        return false;
    }
    assert!(!should_fail, "a bad execution was accepted ({x:?}, work {work})");
    // SAFETY: the pool is live.
    assert!(!failed(unsafe { hfp_pool_synchronize(pool, ptr::null_mut()) }, "sync"));
    let out: &[u8] =
        // SAFETY: `d_out` holds at least `output_bytes` bytes, written by the transform.
        unsafe { std::slice::from_raw_parts(d_out.as_ptr().cast::<u8>(), ext.output_bytes) };
    let dir = Direction::from_raw(direction).unwrap();
    let want = reference::expected_output(desc, dir, &input);
    let err = reference::rel_l2_error(&reference::gather_output(desc, out), &want);
    let tol = if desc.transform.is_double() { 1e-9 } else { 1e-4 };
    assert!(err <= tol, "{desc}: relative error {err}");
    drop((d_in, area));
    false
}

/// Whether two logical output elements of `desc` land on the same address.
fn output_aliases(desc: &PlanDesc) -> bool {
    let Some(l) = desc.output else { return false };
    let ext = desc.extents().unwrap();
    let r = desc.rank();
    let dims = &ext.output_dims[..r];
    let mut pitch = vec![1i64; r];
    for k in (0..r.saturating_sub(1)).rev() {
        pitch[k] = pitch[k + 1] * l.embed[k + 1];
    }
    let mut seen = std::collections::HashSet::new();
    let per: i64 = dims.iter().product();
    for b in 0..desc.batch {
        for flat in 0..per {
            let (mut rest, mut off) = (flat, 0i64);
            for k in (0..r).rev() {
                off += (rest % dims[k]) * pitch[k];
                rest /= dims[k];
            }
            if !seen.insert(b * l.dist + off * l.stride) {
                return true;
            }
        }
    }
    false
}

/// What the library should have read from `raw` (`None`: it must not read the embeds).
fn our_desc(raw: &hfp_plan_desc, inembed: Option<&[i64]>, onembed: Option<&[i64]>) -> Option<PlanDesc> {
    let t = TransformType::from_raw(raw.transform).ok()?;
    if !(1..=3).contains(&raw.rank) {
        return None;
    }
    let r = raw.rank as usize;
    let mut d = PlanDesc::new(t, &raw.n[..r], raw.batch).on_device(raw.device);
    if let Some(e) = inembed {
        d = d.with_input_layout(Layout::new(e, raw.istride, raw.idist));
    }
    if let Some(e) = onembed {
        d = d.with_output_layout(Layout::new(e, raw.ostride, raw.odist));
    }
    Some(d)
}

fn metrics(pool: *const hfp_pool) -> hfp_metrics {
    let mut m = hfp_metrics { struct_size: size_of::<hfp_metrics>(), ..Default::default() };
    // SAFETY: a live pool; a whole hfp_metrics.
    assert!(!failed(unsafe { hfp_pool_metrics(pool, &mut m) }, "hfp_pool_metrics"));
    let mut small = hfp_metrics { struct_size: size_of::<hfp_metrics>() - 1, ..Default::default() };
    // SAFETY: as above; the size is refused before anything is written.
    assert_eq!(unsafe { hfp_pool_metrics(pool, &mut small) }, hfp_status::HFP_INVALID_ARGUMENT);
    m
}

fn metrics_text(pool: *const hfp_pool, len: usize) {
    let mut needed = 0usize;
    // SAFETY: a live pool; a size query.
    assert!(!failed(unsafe { hfp_pool_metrics_text(pool, ptr::null_mut(), 0, &mut needed) }, "size query"));
    assert!(needed > 1);
    let len = len % (needed + 64);
    let mut buf = vec![0x55u8; len];
    let mut needed2 = 0usize;
    let p = if len == 0 { ptr::null_mut() } else { buf.as_mut_ptr().cast::<c_char>() };
    // SAFETY: `buf` holds `len` bytes.
    let s = unsafe { hfp_pool_metrics_text(pool, p, len, &mut needed2) };
    assert_ne!(s, hfp_status::HFP_INTERNAL_ERROR);
    if len > 0 {
        assert!(buf.contains(&0), "not NUL-terminated");
        if len < needed2 {
            assert_eq!(s, hfp_status::HFP_BUFFER_TOO_SMALL);
        } else {
            assert_eq!(s, hfp_status::HFP_OK);
        }
    }
}

/// NULL where a pointer is required: `HFP_INVALID_ARGUMENT` naming it, never a crash.
fn null_arguments() {
    let mut pool: *mut hfp_pool = ptr::null_mut();
    let mut lease: *mut hfp_lease = ptr::null_mut();
    let desc = hfp_plan_desc {
        device: 0,
        transform: HFP_C2C,
        rank: 1,
        n: [8, 0, 0],
        batch: 1,
        inembed: ptr::null(),
        istride: 0,
        idist: 0,
        onembed: ptr::null(),
        ostride: 0,
        odist: 0,
    };
    let refused = |s: hfp_status, name: &str| {
        assert_eq!(s, hfp_status::HFP_INVALID_ARGUMENT, "{name}");
        assert!(last().contains(&format!("`{name}`")), "{name}: {}", last());
    };
    // SAFETY: NULL pointers are allowed (and refused) by every one of these.
    unsafe {
        refused(hfp_config_default(ptr::null_mut()), "config");
        refused(hfp_pool_new(ptr::null(), &mut pool), "config");
        refused(hfp_acquire(ptr::null_mut(), &desc, &mut lease), "pool");
        refused(hfp_lease_exec(ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), -1, ptr::null_mut()), "lease");
        refused(hfp_lease_release_after(ptr::null_mut(), ptr::null_mut()), "lease");
        refused(hfp_pool_metrics(ptr::null(), ptr::null_mut()), "pool");
        refused(hfp_pool_trim(ptr::null_mut()), "pool");
        assert_eq!(hfp_lease_release(ptr::null_mut()), hfp_status::HFP_OK);
        hfp_pool_free(ptr::null_mut());
        assert!(hfp_lease_plan(ptr::null()).is_null());
        assert_eq!(hfp_lease_work_size(ptr::null()), 0);
        assert!(hfp_pool_runtime(ptr::null()).is_null());
        let name = CStr::from_ptr(hfp_status_name(12345));
        assert_eq!(name.to_bytes(), b"HFP_UNKNOWN_STATUS");
    }
}

/// `v` cut to exactly `bytes` rounded up to whole words.
fn shrink(mut v: Vec<u64>, bytes: usize) -> Vec<u64> {
    v.truncate(bytes.div_ceil(8).max(1));
    v.shrink_to_fit();
    v
}

/// `HFP_CONFIG_MIN_SIZE`: the first version's fields, through `runtime`.
fn hfp_config_min_size() -> usize {
    std::mem::offset_of!(hfp_config, runtime) + size_of::<*const c_char>()
}
