//! The correctness suite through the simulated runtime directly and through `HipRuntime`
//! over hip-shim (dynamic loading and every FFI call of the HIP path).

mod common;

use std::sync::Arc;

use hipfft_pool::Runtime;
use hipfft_pool::check::correctness::{self, Outcome};
use hipfft_pool::runtime::hip::HipRuntime;
use hipfft_pool::runtime::sim::SimRuntime;

fn check(label: &str, outcomes: &[Outcome]) {
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(|o| format!("{}: error {:?} bar {:e} {}", o.name, o.error, o.bar, o.failure.clone().unwrap_or_default()))
        .collect();
    let (single, double) = correctness::max_errors(outcomes);
    println!("{label}: {} cases, max error {single:.2e} single, {double:.2e} double", outcomes.len());
    assert!(failed.is_empty(), "{label}: {} failed:\n{}", failed.len(), failed.join("\n"));
    assert!(outcomes.len() > 60, "the suite shrank");
}

#[test]
fn the_suite_passes_on_the_simulated_runtime() {
    let rt: Arc<dyn Runtime> = Arc::new(SimRuntime::new(Default::default()));
    check("sim", &correctness::run_all(&rt));
}

#[test]
fn the_suite_passes_through_hip_runtime_over_hip_shim() {
    let hip = HipRuntime::load_from(&common::shim::hipfft_path(), &common::shim::hip_path()).expect("loading hip-shim");
    let rt: Arc<dyn Runtime> = Arc::new(hip);
    check("hip over hip-shim", &correctness::run_all(&rt));
}
