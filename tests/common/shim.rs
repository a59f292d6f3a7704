//! Locating or building hip-shim and exposing it as `libhipfft.so` + `libamdhip64.so`.
//!
//! The shim is built with this test binary's profile into its target directory (a no-op when
//! fresh), or taken from `HIP_SHIM_PATH` (a prebuilt `libhip_shim.so`, e.g. one built with
//! `--features cuda`), or `HIP_SHIM_TEST_DIR` (a directory already holding both names).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hipfft_pool::runtime::hip::HipRuntime;

// ---------------------------------------------------------------------------------------
// Locating / building the shim

/// Builds hip-shim with this test binary's profile into its target directory and returns the
/// `.so` cargo reports.
pub fn build_shim() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // <target>/<profile>/deps/<test binary>
    let profile_dir = exe.parent().and_then(Path::parent).expect("test binary in <target>/<profile>/deps");
    let profile = profile_dir.file_name().unwrap().to_string_lossy().into_owned();
    let target_dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("CARGO_TARGET_TMPDIR is <target>/tmp").to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from(option_env!("CARGO").unwrap_or("cargo")));
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "hip-shim", "--message-format=json-render-diagnostics", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    if let Ok(f) = std::env::var("HIP_SHIM_FEATURES") {
        if !f.is_empty() {
            cmd.args(["--features", &f]);
        }
    }
    let out = cmd.output().expect("running cargo to build hip-shim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "building hip-shim failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "hip_shim" {
            if let Some(files) = msg["filenames"].as_array() {
                if let Some(so) = files.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".so")) {
                    return PathBuf::from(so);
                }
            }
        }
    }
    panic!("cargo did not report hip-shim's .so:\n{stdout}\n{stderr}");
}

/// A directory holding `libhipfft.so` and `libamdhip64.so`, both symlinks to one hip-shim.
pub fn shim_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("HIP_SHIM_TEST_DIR") {
            return PathBuf::from(d);
        }
        let so = match std::env::var_os("HIP_SHIM_PATH") {
            Some(p) => PathBuf::from(p),
            None => build_shim(),
        };
        let so = std::fs::canonicalize(&so).unwrap_or_else(|e| panic!("{}: {e}", so.display()));
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hip-shim-lib");
        expose_as_hip_libraries(&so, &dir);
        dir
    })
}

/// Symlinks `so` as `libhipfft.so` and `libamdhip64.so` in `dir` (atomically replacing old
/// links, so concurrent test processes never see a missing name).
pub fn expose_as_hip_libraries(so: &Path, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["libhipfft.so", "libamdhip64.so"] {
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(so, &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

pub fn hipfft_path() -> PathBuf {
    shim_dir().join("libhipfft.so")
}
pub fn hip_path() -> PathBuf {
    shim_dir().join("libamdhip64.so")
}


/// One `HipRuntime` over the shim per test process.
pub fn hip_runtime() -> &'static HipRuntime {
    static RT: OnceLock<HipRuntime> = OnceLock::new();
    RT.get_or_init(|| HipRuntime::load_from(&hipfft_path(), &hip_path()).expect("loading hip-shim"))
}
