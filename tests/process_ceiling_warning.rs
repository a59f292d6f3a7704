//! The first pool fixes the process-wide live ceiling; a later pool that asks for another
//! limit shares the first one and says so in `warnings()` (which C hosts read with
//! `hfp_pool_warnings`). Its own test binary: the process-wide ceiling is set once per
//! process.

use std::sync::Arc;

use hipfft_pool::runtime::sim::{SimConfig, SimRuntime};
use hipfft_pool::{PlanPool, PoolConfig, Runtime};

#[test]
fn a_second_process_wide_limit_is_reported_and_the_first_is_kept() {
    let rt: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    let first = PlanPool::new(PoolConfig::builder().capacity(2).live_ceiling(6).build().unwrap(), rt.clone()).unwrap();
    assert!(first.warnings().is_empty(), "{:?}", first.warnings());
    let same = PlanPool::new(PoolConfig::builder().capacity(2).live_ceiling(6).build().unwrap(), rt.clone()).unwrap();
    assert!(same.warnings().is_empty(), "{:?}", same.warnings());
    let other = PlanPool::new(PoolConfig::builder().capacity(2).live_ceiling(9).build().unwrap(), rt).unwrap();
    assert_eq!(other.warnings().len(), 1, "{:?}", other.warnings());
    let w = &other.warnings()[0];
    assert!(w.contains("live_ceiling 9 asked") && w.contains("already set to 6"), "{w}");
    assert_eq!(other.ceiling().limit(), 6, "the pool shares the first limit");
    // A capacity that fit the ceiling it asked for but not the shared one is lowered to fit,
    // with a warning, rather than refused (the default pool of a process whose first pool
    // set a small ceiling is made this way).
    let rt: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    let big = PlanPool::new(PoolConfig::builder().capacity(128).live_ceiling(128).build().unwrap(), rt).unwrap();
    assert_eq!(big.capacity(), 6);
    assert!(big.warnings().iter().any(|w| w.contains("capacity 128") && w.contains("using capacity 6")), "{:?}", big.warnings());
}
