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
