//! The C ABI from the outside: the generated header is current, C and C++ programs compile
//! against `include/` and run against the built library (the cdylib through an rpath, and
//! the staticlib), and, where valgrind is installed, run clean under it.
//!
//! The library: to build this test cargo builds the package's lib with every crate type it
//! declares (rlib, cdylib, staticlib) into `target/<profile>/deps/` (not uplifted to
//! `target/<profile>/`), found from the test executable's own path. If the files are
//! missing anyway, `cargo build --lib` is run (same profile).
//! The compilers: `$CC` / `$CXX`, else `cc` / `c++` from PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>`: the test binary lives in `target/<profile>/deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

fn work_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn show(out: &Output) -> String {
    format!("status: {}\n--- stdout\n{}\n--- stderr\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed\n{}", show(&out));
    out
}

/// The directory holding `libhipfft_pool.so` and `libhipfft_pool.a`: `deps/` first (built
/// with this test binary, so never stale), then the profile directory (`cargo build`).
fn library_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = profile_dir();
        let have = |d: &Path| d.join("libhipfft_pool.so").exists() && d.join("libhipfft_pool.a").exists();
        for d in [dir.join("deps"), dir.clone()] {
            if have(&d) {
                return d;
            }
        }
        eprintln!("c_abi: no cdylib/staticlib under {}; running cargo build --lib", dir.display());
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "--lib", "--manifest-path"]).arg(root().join("Cargo.toml"));
        if !cfg!(debug_assertions) {
            c.arg("--release");
        }
        run(&mut c);
        assert!(have(&dir), "no libhipfft_pool.so / .a in {}", dir.display());
        dir
    })
}

fn tool(var: &str, default: &str) -> String {
    std::env::var(var).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
}

fn cc() -> Command {
    Command::new(tool("CC", "cc"))
}

fn cxx() -> Command {
    Command::new(tool("CXX", "c++"))
}

fn c_dir() -> PathBuf {
    root().join("tests/c")
}

/// Links against the cdylib with an rpath to it (DT_RPATH, not DT_RUNPATH, so that an
/// LD_LIBRARY_PATH naming another build of the library cannot take precedence).
fn link_dynamic(cmd: &mut Command) {
    let lib = library_dir();
    cmd.arg("-L").arg(lib).arg("-lhipfft_pool").arg(format!("-Wl,--disable-new-dtags,-rpath,{}", lib.display()));
}

struct Programs {
    abi_test: PathBuf,
    abi_test_static: PathBuf,
    mlx_pattern: PathBuf,
    multi_pool_test: PathBuf,
    panic_test: PathBuf,
    warmup_test: PathBuf,
    fork_test: PathBuf,
    fork_global: PathBuf,
}

