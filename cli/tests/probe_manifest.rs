//! `hipfft-pool probe --record PATH` and `--warmup PATH` on the sim: the run's
//! working set is written, and a later run warmed from it makes its plans before the probe,
//! so the probe's own calls all hit.

use std::process::Command;

fn probe(args: &[&str]) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_hipfft-pool"))
        .args(["probe", "--runtime", "sim", "--json", "--cycles", "2"])
        .args(args)
        .env_remove("HIPFFT_POOL_CAPACITY")
        .env_remove("HIPFFT_POOL_LIVE_CEILING")
        .output()
        .expect("run hipfft-pool probe");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn a_recorded_probe_warms_the_next_one_up() {
    let path = std::env::temp_dir().join(format!("hfp-probe-manifest-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let cold = probe(&["--record", path.to_str().unwrap()]);
    assert_eq!(cold["passed"], true, "{cold}");
    assert_eq!(cold["misses"], 26, "{cold}");
    let text = std::fs::read_to_string(&path).expect("the manifest was written");
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["plans"].as_array().unwrap().len(), 26);

    let warm = probe(&["--warmup", path.to_str().unwrap()]);
    assert_eq!(warm["passed"], true, "{warm}");
    assert_eq!(warm["warmed_up"], 26, "{warm}");
    assert_eq!(warm["misses"], 0, "every call of the probe hit: {warm}");
    assert_eq!(warm["creations"], 26, "made once, by the warm-up: {warm}");
    std::fs::remove_file(&path).ok();
}
