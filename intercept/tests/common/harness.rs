//! What the interposers' integration tests share: finding the built library, compiling the C
//! programs of `intercept/tests/c/` with `cc` (or `$CC`), running them.
//!
//! The library: cargo builds the test's own package's cdylib into `target/<profile>/deps/`
//! with the test (the package declares `cdylib` and `rlib`); if it is not there, `cargo build`
//! of that package runs (same profile).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `intercept/`.
pub fn intercept_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("intercept/<crate>").to_path_buf()
}

pub fn c_dir() -> PathBuf {
    intercept_dir().join("tests/c")
}

/// `target/<profile>`: the test binary lives in `target/<profile>/deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

pub fn work_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn show(out: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The directory holding `lib{name}.so` (built by `package`).
pub fn library_dir(name: &str, package: &str) -> PathBuf {
    let file = format!("lib{name}.so");
    let dir = profile_dir();
    for d in [dir.join("deps"), dir.clone()] {
        if d.join(&file).exists() {
            return d;
        }
    }
    let mut c = Command::new(env!("CARGO"));
    c.args(["build", "-p", package]);
    if !cfg!(debug_assertions) {
        c.arg("--release");
    }
    let out = c.output().expect("cargo build");
    assert!(out.status.success(), "cargo build -p {package}\n{}", show(&out));
    assert!(dir.join(&file).exists(), "no {file} in {}", dir.display());
    dir
}

pub fn cc() -> Command {
    let cc = std::env::var("CC").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| "cc".into());
    Command::new(cc)
}

/// Compiles `sources` (in `intercept/tests/c/`) into `out` with `flags`, linking `libs`
/// (`-l` names) from `lib_dirs` with an rpath to each.
pub fn compile(out: &Path, sources: &[&str], flags: &[&str], lib_dirs: &[&Path], libs: &[&str]) {
    let mut c = cc();
    c.args(["-O1", "-g", "-Wall", "-std=gnu11", "-o"]).arg(out);
    for s in sources {
        c.arg(c_dir().join(s));
    }
    c.args(flags).arg(format!("-I{}", c_dir().display()));
    for d in lib_dirs {
        // An RPATH (not RUNPATH): searched before LD_LIBRARY_PATH, which cargo points at
        // target/<profile>/ where an older uplifted copy may lie.
        c.arg(format!("-L{}", d.display())).arg(format!("-Wl,-rpath,{}", d.display())).arg("-Wl,--disable-new-dtags");
    }
    for l in libs {
        c.arg(format!("-l{l}"));
    }
    c.args(["-lm", "-lpthread", "-ldl"]);
    let o = c.output().unwrap_or_else(|e| panic!("cannot run the C compiler: {e}"));
    assert!(o.status.success(), "compiling {sources:?} failed\n{}", show(&o));
}

/// Runs `exe args` with `env` added (and the pool's own variables cleared first, so the
/// caller's environment cannot change the test); asserts success unless `expect_ok` is false.
pub fn run(exe: &Path, args: &[&str], env: &[(&str, &str)], expect_ok: bool) -> Output {
    let mut c = Command::new(exe);
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("HIPFFT_POOL_") || k == "LD_PRELOAD" || k == "LD_LIBRARY_PATH" {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied());
    let o = c.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    if expect_ok {
        assert!(o.status.success(), "{} {args:?} failed\n{}", exe.display(), show(&o));
    }
    o
}

/// The metrics JSON a program wrote.
pub fn metrics(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no metrics at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad metrics JSON {text}: {e}"))
}

pub fn get(m: &serde_json::Value, key: &str) -> u64 {
    m[key].as_u64().unwrap_or_else(|| panic!("metrics lack {key}: {m}"))
}

/// The dynamic symbols `lib` defines.
pub fn exported(lib: &Path) -> Vec<String> {
    let o = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().expect("nm (binutils) is needed");
    assert!(o.status.success(), "nm failed\n{}", show(&o));
    String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.split_whitespace().nth(2)).map(str::to_string).collect()
}

/// What one run of `fft_sim mlx` reported: ops, right, wrong, failed calls naming the
/// ceiling, failed calls not naming it, the slowest failure in milliseconds.
pub struct MlxRun {
    pub ops: u64,
    pub right: u64,
    pub wrong: u64,
    pub clear: u64,
    pub unclear: u64,
    pub slowest_failure_ms: f64,
    pub metrics: serde_json::Value,
    pub output: String,
}

