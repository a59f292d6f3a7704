//! What a hung child was doing, collected before it is killed: every thread's kernel view
//! (`/proc/PID/task/TID/{comm,status,wchan,syscall,stack}`), a user-space backtrace of all
//! threads from gdb where gdb is there and may attach, and the same kernel view of every
//! descendant process (rocFFT compiles kernels in helper processes), found through
//! `/proc/PID/task/*/children`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How much of the hung process to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backtrace {
    /// gdb when it is on PATH, and /proc always.
    Auto,
    /// Like `auto`, but the report says so when gdb is missing.
    Gdb,
    /// /proc only.
    Proc,
    /// Nothing (the report still names the position and the counts).
    Off,
}

impl Backtrace {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "gdb" => Some(Self::Gdb),
            "proc" => Some(Self::Proc),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ThreadInfo {
    pub tid: u32,
    pub comm: String,
    /// The `State:` line of status, e.g. `S (sleeping)`.
    pub state: String,
    /// The kernel function the thread sleeps in (`pipe_read`, `anon_pipe_read`, `futex_wait_queue`...).
    pub wchan: String,
    /// `/proc/.../syscall`: the system call number and its arguments (0 is `read` on x86-64).
    pub syscall: String,
    /// The kernel stack (root only; empty where the kernel does not expose it).
    pub stack: String,
    /// gdb's innermost frames of this thread, down to the first one outside libc and the
    /// Rust standard library (the code that made the blocking call) and two callers of it.
    pub top_frames: Vec<String>,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub cmdline: String,
    /// The variables that steer the GPU stack (ROCFFT_*, HIP*, HSA_*, AMD_*, GPU_*, CUDA_*,
    /// HIPFFT_POOL_*, MLX_*), from /proc/PID/environ.
    pub env: Vec<String>,
    pub threads: Vec<ThreadInfo>,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HangReport {
    pub process: ProcInfo,
    /// gdb's `thread apply all bt`, when it ran.
    pub gdb: Option<String>,
    /// Why there is no gdb backtrace, when there is none.
    pub gdb_note: Option<String>,
    /// Every process below the hung one, depth first.
    pub descendants: Vec<ProcInfo>,
    /// Threads sleeping in a pipe read (wchan `pipe_read`, `anon_pipe_read`, `pipe_wait`:
    /// the signature of the original hang), with the frames that called it; the probe's
    /// own `parent-watch` thread, which reads its standard input, is left out.
    pub blocked_in_pipe_read: Vec<String>,
}

fn read_trim(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).map(|s| s.trim_end().to_string()).unwrap_or_default()
}

fn status_field(status: &str, name: &str) -> String {
    status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default()
}

fn proc_info(pid: u32) -> ProcInfo {
    let base = PathBuf::from(format!("/proc/{pid}"));
    let status = read_trim(base.join("status"));
    let cmdline = std::fs::read(base.join("cmdline"))
        .map(|b| b.split(|c| *c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let mut tids: Vec<u32> = std::fs::read_dir(base.join("task"))
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    tids.sort_unstable();
    let threads = tids
        .into_iter()
        .map(|tid| {
            let t = base.join("task").join(tid.to_string());
            let tstatus = read_trim(t.join("status"));
            ThreadInfo {
                tid,
                comm: read_trim(t.join("comm")),
                state: status_field(&tstatus, "State:"),
                wchan: read_trim(t.join("wchan")),
                syscall: read_trim(t.join("syscall")),
                stack: read_trim(t.join("stack")),
                top_frames: Vec::new(),
            }
        })
        .collect();
    const PREFIXES: [&str; 8] = ["ROCFFT_", "HIP", "HSA_", "AMD_", "GPU_", "CUDA_", "HIPFFT_POOL_", "MLX_"];
    let mut env: Vec<String> = std::fs::read(base.join("environ"))
        .map(|b| {
            b.split(|c| *c == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .filter(|kv| PREFIXES.iter().any(|p| kv.starts_with(p)))
                .collect()
        })
        .unwrap_or_default();
    env.sort();
    ProcInfo {
        pid,
        ppid: status_field(&status, "PPid:").parse().unwrap_or(0),
        comm: read_trim(base.join("comm")),
        cmdline,
        env,
        threads,
    }
}

/// The children of `pid`, from every thread's `children` file.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(d) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for e in d.flatten() {
            let text = read_trim(e.path().join("children"));
            out.extend(text.split_whitespace().filter_map(|s| s.parse::<u32>().ok()));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every process below `pid`, depth first.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = children(pid);
    stack.reverse();
    while let Some(p) = stack.pop() {
        if out.contains(&p) {
            continue;
        }
        out.push(p);
        let mut c = children(p);
        c.reverse();
        stack.extend(c);
    }
    out
}

pub fn find_gdb() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("gdb")).find(|p| p.is_file())
}

/// Runs `cmd`, killing it after `limit`; returns (stdout, stderr, finished in time).
fn run_limited(mut cmd: Command, limit: Duration) -> std::io::Result<(String, String, bool)> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let mut so = child.stdout.take().expect("piped");
    let mut se = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let in_time = loop {
        if child.try_wait()?.is_some() {
            break true;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok((t_out.join().unwrap_or_default(), t_err.join().unwrap_or_default(), in_time))
}

fn gdb_backtrace(gdb: &Path, pid: u32) -> Result<String, String> {
    let mut cmd = Command::new(gdb);
    cmd.args(["-nx", "-batch", "-p", &pid.to_string(), "-ex", "set pagination off", "-ex", "set print frame-arguments none", "-ex", "thread apply all bt"]);
    match run_limited(cmd, Duration::from_secs(60)) {
        Err(e) => Err(format!("cannot run {}: {e}", gdb.display())),
        Ok((out, err, in_time)) => {
            let frames = out.lines().filter(|l| l.starts_with('#')).count();
            if frames == 0 {
                let why = err.lines().filter(|l| !l.trim().is_empty()).take(6).collect::<Vec<_>>().join(" / ");
                return Err(format!(
                    "gdb printed no frames{}: {}",
                    if in_time { "" } else { " (killed after 60 s)" },
                    if why.is_empty() { "no message".into() } else { why }
                ));
            }
            // Keep the thread headers and frames; drop gdb's symbol-loading chatter.
            let kept: Vec<&str> = out.lines().filter(|l| l.starts_with('#') || l.starts_with("Thread ") || l.trim().is_empty()).collect();
            Ok(kept.join("\n").trim().to_string())
        }
    }
}

/// Looks at `pid` and everything below it. Call before killing.
pub fn collect(pid: u32, mode: Backtrace) -> HangReport {
    if mode == Backtrace::Off {
        return HangReport { process: ProcInfo { pid, ..Default::default() }, gdb_note: Some("--backtrace off".into()), ..Default::default() };
    }
    let mut report = HangReport { process: proc_info(pid), ..Default::default() };
    report.descendants = descendants(pid).into_iter().map(proc_info).collect();
    match mode {
        Backtrace::Auto | Backtrace::Gdb => match find_gdb() {
            Some(gdb) => match gdb_backtrace(&gdb, pid) {
                Ok(bt) => report.gdb = Some(bt),
                Err(why) => report.gdb_note = Some(why),
            },
            None => report.gdb_note = Some("gdb is not on PATH (install gdb for user-space backtraces)".into()),
        },
        _ => report.gdb_note = Some("--backtrace proc".into()),
    }
    attach_frames(&mut report);
    report.blocked_in_pipe_read = pipe_readers(&report);
    report
}

/// The threads of gdb's output by LWP, each with its frames (`#N ...` lines).
fn gdb_threads(bt: &str) -> Vec<(u32, Vec<String>)> {
    let mut out: Vec<(u32, Vec<String>)> = Vec::new();
    for l in bt.lines() {
        if l.starts_with("Thread ") {
            let lwp = l.split("LWP ").nth(1).and_then(|s| s.split(')').next()).and_then(|s| s.trim().parse().ok()).unwrap_or(0);
            out.push((lwp, Vec::new()));
        } else if l.starts_with('#') {
            if let Some(t) = out.last_mut() {
                t.1.push(l.to_string());
            }
        }
    }
    out
}

/// A frame of libc, the Rust runtime or the standard library (not the code to blame).
fn is_library_frame(f: &str) -> bool {
    let func = frame_function(f);
    func.is_empty()
        || func == "??"
        || ["std::", "core::", "alloc::", "crossbeam_channel::", "parking_lot", "__GI_", "__libc", "__", "syscall", "read", "pthread", "<std::", "<core::", "<alloc::"]
            .iter()
            .any(|p| func.starts_with(p))
}

/// `#4  0x000055b5d6bee627 in foo::bar () at src/x.rs:25` -> `foo::bar`.
fn frame_function(f: &str) -> &str {
    let rest = f.split_once(char::is_whitespace).map_or("", |(_, r)| r.trim_start());
    let rest = match rest.split_once(" in ") {
        Some((addr, r)) if addr.starts_with("0x") => r,
        _ => rest,
    };
    rest.split(" (").next().unwrap_or("").trim()
}

/// `#4  0x000055b5d6bee627 in foo::bar () at src/x.rs:25` -> `#4 foo::bar () at src/x.rs:25`.
fn short_frame(f: &str) -> String {
    let (num, rest) = f.split_once(char::is_whitespace).unwrap_or((f, ""));
    let rest = rest.trim_start();
    let rest = match rest.split_once(" in ") {
        Some((addr, r)) if addr.starts_with("0x") => r,
        _ => rest,
    };
    let mut s = format!("{num} {rest}");
    if s.chars().count() > 160 {
        s = s.chars().take(159).chain(std::iter::once('…')).collect();
    }
    s
}

fn attach_frames(r: &mut HangReport) {
    let Some(bt) = &r.gdb else { return };
    let threads = gdb_threads(bt);
    for t in &mut r.process.threads {
        if let Some((_, frames)) = threads.iter().find(|(lwp, _)| *lwp == t.tid) {
            // Down to the first frame of the code that made the call, and its two callers.
            let cut = frames.iter().position(|f| !is_library_frame(f)).map_or(frames.len().min(6), |i| i + 3);
            t.top_frames = frames.iter().take(cut.min(12)).map(|f| short_frame(f)).collect();
        }
    }
}

fn pipe_readers(r: &HangReport) -> Vec<String> {
    let mut out = Vec::new();
    for t in &r.process.threads {
        if t.comm == "parent-watch" {
            continue;
        }
        if t.wchan.contains("pipe") || t.stack.contains("pipe_read") {
            let mut s = format!("thread {} {}: wchan {}", t.tid, t.comm, t.wchan);
            if let Some(caller) = t.top_frames.iter().find(|f| !is_library_frame(f)) {
                s.push_str(&format!("; {} called from {caller}", t.top_frames[0]));
            }
            out.push(s);
        }
    }
    out
}

/// Sends SIGKILL to every pid (through kill(1), so no libc binding is needed).
pub fn kill_all(pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let mut cmd = Command::new("kill");
    cmd.arg("-KILL").args(pids.iter().map(|p| p.to_string())).stdout(Stdio::null()).stderr(Stdio::null());
    let _ = cmd.status();
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{l}\n")).collect()
}

impl HangReport {
    pub fn render(&self) -> String {
        let mut o = String::new();
        let p = &self.process;
        if p.threads.is_empty() && p.comm.is_empty() {
            o.push_str(&format!("process {}: not inspected ({})\n", p.pid, self.gdb_note.as_deref().unwrap_or("gone before it could be read")));
            return o;
        }
        o.push_str(&format!("process {} ({}) {}\n", p.pid, p.comm, p.cmdline));
        if !p.env.is_empty() {
            o.push_str(&format!("environment: {}\n", p.env.join(" ")));
        }
        if !self.blocked_in_pipe_read.is_empty() {
            o.push_str("blocked in a pipe read:\n");
            for b in &self.blocked_in_pipe_read {
                o.push_str(&format!("  {b}\n"));
            }
        }
        o.push_str(&render_threads(p));
        match (&self.gdb, &self.gdb_note) {
            (Some(bt), _) => {
                o.push_str("gdb backtrace (thread apply all bt):\n");
                o.push_str(&indent(bt, "  "));
            }
            (None, Some(n)) => o.push_str(&format!("gdb backtrace: none ({n})\n")),
            (None, None) => {}
        }
        if self.descendants.is_empty() {
            o.push_str("child processes: none\n");
        } else {
            o.push_str(&format!("child processes: {}\n", self.descendants.len()));
            for d in &self.descendants {
                o.push_str(&format!("  process {} (parent {}) {} {}\n", d.pid, d.ppid, d.comm, d.cmdline));
                o.push_str(&indent(&render_threads(d), "  "));
            }
        }
        o
    }
}

fn render_threads(p: &ProcInfo) -> String {
    let mut o = String::new();
    o.push_str(&format!("threads: {}\n", p.threads.len()));
    for t in &p.threads {
        o.push_str(&format!(
            "  thread {} {:<16} state {:<14} wchan {:<22} syscall {}\n",
            t.tid,
            t.comm,
            t.state,
            if t.wchan.is_empty() { "?" } else { &t.wchan },
            t.syscall.split_whitespace().next().unwrap_or("?")
        ));
        if !t.top_frames.is_empty() {
            o.push_str("    innermost frames (gdb):\n");
            for f in &t.top_frames {
                o.push_str(&format!("      {f}\n"));
            }
        }
        if !t.stack.is_empty() {
            o.push_str("    kernel stack:\n");
            o.push_str(&indent(&t.stack, "      "));
        }
    }
    o
}
