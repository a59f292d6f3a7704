//! `HIPFFT_POOL_REQUIRE_GPU=1` turns a GPU test's skip into a failure. Checked in a child
//! process (this test binary run again), since the variable is process-wide.

use std::process::Command;

const CHILD: &str = "HFP_REQUIRE_GPU_TEST_CHILD";

/// In the child: a GPU test that found no GPU.
#[test]
fn a_gpu_test_without_a_gpu() {
    if std::env::var_os(CHILD).is_none() {
        return; // only meaningful when run by the parent below
    }
    hipfft_pool::check::skip_without_gpu("no device in this child");
}

fn run_child(require: Option<&str>) -> std::process::Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "a_gpu_test_without_a_gpu", "--nocapture", "--test-threads=1"]).env(CHILD, "1");
    match require {
        Some(v) => cmd.env("HIPFFT_POOL_REQUIRE_GPU", v),
        None => cmd.env_remove("HIPFFT_POOL_REQUIRE_GPU"),
    };
    cmd.output().unwrap()
}

#[test]
fn a_skip_fails_when_a_gpu_is_required() {
    let out = run_child(Some("1"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the skip passed with HIPFFT_POOL_REQUIRE_GPU=1:\n{text}");
    assert!(text.contains("HIPFFT_POOL_REQUIRE_GPU=1 but this GPU test cannot run: no device in this child"), "{text}");
}

#[test]
fn a_skip_passes_and_says_so_otherwise() {
    for require in [None, Some("0")] {
        let out = run_child(require);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{require:?}: {text}");
        assert!(text.contains("skipped: no device in this child"), "{require:?}: {text}");
    }
}