/// Runs MLX's pattern (`fft_sim mlx KEYS CACHE`: a plan cache of CACHE handles over KEYS
/// shapes, lone kernels copied into each command buffer's graph and the rest nested as child
/// graphs, kept instantiations updated in place) with `env` added to the simulated runtime's.
pub fn mlx_run(program: &Path, dir_name: &str, keys: u32, cache: u32, env: &[(&str, &str)]) -> MlxRun {
    let dir = work_dir(dir_name);
    let out = dir.join("m.json");
    let mut all = vec![("HIPFFT_POOL_RUNTIME", "sim"), ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap())];
    all.extend_from_slice(env);
    let o = run(program, &["mlx", &keys.to_string(), &cache.to_string()], &all, false);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("mlx: ")).unwrap_or_else(|| panic!("no summary line\n{}", show(&o)));
    // "mlx: 48 ops, 40 right, 0 wrong, 8 failed calls naming the ceiling, 0 not, slowest failure 0 ms"
    let nums: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|t| !t.is_empty() && *t != ".")
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(nums.len(), 6, "{line}");
    assert!(o.status.success(), "{}", show(&o));
    MlxRun {
        ops: nums[0] as u64,
        right: nums[1] as u64,
        wrong: nums[2] as u64,
        clear: nums[3] as u64,
        unclear: nums[4] as u64,
        slowest_failure_ms: nums[5],
        metrics: metrics(&out),
        output: show(&o),
    }
}

/// MLX's graph pattern at every ceiling from 2 up to more than its working set, with MLX's
/// plan cache smaller than its keys (a handle destroyed while its plan sits in a graph not
/// yet run and in kept instantiations): every value right or a call failed with a message
/// naming `HIPFFT_POOL_LIVE_CEILING`, at once (the acquire timeout is 10 s); no graph ever
/// runs or updates a destroyed plan's kernel (the sim's own record); the sim's peak at most
/// the ceiling; and once every graph and instantiation is destroyed, no plan is held. At a
/// ceiling the working set fits, nothing fails.
pub fn mlx_graphs_at_every_ceiling(program: &Path, lib: &str) {
    // (ceiling, kernels shared by plans of a shape, resident limit: the default, a quarter
    // of the ceiling, or none so that every captured plan is held by its graphs alone)
    let cases = [
        (2, false, None),
        (3, false, None),
        (4, false, None),
        (6, false, None),
        (8, false, None),
        (12, false, None),
        (12, false, Some("0")),
        (64, false, Some("0")),
        (64, false, None),
        (4, true, None),
        (64, true, Some("0")),
    ];
    for (ceiling, shared, residents) in cases {
        let c = ceiling.to_string();
        let mut env = vec![
            ("HIPFFT_POOL_LIVE_CEILING", c.as_str()),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "10000"),
            ("HIPFFT_POOL_SIM_SHARED_KERNELS", if shared { "1" } else { "0" }),
        ];
        if let Some(r) = residents {
            env.push(("HIPFFT_POOL_CAPTURE_RESIDENTS", r));
        }
        let r = mlx_run(program, &format!("{lib}_mlx_ceiling_{ceiling}_{shared}_{residents:?}"), 12, 4, &env);
        let m = &r.metrics;
        let at = format!("ceiling {ceiling}, shared kernels {shared}, residents {residents:?}: {}\n{m}", r.output);
        assert_eq!((r.wrong, r.unclear), (0, 0), "{at}");
        assert!(r.slowest_failure_ms < 2000.0, "a failure waited {} ms: {at}", r.slowest_failure_ms);
        assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{at}");
        assert!(get(m, "sim_peak_live_handles") <= ceiling, "{at}");
        assert_eq!(get(m, "captured_kept"), 0, "every capture was followed: {at}");
        if residents == Some("0") {
            assert!(get(m, "captured_followed") > 0 && get(m, "capture_residents") == 0, "{at}");
        }
        assert_eq!(get(m, "graph_held_plans"), 0, "no graph is left, so no plan is held: {at}");
        assert_eq!(get(m, "standing"), get(m, "capture_residents"), "only residents stand: {at}");
        if ceiling >= 64 {
            assert_eq!((r.right, r.clear), (r.ops, 0), "{at}");
        } else {
            assert!(r.right + r.clear > 0, "{at}");
        }
    }
}

