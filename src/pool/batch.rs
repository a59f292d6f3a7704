//! Open batches (`Lease::release_in_batch`): per (device, stream), the leases waiting for the
//! one event the batch's end records. A leaf, generic over what a batch holds (the pool's
//! item is a lease, `entry::Held`), importing only [`crate::sync`].
//!
//! Adding to a batch is on the hot path of every execution a host releases this way, so a
//! thread keeps the batch it last added to: the next add takes that batch's own lock, a
//! line only the threads using that stream write, and not the pool's map with its one lock
//! word that every thread would share. The map is taken when a thread moves to another
//! stream, when a batch ends, and for pruning.
//!
//! A batch the map no longer lists is marked `closed` under its lock, so a thread that
//! still keeps it looks it up again instead of adding to a batch nobody would end.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

use crate::sync::{Mutex, lock};

/// An open batch's stream: (device, stream handle).
pub(crate) type BatchKey = (i32, usize);

/// Most leases one open batch holds: the add that reaches it ends the batch (one event), so
/// a host that ends batches late holds at most this many leases per stream (more only while
/// the stream is capturing a graph, when no event can be recorded).
pub const BATCH_LIMIT: usize = 64;

/// Listed streams past which ending a batch prunes the empty ones (a host that makes a
/// stream per batch would otherwise grow the map by one entry per stream it ever used).
const PRUNE_ABOVE: usize = 64;

struct Open<T> {
    items: Vec<T>,
    /// Not in the map any more: look the stream up again.
    closed: bool,
}

/// One stream's open batch.
pub(crate) struct StreamBatch<T> {
    open: Mutex<Open<T>>,
}

/// What [`OpenBatches::add`] did with an item.
pub(crate) enum Added<T> {
    /// In the batch, which stays open.
    Queued,
    /// The batch reached [`BATCH_LIMIT`] with it: here is the whole batch, taken out, for the
    /// caller to end.
    Full(Vec<T>),
    /// The batch was empty and `opening_refused` said no batch may open (the stream is
    /// capturing a graph): the item comes back.
    Refused(T),
}

/// The open batches of one pool.
pub(crate) struct OpenBatches<T> {
    /// Tells this pool's batches from another's in a thread's kept batch
    /// (unique in the process, given by the pool; 0 is never given).
    id: u64,
    map: Mutex<HashMap<BatchKey, Arc<StreamBatch<T>>, FxBuildHasher>>,
}

/// The batch this thread last added to: (pool id, key, batch). Type-erased so one slot
/// serves every item type (there is one: the pool's lease).
type Kept = Option<(u64, BatchKey, Arc<dyn std::any::Any + Send + Sync>)>;

#[cfg(not(loom))]
std::thread_local! {
    static KEPT: RefCell<Kept> = const { RefCell::new(None) };
}

#[cfg(loom)]
loom::thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(None);
}

