//! The pool's own threads: OS threads outside loom, loom threads under it (so that the
//! destroyer and completion loops are part of every interleaving loom explores).

use std::time::Duration;

#[cfg(loom)]
pub(crate) use loom::thread::JoinHandle;
#[cfg(not(loom))]
pub(crate) use std::thread::JoinHandle;

/// Spawns a named thread running `f`.
pub(crate) fn spawn<F>(name: &str, f: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    #[cfg(loom)]
    return loom::thread::Builder::new().name(name.into()).spawn(f);
    #[cfg(not(loom))]
    return std::thread::Builder::new().name(name.into()).spawn(f);
}

/// The pause of a polling loop. Under loom no time passes, so it yields instead: loom then
/// runs another thread before this one polls again (a spin loop loom can explore).
pub(crate) fn pause(d: Duration) {
    #[cfg(loom)]
    {
        let _ = d;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    std::thread::sleep(d);
}

/// How long the pool's hand-offs poll before they park: 2 ms (longer than most plan
/// creations), or none on a machine with fewer than 4 cores, where a polling thread would
/// take the core the thread it waits for needs.
///
/// Why poll at all: on the H200 host a plan creation and destroy handed to parked threads took
/// 1.3 to 1.7x the same calls inline, and polling on one thread brought it back to 1.0x
/// (`gpu_bench`'s thread structures, docs/performance.md): a parked thread's wake-up, and cuFFT
/// running on a core that had gone idle, are most of a miss's cost above the calls.
#[cfg(not(loom))]
pub(crate) fn poll_budget() -> Duration {
    static BUDGET: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        // A bad value is warned of by `PoolConfig::from_env`, which checks it the same way.
        let set = std::env::var("HIPFFT_POOL_POLL_US").ok();
        if let Some(Ok(budget)) = set.as_deref().and_then(crate::pool::config::env_value).map(parse_poll_us) {
            return budget;
        }
        match std::thread::available_parallelism() {
            Ok(n) if n.get() >= 4 => Duration::from_millis(2),
            _ => Duration::ZERO,
        }
    })
}

/// The longest poll `HIPFFT_POOL_POLL_US` may ask for, in microseconds.
const MAX_POLL_US: u64 = 100_000;

/// A `HIPFFT_POOL_POLL_US` value (trimmed): whole microseconds, 0 (never poll) to
/// [`MAX_POLL_US`]; the error says why not.
pub(crate) fn parse_poll_us(raw: &str) -> Result<Duration, String> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err("not a whole number".into());
    }
    match raw.parse::<u64>() {
        Ok(us) if us <= MAX_POLL_US => Ok(Duration::from_micros(us)),
        _ => Err(format!("above the maximum {MAX_POLL_US}")),
    }
}

/// Polls `ready` until it says true, for at most [`poll_budget`] and never past `deadline`;
/// whether it did. Under loom it never polls (the caller parks as before), so the models
/// explore the parking protocol unchanged.
#[inline]
pub(crate) fn poll_until(deadline: Option<std::time::Instant>, mut ready: impl FnMut() -> bool) -> bool {
    #[cfg(loom)]
    {
        let _ = (deadline, &mut ready);
        false
    }
    #[cfg(not(loom))]
    {
        let budget = poll_budget();
        if budget.is_zero() {
            return false;
        }
        let start = std::time::Instant::now();
        let mut until = start + budget;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        let mut spins = 0u32;
        loop {
            if ready() {
                return true;
            }
            spins += 1;
            // A clock read every 64 polls keeps the loop's cost in the polling, not the clock.
            if spins.is_multiple_of(64) && std::time::Instant::now() >= until {
                return false;
            }
            std::hint::spin_loop();
        }
    }
}

/// An item of `rx` if one comes within the poll budget ([`poll_until`]); `None` at once
/// under loom or on a small machine. The caller then blocks on `rx` itself.
pub(crate) fn poll_recv<T>(rx: &crate::sync::channel::Receiver<T>) -> Option<T> {
    let mut got = None;
    poll_until(None, || match rx.try_recv() {
        Ok(item) => {
            got = Some(item);
            true
        }
        Err(_) => false,
    });
    got
}
