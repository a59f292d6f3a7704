//! What one call cost the thread that made it: wall time, the thread's own CPU time, and the
//! page faults and context switches it took (Linux `CLOCK_THREAD_CPUTIME_ID` and
//! `getrusage(RUSAGE_THREAD)`). Shared by the examples that ask why a plan call costs more
//! on one thread than on another (`gpu_bench`'s creation part, `miss_anatomy`): a call whose
//! CPU time matches its wall time ran slower; one whose CPU time falls short of it waited
//! (a lock, the scheduler, a page in). The thread CPU clock is a system call, so the CPU
//! time holds part of its two reads (a few tenths of a microsecond; on the sim, where a call
//! takes about that, it reads above the wall time).

use std::time::Instant;

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

#[repr(C)]
struct Timeval {
    tv_sec: i64,
    tv_usec: i64,
}

/// Linux x86_64 / aarch64 `struct rusage`: two timevals, then fourteen longs.
#[repr(C)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    longs: [i64; 14],
}

unsafe extern "C" {
    /// `int clock_gettime(clockid_t clk, struct timespec *tp);`
    fn clock_gettime(clk: i32, tp: *mut Timespec) -> i32;
    /// `int getrusage(int who, struct rusage *usage);`
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    /// glibc's `int sched_getcpu(void)`: the CPU the calling thread runs on, or -1.
    fn sched_getcpu() -> i32;
}

/// The CPU the calling thread runs on now (-1 where the system cannot say).
pub fn cpu() -> i32 {
    // SAFETY: no arguments, no memory; returns -1 where unsupported.
    unsafe { sched_getcpu() }
}

const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
const RUSAGE_THREAD: i32 = 1;
// Indices into `Rusage::longs`: ru_minflt, ru_majflt, ru_nvcsw, ru_nivcsw.
const MINFLT: usize = 4;
const MAJFLT: usize = 5;
const NVCSW: usize = 12;
const NIVCSW: usize = 13;

/// The calling thread's counters at one instant.
#[derive(Clone, Copy)]
struct Reading {
    wall: Instant,
    cpu_ns: i64,
    faults: i64,
    voluntary: i64,
    involuntary: i64,
}

/// Reads the thread's counters around `wall`: at a call's start the clock is read last and
/// at its end first, so each window (wall, CPU) holds the call and not the other's reads.
fn read(wall_last: bool) -> Reading {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    let mut ru = Rusage { utime: Timeval { tv_sec: 0, tv_usec: 0 }, stime: Timeval { tv_sec: 0, tv_usec: 0 }, longs: [0; 14] };
    let early = (!wall_last).then(Instant::now);
    // SAFETY: both take a pointer to a caller-owned struct of the layout the kernel writes;
    // on failure they leave it zeroed, which reads as no cost.
    unsafe {
        if wall_last {
            getrusage(RUSAGE_THREAD, &mut ru);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts);
        } else {
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts);
            getrusage(RUSAGE_THREAD, &mut ru);
        }
    }
    Reading {
        wall: early.unwrap_or_else(Instant::now),
        cpu_ns: ts.tv_sec * 1_000_000_000 + ts.tv_nsec,
        faults: ru.longs[MINFLT] + ru.longs[MAJFLT],
        voluntary: ru.longs[NVCSW],
        involuntary: ru.longs[NIVCSW],
    }
}

/// One call's cost to its thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallCost {
    pub wall_us: f64,
    pub cpu_us: f64,
    pub faults: i64,
    pub voluntary_switches: i64,
    pub involuntary_switches: i64,
}

impl CallCost {
    /// Runs `f` on this thread and says what it cost.
    pub fn measure<T>(f: impl FnOnce() -> T) -> (T, CallCost) {
        let a = read(true);
        let out = f();
        let b = read(false);
        let cost = CallCost {
            wall_us: (b.wall - a.wall).as_secs_f64() * 1e6,
            cpu_us: (b.cpu_ns - a.cpu_ns) as f64 / 1e3,
            faults: b.faults - a.faults,
            voluntary_switches: b.voluntary - a.voluntary,
            involuntary_switches: b.involuntary - a.involuntary,
        };
        (out, cost)
    }
}

/// The middle value (the upper of the two for an even count); NaN for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Per-shape medians of each field, then their mean over shapes: the same summary the
/// examples give their wall times. `costs` pairs each cost with its shape's index.
pub fn summary(costs: &[(usize, CallCost)], shapes: usize) -> serde_json::Value {
    let field = |get: fn(&CallCost) -> f64| -> f64 {
        let per: Vec<f64> = (0..shapes)
            .map(|i| median(costs.iter().filter(|(s, _)| *s == i).map(|(_, c)| get(c)).collect()))
            .filter(|m| !m.is_nan())
            .collect();
        if per.is_empty() { f64::NAN } else { per.iter().sum::<f64>() / per.len() as f64 }
    };
    let total = |get: fn(&CallCost) -> i64| -> i64 { costs.iter().map(|(_, c)| get(c)).sum() };
    serde_json::json!({
        "calls": costs.len(),
        "wall_us": field(|c| c.wall_us),
        "cpu_us": field(|c| c.cpu_us),
        "faults_per_call": total(|c| c.faults) as f64 / costs.len().max(1) as f64,
        "voluntary_switches_per_call": total(|c| c.voluntary_switches) as f64 / costs.len().max(1) as f64,
        "involuntary_switches_per_call": total(|c| c.involuntary_switches) as f64 / costs.len().max(1) as f64,
    })
}

/// One line of [`summary`] for a table.
pub fn line(v: &serde_json::Value) -> String {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    format!(
        "wall {:7.1} us, thread CPU {:7.1} us, faults {:6.1}, switches {:4.2} voluntary {:4.2} involuntary ({} calls)",
        f("wall_us"),
        f("cpu_us"),
        f("faults_per_call"),
        f("voluntary_switches_per_call"),
        f("involuntary_switches_per_call"),
        v["calls"].as_u64().unwrap_or(0)
    )
}
