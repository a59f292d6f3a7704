//! Check tools (feature `check`): what tests, benchmarks and the command-line tool use to
//! verify the pool against ground truth. Not part of the library a host links.
//!
//! - `reference`: a CPU reference FFT (rustfft) and the relative error against it.
//! - `correctness`: cases that run every transform type through a runtime and compare.
//! - `buffer`: device buffers and streams that own their handle: the safe wrappers over the
//!   runtime's `unsafe` memory and stream calls; a drop that fails is logged and recorded.
//! - `probe`: the 26-shape probe that hung hipFFT, run through a pool.
//! - `trace`: acquire traces over the probe's shapes, run on the sim with the H200's
//!   creation costs, to compare eviction policies by the sim's own counts.
//! - `audit`: a [`Runtime`](crate::Runtime) wrapper that checks every call the pool makes.
//!
//! This layer may call every other layer; nothing in the library calls it.
#![deny(missing_docs)]

pub mod audit;
pub mod buffer;
pub mod correctness;
pub mod probe;
pub mod reference;
pub mod trace;

/// Reports a GPU test that cannot run here. With `HIPFFT_POOL_REQUIRE_GPU=1` (every device
/// script sets it) a skip is a failure: this panics with `reason`, so a GPU run that found no
/// GPU cannot pass. Otherwise (CI has no GPU) it prints `skipped: reason` and returns.
pub fn skip_without_gpu(reason: &str) {
    if std::env::var("HIPFFT_POOL_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("HIPFFT_POOL_REQUIRE_GPU=1 but this GPU test cannot run: {reason}");
    }
    println!("skipped: {reason}");
}
