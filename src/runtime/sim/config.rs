//! Settings of the simulated runtime: device count, latencies, fault injection, blocking.
//!
//! Every setting has an environment variable so a test harness (or the C shim) can bend the
//! sim without code. A bad value never aborts: it keeps the current value and yields a
//! one-line warning naming the variable and the value.

use std::ffi::OsString;
use std::time::Duration;

/// The most simulated devices a process may ask for.
pub const MAX_DEVICES: i32 = 1024;

/// The longest latency an environment variable may set (one hour), so a typo cannot hang a run.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// How the simulated runtime behaves. `Default` is one device, no latency, no faults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Simulated devices (`HIPFFT_POOL_SIM_DEVICES`, 1..=1024).
    pub devices: i32,
    /// Creating a plan that would make more than this many handles alive (in-creation ones
    /// counted) blocks in a pipe read until `unblock_all`, as the real hang did
    /// (`HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE`).
    pub block_above_live: Option<usize>,
    /// Spent in every `plan_create` (`HIPFFT_POOL_SIM_CREATE_LATENCY_US`).
    pub create_latency: Duration,
    /// Spent on the stream worker before each transform, not in `plan_exec`
    /// (`HIPFFT_POOL_SIM_EXEC_LATENCY_US`).
    pub exec_latency: Duration,
    /// Spent in every `plan_destroy` (`HIPFFT_POOL_SIM_DESTROY_LATENCY_US`).
    pub destroy_latency: Duration,
    /// Every K-th creation fails with `HIPFFT_ALLOC_FAILED` (`HIPFFT_POOL_SIM_FAIL_CREATE_EVERY`).
    pub fail_create_every: Option<u64>,
    /// Every K-th `plan_exec` fails with `HIPFFT_EXEC_FAILED` (`HIPFFT_POOL_SIM_FAIL_EXEC_EVERY`).
    pub fail_exec_every: Option<u64>,
    /// Every K-th destroy returns `HIPFFT_INTERNAL_ERROR`; the handle is still freed and
    /// counted destroyed, as hipFFT frees the plan before a failing `hipFree` reports
    /// (`HIPFFT_POOL_SIM_FAIL_DESTROY_EVERY`).
    pub fail_destroy_every: Option<u64>,
    /// Every K-th `event_record` fails with `hipErrorInvalidValue` (`HIPFFT_POOL_SIM_FAIL_EVENT_EVERY`).
    pub fail_event_every: Option<u64>,
    /// Every K-th plan creation panics inside the runtime, after its handle was reserved (a
    /// runtime or hook that panics) (`HIPFFT_POOL_SIM_PANIC_CREATE_EVERY`).
    pub panic_create_every: Option<u64>,
    /// What `device_flags` reports (`hipGetDeviceFlags`), e.g. 4 for
    /// `hipDeviceScheduleBlockingSync` (`HIPFFT_POOL_SIM_DEVICE_FLAGS`).
    pub device_flags: u32,
    /// While set, every event query and event synchronize fails with `hipErrorLaunchFailure`
    /// (a device in error: no event can prove work done) (`HIPFFT_POOL_SIM_FAIL_EVENT_WAIT=1`).
    pub fail_event_wait: bool,
    /// Every K-th `malloc` fails with `hipErrorOutOfMemory` (`HIPFFT_POOL_SIM_FAIL_MALLOC_EVERY`).
    pub fail_malloc_every: Option<u64>,
    /// Every destroy blocks in a pipe read until `unblock_all`, then returns
    /// `HIPFFT_INTERNAL_ERROR` with the handle freed (`HIPFFT_POOL_SIM_BLOCK_DESTROY=1`).
    pub block_destroy: bool,
    /// Every create blocks in a pipe read until `unblock_all`, then returns
    /// `HIPFFT_INTERNAL_ERROR` with its reserved handle freed (`HIPFFT_POOL_SIM_BLOCK_CREATE=1`).
    pub block_create: bool,
    /// Every create also spends what cuFFT took on the H200 for that shape (see
    /// [`h200_create_cost`]), so a trace on the sim pays per-shape creation costs
    /// (`HIPFFT_POOL_SIM_H200_CREATE_COSTS=1`).
    pub h200_create_costs: bool,
    /// Kernels are shared by every plan of one shape (transform and lengths), as rocFFT
    /// keeps compiled kernels per process, instead of loaded per plan as cuFFT does; a
    /// transform's argument records still point at its own plan's memory
    /// (`HIPFFT_POOL_SIM_SHARED_KERNELS=1`).
    pub shared_kernels: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            devices: 1,
            block_above_live: None,
            create_latency: Duration::ZERO,
            exec_latency: Duration::ZERO,
            destroy_latency: Duration::ZERO,
            fail_create_every: None,
            fail_exec_every: None,
            fail_destroy_every: None,
            fail_event_every: None,
            fail_event_wait: false,
            device_flags: 0,
            panic_create_every: None,
            fail_malloc_every: None,
            block_destroy: false,
            block_create: false,
            h200_create_costs: false,
            shared_kernels: false,
        }
    }
}

