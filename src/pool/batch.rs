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
//!
//! An ended batch's leases come back to it once their event fired (`give_back`, from the
//! completion thread), and the next add or end on the stream takes them (`claimed`): the
//! thread using the stream releases them, writing lines its own hits took and will take
//! again, instead of the completion thread writing every plan's lease count in between
//! (measured: the first load of each hit's lease word was most of the hit's time). The
//! completion thread takes back what nobody claimed (`reclaim`) once it waited long
//! enough or a miss waits at a ceiling.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

use crate::sync::{AtomicBool, Mutex, Ordering, lock};

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
    /// Items of ended batches, done, for the next add or end on the stream to take.
    returned: Vec<T>,
}

impl<T> Open<T> {
    fn new() -> Open<T> {
        Open { items: Vec::new(), returned: Vec::new() }
    }

    /// Moves what came back into `claimed`.
    fn claim_into(&mut self, claimed: &mut Vec<T>) {
        move_all(&mut self.returned, claimed);
    }
}

/// Moves every item of `from` to the end of `into`; when `into` is empty the buffers are
/// swapped instead (no copy, and each buffer is freed by the thread that allocated it when
/// it goes back there).
fn move_all<T>(from: &mut Vec<T>, into: &mut Vec<T>) {
    if into.is_empty() {
        std::mem::swap(from, into);
    } else {
        into.append(from);
    }
}

/// A value on cache lines of its own.
#[cfg_attr(not(loom), repr(align(128)))]
struct OwnLines<T>(T);

impl<T> std::ops::Deref for OwnLines<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One stream's open batch.
pub(crate) struct StreamBatch<T> {
    /// On lines of its own: the stream's adds write the lock word, and the completion
    /// thread's reads of `closed` must not take that line from them.
    open: OwnLines<Mutex<Open<T>>>,
    /// Not in the map any more (pruned, or its pool shut down): look the stream up again.
    /// Set under `open`'s lock, so a holder of the lock reads it settled; an atomic, so that
    /// the completion thread can ask it every round while it lends without taking that lock
    /// from the stream's adds.
    closed: AtomicBool,
}

impl<T> StreamBatch<T> {
    /// Hands done items back for the stream's next add or end to take; a closed batch
    /// (pruned: nobody adds to it any more) gives them back at once, for the caller to
    /// finish itself. Nothing says the stream's host comes back: the caller finishes what is
    /// still there later (`reclaim`).
    pub(crate) fn give_back(&self, mut items: Vec<T>) -> Result<(), Vec<T>> {
        let mut open = lock(&self.open);
        if self.is_closed() {
            return Err(items);
        }
        // Usually a swap: the batch's own buffer, allocated by the thread that ended it,
        // goes back to that thread.
        move_all(&mut items, &mut open.returned);
        Ok(())
    }

    /// Takes back what was given back and not claimed since.
    pub(crate) fn reclaim(&self) -> Vec<T> {
        std::mem::take(&mut lock(&self.open).returned)
    }

    /// Whether the batch was closed (pruned, or its pool shut down): nobody claims what is
    /// given back to it any more.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the batch closed; the caller holds its lock (`_open` proves it).
    fn close(&self, _open: &mut Open<T>) {
        self.closed.store(true, Ordering::Release);
    }
}

/// What [`OpenBatches::add`] did with an item.
pub(crate) enum Added<T> {
    /// In the batch, which stays open.
    Queued,
    /// The batch reached [`BATCH_LIMIT`] with it: here is the whole batch, taken out, for the
    /// caller to end, and the stream's batch its items come back to.
    Full(Vec<T>, Arc<StreamBatch<T>>),
    /// The batch was empty and `opening_refused` said no batch may open (the stream is
    /// capturing a graph): the item comes back.
    Refused(T),
}