/// Executions captured into graphs on the simulated runtime's graph model, under each capture
/// policy and a small ceiling: every captured transform gives the right numbers at each
/// launch, a plan not prepared before the capture is refused, the sim records no misuse (no
/// plan made or destroyed and no event recorded inside a capture, no graph run on a
/// destroyed plan), and a plan captured beyond the residents is held exactly while its
/// graphs live (none at exit). `release-on-run`, no longer offered, says so and runs as `auto`.
pub fn captured_executions_at_a_small_ceiling(program: &Path, lib: &str) {
    for (policy, ceiling) in [("auto", "4"), ("release-on-run", "4"), ("pin", "24")] {
        let dir = work_dir(&format!("{lib}_capture_{policy}"));
        let out = dir.join("m.json");
        let env = [
            ("HIPFFT_POOL_RUNTIME", "sim"),
            // `pin` keeps every captured plan for good: its 16 descriptors need room.
            ("HIPFFT_POOL_LIVE_CEILING", ceiling),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "2000"),
            ("HIPFFT_POOL_CAPTURE", policy),
            ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
        ];
        let o = run(program, &["capture", "16"], &env, true);
        assert!(String::from_utf8_lossy(&o.stdout).contains("ok 16 captured handles"), "{policy}: {}", show(&o));
        let m = metrics(&out);
        assert!(get(&m, "sim_peak_live_handles") <= ceiling.parse().unwrap(), "{policy}: {m}");
        assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{policy}: {m}");
        // Every execution is captured: those of handles that knew their resident plan are
        // counted as `resident_execs` (no capture check on that path).
        assert_eq!(get(&m, "captured_execs") + get(&m, "resident_execs"), 18, "{policy}: {m}");
        assert_eq!(get(&m, "capture_misses"), 1, "{policy}: {m}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.matches("no longer offered").count(), usize::from(policy == "release-on-run"), "{policy}: {}", show(&o));
        assert_eq!(get(&m, "captured_kept"), 0, "{policy}: {m}");
        assert_eq!(get(&m, "graph_held_plans"), 0, "{policy}: every graph was destroyed: {m}");
        match policy {
            // The first handle and handle 12 share a descriptor (n=32, batch 2); one more is
            // captured on a cached plan. Only the plans the size queries made were destroyed.
            "pin" => {
                assert_eq!(get(&m, "capture_residents"), 17, "{m}");
                assert!(get(&m, "destroys") <= 32, "no resident was destroyed: {m}");
            }
            _ => {
                assert_eq!((get(&m, "capture_residents"), get(&m, "capture_resident_limit")), (1, 1), "{m}");
                assert!(get(&m, "captured_followed") >= 15, "{policy}: {m}");
                assert!(get(&m, "destroys") > 0, "{policy}: plans no graph held were destroyed under the ceiling: {m}");
            }
        }
    }
}

/// `HIPFFT_POOL_CAPTURE=pin`: every captured plan is kept for the process's life (no graph is
/// followed), so with room for all keys each key's plan is made once, and every value is
/// right.
pub fn mlx_under_pin_keeps_every_captured_plan(program: &Path, lib: &str) {
    let env = [("HIPFFT_POOL_LIVE_CEILING", "64"), ("HIPFFT_POOL_CAPTURE", "pin")];
    let r = mlx_run(program, &format!("{lib}_mlx_pin"), 12, 4, &env);
    let m = &r.metrics;
    assert_eq!((r.right, r.wrong, r.clear + r.unclear), (r.ops, 0, 0), "{}", r.output);
    assert_eq!((get(m, "capture_residents"), get(m, "sim_created")), (12, 12), "{m}");
    assert_eq!((get(m, "captured_followed"), get(m, "standing")), (0, 12), "{m}");
    assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{m}");
}