impl<T: Send + 'static> OpenBatches<T> {
    pub(crate) fn new(id: u64) -> OpenBatches<T> {
        OpenBatches { id, map: Mutex::new(HashMap::with_hasher(FxBuildHasher)) }
    }

    /// The batch of `key`: the one this thread kept when it is that, else the map's (made
    /// there when missing) and kept from now on.
    fn batch_of(&self, key: BatchKey) -> Arc<StreamBatch<T>> {
        let kept = KEPT
            .try_with(|k| {
                let k = k.try_borrow().ok()?;
                let (id, at, batch) = k.as_ref()?;
                if *id != self.id || *at != key {
                    return None;
                }
                batch.clone().downcast::<StreamBatch<T>>().ok()
            })
            .ok()
            .flatten();
        if let Some(b) = kept {
            return b;
        }
        let batch = lock(&self.map)
            .entry(key)
            .or_insert_with(|| Arc::new(StreamBatch { open: Mutex::new(Open { items: Vec::new(), closed: false }) }))
            .clone();
        let _ = KEPT.try_with(|k| {
            if let Ok(mut k) = k.try_borrow_mut() {
                *k = Some((self.id, key, batch.clone() as Arc<dyn std::any::Any + Send + Sync>));
            }
        });
        batch
    }

    /// Forgets the batch this thread kept (it was closed).
    fn forget_kept(&self) {
        let _ = KEPT.try_with(|k| {
            if let Ok(mut k) = k.try_borrow_mut() {
                *k = None;
            }
        });
    }

    /// Adds `item` to the batch of `key`. When that batch is empty, `opening_refused` is
    /// asked first (once, outside any lock): `true` refuses the item. The item reaching
    /// [`BATCH_LIMIT`] takes the batch out, unless `full_refused` (asked under the batch's
    /// lock) says it cannot end now.
    pub(crate) fn add(
        &self,
        key: BatchKey,
        item: T,
        opening_refused: impl FnOnce() -> bool,
        full_refused: impl FnOnce() -> bool,
    ) -> Added<T> {
        // The common case first: the batch this thread kept, open and not empty. Borrowed
        // where it is kept: no reference count written.
        let mut item = Some(item);
        let mut full_refused = Some(full_refused);
        let fast = KEPT
            .try_with(|k| {
                let k = k.try_borrow().ok()?;
                let (id, at, batch) = k.as_ref()?;
                if *id != self.id || *at != key {
                    return None;
                }
                let batch = batch.downcast_ref::<StreamBatch<T>>()?;
                let mut open = lock(&batch.open);
                if open.closed || open.items.is_empty() {
                    return None;
                }
                open.items.extend(item.take());
                Some(Self::pushed(&mut open, full_refused.take()))
            })
            .ok()
            .flatten();
        if let Some(added) = fast {
            return added;
        }
        let Some(item) = item else { unreachable!("the item is taken only by a push, which returns") };
        let mut opening_refused = Some(opening_refused);
        loop {
            let batch = self.batch_of(key);
            let mut open = lock(&batch.open);
            if open.closed {
                drop(open);
                self.forget_kept();
                continue;
            }
            if open.items.is_empty()
                && let Some(ask) = opening_refused.take()
            {
                // The query may be a runtime call: not under the batch's lock. Another
                // thread may open the batch meanwhile; the answer is about the stream, so
                // it holds for that batch too.
                drop(open);
                if ask() {
                    return Added::Refused(item);
                }
                continue;
            }
            open.items.push(item);
            return Self::pushed(&mut open, full_refused.take());
        }
    }

    /// After a push: the batch taken out when it just reached a multiple of [`BATCH_LIMIT`]
    /// and `full_refused` does not refuse.
    fn pushed(open: &mut Open<T>, full_refused: Option<impl FnOnce() -> bool>) -> Added<T> {
        let n = open.items.len();
        if n >= BATCH_LIMIT && n.is_multiple_of(BATCH_LIMIT) && !full_refused.is_some_and(|f| f()) {
            return Added::Full(std::mem::replace(&mut open.items, Vec::with_capacity(n)));
        }
        Added::Queued
    }

    /// Takes every open batch of `stream` (on every device: a stream handle is one
    /// device's, but the key carries the device the leases' plans were made on). Prunes the
    /// empty batches when the map has grown.
    pub(crate) fn take(&self, stream: usize) -> Vec<(BatchKey, Vec<T>)> {
        let mut map = lock(&self.map);
        let mut out = Vec::new();
        for (key, batch) in map.iter().filter(|(k, _)| k.1 == stream) {
            let mut open = lock(&batch.open);
            if !open.items.is_empty() {
                let n = open.items.len();
                out.push((*key, std::mem::replace(&mut open.items, Vec::with_capacity(n))));
            }
        }
        if map.len() > PRUNE_ABOVE {
            map.retain(|_, batch| {
                let mut open = lock(&batch.open);
                let keep = !open.items.is_empty();
                open.closed = !keep;
                keep
            });
        }
        out
    }

    /// Puts `items` back at the front of the batch of `key` (a batch that could not end).
    pub(crate) fn put_back(&self, key: BatchKey, mut items: Vec<T>) {
        loop {
            let batch = self.batch_of(key);
            let mut open = lock(&batch.open);
            if open.closed {
                drop(open);
                self.forget_kept();
                continue;
            }
            items.append(&mut open.items);
            open.items = items;
            return;
        }
    }

    /// Items waiting in open batches.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).values().map(|b| lock(&b.open).items.len()).sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Ids of their own, far above any real pool's (those count up from 1), so a test
    /// thread that also ran a pool never mistakes one for the other's kept batch.
    fn batches() -> OpenBatches<u32> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 63);
        OpenBatches::new(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    #[test]
    fn items_wait_in_their_streams_batch_until_taken() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false), Added::Queued));
        assert!(matches!(b.add((0, 8), 2, || false, || false), Added::Queued));
        assert!(matches!(b.add((0, 7), 3, || panic!("the batch is open"), || false), Added::Queued));
        assert_eq!(b.len(), 3);
        assert_eq!(b.take(7), vec![((0, 7), vec![1, 3])]);
        assert_eq!(b.len(), 1);
        assert!(b.take(7).is_empty(), "nothing left to end");
    }

    #[test]
    fn an_empty_batch_asks_before_it_opens_and_a_refusal_returns_the_item() {
        let b = batches();
        let mut asked = 0;
        assert!(matches!(b.add((0, 7), 1, || { asked += 1; true }, || false), Added::Refused(1)));
        assert_eq!((asked, b.len()), (1, 0));
    }

    #[test]
    fn the_item_that_fills_a_batch_takes_it_out_unless_refused() {
        let b = batches();
        for i in 0..BATCH_LIMIT as u32 - 1 {
            assert!(matches!(b.add((0, 7), i, || false, || false), Added::Queued));
        }
        match b.add((0, 7), 99, || false, || false) {
            Added::Full(v) => assert_eq!(v.len(), BATCH_LIMIT),
            _ => panic!("the batch was full"),
        }
        assert_eq!(b.len(), 0);
        for i in 0..BATCH_LIMIT as u32 {
            assert!(matches!(b.add((0, 7), i, || false, || true), Added::Queued), "refused: the batch grows");
        }
        assert_eq!(b.len(), BATCH_LIMIT);
    }

    #[test]
    fn put_back_goes_in_front_of_what_came_since() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false), Added::Queued));
        let taken = b.take(7);
        assert!(matches!(b.add((0, 7), 2, || false, || false), Added::Queued));
        b.put_back((0, 7), taken.into_iter().next().unwrap().1);
        assert_eq!(b.take(7), vec![((0, 7), vec![1, 2])]);
    }

    #[test]
    fn pruned_batches_are_closed_and_a_thread_that_kept_one_looks_again() {
        let b = batches();
        let last = 100 + PRUNE_ABOVE;
        for s in 100..=last {
            assert!(matches!(b.add((0, s), 0, || false, || false), Added::Queued));
            let _ = b.take(s);
        }
        assert!(lock(&b.map).is_empty(), "every empty batch pruned");
        // This thread still keeps the last stream's batch, closed by the prune.
        assert!(matches!(b.add((0, last), 5, || false, || false), Added::Queued));
        assert_eq!(b.take(last), vec![((0, last), vec![5])], "the item went to a listed batch, not the closed one");
    }

    #[test]
    fn two_pools_never_share_a_kept_batch() {
        let (a, b) = (batches(), batches());
        assert!(matches!(a.add((0, 7), 1, || false, || false), Added::Queued));
        assert!(matches!(b.add((0, 7), 2, || false, || false), Added::Queued));
        assert_eq!(a.take(7), vec![((0, 7), vec![1])]);
        assert_eq!(b.take(7), vec![((0, 7), vec![2])]);
    }
}
