//! `hipfft-pool run` end to end: a program that does not link the interposer (it looks cuFFT
//! up at run time) runs with `libhipfft_pool_cufft.so` preloaded on the simulated runtime;
//! its exit status comes back unchanged and the pool's summary is printed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn show(o: &std::process::Output) -> String {
    format!("{}\n--- stdout\n{}\n--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `target/<profile>`, from the test executable's path.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// The interposer, built (same profile) if it is not there.
fn interposer() -> PathBuf {
    let lib = profile_dir().join("libhipfft_pool_cufft.so");
    let mut c = Command::new(env!("CARGO"));
    c.args(["build", "-p", "hipfft-pool-cufft"]);
    if !cfg!(debug_assertions) {
        c.arg("--release");
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert!(lib.exists(), "no {}", lib.display());
    lib
}

#[test]
fn a_program_runs_on_the_pool_and_its_exit_status_passes_through() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("run_launcher");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("launched");
    let cc = std::env::var("CC").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| "cc".into());
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/launched.c");
    let o = Command::new(cc).arg("-o").arg(&exe).arg(&src).arg("-ldl").output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let lib = interposer();
    let metrics = dir.join("metrics");
    // The program alone, then with two forked children: every process writes its own file,
    // and the summary sums the tree.
    for (status, children) in [(0, 0), (7, 0), (0, 2)] {
        let o = Command::new(env!("CARGO_BIN_EXE_hipfft-pool"))
            .args(["run", "--ceiling", "3", "--metrics-dir"])
            .arg(&metrics)
            .arg("--lib")
            .arg(&lib)
            .arg("--")
            .arg(&exe)
            .arg(status.to_string())
            .arg(children.to_string())
            .env("HIPFFT_POOL_RUNTIME", "sim")
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(status), "{}", show(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("ok 40 plans through the interposer"), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        let processes = children + 1;
        assert!(err.contains("hipfft-pool run: cufft on sim") && err.contains("of ceiling 3"), "{}", show(&o));
        assert!(err.contains(&format!(" {processes} process")), "{}", show(&o));
        assert!(err.contains(&format!("; {} executions", 80 * processes)), "{}", show(&o));
        assert!(!err.contains("unreadable"), "{}", show(&o));
        let files: Vec<_> = std::fs::read_dir(&metrics).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(files.len(), processes as usize, "one file per process, this run's only: {files:?}");
        for f in files {
            let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            assert!(m["sim_peak_live_handles"].as_u64().unwrap() <= 3, "{m}");
            assert_eq!(m["virtual_handles_peak"], 40, "{m}");
            assert_eq!(m["execs"], 80, "{m}");
            assert_eq!(f.file_name().unwrap().to_string_lossy(), format!("metrics-{}.json", m["pid"]), "{m}");
        }
    }
    // Without an interposer to preload, nothing runs and the reason is given.
    let o = Command::new(env!("CARGO_BIN_EXE_hipfft-pool"))
        .args(["run", "--lib", "/nonexistent/libhipfft_pool_cufft.so", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127), "{}", show(&o));
}
