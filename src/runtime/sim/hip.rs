//! The HIP runtime side of the sim: memory, copies, streams and events, with `hipError_t`
//! codes and every misuse recorded.

use super::SimRuntime;
use super::codes::hip_err;
use crate::runtime::codes::hip_error as hip;
use super::memory::FreeError;
use super::stream::Stream;
use crate::error::{Error, Result};
use crate::runtime::boundary::{DevicePtr, RawEvent, RawStream};
use std::sync::Arc;

impl SimRuntime {
    /// Records `sentence` and returns HIP's `value` for `call`.
    fn hip_misuse(&self, call: &'static str, value: i32, sentence: String) -> Error {
        self.log.record(sentence);
        hip_err(call, value)
    }

    /// The stream `raw` names, with the current device's null stream for `NULL`.
    fn stream(&self, call: &'static str, raw: RawStream) -> Result<Arc<Stream>> {
        match self.streams.resolve(raw, self.current()) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => {
                Err(self.hip_misuse(call, hip::hipErrorInvalidResourceHandle, format!("{call} on unknown stream {:#x}", raw.0)))
            }
            Err(_) => Err(hip_err(call, hip::hipErrorOutOfMemory)),
        }
    }

    /// Waits until every stream of `device` (all devices for `None`) is idle.
    fn drain(&self, device: Option<i32>) {
        for s in self.streams.of_device(device) {
            s.synchronize();
        }
    }

    pub(super) fn hip_malloc(&self, bytes: usize) -> Result<DevicePtr> {
        if self.faults.malloc.hit(self.config.read().fail_malloc_every) {
            return Err(hip_err("hipMalloc", hip::hipErrorOutOfMemory));
        }
        self.memory.alloc(bytes).map(DevicePtr).ok_or_else(|| hip_err("hipMalloc", hip::hipErrorOutOfMemory))
    }

    /// `hipFree` synchronizes the device; the sim waits for every stream, which also keeps
    /// host memory from being freed under a running worker.
    pub(super) fn hip_free(&self, ptr: DevicePtr) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.drain(None);
        match self.memory.free(ptr.0) {
            Ok(()) => Ok(()),
            Err(FreeError::AlreadyFreed) => {
                Err(self.hip_misuse("hipFree", hip::hipErrorInvalidValue, format!("double free of {:#x}", ptr.0)))
            }
            Err(FreeError::Unknown) => Err(self.hip_misuse(
                "hipFree",
                hip::hipErrorInvalidValue,
                format!("free of {:#x}, which hipMalloc did not return", ptr.0),
            )),
        }
    }

    /// Checks a device range a copy touches; null is always refused.
    fn copy_range(&self, call: &'static str, ptr: DevicePtr, bytes: usize, what: &str) -> Result<()> {
        if ptr.is_null() {
            return Err(self.hip_misuse(call, hip::hipErrorInvalidValue, format!("{call} with a null {what}")));
        }
        self.memory
            .check(ptr.0, bytes, &format!("{what} of {call}"))
            .map(drop)
            .map_err(|s| self.hip_misuse(call, hip::hipErrorInvalidValue, s))
    }

    pub(super) fn hip_memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.copy_range("hipMemcpy", dst, src.len(), "destination")?;
        self.drain(Some(self.current()));
        // SAFETY: `dst` holds `src.len()` bytes: checked above when the sim allocated it,
        // else the caller's promise of `Runtime::memcpy_htod`; `copy` allows overlap.
        unsafe { std::ptr::copy(src.as_ptr(), dst.as_ptr::<u8>(), src.len()) };
        Ok(())
    }

    pub(super) fn hip_memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.copy_range("hipMemcpy", src, dst.len(), "source")?;
        self.drain(Some(self.current()));
        // SAFETY: as in `hip_memcpy_htod`.
        unsafe { std::ptr::copy(src.as_ptr::<u8>() as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    pub(super) fn hip_memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: RawStream) -> Result<()> {
        const CALL: &str = "hipMemcpyAsync";
        let s = self.stream(CALL, stream)?;
        if bytes == 0 {
            return Ok(());
        }
        self.copy_range(CALL, dst, bytes, "destination")?;
        self.copy_range(CALL, src, bytes, "source")?;
        let (d, from) = (dst.0, src.0);
        // SAFETY: both ranges checked above; the copy runs in stream order at each launch.
        let node: super::stream::Node = std::sync::Arc::new(move || unsafe { std::ptr::copy(from as *const u8, d as *mut u8, bytes) });
        if let Some(r) = s.capture_with(|g, tail| self.graphs.add_closure(g, tail, node, true)) {
            return r.map_err(|_| hip_err(CALL, hip::hipErrorInvalidResourceHandle));
        }
        // SAFETY: both ranges checked above; the copy runs in stream order.
        let job = Box::new(move || unsafe { std::ptr::copy(from as *const u8, d as *mut u8, bytes) });
        s.enqueue(job).map(drop).ok_or_else(|| hip_err(CALL, hip::hipErrorInvalidResourceHandle))
    }

    pub(super) fn hip_stream_create(&self) -> Result<RawStream> {
        self.streams.create(self.current()).map_err(|_| hip_err("hipStreamCreateWithFlags", hip::hipErrorOutOfMemory))
    }

    pub(super) fn hip_stream_synchronize(&self, stream: RawStream) -> Result<()> {
        let s = self.stream("hipStreamSynchronize", stream)?;
        if s.is_capturing() {
            return Err(self.hip_misuse(
                "hipStreamSynchronize",
                hip::hipErrorStreamCaptureUnsupported,
                format!("synchronize of stream {:#x} while it is capturing a graph", stream.0),
            ));
        }
        s.synchronize();
        Ok(())
    }

    pub(super) fn hip_stream_destroy(&self, stream: RawStream) -> Result<()> {
        const CALL: &str = "hipStreamDestroy";
        if stream == RawStream::NULL {
            return Err(self.hip_misuse(CALL, hip::hipErrorInvalidResourceHandle, "destroy of the null stream".into()));
        }
        if !self.streams.destroy(stream) {
            return Err(self.hip_misuse(
                CALL,
                hip::hipErrorInvalidResourceHandle,
                format!("destroy of unknown stream {:#x}", stream.0),
            ));
        }
        Ok(())
    }

    pub(super) fn hip_event_create(&self) -> Result<RawEvent> {
        Ok(self.events.create())
    }

    pub(super) fn hip_event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        const CALL: &str = "hipEventRecord";
        if !self.events.exists(event) {
            return Err(self.hip_misuse(CALL, hip::hipErrorInvalidResourceHandle, format!("record of unknown event {:#x}", event.0)));
        }
        let s = self.stream(CALL, stream)?;
        if self.faults.event.hit(self.config.read().fail_event_every) {
            return Err(hip_err(CALL, hip::hipErrorInvalidValue));
        }
        if s.is_capturing() {
            // Recorded into the capture, the event proves nothing when queried: its state is
            // left as it was, as on a GPU.
            self.log.record(format!("event {:#x} recorded on stream {:#x} while it is capturing a graph", event.0, stream.0));
            return Ok(());
        }
        let mark = s.marker().ok_or_else(|| hip_err(CALL, hip::hipErrorInvalidResourceHandle))?;
        if !self.events.record(event, mark) {
            return Err(self.hip_misuse(
                CALL,
                hip::hipErrorInvalidResourceHandle,
                format!("event {:#x} destroyed while recorded", event.0),
            ));
        }
        Ok(())
    }

    pub(super) fn hip_event_query(&self, event: RawEvent) -> Result<bool> {
        if self.config.read().fail_event_wait && self.events.exists(event) {
            return Err(hip_err("hipEventQuery", hip::hipErrorLaunchFailure));
        }
        match self.events.mark(event) {
            Some(mark) => Ok(mark.is_none_or(|m| m.passed())),
            None => Err(self.hip_misuse(
                "hipEventQuery",
                hip::hipErrorInvalidResourceHandle,
                format!("query of unknown event {:#x}", event.0),
            )),
        }
    }

    pub(super) fn hip_event_synchronize(&self, event: RawEvent) -> Result<()> {
        if self.config.read().fail_event_wait && self.events.exists(event) {
            return Err(hip_err("hipEventSynchronize", hip::hipErrorLaunchFailure));
        }
        match self.events.mark(event) {
            Some(mark) => {
                if let Some(m) = mark {
                    m.wait();
                }
                Ok(())
            }
            None => Err(self.hip_misuse(
                "hipEventSynchronize",
                hip::hipErrorInvalidResourceHandle,
                format!("synchronize on unknown event {:#x}", event.0),
            )),
        }
    }

    pub(super) fn hip_event_destroy(&self, event: RawEvent) -> Result<()> {
        if !self.events.destroy(event) {
            return Err(self.hip_misuse(
                "hipEventDestroy",
                hip::hipErrorInvalidResourceHandle,
                format!("destroy of unknown event {:#x}", event.0),
            ));
        }
        Ok(())
    }
}
