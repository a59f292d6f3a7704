//! Which captures the hooks saw begin: only those are followed. A capture begun where no
//! hook saw it (a runtime that reached the driver some other way) may go through graph calls
//! no hook sees either, so the plans it holds are kept for good instead
//! (`Engine::hold_captured`).

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Default)]
struct Begun {
    /// Stream → the capture last begun on it (a stream captures once at a time).
    by_stream: FxHashMap<usize, u64>,
    ids: FxHashSet<u64>,
}

static BEGUN: Mutex<Option<Begun>> = Mutex::new(None);

/// Set once a graph call went where no hook follows it: from then on no capture is.
static BLIND: AtomicBool = AtomicBool::new(false);

/// A capture `id` began on `stream`, seen by a hook.
pub fn begun(stream: usize, id: u64) {
    let mut g = BEGUN.lock();
    let b = g.get_or_insert_with(Begun::default);
    if let Some(old) = b.by_stream.insert(stream, id) {
        b.ids.remove(&old);
    }
    b.ids.insert(id);
}

/// The capture on `stream` ended (its id is forgotten).
pub fn ended(stream: usize) {
    if let Some(b) = BEGUN.lock().as_mut() {
        if let Some(id) = b.by_stream.remove(&stream) {
            b.ids.remove(&id);
        }
    }
}

/// Whether capture `id` is followed: a hook saw it begin, and no graph call escaped the
/// hooks since.
pub fn is_followed(id: u64) -> bool {
    id != 0 && !BLIND.load(Ordering::Acquire) && BEGUN.lock().as_ref().is_some_and(|b| b.ids.contains(&id))
}

/// A graph call could not be followed (`why` says which): no capture is followed from now
/// on, and the plans already pinned are kept for good.
pub fn blind(why: &str) {
    if !BLIND.swap(true, Ordering::AcqRel) {
        crate::graphs::notify::keep_all_forever(why);
    }
}

/// Whether [`blind`] was called.
pub fn is_blind() -> bool {
    BLIND.load(Ordering::Acquire)
}
