//! The interposer's own host time, measured inside the process it serves: opt-in with
//! `HIPFFT_POOL_HOST_PROFILE=1`, written to the metrics JSON as `host_profile`.
//!
//! Each exported call is timed whole ([`Call`], from `entry::serve`), and each call the pool
//! makes into the real libraries on its behalf is timed on its own ([`Profiled`], a
//! decorator around the runtime). Per export: calls, nanoseconds per call, of which inside
//! the real libraries, and the rest, the interposer's own. `cargo bench -p
//! hipfft-pool-intercept` measures the same over a runtime that does nothing; this answers
//! it under a real framework, where caches and the driver's locks are shared.
//!
//! Off (the default) it costs one relaxed load per exported call, and the runtime is not
//! wrapped.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Instant;

use hipfft_pool::{
    Decorator, DevicePtr, Direction, HostCall, RawEvent, RawPlan, RawStream, Rebind, Result, Runtime, TransformType,
};
use parking_lot::Mutex;

/// `HIPFFT_POOL_HOST_PROFILE`, read once: whether the profile is on, and a warning for a
/// value that is neither on nor off.
#[inline]
fn state() -> &'static (bool, Option<String>) {
    static STATE: OnceLock<(bool, Option<String>)> = OnceLock::new();
    STATE.get_or_init(|| parse(std::env::var("HIPFFT_POOL_HOST_PROFILE").ok().as_deref()))
}

/// A value of `HIPFFT_POOL_HOST_PROFILE`: `1`, `true`, `on` turn the profile on; unset,
/// empty, `0`, `false`, `off` leave it off; anything else leaves it off with a warning that
/// names the value.
pub fn parse(raw: Option<&str>) -> (bool, Option<String>) {
    match raw.map(str::trim) {
        None | Some("" | "0" | "false" | "off") => (false, None),
        Some("1" | "true" | "on") => (true, None),
        Some(v) => (false, Some(format!("HIPFFT_POOL_HOST_PROFILE={v:?} ignored (1, true or on turn the host profile on); it stays off"))),
    }
}

/// Whether `HIPFFT_POOL_HOST_PROFILE` asks for the profile.
#[inline]
pub fn on() -> bool {
    state().0
}

/// The warning for a value of `HIPFFT_POOL_HOST_PROFILE` that was ignored, if any.
pub fn warning() -> Option<&'static str> {
    state().1.as_deref()
}

thread_local! {
    /// Nanoseconds this thread spent inside the real libraries so far.
    static IN_LIBRARY: Cell<u64> = const { Cell::new(0) };
}

#[derive(Clone, Copy, Default)]
struct Stat {
    calls: u64,
    total_ns: u64,
    library_ns: u64,
}

/// Per exported call (and per library call, named `library:<call>`), in the order first seen.
static TABLE: Mutex<Vec<(&'static str, Stat)>> = Mutex::new(Vec::new());

fn add(name: &'static str, total_ns: u64, library_ns: u64) {
    let mut t = TABLE.lock();
    let i = match t.iter().position(|(n, _)| *n == name) {
        Some(i) => i,
        None => {
            t.push((name, Stat::default()));
            t.len() - 1
        }
    };
    let s = &mut t[i].1;
    s.calls += 1;
    s.total_ns += total_ns;
    s.library_ns += library_ns;
}

/// One exported call being timed.
pub struct Call {
    name: &'static str,
    start: Instant,
    library_before: u64,
}

impl Call {
    /// Starts timing the export `name`, when the profile is on.
    #[inline]
    pub fn start(name: &'static str) -> Option<Call> {
        on().then(|| Call { name, start: Instant::now(), library_before: IN_LIBRARY.with(Cell::get) })
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let total = self.start.elapsed().as_nanos() as u64;
        let library = IN_LIBRARY.with(Cell::get).saturating_sub(self.library_before);
        add(self.name, total, library);
    }
}

/// Times `f`, a call into the real libraries named `name`.
fn library<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let r = f();
    let ns = start.elapsed().as_nanos() as u64;
    IN_LIBRARY.with(|c| c.set(c.get() + ns));
    add(name, ns, ns);
    r
}

