//! A pool's reports: its metrics in each export format, and the summary table a person reads.

use std::fmt;

use crate::observe::export;
use crate::pool::plan_pool::PlanPool;

impl PlanPool {
    /// The pool's metrics as Prometheus text, one series per device.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// assert!(pool.metrics_text().contains("hipfft_pool_live"));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics_text(&self) -> String {
        export::prometheus_text_by_device(&self.metrics_by_device(), &self.metrics())
    }

    /// The pool's metrics as JSON: `{"total": {...}, "devices": {"0": {...}}}`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// assert!(pool.metrics_json().starts_with('{'));
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn metrics_json(&self) -> String {
        export::json_by_device(self.metrics_by_device(), &self.metrics())
    }

    /// Pushes every count into the `metrics` crate facade, so whatever exporter the host
    /// installed picks them up. Call it periodically (a scrape handler, a timer).
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        export::publish(&self.metrics_by_device(), &self.metrics());
    }

    /// A human summary, in the spirit of CuPy's `show_plan_cache_info`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use hipfft_pool::{PlanDesc, PlanPool, PoolConfig, Runtime, SimConfig, SimRuntime, TransformType};
    /// # let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(SimConfig::default()));
    /// # let config = PoolConfig::builder().capacity(4).private_ceiling(8).build()?;
    /// # let pool = PlanPool::new(config, runtime.clone())?;
    /// pool.acquire(&PlanDesc::new(TransformType::C2C, &[64], 1))?;
    /// println!("{}", pool.summary());
    /// # Ok::<(), hipfft_pool::Error>(())
    /// ```
    pub fn summary(&self) -> PoolSummary<'_> {
        PoolSummary(self)
    }
}

impl crate::observe::serve::MetricsSource for PlanPool {
    fn metrics_text(&self) -> String {
        PlanPool::metrics_text(self)
    }
    fn metrics_json(&self) -> String {
        PlanPool::metrics_json(self)
    }
}

/// See [`PlanPool::summary`].
pub struct PoolSummary<'a>(&'a PlanPool);

impl fmt::Display for PoolSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        let m = p.metrics();
        let acquires = m.hits + m.misses;
        let rate = if acquires == 0 { 0.0 } else { 100.0 * m.hits as f64 / acquires as f64 };
        writeln!(f, "hipfft-pool on the {} runtime", p.runtime().kind())?;
        writeln!(
            f,
            "  capacity {}, live ceiling {}, acquire timeout {:?}",
            m.capacity,
            m.ceiling,
            p.acquire_timeout()
        )?;
        writeln!(
            f,
            "  live {} (peak {}), process live {}, cached {}, leased {}, retired {}, stalled {}",
            m.live, m.peak_live, m.process_live, m.cached, m.in_flight, m.retired_pending, m.stalled
        )?;
        writeln!(
            f,
            "  hits {} / {} acquires ({rate:.1}%), {} created, {} destroyed, {} evicted, {} ceiling waits, {} timeouts{}",
            m.hits,
            acquires,
            m.creations,
            m.destroys,
            m.evictions,
            m.ceiling_waits,
            m.ceiling_timeouts,
            if m.thrashing > 0 { ", THRASHING" } else { "" }
        )?;
        writeln!(f, "  cached plans, most recent first:")?;
        for c in p.cached_plans() {
            writeln!(f, "    {}  work {} B  hits {}  leases {}", c.desc, c.work_size, c.hits, c.leases)?;
        }
        Ok(())
    }
}
