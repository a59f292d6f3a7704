//! `Flight` on its own under loom: a joiner's timeout racing the creation's finish.
//! (Single flight through the pool's acquire path is in `loom_pool.rs`.)

use std::time::Instant;

use loom::sync::Arc;
use loom::thread;

use super::model;
use crate::pool::flight::Flight;

/// A joiner whose deadline passes as the creation finishes: the result or `None`, never a
/// hang; a later wait sees the result.
#[test]
fn a_flight_timeout_racing_its_finish() {
    model(|| {
        let f = Arc::new(Flight::<u32>::new());
        let creator = {
            let f = f.clone();
            thread::spawn(move || f.finish(3))
        };
        let early = f.wait(Instant::now());
        assert!(early.is_none() || early == Some(3));
        creator.join().unwrap();
        assert_eq!(f.wait(Instant::now()), Some(3));
    });
}