/// A batch [`OpenBatches::take`] took out: its stream, its items, and the stream's batch
/// they come back to once done.
pub(crate) struct Taken<T> {
    pub key: BatchKey,
    pub items: Vec<T>,
    pub home: Arc<StreamBatch<T>>,
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
            .or_insert_with(|| Arc::new(StreamBatch { open: OwnLines(Mutex::new(Open::new())), closed: AtomicBool::new(false) }))
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
    /// lock) says it cannot end now. What came back to the batch (`give_back`) moves to
    /// `claimed`, for the caller to finish.
    pub(crate) fn add(
        &self,
        key: BatchKey,
        item: T,
        opening_refused: impl FnOnce() -> bool,
        full_refused: impl FnOnce() -> bool,
        claimed: &mut Vec<T>,
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
                let this = batch.downcast_ref::<StreamBatch<T>>()?;
                let mut open = lock(&this.open);
                if this.is_closed() || open.items.is_empty() {
                    return None;
                }
                open.claim_into(claimed);
                open.items.extend(item.take());
                // The `Arc` is cloned only when the batch fills (one add in BATCH_LIMIT).
                Some(Self::pushed(&mut open, full_refused.take(), || batch.clone().downcast::<StreamBatch<T>>().ok()))
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
            if batch.is_closed() {
                drop(open);
                self.forget_kept();
                continue;
            }
            open.claim_into(claimed);
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
            return Self::pushed(&mut open, full_refused.take(), || Some(batch.clone()));
        }
    }

    /// After a push: the batch taken out when it just reached a multiple of [`BATCH_LIMIT`]
    /// and `full_refused` does not refuse (`home` gives the batch's `Arc`; when it cannot,
    /// the batch stays open).
    fn pushed(
        open: &mut Open<T>,
        full_refused: Option<impl FnOnce() -> bool>,
        home: impl FnOnce() -> Option<Arc<StreamBatch<T>>>,
    ) -> Added<T> {
        let n = open.items.len();
        if n >= BATCH_LIMIT && n.is_multiple_of(BATCH_LIMIT) && !full_refused.is_some_and(|f| f()) {
            if let Some(home) = home() {
                return Added::Full(std::mem::replace(&mut open.items, Vec::with_capacity(n)), home);
            }
        }
        Added::Queued
    }

    /// Takes every open batch of `stream` (on every device: a stream handle is one
    /// device's, but the key carries the device the leases' plans were made on), each with
    /// the stream's batch its items come back to; what came back to them moves to
    /// `claimed`. Prunes the empty batches when the map has grown.
    pub(crate) fn take(&self, stream: usize, claimed: &mut Vec<T>) -> Vec<Taken<T>> {
        let mut map = lock(&self.map);
        let mut out = Vec::new();
        for (key, batch) in map.iter().filter(|(k, _)| k.1 == stream) {
            let mut open = lock(&batch.open);
            open.claim_into(claimed);
            if !open.items.is_empty() {
                let n = open.items.len();
                out.push(Taken { key: *key, items: std::mem::replace(&mut open.items, Vec::with_capacity(n)), home: batch.clone() });
            }
        }
        if map.len() > PRUNE_ABOVE {
            map.retain(|_, batch| {
                let mut open = lock(&batch.open);
                let keep = !open.items.is_empty() || !open.returned.is_empty();
                if !keep {
                    batch.close(&mut open);
                }
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
            if batch.is_closed() {
                drop(open);
                self.forget_kept();
                continue;
            }
            items.append(&mut open.items);
            open.items = items;
            return;
        }
    }

    /// Closes every batch and empties the map (the pool shuts down): what was given back
    /// to them is then finished by the completion thread at once (`is_closed`). Returns how
    /// many items wait in batches never ended; they stay in them (the caller says why).
    pub(crate) fn close_all(&self) -> usize {
        let map = std::mem::take(&mut *lock(&self.map));
        map.values()
            .map(|b| {
                let mut open = lock(&b.open);
                b.close(&mut open);
                open.items.len()
            })
            .sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Ids of their own, far above any real pool's (those count up from 1), so a test
    /// thread that also ran a pool never mistakes one for the other's kept batch.
    /// What `take` took, as (stream, items).
    fn taken(b: &OpenBatches<u32>, stream: usize) -> Vec<(BatchKey, Vec<u32>)> {
        b.take(stream, &mut Vec::new()).into_iter().map(|t| (t.key, t.items)).collect()
    }

    /// Items waiting in the open batches.
    fn waiting(b: &OpenBatches<u32>) -> usize {
        lock(&b.map).values().map(|b| lock(&b.open).items.len()).sum()
    }

    fn batches() -> OpenBatches<u32> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 63);
        OpenBatches::new(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    #[test]
    fn items_wait_in_their_streams_batch_until_taken() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false, &mut Vec::new()), Added::Queued));
        assert!(matches!(b.add((0, 8), 2, || false, || false, &mut Vec::new()), Added::Queued));
        assert!(matches!(b.add((0, 7), 3, || panic!("the batch is open"), || false, &mut Vec::new()), Added::Queued));
        assert_eq!(waiting(&b), 3);
        assert_eq!(taken(&b, 7), vec![((0, 7), vec![1, 3])]);
        assert_eq!(waiting(&b), 1);
        assert!(taken(&b, 7).is_empty(), "nothing left to end");
    }

    #[test]
    fn an_empty_batch_asks_before_it_opens_and_a_refusal_returns_the_item() {
        let b = batches();
        let mut asked = 0;
        assert!(matches!(b.add((0, 7), 1, || { asked += 1; true }, || false, &mut Vec::new()), Added::Refused(1)));
        assert_eq!((asked, waiting(&b)), (1, 0));
    }

    #[test]
    fn the_item_that_fills_a_batch_takes_it_out_unless_refused() {
        let b = batches();
        for i in 0..BATCH_LIMIT as u32 - 1 {
            assert!(matches!(b.add((0, 7), i, || false, || false, &mut Vec::new()), Added::Queued));
        }
        match b.add((0, 7), 99, || false, || false, &mut Vec::new()) {
            Added::Full(v, _) => assert_eq!(v.len(), BATCH_LIMIT),
            _ => panic!("the batch was full"),
        }
        assert_eq!(waiting(&b), 0);
        for i in 0..BATCH_LIMIT as u32 {
            assert!(matches!(b.add((0, 7), i, || false, || true, &mut Vec::new()), Added::Queued), "refused: the batch grows");
        }
        assert_eq!(waiting(&b), BATCH_LIMIT);
    }

    #[test]
    fn put_back_goes_in_front_of_what_came_since() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false, &mut Vec::new()), Added::Queued));
        let first = taken(&b, 7);
        assert!(matches!(b.add((0, 7), 2, || false, || false, &mut Vec::new()), Added::Queued));
        b.put_back((0, 7), first.into_iter().next().unwrap().1);
        assert_eq!(taken(&b, 7), vec![((0, 7), vec![1, 2])]);
    }

    #[test]
    fn pruned_batches_are_closed_and_a_thread_that_kept_one_looks_again() {
        let b = batches();
        let last = 100 + PRUNE_ABOVE;
        for s in 100..=last {
            assert!(matches!(b.add((0, s), 0, || false, || false, &mut Vec::new()), Added::Queued));
            let _ = taken(&b, s);
        }
        assert!(lock(&b.map).is_empty(), "every empty batch pruned");
        // This thread still keeps the last stream's batch, closed by the prune.
        assert!(matches!(b.add((0, last), 5, || false, || false, &mut Vec::new()), Added::Queued));
        assert_eq!(taken(&b, last), vec![((0, last), vec![5])], "the item went to a listed batch, not the closed one");
    }

    #[test]
    fn two_pools_never_share_a_kept_batch() {
        let (a, b) = (batches(), batches());
        assert!(matches!(a.add((0, 7), 1, || false, || false, &mut Vec::new()), Added::Queued));
        assert!(matches!(b.add((0, 7), 2, || false, || false, &mut Vec::new()), Added::Queued));
        assert_eq!(taken(&a, 7), vec![((0, 7), vec![1])]);
        assert_eq!(taken(&b, 7), vec![((0, 7), vec![2])]);
    }

    #[test]
    fn items_given_back_go_to_the_streams_next_add_or_end() {
        let b = batches();
        let mut claimed = Vec::new();
        assert!(matches!(b.add((0, 7), 1, || false, || false, &mut claimed), Added::Queued));
        let ended = b.take(7, &mut claimed).pop().unwrap();
        assert_eq!(ended.items, vec![1]);
        assert_eq!(ended.home.give_back(vec![1]), Ok(()));
        assert!(claimed.is_empty());
        assert!(matches!(b.add((0, 7), 2, || false, || false, &mut claimed), Added::Queued));
        assert_eq!(claimed, vec![1], "the next add took what came back");
        claimed.clear();
        assert_eq!(ended.home.give_back(vec![1]), Ok(()));
        assert!(matches!(b.add((0, 7), 3, || false, || false, &mut claimed), Added::Queued));
        assert_eq!(claimed, vec![1], "the next add took what came back");
        assert_eq!(ended.home.give_back(vec![4, 5]), Ok(()));
        let mut at_end = Vec::new();
        assert_eq!(b.take(7, &mut at_end).pop().map(|t| t.items), Some(vec![2, 3]));
        assert_eq!(at_end, vec![4, 5], "the end took what came back");
        assert!(ended.home.reclaim().is_empty(), "nothing is left to take back");
    }

    #[test]
    fn what_nobody_claimed_is_taken_back_once() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false, &mut Vec::new()), Added::Queued));
        let home = b.take(7, &mut Vec::new()).pop().unwrap().home;
        assert!(matches!(b.add((0, 7), 2, || false, || false, &mut Vec::new()), Added::Queued));
        assert_eq!(home.give_back(vec![9]), Ok(()));
        assert_eq!(home.reclaim(), vec![9]);
        assert!(home.reclaim().is_empty());
        let mut claimed = Vec::new();
        assert_eq!(b.take(7, &mut claimed).pop().map(|t| t.items), Some(vec![2]));
        assert!(claimed.is_empty(), "taken back before: never given twice");
    }

    #[test]
    fn a_batch_holding_given_back_items_is_not_pruned_and_a_pruned_one_takes_nothing_back() {
        let b = batches();
        assert!(matches!(b.add((0, 7), 1, || false, || false, &mut Vec::new()), Added::Queued));
        let home = b.take(7, &mut Vec::new()).pop().unwrap().home;
        assert_eq!(home.give_back(vec![1]), Ok(()));
        for s in 100..=100 + PRUNE_ABOVE {
            assert!(matches!(b.add((0, s), 0, || false, || false, &mut Vec::new()), Added::Queued));
            let _ = b.take(s, &mut Vec::new());
        }
        let mut claimed = Vec::new();
        assert!(b.take(7, &mut claimed).is_empty());
        assert_eq!(claimed, vec![1], "still listed after the prune: the stream's end took it");
        for s in 200..=200 + PRUNE_ABOVE {
            assert!(matches!(b.add((0, s), 0, || false, || false, &mut Vec::new()), Added::Queued));
            let _ = b.take(s, &mut Vec::new());
        }
        assert_eq!(home.give_back(vec![2]), Err(vec![2]), "pruned once empty: closed, it takes nothing back");
    }
}
