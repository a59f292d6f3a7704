//! RAII over the runtime's raw memory and stream calls, for the probe, tests and examples.

use std::sync::Arc;

use crate::error::Result;
use crate::runtime::boundary::{DevicePtr, RawStream, Runtime};

/// Device memory freed on drop. Dropping synchronizes nothing: the owner must make sure no
/// pending work still uses it (as with `hipFree`, which synchronizes the device itself).
pub struct DeviceBuffer {
    rt: Arc<dyn Runtime>,
    ptr: DevicePtr,
    bytes: usize,
}

impl DeviceBuffer {
    pub fn new(rt: &Arc<dyn Runtime>, bytes: usize) -> Result<Self> {
        let ptr = rt.malloc(bytes)?;
        Ok(DeviceBuffer { rt: rt.clone(), ptr, bytes })
    }

    /// A buffer holding a copy of `data`.
    pub fn from_host(rt: &Arc<dyn Runtime>, data: &[u8]) -> Result<Self> {
        let b = Self::new(rt, data.len())?;
        rt.memcpy_htod(b.ptr, data)?;
        Ok(b)
    }

    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn to_host(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.bytes];
        self.rt.memcpy_dtoh(&mut v, self.ptr)?;
        Ok(v)
    }

    pub fn write(&self, data: &[u8]) -> Result<()> {
        if data.len() > self.bytes {
            return Err(crate::Error::invalid_argument(
                "data",
                format!("{} bytes do not fit a buffer of {}", data.len(), self.bytes),
            ));
        }
        self.rt.memcpy_htod(self.ptr, data)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Err(e) = self.rt.free(self.ptr) {
            tracing::warn!(error = %e, "free failed");
        }
    }
}

/// A stream destroyed on drop (after its work finished).
pub struct Stream {
    rt: Arc<dyn Runtime>,
    raw: RawStream,
}

impl Stream {
    pub fn new(rt: &Arc<dyn Runtime>) -> Result<Self> {
        Ok(Stream { rt: rt.clone(), raw: rt.stream_create()? })
    }

    pub fn raw(&self) -> RawStream {
        self.raw
    }

    pub fn synchronize(&self) -> Result<()> {
        self.rt.stream_synchronize(self.raw)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.rt.stream_synchronize(self.raw);
        if let Err(e) = self.rt.stream_destroy(self.raw) {
            tracing::warn!(error = %e, "stream destroy failed");
        }
    }
}