/// One environment variable: its name, the accepted range, and where the value goes.
struct EnvVar {
    name: &'static str,
    min: u64,
    max: u64,
    set: fn(&mut SimConfig, u64),
}

const fn micros(v: u64) -> Duration {
    Duration::from_micros(v)
}

/// Every variable the sim reads, with its range (0 is refused where it means nothing).
const ENV_VARS: &[EnvVar] = &[
    EnvVar { name: "HIPFFT_POOL_SIM_DEVICES", min: 1, max: MAX_DEVICES as u64, set: |c, v| c.devices = v as i32 },
    EnvVar {
        name: "HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE",
        min: 0,
        max: usize::MAX as u64,
        set: |c, v| c.block_above_live = Some(v as usize),
    },
    EnvVar { name: "HIPFFT_POOL_SIM_CREATE_LATENCY_US", min: 0, max: MAX_LATENCY_US, set: |c, v| c.create_latency = micros(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_EXEC_LATENCY_US", min: 0, max: MAX_LATENCY_US, set: |c, v| c.exec_latency = micros(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_DESTROY_LATENCY_US", min: 0, max: MAX_LATENCY_US, set: |c, v| c.destroy_latency = micros(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_CREATE_EVERY", min: 1, max: u64::MAX, set: |c, v| c.fail_create_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_EXEC_EVERY", min: 1, max: u64::MAX, set: |c, v| c.fail_exec_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_DESTROY_EVERY", min: 1, max: u64::MAX, set: |c, v| c.fail_destroy_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_EVENT_EVERY", min: 1, max: u64::MAX, set: |c, v| c.fail_event_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_PANIC_CREATE_EVERY", min: 1, max: u64::MAX, set: |c, v| c.panic_create_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_DEVICE_FLAGS", min: 0, max: 0xFFFF, set: |c, v| c.device_flags = v as u32 },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_EVENT_WAIT", min: 0, max: 1, set: |c, v| c.fail_event_wait = v == 1 },
    EnvVar { name: "HIPFFT_POOL_SIM_FAIL_MALLOC_EVERY", min: 1, max: u64::MAX, set: |c, v| c.fail_malloc_every = Some(v) },
    EnvVar { name: "HIPFFT_POOL_SIM_BLOCK_DESTROY", min: 0, max: 1, set: |c, v| c.block_destroy = v == 1 },
    EnvVar { name: "HIPFFT_POOL_SIM_SHARED_KERNELS", min: 0, max: 1, set: |c, v| c.shared_kernels = v == 1 },
    EnvVar { name: "HIPFFT_POOL_SIM_BLOCK_CREATE", min: 0, max: 1, set: |c, v| c.block_create = v == 1 },
    EnvVar { name: "HIPFFT_POOL_SIM_H200_CREATE_COSTS", min: 0, max: 1, set: |c, v| c.h200_create_costs = v == 1 },
];

/// cuFFT 12's plan creation on the H200, per 1-D shape: the `create` column of
/// `docs/runs/2026-12-02-gpu-bench.txt` (median of 30 rounds, us), keyed by (real or complex,
/// length); R2C and C2R share a row (their means). Other lengths cost as the nearest
/// measured one of their kind; batch and rank are not modelled.
const H200_CREATE_US: &[(bool, i64, u64)] = &[
    (true, 2, 112),
    (true, 8, 115),
    (true, 400, 178),
    (true, 512, 148),
    (true, 1024, 186),
    (true, 1200, 798),
    (true, 2048, 209),
    (false, 8, 141),
    (false, 512, 168),
    (false, 1024, 220),
    (false, 2048, 225),
];

/// What creating a plan for `desc` cost on the H200 (cuFFT 12, one device): the measured
/// figure of the nearest 1-D shape of the same kind by the product of the lengths.
///
/// # Examples
///
/// ```
/// use hipfft_pool::{PlanDesc, TransformType};
/// use hipfft_pool::runtime::sim::h200_create_cost;
///
/// let slow = h200_create_cost(&PlanDesc::new(TransformType::R2C, &[1200], 4));
/// let fast = h200_create_cost(&PlanDesc::new(TransformType::R2C, &[512], 4));
/// assert!(slow > 4 * fast);
/// ```
pub fn h200_create_cost(desc: &crate::PlanDesc) -> Duration {
    let real = desc.transform.is_forward_real() || desc.transform.is_inverse_real();
    let len: i64 = desc.n[..(desc.rank as usize).clamp(1, 3)].iter().product();
    let us = H200_CREATE_US
        .iter()
        .filter(|(r, _, _)| *r == real)
        .min_by_key(|(_, n, _)| (n - len).unsigned_abs())
        .map_or(200, |(_, _, us)| *us);
    micros(us)
}

/// The names of every variable the sim reads.
pub fn env_var_names() -> impl Iterator<Item = &'static str> {
    ENV_VARS.iter().map(|v| v.name)
}

/// Parses the value of one of the sim's variables: plain ASCII digits only (no sign, no
/// spaces), within the variable's range. The error is the one-line warning to print.
pub fn parse_env_value(name: &str, raw: &str) -> Result<u64, String> {
    let var =
        ENV_VARS.iter().find(|v| v.name == name).ok_or_else(|| format!("{name} is not a variable of the simulated runtime"))?;
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name}={raw:?} ignored: not a whole number (expected digits in {}..={})", var.min, var.max));
    }
    let value: u64 = raw.parse().map_err(|_| format!("{name}={raw:?} ignored: too large (at most {})", var.max))?;
    if value < var.min || value > var.max {
        return Err(format!("{name}={raw:?} ignored: outside {}..={}", var.min, var.max));
    }
    Ok(value)
}

