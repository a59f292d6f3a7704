//! The interposer's host time per transform as MLX drives it, over a runtime that does
//! nothing ([`NullRuntime`]), with the caches warm and with them cold.
//!
//! MLX's CUDA backend, per FFT: `cufftSetStream` and `cufftSetWorkArea` on its handle, then
//! `cufftXtExec` inside a graph capture of its own (docs/frameworks.md). Here: 26 handles of
//! the probe shapes, each captured once so that its plan is resident, then the three calls
//! per transform, each through the re-entrancy route and panic boundary of an export.
//!
//! Between two transforms MLX runs tens of microseconds of its own code, which evicts the
//! interposer's lines from the core's caches: in MLX's process the three calls cost several
//! times what they cost back to back (`HIPFFT_POOL_HOST_PROFILE`, runs 29 to 34 of
//! docs/frameworks.md). `cold` reproduces that: before each transform (untimed) it reads a
//! buffer larger than the L2 cache. That leaves the interposer's code in the core's
//! instruction cache, which MLX's own code (Python, MLX, the CUDA driver) does not: `cold
//! code` also runs, before each transform, an instruction sled of CODE_KIB (default 1024)
//! KiB, more code than the L1 and most of the L2 hold (the sled's mapping is kept for the
//! process's life). Each figure is the median over transforms of the time of the three
//! calls, less the median of an empty timed region (the clock's own cost).
//!
//!     cargo bench -p hipfft-pool-intercept --bench mlx_pattern [-- TRANSFORMS [EVICT_MIB [CODE_KIB]]]

mod common;

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

use hipfft_pool::{DevicePtr, RawStream};
use hipfft_pool_intercept::{ExecKind, Flavor, entry};

/// Runs `body` as an exported function would (re-entrancy route, then the panic boundary).
fn exported(name: &'static str, real: &OnceLock<usize>, body: impl FnOnce() -> Result<(), hipfft_pool_intercept::Fail>) -> i32 {
    match entry::reentry(Flavor::Cufft, name, real) {
        entry::Route::Serve => entry::serve(Flavor::Cufft, name, body),
        _ => unreachable!("the bench never calls from inside the interposer"),
    }
}

/// An executable run of `kib` KiB of one-byte no-ops ending in `ret`: calling it pulls that
/// much code through the instruction caches, as a framework's own code between two calls
/// does. `None` where the system refuses executable anonymous memory.
fn instruction_sled(kib: usize) -> Option<extern "C" fn()> {
    let len = (kib << 10).max(1);
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len + 1, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `len + 1` writable bytes at `p`, ours alone.
    unsafe {
        std::ptr::write_bytes(p as *mut u8, 0x90, len); // nop
        *(p as *mut u8).add(len) = 0xc3; // ret
    }
    // SAFETY: the mapping above, made executable and never written again.
    if unsafe { libc::mprotect(p, len + 1, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
        return None;
    }
    // SAFETY: x86-64 code that takes nothing, touches nothing and returns: a C function.
    Some(unsafe { std::mem::transmute::<*mut libc::c_void, extern "C" fn()>(p) })
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; numbers are ours.
    let nums: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let transforms = nums.first().copied().unwrap_or(20_000);
    let evict_mib = nums.get(1).copied().unwrap_or(8);
    let code_kib = nums.get(2).copied().unwrap_or(1024);
    let common::ProbeEngine { null, engine, shapes, handles, dirs } = common::probe_engine();
    let n = shapes.len();
    let stream = RawStream(0x7000);
    let (input, output, area) = (DevicePtr(0x10_0000), DevicePtr(0x20_0000), DevicePtr(0x30_0000));
    static SET_STREAM: OnceLock<usize> = OnceLock::new();
    static SET_AREA: OnceLock<usize> = OnceLock::new();
    static XT_EXEC: OnceLock<usize> = OnceLock::new();
    let transform = |i: usize| {
        let h = handles[i];
        assert_eq!(exported("cufftSetStream", &SET_STREAM, || engine.set_stream(h, stream, "cufftSetStream")), 0);
        assert_eq!(exported("cufftSetWorkArea", &SET_AREA, || engine.set_work_area(h, area, "cufftSetWorkArea")), 0);
        null.set_capturing(Some(stream));
        let r = exported("cufftXtExec", &XT_EXEC, || engine.exec(h, ExecKind::Xt, "cufftXtExec", input, output, dirs[i]));
        null.set_capturing(None);
        assert_eq!(r, 0);
    };
    // The first round captures every handle once: each plan becomes resident.
    (0..n).for_each(transform);
    let residents = serde_json::from_str::<serde_json::Value>(&engine.metrics_json()).expect("metrics")["capture_residents"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(residents, n as u64, "every plan resident after one captured round");

    let evict = vec![1u8; evict_mib << 20];
    let sled = if cfg!(target_arch = "x86_64") { instruction_sled(code_kib) } else { None };
    let mut sink = 0u64;
    #[derive(Clone, Copy, PartialEq)]
    enum Caches {
        Hot,
        Cold,
        ColdCode,
    }
    let mut measure = |caches: Caches, work: &mut dyn FnMut(usize)| -> u64 {
        let mut times = Vec::with_capacity(transforms);
        for k in 0..transforms {
            if caches != Caches::Hot {
                // Every line of a buffer larger than the L2, as a framework's own work would.
                sink = evict.iter().step_by(64).fold(sink, |a, &b| a.wrapping_add(b as u64));
            }
            if caches == Caches::ColdCode {
                if let Some(f) = sled {
                    f();
                }
            }
            let t = Instant::now();
            work(k % n);
            times.push(t.elapsed().as_nanos() as u64);
        }
        median(times)
    };
    let clock_hot = measure(Caches::Hot, &mut |i| {
        black_box(i);
    });
    let clock_cold = measure(Caches::Cold, &mut |i| {
        black_box(i);
    });
    let clock_code = measure(Caches::ColdCode, &mut |i| {
        black_box(i);
    });
    let hot = measure(Caches::Hot, &mut |i| transform(i));
    let cold = measure(Caches::Cold, &mut |i| transform(i));
    let cold_code = measure(Caches::ColdCode, &mut |i| transform(i));
    black_box(sink);
    let code = match sled {
        Some(_) => format!("{} after running {code_kib} KiB of code too (clock {clock_code})", cold_code.saturating_sub(clock_code)),
        None => "not measured (no executable memory for the instruction sled)".to_string(),
    };
    println!(
        "mlx_pattern: {transforms} transforms of {n} resident handles (set-stream, set-work-area, captured exec), ns per transform: \
         hot {} (clock {clock_hot}), cold {} after reading {evict_mib} MiB (clock {clock_cold}), cold code {code}",
        hot.saturating_sub(clock_hot),
        cold.saturating_sub(clock_cold),
    );
    let m: serde_json::Value = serde_json::from_str(&engine.metrics_json()).expect("metrics");
    // Ground truth from the runtime: no plan was made after the first round.
    assert_eq!(null.plans_made(), n);
    assert!(m["resident_execs"].as_u64().unwrap_or(0) >= 3 * transforms as u64, "{m}");
}
