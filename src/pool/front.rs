//! A thread's front cache for hits: the plans it leased lately, found again without the
//! cache's shared map.
//!
//! A hit through the map takes a shard's read lock: two atomic writes on a line that every
//! thread hitting that shard shares, then a table probe. A thread that leases the same plans
//! again finds them here first, in a small direct-mapped table of its own. A slot holds a
//! `Weak` to the entry, so this cache keeps no plan, pool or runtime alive: only the
//! entry's allocation, until the slot is reused or the thread ends. Upgrading the `Weak` is
//! the one write that the map path's `Arc` clone made anyway.
//!
//! What a slot yields is checked as a map hit is: the entry's descriptor must equal the one
//! asked for, and the lease is taken with `try_lease`, which fails once the entry was
//! evicted. An entry removed from the map but not yet marked evicted can still be leased
//! here. Eviction then retires it (`Evicted::Leased`), the same outcome as a map hit that
//! took its lease just before the removal (`Cache::evict_one_idle` already expects that).
//!
//! Under loom the table is a loom thread local, so the model tests run this path too.

use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::{Arc, Weak};

use crate::desc::PlanDesc;
use crate::pool::entry::PlanEntry;

/// Slots per thread; a power of two (the hash's low bits pick the slot).
const SLOTS: usize = 256;

struct Slot {
    /// The pool the entry belongs to ([`next_pool_id`]): two pools may cache one descriptor.
    pool: u64,
    /// The descriptor's hash, so a slot of another key is passed over without upgrading.
    hash: u64,
    entry: Weak<PlanEntry>,
}

type Table = RefCell<[Option<Slot>; SLOTS]>;

#[cfg(not(loom))]
std::thread_local! {
    static FRONT: Table = const { RefCell::new([const { None }; SLOTS]) };
}

#[cfg(loom)]
loom::thread_local! {
    static FRONT: Table = RefCell::new([const { None }; SLOTS]);
}

/// A number no other pool of this process has (0 is never given).
pub(crate) fn next_pool_id() -> u64 {
    // Orders nothing: only uniqueness matters.
    static NEXT: crate::sync::stat::AtomicU64 = crate::sync::stat::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The hash that picks a descriptor's slot (the map's own hasher).
#[inline]
pub(crate) fn hash(desc: &PlanDesc) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(desc)
}

#[inline]
fn index(hash: u64) -> usize {
    // Fx's low bits are its weakest: fold the high half in.
    ((hash ^ (hash >> 32)) as usize) & (SLOTS - 1)
}

/// The entry of pool `pool` for `desc` if this thread's table holds it and it is still
/// alive. It may be evicted: the caller's `try_lease` decides.
#[inline]
pub(crate) fn find(pool: u64, hash: u64, desc: &PlanDesc) -> Option<Arc<PlanEntry>> {
    let found = FRONT
        .try_with(|t| {
            let t = t.try_borrow().ok()?;
            let s = t[index(hash)].as_ref()?;
            if s.pool != pool || s.hash != hash {
                return None;
            }
            s.entry.upgrade()
        })
        .ok()
        .flatten()?;
    // Compared (and a mismatch dropped) outside the borrow: dropping the last `Arc` of an
    // entry runs its fields' drops, which must not find the table borrowed.
    (found.desc == *desc).then_some(found)
}

/// Remembers `entry` as pool `pool`'s plan for the descriptor hashed to `hash`, in place of
/// whatever held its slot.
#[inline]
pub(crate) fn remember(pool: u64, hash: u64, entry: &Arc<PlanEntry>) {
    let slot = Slot { pool, hash, entry: Arc::downgrade(entry) };
    let old = FRONT.try_with(|t| t.try_borrow_mut().ok().map(|mut t| t[index(hash)].replace(slot)));
    // The slot it replaced (a `Weak`, which may free an allocation) drops here, unborrowed.
    drop(old);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn pool_ids_are_unique_and_never_zero() {
        let a = next_pool_id();
        let b = next_pool_id();
        assert!(a != 0 && b != 0 && a != b);
    }

    #[test]
    fn a_slot_index_stays_in_the_table() {
        for h in [0u64, 1, u64::MAX, 0xdead_beef_0000_0000, 31, 32] {
            assert!(index(h) < SLOTS);
        }
    }
}
