//! `hipfft-pool info` on the sim: the device flags line, with and without blocking sync
//! (the flags behind the seed's hang are shown).

use std::process::Command;

fn info(flags: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_hipfft-pool"))
        .args(["info", "--runtime", "sim"])
        .env("HIPFFT_POOL_SIM_DEVICE_FLAGS", flags)
        .output()
        .expect("run hipfft-pool info");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn info_shows_the_device_flags_and_names_blocking_sync() {
    let plain = info("0");
    assert!(plain.lines().any(|l| l == "device flags: 0x0"), "{plain}");
    let blocking = info("4");
    let line = blocking.lines().find(|l| l.starts_with("device flags:")).unwrap_or_else(|| panic!("{blocking}"));
    assert!(line.starts_with("device flags: 0x4 (hipDeviceScheduleBlockingSync"), "{line}");
}

fn info_with(vars: &[(&str, &str)]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hipfft-pool"));
    c.args(["info", "--runtime", "sim"]).env_remove("ROCFFT_RTC_CACHE_PATH");
    for (k, v) in vars {
        c.env(k, v);
    }
    let o = c.output().expect("run hipfft-pool info");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn cache_line(out: &str) -> &str {
    out.lines().find(|l| l.starts_with("rocfft kernel cache:")).unwrap_or_else(|| panic!("no cache line: {out}"))
}

#[test]
fn info_shows_rocffts_kernel_cache_and_whether_it_is_writable() {
    assert!(cache_line(&info_with(&[])).contains("unset"));
    let dir = std::env::temp_dir().join(format!("hfp-info-rtc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fft_cache.db");
    let missing = info_with(&[("ROCFFT_RTC_CACHE_PATH", file.to_str().unwrap())]);
    assert!(cache_line(&missing).contains("missing; its directory is writable"), "{missing}");
    std::fs::write(&file, b"kernels").unwrap();
    let there = info_with(&[("ROCFFT_RTC_CACHE_PATH", file.to_str().unwrap())]);
    assert!(cache_line(&there).contains("exists, writable (7 bytes)"), "{there}");
    let nowhere = info_with(&[("ROCFFT_RTC_CACHE_PATH", "/proc/hfp-no-such-dir/fft_cache.db")]);
    assert!(cache_line(&nowhere).contains("NOT writable"), "{nowhere}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn info_shows_the_eviction_policy_and_the_manifests() {
    let out = info_with(&[("HIPFFT_POOL_EVICTION", "lru"), ("HIPFFT_POOL_WARMUP", "/tmp/plans.json")]);
    let line = out.lines().find(|l| l.starts_with("eviction:")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(line, "eviction: lru; warm-up manifest: /tmp/plans.json; manifest out: none");
}
