//! A thread that runs plan calls for its caller, as the pool's destroyer and creation
//! workers do: shared by the examples that compare the pool's thread structure with the
//! same calls without the pool (`gpu_bench`'s thread structures, `miss_anatomy`).
//!
//! Unsafe calls: the plans a job destroys are ones the caller created, each destroyed once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hipfft_pool::{PlanDesc, PlanOptions, RawPlan, Result, Runtime};

/// What a [`CallThread`] runs.
pub enum Job {
    Destroy(RawPlan),
    Create(PlanDesc),
    /// Destroy the previous plan, then create: both on one thread, as the raw loop does.
    Both(Option<RawPlan>, PlanDesc),
}

/// A thread that runs plan calls for the caller, as the pool's destroyer and creation
/// workers do; `spin`: both sides poll before they park.
pub struct CallThread {
    tx: crossbeam_channel::Sender<Job>,
    rx: crossbeam_channel::Receiver<Result<(Option<RawPlan>, f64)>>,
    spin: bool,
}

/// Receives; `spin`: polls for up to 2 ms first (longer than a creation), then parks, so
/// idle polling threads do not take cores from the structures measured after them.
pub fn recv_polled<T>(rx: &crossbeam_channel::Receiver<T>, spin: bool) -> Option<T> {
    if spin {
        let until = Instant::now() + Duration::from_millis(2);
        while Instant::now() < until {
            match rx.try_recv() {
                Ok(v) => return Some(v),
                Err(crossbeam_channel::TryRecvError::Empty) => std::hint::spin_loop(),
                Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            }
        }
    }
    rx.recv().ok()
}

impl CallThread {
    pub fn start(rt: Arc<dyn Runtime>, spin: bool) -> CallThread {
        let (tx, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (done_tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new().name("call-thread".into()).spawn(move || {
            while let Some(job) = recv_polled(&job_rx, spin) {
                let t = Instant::now();
                let r = (|| -> Result<Option<RawPlan>> {
                    match job {
                        // SAFETY: see the note at the top of this file (the caller's plans, once each).
                        Job::Destroy(p) => unsafe { rt.plan_destroy(p) }.map(|()| None),
                        Job::Create(d) => rt.plan_create(&d, PlanOptions::default()).map(|p| Some(p.plan)),
                        Job::Both(prev, d) => {
                            if let Some(p) = prev {
                                // SAFETY: see the note at the top of this file (the caller's plans, once each).
                                unsafe { rt.plan_destroy(p) }?;
                            }
                            rt.plan_create(&d, PlanOptions::default()).map(|p| Some(p.plan))
                        }
                    }
                })();
                if done_tx.send(r.map(|p| (p, t.elapsed().as_secs_f64() * 1e6))).is_err() {
                    break;
                }
            }
        })
        .expect("spawn a call thread");
        CallThread { tx, rx, spin }
    }

    /// Runs `job` there and waits: the plan it made, and the microseconds inside its calls.
    pub fn run(&self, job: Job) -> Result<(Option<RawPlan>, f64)> {
        let gone = || hipfft_pool::Error::Internal("a benchmark thread ended".into());
        self.tx.send(job).map_err(|_| gone())?;
        recv_polled(&self.rx, self.spin).ok_or_else(gone)?
    }
}