/// The `host_profile` object: per name, calls and nanoseconds per call (whole, inside the
/// real libraries, and the interposer's own); `None` when the profile is off.
pub fn json() -> Option<serde_json::Value> {
    if !on() {
        return None;
    }
    let t = TABLE.lock();
    let mut out = serde_json::Map::new();
    for (name, s) in t.iter() {
        let per = |ns: u64| if s.calls == 0 { 0.0 } else { (ns as f64 / s.calls as f64 * 10.0).round() / 10.0 };
        out.insert(
            (*name).to_string(),
            serde_json::json!({
                "calls": s.calls,
                "ns_per_call": per(s.total_ns),
                "library_ns_per_call": per(s.library_ns),
                "own_ns_per_call": per(s.total_ns.saturating_sub(s.library_ns)),
            }),
        );
    }
    Some(serde_json::Value::Object(out))
}

/// The runtime the pool drives, with every call an execution path makes into it timed.
pub struct Profiled {
    inner: Arc<dyn Runtime>,
}

impl Profiled {
    /// `inner`, timed.
    pub fn wrap(inner: Arc<dyn Runtime>) -> Arc<dyn Runtime> {
        Arc::new(Profiled { inner })
    }
}

// SAFETY: every call goes to the inner runtime unchanged and returns its answer.
unsafe impl Decorator for Profiled {
    fn inner(&self) -> &dyn Runtime {
        &*self.inner
    }

    fn current_device(&self) -> Result<i32> {
        library("library:get_device", || self.inner.current_device())
    }

    unsafe fn plan_exec_bound(
        &self,
        plan: RawPlan,
        transform: TransformType,
        stream: RawStream,
        work_area: Option<DevicePtr>,
        input: DevicePtr,
        output: DevicePtr,
        direction: Direction,
        rebind: Rebind,
    ) -> Result<()> {
        library("library:exec", || {
            // SAFETY: the caller's contract, passed on unchanged.
            unsafe { self.inner.plan_exec_bound(plan, transform, stream, work_area, input, output, direction, rebind) }
        })
    }

    unsafe fn plan_bind(&self, plan: RawPlan, stream: Option<RawStream>, work_area: Option<DevicePtr>) -> Result<bool> {
        // SAFETY: the caller's contract, passed on unchanged.
        library("library:bind", || unsafe { self.inner.plan_bind(plan, stream, work_area) })
    }

    unsafe fn event_record(&self, event: RawEvent, stream: RawStream) -> Result<()> {
        // SAFETY: the caller's contract, passed on unchanged.
        library("library:event_record", || unsafe { self.inner.event_record(event, stream) })
    }

    unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool> {
        // SAFETY: the caller's contract, passed on unchanged.
        library("library:stream_is_capturing", || unsafe { self.inner.stream_is_capturing(stream) })
    }

    unsafe fn launch_host_fn(&self, stream: RawStream, call: HostCall) -> Result<()> {
        // SAFETY: the caller's contract, passed on unchanged.
        library("library:launch_host_fn", || unsafe { self.inner.launch_host_fn(stream, call) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_takes_on_and_off_and_names_anything_else() {
        assert_eq!(parse(None), (false, None));
        for v in ["", "0", "false", "off"] {
            assert_eq!(parse(Some(v)), (false, None), "{v:?}");
        }
        for v in ["1", "true", "on", " 1 "] {
            assert_eq!(parse(Some(v)), (true, None), "{v:?}");
        }
        let (on, warning) = parse(Some("yes please"));
        assert!(!on);
        assert!(warning.unwrap().contains("HIPFFT_POOL_HOST_PROFILE=\"yes please\" ignored"));
    }

    #[test]
    fn library_time_counts_toward_the_call_it_happened_in() {
        let call = Call { name: "cufftTestProfile", start: Instant::now(), library_before: IN_LIBRARY.with(Cell::get) };
        library("library:test_profile", || std::thread::sleep(std::time::Duration::from_millis(2)));
        drop(call);
        let t = TABLE.lock();
        let get = |n: &str| t.iter().find(|(name, _)| *name == n).map(|(_, s)| *s).unwrap();
        let (whole, lib) = (get("cufftTestProfile"), get("library:test_profile"));
        assert_eq!((whole.calls, lib.calls), (1, 1));
        assert!(lib.library_ns >= 2_000_000, "{}", lib.library_ns);
        assert_eq!(whole.library_ns, lib.library_ns, "the export's library time is the call's");
        assert!(whole.total_ns >= whole.library_ns);
    }
}
