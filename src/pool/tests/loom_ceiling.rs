//! `LiveCeiling` on its own under loom: slots never exceed the limit, a waiter is woken by
//! a slot given back, a deadline racing a release never hangs.

use std::time::Instant;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::{HOUR, model};
use crate::pool::ceiling::LiveCeiling;

fn far() -> Instant {
    Instant::now() + HOUR
}

/// Slots never exceed the limit, and every one comes back.
#[test]
fn ceiling_slots_never_exceed_the_limit() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (c, inside) = (c.clone(), inside.clone());
                thread::spawn(move || {
                    if c.try_acquire() {
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two slots of a ceiling of one");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        c.release();
                    }
                })
            })
            .collect();
        if c.try_acquire() {
            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two slots of a ceiling of one");
            inside.fetch_sub(1, Ordering::SeqCst);
            c.release();
        }
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(c.live(), 0);
        assert_eq!(c.waiters(), 0);
    });
}

/// A miss waiting for a slot is woken by the slot's release (`acquire_slow`'s loop: read
/// the epoch, look, wait for a change of that epoch).
#[test]
fn a_waiter_is_woken_by_a_slot_release() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        assert!(c.try_acquire());
        let waiter = {
            let c = c.clone();
            thread::spawn(move || {
                loop {
                    let seen = c.epoch();
                    if c.try_acquire() {
                        break;
                    }
                    assert!(c.wait_for_change(seen, far()));
                }
                c.release();
            })
        };
        c.release();
        waiter.join().unwrap();
        assert_eq!(c.live(), 0);
        assert_eq!(c.waiters(), 0);
    });
}

/// A waiter whose deadline passes as a slot is released: it reports a change or a timeout,
/// never hangs, and leaves no registration behind; the slot is free either way.
#[test]
fn a_timeout_racing_a_release() {
    model(|| {
        let c = Arc::new(LiveCeiling::with_limit(1));
        assert!(c.try_acquire());
        let seen = c.epoch();
        let releaser = {
            let c = c.clone();
            thread::spawn(move || c.release())
        };
        let changed = c.wait_for_change(seen, Instant::now());
        releaser.join().unwrap();
        assert_eq!(c.waiters(), 0);
        assert!(changed || c.epoch() != seen, "a timeout, with the release landing after it");
        assert!(c.try_acquire(), "the slot is free afterwards");
    });
}
