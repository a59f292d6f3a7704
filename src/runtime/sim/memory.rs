//! Device memory is host memory: 64-byte-aligned allocations, tracked so that `free`, copies
//! and executions can be checked against them. Pointers the sim did not hand out are taken
//! as plain host memory (a C program may pass its own buffers), except inside a range it
//! freed, which is a use after free. Freed blocks stay allocated in a bounded quarantine, so
//! their addresses cannot be reused by unrelated host memory while they are being watched.

use std::alloc::{self, Layout};
use std::collections::{BTreeMap, VecDeque};
use std::ptr::NonNull;

use parking_lot::Mutex;

/// Alignment of every allocation (what hipMalloc guarantees, and more than any element needs).
pub(crate) const ALIGN: usize = 64;

/// Fill of fresh and freed allocations: all-ones bytes read as NaN, so output never written
/// (or read after free) shows.
const FILL: u8 = 0xFF;

/// Freed bytes kept allocated, to tell a use after free from a foreign host pointer.
const QUARANTINE_BYTES: usize = 64 << 20;

/// One aligned host allocation, freed on drop.
pub(crate) struct HostBuf {
    ptr: NonNull<u8>,
    layout: Layout,
    len: usize,
}

// SAFETY: HostBuf owns its allocation; the bytes are plain data, accessed only through raw
// pointers by the calls that the device semantics allow (as on a GPU, racing users corrupt
// data, never the allocation itself).
unsafe impl Send for HostBuf {}
// SAFETY: as for `Send`: shared access only hands out the address.
unsafe impl Sync for HostBuf {}

impl HostBuf {
    /// `len` bytes (a zero-length buffer still gets a unique, non-null address).
    pub(crate) fn new(len: usize) -> Option<HostBuf> {
        let layout = Layout::from_size_align(len.max(1), ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc(layout) })?;
        // SAFETY: `ptr` is valid for `layout.size()` bytes.
        unsafe { ptr.as_ptr().write_bytes(FILL, layout.size()) };
        Some(HostBuf { ptr, layout, len })
    }

    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn poison(&self) {
        // SAFETY: the allocation is `layout.size()` bytes long.
        unsafe { self.ptr.as_ptr().write_bytes(FILL, self.layout.size()) };
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Where a checked pointer range lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Region {
    /// Inside one of the sim's allocations.
    Ours,
    /// Not the sim's memory: trusted as the caller's host memory.
    Host,
}

#[derive(Default)]
struct Table {
    live: BTreeMap<usize, HostBuf>,
    /// Freed blocks still allocated, oldest first in `order`.
    freed: BTreeMap<usize, HostBuf>,
    order: VecDeque<usize>,
    quarantined: usize,
    bytes: usize,
}

#[derive(Default)]
pub(crate) struct Memory(Mutex<Table>);

/// Why a `free` was refused.
pub(crate) enum FreeError {
    AlreadyFreed,
    Unknown,
}

impl Memory {
    /// `hipMalloc`: `None` if the host cannot give the memory.
    pub(crate) fn alloc(&self, len: usize) -> Option<usize> {
        let buf = HostBuf::new(len)?;
        let addr = buf.addr();
        let mut t = self.0.lock();
        t.bytes += len;
        t.live.insert(addr, buf);
        Some(addr)
    }

    /// `hipFree` of a pointer the sim allocated (its start, as HIP requires).
    pub(crate) fn free(&self, addr: usize) -> Result<(), FreeError> {
        let mut t = self.0.lock();
        match t.live.remove(&addr) {
            Some(buf) => {
                t.bytes -= buf.len();
                buf.poison();
                t.quarantined += buf.len();
                t.freed.insert(addr, buf);
                t.order.push_back(addr);
                let mut evicted = Vec::new();
                while t.quarantined > QUARANTINE_BYTES {
                    let Some(old) = t.order.pop_front() else { break };
                    if let Some(b) = t.freed.remove(&old) {
                        t.quarantined -= b.len();
                        evicted.push(b);
                    }
                }
                drop(t);
                drop(evicted);
                Ok(())
            }
            None if t.freed.contains_key(&addr) => Err(FreeError::AlreadyFreed),
            None => Err(FreeError::Unknown),
        }
    }

    /// Checks that `len` bytes at `addr` may be touched: wholly inside one allocation, or
    /// not the sim's memory at all. The error is the misuse, as a sentence.
    pub(crate) fn check(&self, addr: usize, len: usize, what: &str) -> Result<Region, String> {
        let t = self.0.lock();
        let Some(end) = addr.checked_add(len) else {
            return Err(format!("{what}: {len} bytes at {addr:#x} wrap the address space"));
        };
        if let Some((start, buf)) = t.live.range(..=addr).next_back() {
            let alloc_end = start + buf.len();
            if addr < alloc_end.max(start + 1) {
                if end > alloc_end {
                    return Err(format!(
                        "{what}: {len} bytes at {addr:#x} run past the end of the {}-byte allocation at {start:#x}",
                        buf.len()
                    ));
                }
                return Ok(Region::Ours);
            }
        }
        if let Some((start, buf)) = t.freed.range(..=addr).next_back() {
            if addr < start + buf.len().max(1) {
                return Err(format!("{what}: {addr:#x} lies in the {}-byte allocation at {start:#x}, already freed", buf.len()));
            }
        }
        Ok(Region::Host)
    }

    /// Bytes allocated and not freed.
    pub(crate) fn bytes(&self) -> usize {
        self.0.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_against_allocations() {
        let m = Memory::default();
        let a = m.alloc(100).unwrap();
        assert_eq!(a % ALIGN, 0);
        assert_eq!(m.bytes(), 100);
        assert_eq!(m.check(a, 100, "x"), Ok(Region::Ours));
        assert_eq!(m.check(a + 50, 50, "x"), Ok(Region::Ours));
        assert!(m.check(a + 50, 51, "x").is_err());
        let z = m.alloc(0).unwrap();
        assert_ne!(z, 0);
        assert_eq!(m.check(z, 0, "x"), Ok(Region::Ours));
        assert!(m.check(z, 1, "x").is_err());
        let host = [0u8; 8];
        assert_eq!(m.check(host.as_ptr() as usize, 8, "x"), Ok(Region::Host));
        assert!(m.free(a).is_ok());
        assert!(matches!(m.free(a), Err(FreeError::AlreadyFreed)));
        assert!(matches!(m.free(12345), Err(FreeError::Unknown)));
        assert!(m.free(z).is_ok());
        assert_eq!(m.bytes(), 0);
    }
}
