//! Acquire traces over the probe's 26 shapes, run through a pool on the sim with the H200's
//! per-shape creation costs (`SimConfig::h200_create_costs`), to compare eviction policies
//! by what the sim itself counts: creations and the creation time they spent.

use std::sync::Arc;

use crate::check::probe::embedded_shapes;
use crate::pool::eviction::Eviction;
use crate::{PlanDesc, PlanPool, PoolConfig, Result, Runtime, SimConfig, SimRuntime};

/// What one trace cost under one policy, as the sim counted it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceCost {
    /// Plans made.
    pub creations: u64,
    /// Creation time the sim spent, milliseconds.
    pub creation_ms: f64,
    /// Acquires in the trace.
    pub acquires: usize,
}

/// A named trace: indices into the probe's shapes ([`embedded_shapes`]).
#[derive(Clone, Debug)]
pub struct Trace {
    /// What it models.
    pub name: &'static str,
    /// Shape indices, in acquire order.
    pub steps: Vec<usize>,
}

/// The traces of `docs/warmup.md`: a pure cycle of the 26 shapes (MLX's thrash pattern), a
/// skewed one (a Zipf-like popularity, seeded), and a hot set interleaved with a one-off
/// scan of the other shapes.
/// (Used by `tests/warmup.rs` and `examples/eviction_trace.rs`; the check tools build only
/// with the `check` feature, which doctests do not get.)
pub fn traces(cycles: usize) -> Vec<Trace> {
    let n = embedded_shapes().len();
    let cycle = (0..cycles).flat_map(|_| 0..n).collect();
    // Zipf-like (weight 1/(rank+1)), ranks shuffled by a fixed permutation so that cheap and
    // expensive shapes both sit at the head; a xorshift keeps it reproducible.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let order: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
    let weights: Vec<f64> = (0..n).map(|r| 1.0 / (r + 1) as f64).collect();
    let total: f64 = weights.iter().sum();
    let skewed = (0..cycles * n)
        .map(|_| {
            let mut u = (next() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let mut r = 0;
            while r + 1 < n && u >= weights[r] {
                u -= weights[r];
                r += 1;
            }
            order[r]
        })
        .collect();
    // Six hot shapes (two of them the slow n=1200 ones), each other shape once between.
    let hot = [5, 12, 2, 9, 15, 22];
    let cold: Vec<usize> = (0..n).filter(|i| !hot.contains(i)).collect();
    let scan = (0..cycles * 2).flat_map(|k| hot.iter().copied().chain(std::iter::once(cold[k % cold.len()]))).collect();
    vec![
        Trace { name: "cycle of the 26 shapes", steps: cycle },
        Trace { name: "skewed (Zipf-like) popularity", steps: skewed },
        Trace { name: "six hot shapes and a scan of the rest", steps: scan },
    ]
}

/// Runs `trace` through a fresh pool of `capacity` on a fresh sim with the H200 creation
/// costs, releasing each lease at once, and returns what the sim counted.
pub fn run_trace(trace: &Trace, capacity: usize, eviction: Eviction) -> Result<TraceCost> {
    let sim = Arc::new(SimRuntime::new(SimConfig { h200_create_costs: true, ..SimConfig::default() }));
    let rt: Arc<dyn Runtime> = sim.clone();
    let config = PoolConfig::builder().capacity(capacity).private_ceiling(capacity).eviction(eviction).build()?;
    let pool = PlanPool::new(config, rt)?;
    let shapes: Vec<PlanDesc> = embedded_shapes().iter().map(|s| s.desc(0)).collect::<Result<_>>()?;
    for &i in &trace.steps {
        pool.acquire(&shapes[i % shapes.len()])?.release();
    }
    Ok(TraceCost {
        creations: sim.created_total(),
        creation_ms: sim.creation_time().as_secs_f64() * 1e3,
        acquires: trace.steps.len(),
    })
}
