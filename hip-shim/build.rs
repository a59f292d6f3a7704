//! hipFFT's soname, so that a process that mapped the shim (as the real hipFFT would be
//! mapped through DT_NEEDED) is found by HipRuntime::load's RTLD_NOLOAD probe. A version
//! script exports only the HIP and hipFFT names: without it the `hfp_*` C ABI of the
//! hipfft-pool crate linked inside would be exported too.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libhipfft.so.0");
        let map = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.map");
        println!("cargo::rerun-if-changed=exports.map");
        println!("cargo::rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
        println!("cargo::rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
    }
}