fn programs() -> &'static Programs {
    static P: OnceLock<Programs> = OnceLock::new();
    P.get_or_init(|| {
        let w = work_dir();
        let include = root().join("include");
        // A C11 program of tests/c/, warnings as errors, linked to the shared library.
        let strict_c = |name: &str, extra: &[&str]| {
            let exe = w.join(name);
            let mut c = cc();
            c.args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pedantic"])
                .arg("-I")
                .arg(&include)
                .arg(c_dir().join(format!("{name}.c")))
                .arg("-o")
                .arg(&exe);
            link_dynamic(&mut c);
            c.args(extra);
            run(&mut c);
            exe
        };
        let abi_test = strict_c("abi_test", &["-lm"]);
        let multi_pool_test = strict_c("multi_pool_test", &[]);
        let panic_test = strict_c("panic_test", &[]);
        let warmup_test = strict_c("warmup_test", &[]);
        let fork_test = strict_c("fork_test", &["-pthread"]);

        // The staticlib, with the system libraries Rust's std needs.
        let abi_test_static = w.join("abi_test_static");
        let mut c = cc();
        c.args(["-std=c11", "-O1", "-g"])
            .arg("-I")
            .arg(&include)
            .arg(c_dir().join("abi_test.c"))
            .arg("-o")
            .arg(&abi_test_static)
            .arg(library_dir().join("libhipfft_pool.a"))
            .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s", "-lc"]);
        run(&mut c);

        let mlx_pattern = w.join("mlx_pattern");
        let mut c = cxx();
        c.args(["-std=c++17", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .arg("-I")
            .arg(&include)
            .arg("-I")
            .arg(c_dir().join("stubs"))
            .arg("-I")
            .arg(root().join("hip-shim/mlx"))
            .arg(c_dir().join("mlx_pattern.cpp"))
            .arg("-o")
            .arg(&mlx_pattern);
        link_dynamic(&mut c);
        run(&mut c);

        let fork_global = w.join("fork_global");
        let mut c = cxx();
        c.args(["-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .arg("-I")
            .arg(&include)
            .arg(c_dir().join("fork_global.cpp"))
            .arg("-o")
            .arg(&fork_global);
        link_dynamic(&mut c);
        run(&mut c);
        Programs { abi_test, abi_test_static, mlx_pattern, multi_pool_test, panic_test, warmup_test, fork_test, fork_global }
    })
}

/// A program's environment: the sim runtime, none of the pool's variables from outside, and
/// no LD_LIBRARY_PATH (cargo's names `target/<profile>/`, where `cargo build` may have left
/// an older copy of the library).
fn program(path: &Path) -> Command {
    let mut c = Command::new(path);
    c.env_remove("LD_LIBRARY_PATH");
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("HIPFFT_POOL_") || k.starts_with("MLX_ROCM_FFT") {
            c.env_remove(k);
        }
    }
    c.env("HIPFFT_POOL_RUNTIME", "sim");
    c
}

fn expect_summary(out: &Output, name: &str) {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(
        last.starts_with(&format!("{name}: ")) && last.ends_with(" passed, 0 failed"),
        "unexpected summary line {last:?}\n{}",
        show(out)
    );
}

// ---- the header ----

fn generate_header() -> String {
    let config = cbindgen::Config::from_file(root().join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root().join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

#[test]
fn header() {
    let path = root().join("include/hipfft_pool.h");
    let fresh = generate_header();
    if std::env::var_os("HFP_BLESS").is_some_and(|v| v == "1") {
        // Written beside it and renamed, so a test compiling the header meanwhile never
        // reads half a file.
        let tmp = path.with_extension("h.new");
        std::fs::write(&tmp, &fresh).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        eprintln!("c_abi: wrote {}", path.display());
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != fresh {
        let first = checked_in.lines().zip(fresh.lines()).position(|(a, b)| a != b);
        panic!(
            "include/hipfft_pool.h is stale (first difference at line {}).\n\
             Regenerate it with:\n    HFP_BLESS=1 cargo test --release --test c_abi header\n",
            first.map_or_else(|| "end".to_string(), |i| (i + 1).to_string())
        );
    }
}

#[test]
fn header_compiles_as_c_and_cpp() {
    let w = work_dir();
    let tu = w.join("header_only.c");
    std::fs::write(&tu, "#include \"hipfft_pool.h\"\n#include \"hipfft_pool.h\"\nint main(void) { return hfp_status_name(HFP_OK)[0] == 'H' ? 0 : 1; }\n").unwrap();
    let include = root().join("include");
    run(cc().args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I"]).arg(&include).arg(&tu));
    run(cxx()
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", "c++", "-I"])
        .arg(&include)
        .arg(&tu));
    let hpp = w.join("adapter_only.cpp");
    std::fs::write(&hpp, "#include \"hipfft_pool.hpp\"\n#include \"hipfft_pool.hpp\"\nint main() { return 0; }\n").unwrap();
    run(cxx().args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I"]).arg(&include).arg(&hpp));
}

/// The MLX drop-in fragment compiles against stand-ins for the MLX/HIP types it uses.
#[test]
fn mlx_fragment_compiles() {
    run(cxx()
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
        .arg(root().join("include"))
        .arg("-I")
        .arg(c_dir().join("stubs"))
        .arg("-I")
        .arg(root().join("hip-shim/mlx"))
        .arg(c_dir().join("mlx_fragment_check.cpp")));
}

// ---- the programs ----

#[test]
fn abi_test_with_debug_checks() {
    let out = run(program(&programs().abi_test).env("HIPFFT_POOL_DEBUG_CHECKS", "1"));
    expect_summary(&out, "abi_test");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("double release detected"), "the double-release check did not run\n{}", show(&out));
}

#[test]
fn abi_test_without_debug_checks() {
    let out = run(&mut program(&programs().abi_test));
    expect_summary(&out, "abi_test");
}

#[test]
fn abi_test_against_the_staticlib() {
    let out = run(program(&programs().abi_test_static).env("HIPFFT_POOL_DEBUG_CHECKS", "1"));
    expect_summary(&out, "abi_test");
}

/// Through the C ABI: two and three pools at the process-wide ceiling
/// (its own process, ceiling 2); an idle pool does not starve the others, leased plans are
/// never reclaimed.
#[test]
fn several_pools_share_the_ceiling_through_the_c_abi() {
    let out = run(&mut program(&programs().multi_pool_test));
    expect_summary(&out, "multi_pool_test");
}

/// Through the C ABI: a runtime that panics inside plan creation (the
/// sim's `HIPFFT_POOL_SIM_PANIC_CREATE_EVERY=2`) gives `HFP_INTERNAL_ERROR` with a message and
/// leaves no slot, key or flight behind.
#[test]
fn a_panicking_runtime_through_the_c_abi_leaves_nothing_behind() {
    let out = run(program(&programs().panic_test).env("HIPFFT_POOL_SIM_PANIC_CREATE_EVERY", "2"));
    expect_summary(&out, "panic_test");
}

/// The manifest saved, warmed up by call and by `HIPFFT_POOL_WARMUP`, through the C ABI.
#[test]
fn a_manifest_saved_and_warmed_up_through_the_c_abi() {
    let path = work_dir().join(format!("warmup-{}.json", std::process::id()));
    let at_exit = work_dir().join(format!("warmup-exit-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&at_exit);
    let out = run(program(&programs().warmup_test).arg(&path).arg(&at_exit));
    expect_summary(&out, "warmup_test");
    // The default pool's manifest, written by the exit hook.
    let m = hipfft_pool::manifest::Manifest::load(&at_exit).unwrap_or_else(|e| panic!("no manifest at exit: {e}\n{}", show(&out)));
    assert!(m.plans.iter().any(|p| p.n == vec![128]), "{m:?}");
    std::fs::remove_file(&path).ok();
    std::fs::remove_file(&at_exit).ok();
}

#[test]
fn mlx_pattern() {
    let out = run(program(&programs().mlx_pattern).env("MLX_ROCM_FFT_CACHE_SIZE", "12"));
    expect_summary(&out, "mlx_pattern");
}

/// The fragment with launch_kernel running each launched function at the next commit, after
/// execute_fft returned: a lease captured by reference would be gone by then. With debug
/// checks a lease that is not live is refused by the library (named in the failure) rather
/// than read, so the old `[&lease]` capture fails here instead of reading freed stack.
#[test]
fn mlx_pattern_with_deferred_launches() {
    let out = run(program(&programs().mlx_pattern)
        .args(["--launch", "deferred"])
        .env("MLX_ROCM_FFT_CACHE_SIZE", "12")
        .env("HIPFFT_POOL_DEBUG_CHECKS", "1"));
    expect_summary(&out, "mlx_pattern");
}

/// launch_kernel throws after it ran the transform: the lease must be released only once
/// the simulated transform ran (0.3 s after the exec), never at once by the unwinding.
#[test]
fn mlx_pattern_exception_after_the_exec() {
    let out = run(program(&programs().mlx_pattern)
        .args(["--case", "throw-after-exec"])
        .env("HIPFFT_POOL_SIM_EXEC_LATENCY_US", "300000"));
    expect_summary(&out, "mlx_pattern");
}

/// An hfp::Lease dropped right after its exec is released after the transform ran, never at
/// once: at a ceiling of 1 a miss for another shape times out while the transform (0.3 s on
/// the sim) is pending.
#[test]
fn mlx_pattern_lease_dropped_after_the_exec() {
    let out = run(program(&programs().mlx_pattern)
        .args(["--case", "drop-after-exec"])
        .env("MLX_ROCM_FFT_CACHE_SIZE", "1")
        .env("HIPFFT_POOL_LIVE_CEILING", "1")
        .env("HIPFFT_POOL_ACQUIRE_TIMEOUT_MS", "50")
        .env("HIPFFT_POOL_SIM_EXEC_LATENCY_US", "300000"));
    expect_summary(&out, "mlx_pattern");
}

// ---- valgrind ----

fn valgrind() -> Option<Command> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => {
            let mut c = Command::new("valgrind");
            c.args(["--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite", "--quiet"])
                .arg(format!("--suppressions={}", c_dir().join("valgrind.supp").display()));
            Some(c)
        }
        _ => None,
    }
}

fn under_valgrind(path: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<Output> {
    let Some(mut vg) = valgrind() else {
        println!("skipped: valgrind is not installed (apt-get install valgrind)");
        eprintln!("c_abi: skipped a valgrind run: valgrind is not installed");
        return None;
    };
    // The program's environment, as `program` sets it.
    let base = program(path);
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => vg.env(k, v),
            None => vg.env_remove(k),
        };
    }
    vg.envs(env.iter().copied()).arg(path).args(args);
    Some(run(&mut vg))
}

#[test]
fn abi_test_under_valgrind() {
    if let Some(out) = under_valgrind(&programs().abi_test, &[], &[("HIPFFT_POOL_DEBUG_CHECKS", "1")]) {
        expect_summary(&out, "abi_test");
    }
}

#[test]
fn mlx_pattern_under_valgrind() {
    // Fewer rounds and reference rows: valgrind runs it some 50 times slower.
    let args = ["--rounds", "2", "--check-rows", "2"];
    if let Some(out) = under_valgrind(&programs().mlx_pattern, &args, &[("MLX_ROCM_FFT_CACHE_SIZE", "12")]) {
        expect_summary(&out, "mlx_pattern");
    }
}

// ---- fork ----

/// Runs `cmd`, killing it after `limit`: the output, or a panic naming the hang.
fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("{cmd:?} did not end within {limit:?}\n{}", show(&out));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.wait_with_output().expect("output")
}

/// Children forked while the parent's pools are in use (threads acquiring, a lease held):
/// an inherited pool refuses at once with `HFP_FORKED` naming fork and is freed at once; a
/// pool the child makes, and its default pool, work; a child that never calls the library
/// exits at once; the parent's pool works after (`tests/c/fork_test.c`, 50 children).
#[test]
fn forked_children_get_pools_of_their_own_and_leave_the_parents_alone() {
    let out = run_within(&mut program(&programs().fork_test), std::time::Duration::from_secs(120));
    expect_summary(&out, "fork_test");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", show(&out));
}

/// A C++ program with a global `hfp::Pool`: each forked child runs the static destructor on
/// its copy of the parent's pool at exit, which must return at once (no join of threads the
/// child does not have, no wait for the parent's leases).
#[test]
fn a_global_cpp_pool_lets_forked_children_exit_at_once() {
    let out = run_within(&mut program(&programs().fork_global), std::time::Duration::from_secs(60));
    expect_summary(&out, "fork_global");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", show(&out));
}
