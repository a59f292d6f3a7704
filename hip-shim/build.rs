//! hipFFT's soname, so that a process that mapped the shim (as the real hipFFT would be
//! mapped through DT_NEEDED) is found by HipRuntime::load's RTLD_NOLOAD probe.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libhipfft.so.0");
    }
}
