//! Detects whether `hipfft_pool::sim::SimRuntime` exists yet (it is written on another
//! branch). When it does, the shim is backed by it; until then by `src/standin.rs`, a minimal
//! in-memory runtime with the same constructor. Delete this file and `standin.rs` once the
//! simulated runtime has landed everywhere (keep the soname line).

use std::path::Path;

fn mentions_sim_runtime(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            mentions_sim_runtime(&p)
        } else {
            p.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&p).is_ok_and(|s| s.contains("pub struct SimRuntime"))
        }
    })
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hip_shim_has_sim)");
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("src").join("sim");
    println!("cargo::rerun-if-changed={}", sim.display());
    println!("cargo::rerun-if-changed=build.rs");
    // hipFFT's soname, so that a process that mapped the shim (as the real hipFFT would be
    // mapped through DT_NEEDED) is found by HipRuntime::load's RTLD_NOLOAD probe.
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libhipfft.so.0");
    }
    if mentions_sim_runtime(&sim) {
        println!("cargo::rustc-cfg=hip_shim_has_sim");
    }
}
