//! `hipfft-pool info` on the sim: the device flags line, with and without blocking sync
//! (issue 14, item 12: the flags behind the seed's hang are shown).

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
