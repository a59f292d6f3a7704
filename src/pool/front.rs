//! A thread's front cache for hits: the plans it leased lately, found again without the
//! cache's shared map.
//!
//! A hit through the map takes a shard's read lock: two atomic writes on a line that every
//! thread hitting that shard shares, then a table probe. A thread that leases the same plans
//! again finds them here first, in a small set-associative table of its own, and takes its
//! lease on its own stripe of the plan's state: a hit found here writes no line that
//! another thread hitting the same plan writes too.
//!
//! A slot holds the plan's `LeaseState` (an `Arc`: the state outlives the entry while a
//! slot names it) and a raw pointer to the entry, dereferenced only once a lease was taken
//! on that state. The state is never reused, so a taken lease proves the entry is still
//! listed in its cache (or retired with leases out) and so alive; an entry freed since, even
//! with its address reused, has an evicted state, and the lease is refused. This cache
//! thereby keeps no plan, pool or runtime alive: only the states, until the slot is reused
//! or the thread ends.
//!
//! What a slot yields is checked as a map hit is: the lease is taken with `try_lease`,
//! which fails once the entry was evicted, and the entry's descriptor must equal the one
//! asked for (a slot matched on pool and hash only; a mismatch gives its lease back). An
//! entry removed from the map but not yet marked evicted can still be leased here.
//! Eviction then retires it (`Evicted::Leased`), the same outcome as a map hit that took
//! its lease just before the removal (`Cache::evict_one_idle` already expects that).
//!
//! Under loom the table is a loom thread local, so the model tests run this path too.

use std::cell::RefCell;
use std::hash::BuildHasher;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::desc::PlanDesc;
use crate::pool::entry::{Held, PlanEntry};
use crate::pool::lease_state::{LeaseState, Stripe};

/// Slots per thread, in sets of `WAYS`: a descriptor's hash picks its set, and it may sit in
/// any slot of that set. Direct-mapped (one way) the 26 shapes of the probe shared a slot
/// two by two in most runs (26 keys in 256 slots collide with odds of 72%), and each such
/// pair went through the map on every hit, its shard lock and the state's `Arc` count shared
/// with every other thread hitting them: 16 threads scaled 4.8x instead of 12x.
const SLOTS: usize = 256;
const WAYS: usize = 4;
const SETS: usize = SLOTS / WAYS;

struct Slot {
    /// The pool the entry belongs to ([`next_pool_id`]): two pools may cache one descriptor.
    pool: u64,
    /// The descriptor's hash, so a slot of another key is passed over untouched.
    hash: u64,
    state: Arc<LeaseState>,
    /// The entry `state` belongs to; valid only while a lease on `state` is held.
    entry: NonNull<PlanEntry>,
}

#[cfg(not(loom))]
type Table = RefCell<[Option<Slot>; SLOTS]>;
// Boxed under loom: a model thread's stack (the main one's is loom's default) would not
// hold the table while it is made.
#[cfg(loom)]
type Table = RefCell<Box<[Option<Slot>]>>;

#[cfg(not(loom))]
std::thread_local! {
    static FRONT: Table = const { RefCell::new([const { None }; SLOTS]) };
}

#[cfg(loom)]
loom::thread_local! {
    static FRONT: Table = RefCell::new((0..SLOTS).map(|_| None).collect());
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

/// The first slot of the set of `hash`.
#[inline]
fn set(hash: u64) -> usize {
    // Fx's low bits are its weakest: fold the high half in.
    (((hash ^ (hash >> 32)) as usize) & (SETS - 1)) * WAYS
}

/// A lease, taken on `stripe`, on pool `pool`'s plan for `desc` if this thread's table
/// holds it and it was not evicted.
#[inline]
pub(crate) fn find(pool: u64, hash: u64, desc: &PlanDesc, stripe: Stripe) -> Option<Held> {
    let held = FRONT
        .try_with(|t| {
            let t = t.try_borrow().ok()?;
            let base = set(hash);
            let s = t[base..base + WAYS].iter().flatten().find(|s| s.pool == pool && s.hash == hash)?;
            if !s.state.try_lease(stripe) {
                return None;
            }
            // SAFETY: the lease was just taken on the state of the entry `s.entry` points
            // to (a state is made for one entry and never reused), and a state that could be
            // leased is not evicted: the entry is listed in its cache, or retired.
            Some(unsafe { Held::from_ptr(s.entry, stripe) })
        })
        .ok()
        .flatten()?;
    if held.desc == *desc {
        Some(held)
    } else {
        // Another descriptor of the same hash: its lease goes back (its hit stays counted).
        held.release();
        None
    }
}

/// Remembers `entry` (a leased one) as pool `pool`'s plan for the descriptor hashed to
/// `hash`, in place of whatever held its slot.
#[inline]
pub(crate) fn remember(pool: u64, hash: u64, entry: &Held) {
    let slot = Slot { pool, hash, state: entry.state.clone(), entry: NonNull::from(&**entry) };
    let old = FRONT.try_with(|t| {
        t.try_borrow_mut().ok().map(|mut t| {
            let base = set(hash);
            let ways = &mut t[base..base + WAYS];
            // The key's own slot (its plan was evicted and made again), else a free one, else
            // one of an evicted plan, else one picked by the key's hash.
            let i = ways
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| s.pool == pool && s.hash == hash))
                .or_else(|| ways.iter().position(Option::is_none))
                .or_else(|| ways.iter().position(|s| s.as_ref().is_some_and(|s| s.state.evicted())))
                .unwrap_or((hash >> 40) as usize % WAYS);
            ways[i].replace(slot)
        })
    });
    // The slot it replaced drops here, unborrowed.
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
    fn a_set_stays_in_the_table() {
        for h in [0u64, 1, u64::MAX, 0xdead_beef_0000_0000, 31, 32] {
            assert!(set(h) + WAYS <= SLOTS && set(h).is_multiple_of(WAYS));
        }
    }
}