impl SimConfig {
    /// The defaults with the environment applied, and the warnings for values ignored.
    pub fn from_env() -> (SimConfig, Vec<String>) {
        let mut config = SimConfig::default();
        let warnings = config.apply_env();
        (config, warnings)
    }

    /// Applies the sim's environment variables over `self`; bad values keep the current
    /// setting. An empty variable counts as unset.
    pub fn apply_env(&mut self) -> Vec<String> {
        self.apply_vars(|name| std::env::var_os(name))
    }

    /// [`apply_env`](Self::apply_env) over any lookup, so tests need not touch the process
    /// environment (which is shared by parallel tests).
    pub fn apply_vars(&mut self, lookup: impl Fn(&str) -> Option<OsString>) -> Vec<String> {
        let mut warnings = Vec::new();
        for var in ENV_VARS {
            let Some(raw) = lookup(var.name) else { continue };
            if raw.is_empty() {
                continue;
            }
            let Some(text) = raw.to_str() else {
                warnings.push(format!("{}={raw:?} ignored: not valid UTF-8", var.name));
                continue;
            };
            match parse_env_value(var.name, text) {
                Ok(v) => (var.set)(self, v),
                Err(w) => warnings.push(w),
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn apply(vars: &[(&str, &str)]) -> (SimConfig, Vec<String>) {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        let mut c = SimConfig::default();
        let w = c.apply_vars(|n| map.get(n).cloned());
        (c, w)
    }

    #[test]
    fn good_values_are_applied() {
        let (c, w) = apply(&[
            ("HIPFFT_POOL_SIM_DEVICES", "3"),
            ("HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE", "0"),
            ("HIPFFT_POOL_SIM_CREATE_LATENCY_US", "1500"),
            ("HIPFFT_POOL_SIM_EXEC_LATENCY_US", "0"),
            ("HIPFFT_POOL_SIM_DESTROY_LATENCY_US", "7"),
            ("HIPFFT_POOL_SIM_FAIL_CREATE_EVERY", "5"),
            ("HIPFFT_POOL_SIM_FAIL_EXEC_EVERY", "6"),
            ("HIPFFT_POOL_SIM_FAIL_DESTROY_EVERY", "7"),
            ("HIPFFT_POOL_SIM_FAIL_EVENT_EVERY", "8"),
            ("HIPFFT_POOL_SIM_FAIL_MALLOC_EVERY", "18446744073709551615"),
            ("HIPFFT_POOL_SIM_BLOCK_DESTROY", "1"),
            ("HIPFFT_POOL_SIM_BLOCK_CREATE", "0"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.devices, 3);
        assert_eq!(c.block_above_live, Some(0));
        assert_eq!(c.create_latency, Duration::from_micros(1500));
        assert_eq!(c.destroy_latency, Duration::from_micros(7));
        assert_eq!(c.fail_create_every, Some(5));
        assert_eq!(c.fail_exec_every, Some(6));
        assert_eq!(c.fail_destroy_every, Some(7));
        assert_eq!(c.fail_event_every, Some(8));
        assert_eq!(c.fail_malloc_every, Some(u64::MAX));
        assert!(c.block_destroy);
        assert!(!c.block_create);
    }

    #[test]
    fn bad_values_keep_the_default_and_warn_once_each() {
        let bad = [
            ("HIPFFT_POOL_SIM_DEVICES", "-1"),
            ("HIPFFT_POOL_SIM_FAIL_CREATE_EVERY", "8abc"),
            ("HIPFFT_POOL_SIM_FAIL_EXEC_EVERY", "0"),
            ("HIPFFT_POOL_SIM_CREATE_LATENCY_US", " 12"),
            ("HIPFFT_POOL_SIM_FAIL_MALLOC_EVERY", "18446744073709551616"),
            ("HIPFFT_POOL_SIM_BLOCK_DESTROY", "2"),
            ("HIPFFT_POOL_SIM_DESTROY_LATENCY_US", "3600000001"),
            ("HIPFFT_POOL_SIM_BLOCK_CREATE", "yes"),
        ];
        let (c, w) = apply(&bad);
        assert_eq!(c, SimConfig::default());
        assert_eq!(w.len(), bad.len(), "{w:?}");
        for (name, value) in bad {
            let line = w.iter().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no warning for {name}: {w:?}"));
            assert!(line.contains(&format!("{value:?}")), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn empty_is_unset_and_zero_devices_is_refused() {
        let (c, w) = apply(&[("HIPFFT_POOL_SIM_DEVICES", ""), ("HIPFFT_POOL_SIM_EXEC_LATENCY_US", "")]);
        assert!(w.is_empty());
        assert_eq!(c, SimConfig::default());
        assert!(parse_env_value("HIPFFT_POOL_SIM_DEVICES", "0").is_err());
        assert!(parse_env_value("HIPFFT_POOL_SIM_DEVICES", "1025").is_err());
        assert_eq!(parse_env_value("HIPFFT_POOL_SIM_DEVICES", "1024"), Ok(1024));
        assert_eq!(parse_env_value("HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE", "0"), Ok(0));
        assert!(parse_env_value("HIPFFT_POOL_SIM_NOPE", "1").is_err());
        assert!(parse_env_value("HIPFFT_POOL_SIM_FAIL_EXEC_EVERY", "+3").is_err());
        assert!(parse_env_value("HIPFFT_POOL_SIM_FAIL_EXEC_EVERY", "3 ").is_err());
        assert_eq!(env_var_names().count(), 17);
    }
}