/// `HIPFFT_POOL_HOST_PROFILE=1`: the metrics JSON times every export the program called, as
/// many times as it called it (the MLX pattern: per transform one set-stream, one
/// set-work-area and one Xt execution), with the time inside the library apart. `api` is the
/// exports' prefix (`cufft`, `hipfft`).
pub fn host_profile_counts_every_export(program: &Path, lib: &str, api: &str) {
    let dir = work_dir(&format!("{lib}_host_profile"));
    let out = dir.join("m.json");
    let env = [
        ("HIPFFT_POOL_RUNTIME", "sim"),
        ("HIPFFT_POOL_LIVE_CEILING", "64"),
        ("HIPFFT_POOL_HOST_PROFILE", "1"),
        ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
    ];
    let o = run(program, &["mlx", "20", "64"], &env, true);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok 80 MLX-pattern ops checked (cache 64)"), "{}", show(&o));
    let m = metrics(&out);
    let p = &m["host_profile"];
    // 80 ops of two steps each (fft2 over rows): 160 transforms.
    for call in ["SetStream", "SetWorkArea", "XtExec"] {
        let e = &p[format!("{api}{call}")];
        assert_eq!(e["calls"].as_u64(), Some(160), "{api}{call}: {m}");
        let (whole, own) = (e["ns_per_call"].as_f64().unwrap(), e["own_ns_per_call"].as_f64().unwrap());
        assert!(whole > 0.0 && own > 0.0 && own <= whole, "{api}{call}: {e}");
    }
    // Every execution reached the library once; its time counts toward the export's.
    assert_eq!(p["library:exec"]["calls"].as_u64(), Some(160), "{m}");
    let xt = &p[format!("{api}XtExec")];
    assert!(xt["library_ns_per_call"].as_f64().unwrap() > 0.0, "{xt}");
    // Off, there is no profile.
    let plain = dir.join("plain.json");
    let env = [("HIPFFT_POOL_RUNTIME", "sim"), ("HIPFFT_POOL_METRICS_OUT", plain.to_str().unwrap())];
    run(program, &["mlx", "20", "64"], &env, true);
    assert!(metrics(&plain).get("host_profile").is_none());
}

/// The functions `lib` places in its `.text.hot` output section (demangled names), or `None`
/// when it has no such section. The per-transform path of the interposers lives there
/// (`hipfft_pool_intercept::entry::serve`).
pub fn hot_text_functions(lib: &Path) -> Option<Vec<String>> {
    let o = Command::new("readelf").args(["-SW"]).arg(lib).output().expect("readelf (binutils) is needed");
    assert!(o.status.success(), "readelf failed\n{}", show(&o));
    let sections = String::from_utf8_lossy(&o.stdout).into_owned();
    // "[16] .text.hot PROGBITS 0000000000311650 310650 003f44 ...": address, offset, size.
    let (start, size) = sections.lines().find_map(|l| {
        let rest = l.split_once(']')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        (f.first() == Some(&".text.hot")).then(|| (u64::from_str_radix(f[2], 16).unwrap(), u64::from_str_radix(f[4], 16).unwrap()))
    })?;
    let o = Command::new("nm").args(["--defined-only", "--demangle"]).arg(lib).output().expect("nm (binutils) is needed");
    assert!(o.status.success(), "nm failed\n{}", show(&o));
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let (addr, rest) = l.split_once(' ')?;
                let (kind, name) = rest.split_once(' ')?;
                let a = u64::from_str_radix(addr, 16).ok()?;
                (matches!(kind, "t" | "T") && (start..start + size).contains(&a)).then(|| name.to_string())
            })
            .collect(),
    )
}

/// [`run`] bounded in time: the program is killed after `limit`, and the test fails naming
/// the hang. Returns the output and the program's process id.
pub fn run_within(exe: &Path, args: &[&str], env: &[(&str, &str)], limit: std::time::Duration) -> (Output, u32) {
    use std::process::Stdio;
    let mut c = Command::new(exe);
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("HIPFFT_POOL_") || k == "LD_PRELOAD" || k == "LD_LIBRARY_PATH" {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let pid = child.id();
    // Drained while it runs: a full pipe would stop the program.
    let out = child.stdout.take().map(|mut s| std::thread::spawn(move || drain(&mut s)));
    let err = child.stderr.take().map(|mut s| std::thread::spawn(move || drain(&mut s)));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let joined = |h: Option<std::thread::JoinHandle<Vec<u8>>>| h.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    let (stdout, stderr) = (joined(out), joined(err));
    let Some(status) = status else {
        panic!(
            "{} {args:?} did not end within {limit:?}\n--- stdout\n{}\n--- stderr\n{}",
            exe.display(),
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
    };
    (Output { status, stdout, stderr }, pid)
}

fn drain(r: &mut impl std::io::Read) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = r.read_to_end(&mut v);
    v
}
