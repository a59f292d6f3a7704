//! Streams: one worker thread each, running its queue in order, so enqueued work really is
//! still in flight after the call that enqueued it returns. Each device's null stream is
//! one more worker, made on first use.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Sender, unbounded};
use parking_lot::{Condvar, Mutex};

use super::violations::Violations;
use crate::runtime::boundary::RawStream;

/// Work a stream runs.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// Host work in a graph (a host function, a copy): runs each time the graph is launched.
pub(crate) type Node = Arc<dyn Fn() + Send + Sync + 'static>;

/// A capture in progress on a stream: its id, the graph it records into (in `graph`'s
/// table) and the nodes the next captured work depends on.
#[derive(Clone, Debug)]
pub(crate) struct Capturing {
    pub id: u64,
    pub graph: u64,
    pub tail: Vec<u64>,
}

struct Progress {
    /// `None` once the stream is destroyed: nothing more may be enqueued.
    tx: Option<Sender<Job>>,
    submitted: u64,
    done: u64,
}

/// The part of a stream its worker and its events share.
struct Shared {
    progress: Mutex<Progress>,
    moved: Condvar,
}

impl Shared {
    fn wait(&self, ticket: u64) {
        let mut p = self.progress.lock();
        while p.done < ticket {
            self.moved.wait(&mut p);
        }
    }

    fn passed(&self, ticket: u64) -> bool {
        self.progress.lock().done >= ticket
    }
}

/// A point in a stream's queue: passed once the worker has run everything before it.
#[derive(Clone)]
pub(crate) struct Mark {
    shared: Arc<Shared>,
    ticket: u64,
}

impl Mark {
    pub(crate) fn passed(&self) -> bool {
        self.shared.passed(self.ticket)
    }
    pub(crate) fn wait(&self) {
        self.shared.wait(self.ticket)
    }
}

pub(crate) struct Stream {
    pub device: i32,
    /// The capture in progress (`hipStreamBeginCapture`), if any.
    capture: Mutex<Option<Capturing>>,
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl Stream {
    /// Starts the worker thread. Fails only if the OS refuses a thread.
    fn spawn(raw: RawStream, device: i32, log: Arc<Violations>) -> std::io::Result<Arc<Stream>> {
        let (tx, rx) = unbounded::<Job>();
        let shared =
            Arc::new(Shared { progress: Mutex::new(Progress { tx: Some(tx), submitted: 0, done: 0 }), moved: Condvar::new() });
        let worker_shared = shared.clone();
        let handle = std::thread::Builder::new().name(format!("sim-stream-{:#x}-dev{device}", raw.0)).spawn(move || {
            // Ends when the stream is destroyed and its queue drained (HIP finishes queued work).
            while let Ok(job) = rx.recv() {
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    log.record(format!("work enqueued on stream {:#x} panicked in the simulator", raw.0));
                }
                let mut p = worker_shared.progress.lock();
                p.done += 1;
                worker_shared.moved.notify_all();
            }
        })?;
        Ok(Arc::new(Stream { device, capture: Mutex::new(None), shared, worker: Mutex::new(Some(handle)) }))
    }

    /// Queues `job`; `None` if the stream was destroyed meanwhile.
    pub(crate) fn enqueue(&self, job: Job) -> Option<Mark> {
        let mut p = self.shared.progress.lock();
        // Send under the lock, so tickets follow queue order.
        p.tx.as_ref()?.send(job).ok()?;
        p.submitted += 1;
        Some(Mark { shared: self.shared.clone(), ticket: p.submitted })
    }

    /// Whether a capture is active on this stream.
    pub(crate) fn is_capturing(&self) -> bool {
        self.capture.lock().is_some()
    }

    /// Starts a capture into `graph`; `false` if one is active already.
    pub(crate) fn begin_capture(&self, id: u64, graph: u64) -> bool {
        let mut c = self.capture.lock();
        if c.is_some() {
            return false;
        }
        *c = Some(Capturing { id, graph, tail: Vec::new() });
        true
    }

    /// The capture in progress, if any.
    pub(crate) fn capturing(&self) -> Option<Capturing> {
        self.capture.lock().clone()
    }

    /// Ends the capture, returning it; `None` if none was active.
    pub(crate) fn end_capture(&self) -> Option<Capturing> {
        self.capture.lock().take()
    }

    /// Records work into the capture in progress: `add(graph, tail)` appends its nodes and
    /// returns the new tail. `None` when no capture is active (the caller runs the work).
    pub(crate) fn capture_with(&self, add: impl FnOnce(u64, &[u64]) -> Result<Vec<u64>, String>) -> Option<Result<(), String>> {
        let mut c = self.capture.lock();
        let cap = c.as_mut()?;
        Some(add(cap.graph, &cap.tail).map(|tail| cap.tail = tail))
    }

    /// A marker job: what `hipEventRecord` puts in the queue.
    pub(crate) fn marker(&self) -> Option<Mark> {
        self.enqueue(Box::new(|| {}))
    }

    /// Waits for everything enqueued so far (`hipStreamSynchronize`).
    pub(crate) fn synchronize(&self) {
        let ticket = self.shared.progress.lock().submitted;
        self.shared.wait(ticket);
    }

