//! The metrics server's listening socket, closed in a forked child.
//!
//! A child of `fork` gets a copy of every descriptor, and the socket stays bound, queueing
//! connections nobody accepts, for as long as any copy is open: after the parent exits, a
//! child (a framework's worker, say) would hold the port. Close-on-exec covers a child that
//! runs another program (and `posix_spawn`, `vfork`, which exec at once); for one that does
//! not, a `pthread_atfork` child handler closes every listening socket registered here. It
//! calls only `close` and atomics (async-signal-safe), on a fixed table: it cannot lock or
//! allocate. A server past the table's last slot is close-on-exec only, and its copy closes
//! in a child when the child drops the `MetricsServer` it inherited.

#[cfg(unix)]
pub(crate) use unix::ForkGuard;

#[cfg(not(unix))]
pub(crate) use other::ForkGuard;

#[cfg(unix)]
mod unix {
    use std::ffi::c_int;
    use std::net::TcpListener;
    use std::os::fd::{AsRawFd, RawFd};
    use std::sync::Once;
    use std::sync::atomic::{AtomicI32, Ordering};

    unsafe extern "C" {
        fn close(fd: c_int) -> c_int;
    }

    /// The listening sockets a forked child closes; -1 is a free slot.
    static SLOTS: [AtomicI32; 32] = [const { AtomicI32::new(-1) }; 32];

    /// Runs in the child, right after `fork`, before `fork` returns there.
    unsafe extern "C" fn close_in_forked_child() {
        for slot in &SLOTS {
            let fd = slot.swap(-1, Ordering::SeqCst);
            if fd >= 0 {
                // SAFETY: `fd` is the listener the slot was registered for (a slot is freed
                // before its socket closes), and in the child nothing else uses it: the threads
                // that own it are the parent's.
                unsafe { close(fd) };
            }
        }
    }

    /// The listener, which frees its slot before the socket closes, so that a later fork
    /// never closes a descriptor that reused its number.
    pub(crate) struct Listener {
        inner: TcpListener,
        slot: Option<usize>,
    }

    impl std::ops::Deref for Listener {
        type Target = TcpListener;
        fn deref(&self) -> &TcpListener {
            &self.inner
        }
    }

    impl Drop for Listener {
        fn drop(&mut self) {
            if let Some(i) = self.slot {
                SLOTS[i].store(-1, Ordering::SeqCst);
            }
        }
    }

    /// What the server keeps to close its copy of the socket in a child.
    #[derive(Debug)]
    pub(crate) struct ForkGuard {
        fd: RawFd,
        slot: Option<usize>,
    }

    impl ForkGuard {
        /// Registers `listener` to be closed in forked children.
        pub(crate) fn new(listener: TcpListener) -> (Listener, ForkGuard) {
            static HANDLER: Once = Once::new();
            // A function that only swaps atomics and calls `close`. If registering fails, the
            // slots are never cleared in a child, and `close_in_child` closes it there instead.
            HANDLER.call_once(|| crate::sync::fork::atfork(None, None, Some(close_in_forked_child)));
            let fd = listener.as_raw_fd();
            let slot = SLOTS.iter().position(|s| s.compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst).is_ok());
            (Listener { inner: listener, slot }, ForkGuard { fd, slot })
        }

        /// In a forked child: closes the inherited socket unless the fork handler already did.
        pub(crate) fn close_in_child(&self) {
            let open = match self.slot {
                Some(i) => SLOTS[i].swap(-1, Ordering::SeqCst) == self.fd,
                None => true,
            };
            if open {
                // SAFETY: the child's copy of the listener, which no thread of the child owns
                // (the `Listener` belongs to the parent's accepting thread, absent here).
                unsafe { close(self.fd) };
            }
        }

        #[cfg(test)]
        pub(crate) fn fd(&self) -> RawFd {
            self.fd
        }
    }
}

#[cfg(not(unix))]
mod other {
    use std::net::TcpListener;

    pub(crate) type Listener = TcpListener;

    /// Nothing to do where there is no `fork`.
    #[derive(Debug)]
    pub(crate) struct ForkGuard;

    impl ForkGuard {
        pub(crate) fn new(listener: TcpListener) -> (Listener, ForkGuard) {
            (listener, ForkGuard)
        }

        pub(crate) fn close_in_child(&self) {}
    }
}
