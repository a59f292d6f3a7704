//! Injected hangs. A blocked call sits in `read(2)` on a pipe, exactly where the real
//! hipFFT hang sat (it shows as `pipe_read` in `/proc/PID/task/TID/wchan`), until
//! `unblock_all` closes the write end.

use std::io::{self, PipeReader, PipeWriter, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

#[derive(Default)]
pub(crate) struct Blocker {
    /// The current pipe; replaced by a fresh one on unblock, so later blocks block again.
    pipe: Mutex<Option<(PipeReader, PipeWriter)>>,
    blocked: AtomicUsize,
}

impl Blocker {
    /// Blocks the calling thread until [`unblock_all`](Self::unblock_all). Returns at once
    /// if no pipe can be made; either way the caller fails its call.
    pub(crate) fn block(&self) {
        let Ok(mut reader) = self.reader() else { return };
        self.blocked.fetch_add(1, Ordering::SeqCst);
        let mut byte = [0u8; 1];
        loop {
            match reader.read(&mut byte) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => break,
            }
        }
        self.blocked.fetch_sub(1, Ordering::SeqCst);
    }

    fn reader(&self) -> io::Result<PipeReader> {
        let mut pipe = self.pipe.lock();
        match pipe.as_ref() {
            Some((r, _)) => r.try_clone(),
            None => {
                let (r, w) = io::pipe()?;
                let clone = r.try_clone()?;
                *pipe = Some((r, w));
                Ok(clone)
            }
        }
    }

    /// Ends every blocked read: dropping the only write end gives each reader end-of-file.
    pub(crate) fn unblock_all(&self) {
        drop(self.pipe.lock().take());
    }

    /// Threads blocked right now.
    pub(crate) fn blocked(&self) -> usize {
        self.blocked.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn unblock_ends_every_read_and_later_blocks_block_again() {
        let b = Arc::new(Blocker::default());
        for _ in 0..2 {
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let b = b.clone();
                    std::thread::spawn(move || b.block())
                })
                .collect();
            let start = Instant::now();
            while b.blocked() < 2 {
                assert!(start.elapsed() < Duration::from_secs(5));
                std::thread::sleep(Duration::from_millis(1));
            }
            b.unblock_all();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(b.blocked(), 0);
        }
    }
}
