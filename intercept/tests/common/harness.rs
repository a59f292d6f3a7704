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

/// MLX's pattern with a plan cache smaller than its keys: an evicted handle is destroyed at
/// once, while its captured execution may sit in a graph not yet launched, and each capture
/// holds its transform alone unless the interposer adds a node. Ground truth from the sim:
/// no graph runs a destroyed plan, and no plan a capture held alone is ever destroyed (MLX
/// copies such a lone kernel into graphs it keeps and updates: on CUDA a destroyed plan's
/// code then runs freed, docs/frameworks.md run 22), while the pool still destroys and
/// remakes the others under the ceiling.
pub fn mlx_cache_destroys_handles_before_their_graphs_launch(program: &Path, lib: &str) {
    // `pin` keeps every captured plan for good: 5 keys under the ceiling of 6.
    for (policy, keys, cache, ceiling) in [
        ("pin", "5", "2", "6"),
        ("auto", "20", "2", "6"),
        ("auto", "20", "4", "6"),
        ("release-on-run", "20", "4", "6"),
        ("auto", "20", "2", "64"),
    ] {
        let dir = work_dir(&format!("{lib}_mlx_evict_{policy}_{cache}_{ceiling}"));
        let out = dir.join("m.json");
        let env = [
            ("HIPFFT_POOL_RUNTIME", "sim"),
            ("HIPFFT_POOL_LIVE_CEILING", ceiling),
            // Idle plans beyond two are destroyed at once: a plan released too early is gone
            // before its graph runs.
            ("HIPFFT_POOL_CAPACITY", "2"),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "2000"),
            ("HIPFFT_POOL_CAPTURE", policy),
            ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
        ];
        let o = run(program, &["mlx", keys, cache], &env, true);
        let ops: u64 = 4 * keys.parse::<u64>().unwrap();
        let want = format!("ok {ops} MLX-pattern ops checked (cache {cache})");
        assert!(String::from_utf8_lossy(&o.stdout).contains(&want), "{policy}: {}", show(&o));
        let m = metrics(&out);
        assert!(get(&m, "sim_peak_live_handles") <= ceiling.parse().unwrap(), "{policy}: {m}");
        assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{policy}: {m}");
        assert_eq!(get(&m, "sim_destroyed_after_lone_capture"), 0, "{policy}: {m}");
        let resident = get(&m, "capture_residents");
        match policy {
            "pin" => assert_eq!((resident, get(&m, "sim_created")), (5, 5), "every captured plan resident, none remade: {m}"),
            "release-on-run" => assert_eq!(resident, 0, "{m}"),
            _ => {
                assert_eq!(resident, get(&m, "capture_resident_limit"), "{m}");
                assert!(get(&m, "sim_created") > 6, "{policy}: the pool destroyed and remade the others: {m}");
            }
        }
    }
}

/// MLX's pattern with command buffers of six distinct plans under a ceiling of 8, and a plan
/// cache that keeps every handle: the resident plans (a quarter of the ceiling, 2) stay for
/// good, and the rest of the ceiling serves buffers whose plans are released when their
/// graphs run, so no buffer waits out its timeout (under the old pins, idle pinned handles
/// held half the ceiling until a launch proof took them back). Every op matches a DFT; the
/// sim's peak is at most 8, it records no misuse, and no plan a capture held alone was
/// destroyed.
pub fn mlx_residents_leave_room_for_buffers_under_the_ceiling(program: &Path, lib: &str) {
    let dir = work_dir(&format!("{lib}_mlx_residents"));
    let out = dir.join("m.json");
    let env = [
        ("HIPFFT_POOL_RUNTIME", "sim"),
        ("HIPFFT_POOL_LIVE_CEILING", "8"),
        ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "2000"),
        ("HIPFFT_POOL_CAPTURE", "auto"),
        ("FFT_SIM_OPS_PER_COMMIT", "6"),
        ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
    ];
    let o = run(program, &["mlx", "20", "64"], &env, true);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok 80 MLX-pattern ops checked (cache 64)"), "{}", show(&o));
    let m = metrics(&out);
    assert!(get(&m, "sim_peak_live_handles") <= 8, "{m}");
    assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{m}");
    assert_eq!(get(&m, "sim_destroyed_after_lone_capture"), 0, "{m}");
    assert_eq!((get(&m, "capture_residents"), get(&m, "capture_resident_limit")), (2, 2), "{m}");
    assert!(get(&m, "captured_on_residents") > 0 && get(&m, "captured_released") > 0, "{m}");
    // Later rounds of the resident handles went straight to their plans.
    assert!(get(&m, "resident_execs") > 0, "{m}");
    assert_eq!(get(&m, "capture_misses"), 0, "{m}");
}

