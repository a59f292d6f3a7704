//! Exports only hipFFT's names and `hfp_intercept_*`: a version script on top of rustc's own
//! list, which would otherwise also export the `hfp_*` C ABI of the hipfft-pool crate linked
//! inside (two pools' worth of state behind one set of names in a process that also links
//! libhipfft_pool.so).
//!
//! And keeps the hot text together: the per-transform exports and what they call on a
//! resident plan are in `.text.hot.hipfft_pool` (see `hipfft_pool_intercept::entry::serve`);
//! GNU ld groups `.text.hot.*` by default, lld (rustc's linker on x86_64 Linux) only with
//! `-z keep-text-section-prefix`.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=exports.map");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        let map = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.map");
        println!("cargo::rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
        println!("cargo::rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
        println!("cargo::rustc-cdylib-link-arg=-Wl,-z,keep-text-section-prefix");
    }
}
