//! Choosing a runtime: `auto` takes hip if a device is there, else cuda, else sim.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::boundary::Runtime;
use crate::runtime::sim::SimRuntime;

/// Which runtime a pool made by `from_env()` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeChoice {
    /// hip if a device is there, else cuda, else sim.
    #[default]
    Auto,
    /// The simulated runtime, always there.
    Sim,
    /// hipFFT and HIP; fails if they are missing or have no device.
    Hip,
    /// cuFFT and CUDA (feature `cuda`); fails if missing or without a device.
    Cuda,
}

impl RuntimeChoice {
    /// From `auto`, `sim`, `hip` or `cuda` (what `--runtime` and `HIPFFT_POOL_RUNTIME` take).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "sim" => Some(Self::Sim),
            "hip" => Some(Self::Hip),
            "cuda" => Some(Self::Cuda),
            _ => None,
        }
    }
    /// The name [`RuntimeChoice::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Sim => "sim",
            Self::Hip => "hip",
            Self::Cuda => "cuda",
        }
    }
}

/// A runtime, and why others were skipped (for `hipfft-pool info`).
pub struct Selected {
    /// The runtime that opened.
    pub runtime: Arc<dyn Runtime>,
    /// For `auto`: each runtime tried before it, with why it was skipped.
    pub skipped: Vec<String>,
}

fn with_devices(name: &str, rt: Result<Arc<dyn Runtime>>) -> std::result::Result<Arc<dyn Runtime>, String> {
    let rt = rt.map_err(|e| format!("{name}: {e}"))?;
    match rt.device_count() {
        Ok(n) if n > 0 => Ok(rt),
        Ok(_) => Err(format!("{name}: the library loaded but reports no device")),
        Err(e) => Err(format!("{name}: the library loaded but counting devices failed: {e}")),
    }
}

fn open_hip() -> Result<Arc<dyn Runtime>> {
    crate::runtime::hip::HipRuntime::load().map(|r| Arc::new(r) as Arc<dyn Runtime>)
}

#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Arc<dyn Runtime>> {
    crate::runtime::cuda::CudaRuntime::new().map(|r| Arc::new(r) as Arc<dyn Runtime>)
}

#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Arc<dyn Runtime>> {
    Err(Error::Unavailable("built without the `cuda` feature (cargo build --features cuda)".into()))
}

/// Opens the runtime `choice` names. An explicit choice that is not there is an error;
/// `auto` falls back to the simulated runtime.
pub fn open(choice: RuntimeChoice) -> Result<Selected> {
    match choice {
        RuntimeChoice::Sim => Ok(Selected { runtime: Arc::new(SimRuntime::from_env()), skipped: vec![] }),
        RuntimeChoice::Hip => with_devices("hip", open_hip())
            .map(|runtime| Selected { runtime, skipped: vec![] })
            .map_err(Error::Unavailable),
        RuntimeChoice::Cuda => with_devices("cuda", open_cuda())
            .map(|runtime| Selected { runtime, skipped: vec![] })
            .map_err(Error::Unavailable),
        RuntimeChoice::Auto => {
            let mut skipped = Vec::new();
            for (name, open) in [("hip", open_hip as fn() -> Result<Arc<dyn Runtime>>), ("cuda", open_cuda)] {
                match with_devices(name, open()) {
                    Ok(runtime) => return Ok(Selected { runtime, skipped }),
                    Err(why) => skipped.push(why),
                }
            }
            Ok(Selected { runtime: Arc::new(SimRuntime::from_env()), skipped })
        }
    }
}