/// MLX 0.32.2's pattern (fft.cu and device.cpp), the `mlx` subcommand of `fft_sim.c`: each
/// step sets the stream and a fresh work area, then captures one exec into a graph of its
/// own; the graphs run only at a commit every three ops, so a step's input is the output of
/// a graph not yet launched, and two steps of one op share a handle. Keys cycled four times
/// under a ceiling of 6: 20 keys under `auto` and `release-on-run`; 5 under `pin`, which keeps
/// one plan per handle for good and so needs no more handles than the ceiling. Every op's
/// result matches a DFT, the sim's peak is at most 6, and the sim records no misuse (no graph
/// runs a destroyed plan). `lib` names the work folder.
pub fn mlx_deferred_graph_launches(program: &Path, lib: &str) {
    // `after-graph`: host nodes hand their leases to the deferred releases instead.
    for (policy, keys, release) in
        [("auto", 20u64, "at-run"), ("release-on-run", 20, "at-run"), ("pin", 5, "at-run"), ("release-on-run", 20, "after-graph")]
    {
        let dir = work_dir(&format!("{lib}_mlx_{policy}_{release}"));
        let out = dir.join("m.json");
        let env = [
            ("HIPFFT_POOL_RUNTIME", "sim"),
            ("HIPFFT_POOL_LIVE_CEILING", "6"),
            ("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "2000"),
            ("HIPFFT_POOL_CAPTURE", policy),
            ("HIPFFT_POOL_CAPTURE_RELEASE", release),
            ("HIPFFT_POOL_METRICS_OUT", out.to_str().unwrap()),
        ];
        let o = run(program, &["mlx", &keys.to_string()], &env, true);
        let want = format!("ok {} MLX-pattern ops checked", 4 * keys);
        assert!(String::from_utf8_lossy(&o.stdout).contains(&want), "{policy}: {}", show(&o));
        let m = metrics(&out);
        assert!(get(&m, "sim_peak_live_handles") <= 6, "{policy}: {m}");
        assert!(m["sim_violations"].as_array().unwrap().is_empty(), "{policy}: {m}");
        assert_eq!(get(&m, "sim_destroyed_after_lone_capture"), 0, "{policy}: {m}");
        // Every execution is captured; `resident_execs` are those on a resident plan the
        // handle knew (no capture check on that path).
        assert_eq!(get(&m, "captured_execs") + get(&m, "resident_execs"), 8 * keys, "{policy}: {m}");
        assert_eq!(m["capture_release"], release, "{m}");
        if policy == "pin" {
            // Every execution of a key ran on its one resident plan.
            assert_eq!(get(&m, "creations"), keys, "{m}");
            assert_eq!(get(&m, "captured_released"), 0, "{m}");
        }
        if policy == "release-on-run" {
            // Every captured execution's lease went back through its host node (the last
            // buffer's, handed to the deferred releases, may still wait for an event).
            assert!(get(&m, "captured_released") >= 8 * keys - 6, "{m}");
            assert!(get(&m, "sim_created") > 6, "the ceiling made the pool destroy and remake plans: {m}");
        }
    }
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
