//! `hipfft-pool info`.

use std::process::ExitCode;

use clap::Args;
use hipfft_pool::pool::config::RuntimeChoice;
use hipfft_pool::{PoolConfig, Result};

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// auto, sim, hip or cuda.
    #[arg(long, default_value = "auto")]
    pub runtime: String,
}

pub fn run(a: InfoArgs) -> Result<ExitCode> {
    let choice = RuntimeChoice::parse(&a.runtime).ok_or_else(|| hipfft_pool::Error::InvalidArgument {
        name: "--runtime",
        reason: format!("{:?} is not auto, sim, hip or cuda", a.runtime),
    })?;
    let (config, warnings) = PoolConfig::from_env();
    let selected = hipfft_pool::runtime::select::open(choice)?;
    let rt = &selected.runtime;
    let info = rt.info();
    println!("runtime: {}", rt.kind());
    for why in &selected.skipped {
        println!("  skipped {why}");
    }
    for (name, path) in &info.libraries {
        println!("library: {name} = {path}");
    }
    for (name, v) in &info.versions {
        println!("version: {name} {v}");
    }
    match rt.device_count() {
        Ok(n) => println!("devices: {n}"),
        Err(e) => println!("devices: unknown ({e})"),
    }
    for d in &info.devices {
        println!("  {d}");
    }
    match rt.device_flags() {
        Ok(Some(f)) => println!(
            "device flags: {f:#x}{}",
            if f & hipfft_pool::runtime::DEVICE_SCHEDULE_BLOCKING_SYNC != 0 {
                " (hipDeviceScheduleBlockingSync: set after the device's first use, a hipfftDestroy can wait forever)"
            } else {
                ""
            }
        ),
        Ok(None) => println!("device flags: not readable on this runtime"),
        Err(e) => println!("device flags: unknown ({e})"),
    }
    println!("config: capacity {}, live ceiling {}, acquire timeout {:?}, work-area budget {}, runtime {}",
        config.capacity, config.live_ceiling, config.acquire_timeout,
        config.work_area_budget.map_or("none".to_string(), |b| format!("{b} bytes")), config.runtime.name());
    for w in &warnings {
        println!("  warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}