    /// Closes the queue, lets the worker finish what is queued, and joins it.
    fn shutdown(&self) {
        drop(self.shared.progress.lock().tx.take());
        if let Some(handle) = self.worker.lock().take()
            && handle.join().is_err()
        {
            // Jobs run under `catch_unwind`; a panic here is the worker's own: say so.
            tracing::error!("a simulated stream's worker thread panicked");
        }
    }
}

/// Base of stream handle values, so a handle of another kind is never taken for a stream.
const STREAM_BASE: usize = 0x5_0000_0000;

/// Every stream of a runtime: the created ones and each device's null stream.
pub(crate) struct Streams {
    created: Mutex<HashMap<RawStream, Arc<Stream>>>,
    null: Mutex<Vec<Option<Arc<Stream>>>>,
    next: AtomicUsize,
    log: Arc<Violations>,
}

impl Streams {
    pub(crate) fn new(devices: i32, log: Arc<Violations>) -> Self {
        Streams {
            created: Mutex::new(HashMap::new()),
            null: Mutex::new(vec![None; devices.max(0) as usize]),
            next: AtomicUsize::new(1),
            log,
        }
    }

    /// `hipStreamCreate` on `device`.
    pub(crate) fn create(&self, device: i32) -> std::io::Result<RawStream> {
        let raw = RawStream(STREAM_BASE + self.next.fetch_add(1, Ordering::Relaxed) * 16);
        let stream = Stream::spawn(raw, device, self.log.clone())?;
        self.created.lock().insert(raw, stream);
        Ok(raw)
    }

    /// The stream `raw` names; `NULL` is `device`'s null stream. `Ok(None)`: no such stream.
    pub(crate) fn resolve(&self, raw: RawStream, device: i32) -> std::io::Result<Option<Arc<Stream>>> {
        if raw != RawStream::NULL {
            return Ok(self.created.lock().get(&raw).cloned());
        }
        let mut null = self.null.lock();
        let Some(slot) = null.get_mut(device.max(0) as usize) else { return Ok(None) };
        if let Some(s) = slot {
            return Ok(Some(s.clone()));
        }
        let s = Stream::spawn(RawStream::NULL, device, self.log.clone())?;
        *slot = Some(s.clone());
        Ok(Some(s))
    }

    /// `hipStreamDestroy`: finishes the stream's queued work first. `false`: no such stream.
    pub(crate) fn destroy(&self, raw: RawStream) -> bool {
        let Some(s) = self.created.lock().remove(&raw) else { return false };
        s.shutdown();
        true
    }

    /// Every stream of `device` (all devices for `None`), null streams included.
    pub(crate) fn of_device(&self, device: Option<i32>) -> Vec<Arc<Stream>> {
        let mut out: Vec<Arc<Stream>> =
            self.created.lock().values().filter(|s| device.is_none_or(|d| s.device == d)).cloned().collect();
        out.extend(self.null.lock().iter().flatten().filter(|s| device.is_none_or(|d| s.device == d)).cloned());
        out
    }

    /// Whether any stream of `device` is capturing.
    pub(crate) fn any_capturing(&self, device: i32) -> bool {
        self.of_device(Some(device)).iter().any(|s| s.is_capturing())
    }

    /// Streams created and not destroyed (null streams not counted).
    pub(crate) fn live(&self) -> usize {
        self.created.lock().len()
    }

    /// Stops every worker after its queue drains (runtime teardown).
    pub(crate) fn shutdown_all(&self) {
        let created: Vec<_> = self.created.lock().drain().map(|(_, s)| s).collect();
        let null: Vec<_> = self.null.lock().iter_mut().filter_map(Option::take).collect();
        for s in created.into_iter().chain(null) {
            s.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn work_runs_in_order_and_marks_follow_it() {
        let streams = Streams::new(1, Arc::default());
        let raw = streams.create(0).unwrap();
        let s = streams.resolve(raw, 0).unwrap().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut marks = Vec::new();
        for i in 0..5 {
            let seen = seen.clone();
            s.enqueue(Box::new(move || {
                std::thread::sleep(Duration::from_millis(2));
                seen.lock().push(i);
            }))
            .unwrap();
            marks.push(s.marker().unwrap());
        }
        marks[2].wait();
        assert!(marks[..3].iter().all(Mark::passed));
        assert!(seen.lock().len() >= 3);
        assert!(streams.destroy(raw), "destroy drains the queue");
        assert_eq!(*seen.lock(), vec![0, 1, 2, 3, 4]);
        assert!(marks.iter().all(Mark::passed));
        assert!(s.enqueue(Box::new(|| {})).is_none(), "a destroyed stream takes no work");
        assert!(!streams.destroy(raw));
        // Null streams are per device, made on first use, the same one each time.
        let n0 = streams.resolve(RawStream::NULL, 0).unwrap().unwrap();
        let again = streams.resolve(RawStream::NULL, 0).unwrap().unwrap();
        assert!(Arc::ptr_eq(&n0, &again));
        assert!(streams.resolve(RawStream::NULL, 1).unwrap().is_none());
        assert_eq!(streams.live(), 0);
        streams.shutdown_all();
    }
}
