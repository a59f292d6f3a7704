//! Owning wrappers over the runtime's raw memory and stream calls, for the probe, tests and
//! examples: each discharges the `unsafe` contract of the calls it makes once, so its users
//! stay in safe code.
//!
//! Dropping one never panics and never hides a failure: a free or destroy that fails is
//! logged through `tracing` and recorded in [`drop_failures`] (cudarc's `Drop for
//! CudaEvent` records its error in the context the same way).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::runtime::boundary::{DevicePtr, RawStream, Runtime};

/// The failures of [`DeviceBuffer`] and [`Stream`] drops in this process: how many, and the
/// last one (a drop has nobody to return an error to).
#[derive(Clone, Debug, Default)]
pub struct DropFailures {
    /// Drops whose free, synchronize or destroy failed.
    pub count: u64,
    /// The last such failure: what was being dropped, and the error.
    pub last: Option<String>,
}

static DROP_FAILURE_COUNT: AtomicU64 = AtomicU64::new(0);
static LAST_DROP_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// The drop failures recorded so far in this process.
pub fn drop_failures() -> DropFailures {
    DropFailures { count: DROP_FAILURE_COUNT.load(Ordering::SeqCst), last: LAST_DROP_FAILURE.lock().clone() }
}

/// Logs and records a failure inside a drop.
fn record_drop_failure(what: &str, e: &Error) {
    tracing::warn!(error = %e, "{what} failed in drop");
    *LAST_DROP_FAILURE.lock() = Some(format!("{what}: {e}"));
    DROP_FAILURE_COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Device memory of one runtime, freed on drop. Dropping synchronizes nothing itself; the
/// runtime's free does (`hipFree` synchronizes the device, the sim drains its streams), so
/// work still pending on the buffer finishes before the memory goes.
pub struct DeviceBuffer {
    rt: Arc<dyn Runtime>,
    ptr: DevicePtr,
    bytes: usize,
}

impl DeviceBuffer {
    /// `bytes` of device memory from `rt` (contents unspecified).
    pub fn new(rt: &Arc<dyn Runtime>, bytes: usize) -> Result<Self> {
        let ptr = rt.malloc(bytes)?;
        Ok(DeviceBuffer { rt: rt.clone(), ptr, bytes })
    }

    /// A buffer holding a copy of `data`.
    pub fn from_host(rt: &Arc<dyn Runtime>, data: &[u8]) -> Result<Self> {
        let b = Self::new(rt, data.len())?;
        b.write(data)?;
        Ok(b)
    }

    /// The device pointer, for the runtime's `unsafe` calls; valid while `self` lives.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the buffer holds no bytes (its pointer is still valid and non-null).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The whole buffer, copied to the host. Like `hipMemcpy`, not ordered after work on
    /// non-blocking streams: synchronize those first.
    pub fn to_host(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.bytes];
        // SAFETY: `ptr` is this buffer's live allocation of `bytes` = `v.len()` bytes.
        unsafe { self.rt.memcpy_dtoh(&mut v, self.ptr) }?;
        Ok(v)
    }

    /// Copies `data` to the start of the buffer; more bytes than it holds is an error.
    pub fn write(&self, data: &[u8]) -> Result<()> {
        if data.len() > self.bytes {
            return Err(Error::invalid_argument(
                "data",
                format!("{} bytes do not fit a buffer of {}", data.len(), self.bytes),
            ));
        }
        // SAFETY: `ptr` is this buffer's live allocation, at least `data.len()` bytes long.
        unsafe { self.rt.memcpy_htod(self.ptr, data) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `rt.malloc` and is freed only here; the runtime's free
        // waits for pending work, and nothing can use the pointer after the drop.
        if let Err(e) = unsafe { self.rt.free(self.ptr) } {
            record_drop_failure(&format!("free of a {}-byte device buffer", self.bytes), &e);
        }
    }
}

/// A non-blocking stream of one runtime, synchronized and destroyed on drop.
pub struct Stream {
    rt: Arc<dyn Runtime>,
    raw: RawStream,
}

impl Stream {
    /// A new stream on `rt`'s current device.
    pub fn new(rt: &Arc<dyn Runtime>) -> Result<Self> {
        Ok(Stream { rt: rt.clone(), raw: rt.stream_create()? })
    }

    /// The raw handle, for the runtime's `unsafe` calls; valid while `self` lives.
    pub fn raw(&self) -> RawStream {
        self.raw
    }

    /// Waits for the work enqueued so far (`hipStreamSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `raw` is this wrapper's live stream, destroyed only in drop.
        unsafe { self.rt.stream_synchronize(self.raw) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Pending work finishes before the handle goes, so nothing still runs on it.
        if let Err(e) = self.synchronize() {
            record_drop_failure("synchronize of a stream", &e);
        }
        // SAFETY: the stream came from `stream_create`, is destroyed only here, and nothing
        // uses it after the drop.
        if let Err(e) = unsafe { self.rt.stream_destroy(self.raw) } {
            record_drop_failure("destroy of a stream", &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::codes::{hip_code, hip_error};
    use crate::runtime::decorator::Decorator;
    use crate::runtime::sim::{SimConfig, SimRuntime};

    /// The sim with an injected fault: `free` and `stream_destroy` fail (and release
    /// nothing), as on a device in error.
    struct FailingRelease(SimRuntime);

    // SAFETY: the overrides only return errors (releasing nothing); the rest is the sim's.
    unsafe impl Decorator for FailingRelease {
        fn inner(&self) -> &dyn Runtime {
            &self.0
        }
        unsafe fn free(&self, _ptr: DevicePtr) -> Result<()> {
            Err(Error::Runtime { call: "hipFree", code: hip_code(hip_error::hipErrorIllegalAddress) })
        }
        unsafe fn stream_destroy(&self, _stream: RawStream) -> Result<()> {
            Err(Error::Runtime { call: "hipStreamDestroy", code: hip_code(hip_error::hipErrorIllegalAddress) })
        }
    }

    #[test]
    fn a_failing_release_in_drop_is_recorded_not_raised() {
        let rt: Arc<dyn Runtime> = Arc::new(FailingRelease(SimRuntime::new(SimConfig::default())));
        let before = drop_failures().count;
        let buffer = DeviceBuffer::from_host(&rt, &[7u8; 64]).unwrap();
        drop(buffer);
        let after = drop_failures();
        assert_eq!(after.count, before + 1);
        let last = after.last.unwrap();
        assert!(last.contains("64-byte device buffer") && last.contains("hipFree"), "{last}");

        let stream = Stream::new(&rt).unwrap();
        drop(stream);
        let after = drop_failures();
        assert_eq!(after.count, before + 2);
        assert!(after.last.unwrap().contains("hipStreamDestroy"));
    }
}
